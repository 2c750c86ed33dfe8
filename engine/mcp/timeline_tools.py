"""MCP tools after llmemory's (§8): ``memory_timeline``, ``memory_timeline_context``, ``memory_mine_skills`` and
``memory_info``, with llmemory's argument names and line formats.

Registered by :func:`engine.mcp.server.build_server` through its ``tool`` decorator, so they share its lock, its strict
argument models and its errors-as-tool-errors. ``memory_info`` describes the tools actually registered, read from
their names, argument schemas and docstrings when it is called, so it cannot go stale.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from mcp.server.mcpserver.tools import Tool

from .. import validation
from ..engine import MemoryEngine
from ..ids import check_id
from ..memory.skill_mining import MiningResult
from ..records import Item
from .server import Bool, Int, Number, _short

F = TypeVar("F", bound=Callable[..., Any])
SHOWN_ENTRIES = 20  # llmemory's memory_timeline shows the newest 20
MAX_OUTCOMES = 100
# The recommended flow (llmemory's server instructions: retrieve at the start, save during, consolidate at the end),
# as (phase, [(tool, what for)]). memory_info names only the tools this server has.
FLOW: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "At the start of a task",
        (
            ("memory_retrieve", "the context for the prompt; keep its trace_id"),
            ("memory_working_get", "the session's working-memory slots"),
        ),
    ),
    (
        "During the task",
        (
            ("memory_add_message", "every turn"),
            ("memory_save", "a fact worth keeping"),
            ("memory_working_set", "the task's state"),
            ("memory_episode_record", "what was tried and how it ended"),
            ("memory_skill_report", "whether a skill worked"),
        ),
    ),
    (
        "At the end",
        (
            ("memory_consolidate", "the session's messages into long-term memory"),
            ("memory_feedback", "which retrieved memories helped, with the trace_id"),
        ),
    ),
    (
        "Now and then",
        (
            ("memory_maintain", "consolidate, reflect, mine skills, expire old memories"),
            ("memory_mine_skills", "skill proposals from recent episodes"),
            ("memory_timeline", "what was memorised and said lately"),
        ),
    ),
)


class ToolDecorator(Protocol):
    def __call__(self, fn: F, /) -> F: ...


def stamp(when: datetime) -> str:
    """llmemory's ``YYYY-MM-DD HH:MM``, in UTC."""
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def item_line(item: Item, prefix: str) -> str:
    """llmemory's timeline-context line: ``[YYYY-MM-DD HH:MM] [category] content`` (content cut at 120)."""
    return f"{prefix}[{stamp(item.created_at)}] [{item.category}] {_short(item.content, 120)}"


def summary(description: str) -> str:
    """The first sentence of a tool's docstring, on one line."""
    first = " ".join(description.strip().split("\n\n", 1)[0].split()).replace("``", "`")
    return re.split(r"(?<=[.!?])\s+(?=[A-Z`(])", first, maxsplit=1)[0]


def signature(tool: Tool) -> str:
    """``name(required, optional=default)`` from the tool's published argument schema."""
    schema = tool.parameters
    required = set(schema.get("required", ()))
    args = [
        name if name in required else f"{name}={json.dumps(spec.get('default'), ensure_ascii=False)}"
        for name, spec in schema.get("properties", {}).items()
    ]
    return f"{tool.name}({', '.join(args)})"


def usage_guide(tools: list[Tool]) -> str:
    names = {t.name for t in tools}
    lines = [f"memlens memory tools ({len(tools)}):"]
    lines += [f"- {signature(t)}: {summary(t.description or '')}" for t in sorted(tools, key=lambda t: t.name)]
    lines += ["", "Recommended flow:"]
    step = 0
    for phase, uses in FLOW:
        present = [f"{name} ({why})" for name, why in uses if name in names]
        if present:
            step += 1
            lines.append(f"{step}. {phase}: {'; '.join(present)}.")
    return "\n".join(lines)


def mining_text(result: MiningResult) -> str:
    if not result.proposals:
        return f"No skills mined from {len(result.episode_ids)} episode(s) ({result.strategy})."
    lines = [
        f"Mined {len(result.proposals)} skill proposal(s) from {len(result.episode_ids)} episode(s) "
        f"({result.strategy}); nothing is stored until registered (auto_register=true, or the dashboard's Skills "
        "page):"
    ]
    for n, p in enumerate(result.proposals, 1):
        lines.append(f"{n}. {p.name} ({p.kind}, confidence {p.confidence:.2f}): {_short(p.description or '-', 200)}")
        lines.append(f"   {_short(p.body, 200)}")
    return "\n".join(lines)


def register_timeline_tools(engine: MemoryEngine, tool: ToolDecorator, tools: list[Tool]) -> None:
    """Add the timeline, skill-mining and info tools to a server being built (``tools``: its registered tools)."""

    @tool
    def memory_timeline(user_id: str, hours: Number = 24, include_messages: Bool = True) -> str:
        """Facts saved and (with include_messages) messages said in the last ``hours`` hours, newest first: the
        first 20 as ``- [FACT] [category] ...`` / ``- [MSG session] [role] ...``, then how many there were. Each
        message is placed at its own time (llmemory used its session's last update)."""
        recent = engine.timeline.recent(user_id, hours, include_messages, limit=SHOWN_ENTRIES)
        what = "memories or messages" if include_messages else "memories"
        if not recent.entries:
            return f"No {what} in the last {hours:g} hours."
        lines = [f"Timeline of the last {hours:g} hours for user {user_id} (newest first):"]
        for e in recent.entries:
            if e.item is not None:
                lines.append(f"- [FACT] [{e.item.category}] {_short(e.item.content, 200)}")
            elif e.message is not None:
                lines.append(f"- [MSG {e.message.session_id}] [{e.message.role}] {_short(e.message.content, 200)}")
        lines.append(f"(Showing {len(recent.entries)} of {recent.total} entries)")
        return "\n".join(lines)

    @tool
    def memory_timeline_context(
        user_id: str, item_id: str | None = None, timestamp: str | None = None, before: Int = 5, after: Int = 5
    ) -> str:
        """The semantic items written just before and after one item (``item_id``) or moment (``timestamp``,
        ISO-8601: the first item at or after it), in creation order: BEFORE, TARGET (``>>> ``) and AFTER."""
        around = engine.timeline.around(user_id, item_id, timestamp, before, after)
        if around.target is None and not around.before:
            return f"No memories for user {user_id} around {stamp(around.anchor)}."
        head = f"item {around.target.id}" if item_id is not None and around.target else stamp(around.anchor)
        lines = [f"Timeline context around {head}:", "BEFORE:"]
        lines += [item_line(i, "    ") for i in around.before] or ["    (none)"]
        lines.append("TARGET:")
        if around.target is not None:
            lines.append(item_line(around.target, ">>> "))
        else:
            lines.append(f"    (no memory at or after {stamp(around.anchor)})")
        lines.append("AFTER:")
        lines += [item_line(i, "    ") for i in around.after] or ["    (none)"]
        return "\n".join(lines)

    @tool
    def memory_mine_skills(
        user_id: str, window: Int = 20, outcomes: list[str] | None = None, auto_register: Bool = False
    ) -> str:
        """Propose skills from the last ``window`` episodes (only those whose outcome is in ``outcomes``, if
        given); with ``auto_register`` register every proposal at once, else list them (nothing is stored)."""
        check_id(user_id, "user id")
        if outcomes is not None:
            validation.check_int(len(outcomes), "number of outcomes", lo=0, hi=MAX_OUTCOMES)
            for label in outcomes:
                validation.check_text(label, "outcome", 200)
        result = engine.skills.mine(user_id, window, outcomes)
        if not auto_register or not result.proposals:
            return mining_text(result)
        # Every proposal is checked before the first is registered, so a bad one cannot leave half of them stored.
        for p in result.proposals:
            engine.skills.prepare(user_id, p.name, p.body, p.description or "", p.kind)
        skills = [engine.skills.accept_proposal(user_id, p) for p in result.proposals]
        return f"Registered {len(skills)} mined skill(s): {', '.join(s.id for s in skills)}"

    @tool
    def memory_info() -> str:
        """How to use these tools: every tool with its arguments and purpose, and the recommended flow (retrieve at
        the start, save during, consolidate at the end)."""
        return usage_guide(tools)
