"""MCP tools of the maintenance cycle, with llmemory's argument names and answer lines (§8): ``memory_consolidate``
and ``memory_maintain``. Through MCP they APPLY, as llmemory's do (the dashboard and the CLI preview first).

``memory_maintain`` runs, as llmemory's does, without a live session, so without the consolidate step (consolidate
a session with ``memory_consolidate``). Each step's changes follow llmemory's lines, one line per change after them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from ..engine import MemoryEngine
from ..records import MaintenanceReport

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]  # build_server's ``tool``
Int = Annotated[int, Field(strict=True)]
Bool = Annotated[bool, Field(strict=True)]


def maintain_text(report: MaintenanceReport) -> str:
    """llmemory's lines: ``Cognitive pass for U:`` / ``insights: n`` / ``skills mined: n`` / ``expired:
    episodic=a procedural=b`` / ``errors: ...``; then each applied change."""

    def count(step: str, action: str, kind: str | None = None) -> int:
        s = report.step(step)
        return sum(
            len(c.target_ids) for c in (s.changes if s else ()) if c.action == action and kind in (None, c.target_kind)
        )

    lines = [
        f"Cognitive pass for {report.user_id}:",
        f"insights: {count('reflect', 'insight')}",
        f"skills mined: {count('mine_skills', 'register_skill')}",
        f"expired: episodic={count('expire', 'expire', 'episodic')} "
        f"procedural={count('expire', 'expire', 'procedural')}",
    ]
    if report.errors:
        lines.append("errors: " + "; ".join(f"{k}: {v}" for k, v in report.errors.items()))
    changes = [f"- [{s.name}] {c.summary}" for s in report.steps for c in s.changes]
    if changes:
        lines += [f"run: {report.run_id}", *changes]
    return "\n".join(lines)


def register(tool: Decorator, engine: MemoryEngine) -> None:
    """Add the tools through ``build_server``'s ``tool`` decorator (its lock, its error translation)."""

    @tool
    def memory_consolidate(user_id: str, session_id: str = "default", clear_session: Bool = False) -> str:
        """Turn the session's messages not yet consolidated into long-term (semantic) memories that name the
        messages they came from; optionally clear the session afterwards. A second call changes nothing."""
        report = engine.maintenance.consolidate(
            user_id, session_id, apply=True, clear_session=clear_session, actor="mcp"
        )
        step = report.steps[0]
        if step.error is not None:  # llmemory answers "Error ...: msg" flagged as an error
            raise ToolError(f"Error consolidating session '{session_id}': {step.error}")
        marked = sum(len(c.target_ids) for c in step.changes if c.action == "consolidated")
        cleared = any(c.action == "clear_session" for c in step.changes)
        if not marked:
            text = f"No messages to consolidate in session '{session_id}'."
            return text + (" Session cleared." if cleared else "")
        memories = sum(1 for c in step.changes if c.action == "memorize")
        return (
            f"Consolidated {marked} messages from session '{session_id}' into long-term memory "
            f"({memories} memories, run {report.run_id})." + (" Session cleared." if cleared else "")
        )

    @tool
    def memory_maintain(
        user_id: str,
        reflect: Bool = True,
        mine_skills: Bool | None = None,
        expire: Bool = True,
        reflection_window: Int = 10,
        mining_window: Int = 20,
    ) -> str:
        """Run the maintenance cycle (reflect -> mine skills -> TTL expiry; no live session, so no consolidate) and
        apply it; ``mine_skills`` defaults to the skill_mining_enabled setting. Every change is audited."""
        report = engine.maintenance.maintain(
            user_id,
            consolidate=False,
            reflect=reflect,
            mine_skills=mine_skills,
            expire=expire,
            reflection_window=reflection_window,
            mining_window=mining_window,
            apply=True,
            actor="mcp",
        )
        return maintain_text(report)
