"""The MCP server: memlens' memory as tools for any MCP client (Claude Desktop, Cursor, agents).

Each tool is a thin call into one :class:`MemoryEngine` opened once per server process. Inputs are validated by the
JSON schema MCPServer derives from the type hints, with unknown argument names refused (``strict_tool``); the
engine's own checks (ids, text, kinds) come next, and a :class:`MemlensError` becomes a tool error carrying its
message. Answers are short text meant for a model to read
(``memory_retrieve`` answers JSON with the context and the ``trace_id``). Transports live in ``engine.mcp.http``.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from pydantic import BaseModel, ConfigDict, Field

from ..engine import MemoryEngine
from ..errors import MemlensError
from ..records import RankedSkill, Skill, to_plain
from . import maintenance_tools

F = TypeVar("F", bound=Callable[..., Any])

# Strict: a JSON true is not the integer 1, 2.0 is not a count and "0.5" is not a number; the engine then checks
# each value's range (engine.validation), so a refusal always names the field.
Int = Annotated[int, Field(strict=True)]
Number = Annotated[float, Field(strict=True)]
Bool = Annotated[bool, Field(strict=True)]
Role = Literal["user", "assistant", "system", "tool", "tool_result"]
# The vocabulary's values (engine/vocab.py: Kind, ForgetMode), spelled out because a tool's JSON schema is made
# from these annotations; tests/engine/test_vocab.py holds them equal to the enums.
Kind = Literal["semantic", "episodic", "procedural"]
ForgetKind = Literal[Kind, "graph"]  # "graph": entities and relations (engine/memory/graph_forget.py)
Mode = Literal["soft", "hard"]
SkillKind = Literal["prompt", "template", "code"]
# engine/presets.py's names, spelled out so the tool's schema lists them (a test keeps the two equal)
Preset = Literal["default", "deep", "llmemory"]
INSTRUCTIONS = (
    "Agent memory with traced retrieval (memlens). Call memory_retrieve before answering and keep its trace_id; "
    "record messages with memory_add_message, facts with memory_save, trajectories with memory_episode_record and "
    "skill results with memory_skill_report; report which memories helped with memory_feedback; at the end of a "
    "session, memory_consolidate. memory_info lists every tool and this flow."
)


class StepInput(BaseModel):
    """One step of an episode: what the agent saw, did, and got."""

    model_config = ConfigDict(extra="forbid")
    observation: str = ""
    action: str = ""
    result: str = ""


class RetrieveResult(BaseModel):
    trace_id: str = Field(description="id of the stored retrieval trace (pass it to memory_feedback)")
    context: str = Field(description="the assembled context to put in the prompt")
    memory_ids: list[str] = Field(description="ids of the memories in the context, in order")
    context_tokens: int


def skill_line(skill: Skill) -> str:
    """llmemory's line: ``[id] name vN (kind) — success rate 0.xx (s/total)``."""
    return (
        f"[{skill.id}] {skill.name} v{skill.version} ({skill.kind}) — success rate "
        f"{skill.success_rate:.2f} ({skill.success_count}/{skill.trials})"
    )


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def strict_tool(fn: Callable[..., Any], name: str) -> Tool:
    """``fn`` as an MCP tool whose arguments model forbids unknown names: the library's model ignores them, so a
    misspelt ``importance_`` or a made-up ``mode`` would silently fall back to the default. The published input
    schema says so too (``additionalProperties: false``)."""
    tool = Tool.from_function(fn, name=name)
    loose = tool.fn_metadata.arg_model
    strict = cast(
        type[BaseModel],
        type(loose.__name__, (loose,), {"model_config": ConfigDict(extra="forbid"), "__module__": __name__}),
    )
    metadata = tool.fn_metadata.model_copy(update={"arg_model": strict})
    return tool.model_copy(update={"fn_metadata": metadata, "parameters": strict.model_json_schema(by_alias=True)})


def build_server(engine: MemoryEngine) -> MCPServer:
    """An MCPServer whose tools act on ``engine``. Tool calls run in worker threads; one lock serialises them."""
    tools: list[Tool] = []
    lock = threading.Lock()

    def tool(fn: F) -> F:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            try:
                with lock:
                    return fn(*args, **kwargs)
            except MemlensError as exc:
                # The engine's message is written for the caller; the class name says which kind of refusal.
                raise ToolError(f"{type(exc).__name__}: {exc}") from None

        tools.append(strict_tool(wrapped, fn.__name__))
        return fn

    @tool
    def memory_add_message(user_id: str, role: Role, content: str, session_id: str = "default") -> str:
        """Append a message to a session's short-term memory (the session is created on first use)."""
        msg = engine.sessions.add_message(user_id, session_id, role, content)
        return f"Message added to session '{msg.session_id}' (#{msg.seq}, {msg.tokens} tokens)."

    @tool
    def memory_save(
        user_id: str,
        content: str,
        category: str = "observations",
        importance: Number | None = None,
        evergreen: Bool = False,
        preceding_text: str | None = None,
    ) -> str:
        """Save one fact to semantic memory directly (no LLM). ``preceding_text``: what came right before it (e.g. the
        question it answers), embedded with it so that question finds it."""
        item = engine.items.remember(
            user_id, content, category, importance, evergreen, source="mcp", preceding_text=preceding_text
        )
        return f"Memory saved: {item.id}\nCategory: {item.category}\nContent: {item.content}"

    @tool
    def memory_search(
        user_id: str,
        query: str,
        kind: Literal["all", "semantic", "episodic", "procedural"] = "all",
        max_results: Int = 10,
        mode: Literal["hybrid", "vector", "fts"] = "hybrid",
    ) -> str:
        """Plain search over long-term memory (no ranking pipeline, no trace): hybrid, vector or full-text."""
        hits = engine.retrieval.search(user_id, query, kind, max_results, mode)
        if not hits:
            return "No memories found matching the query."
        lines = [f"{n}. [{h.kind} {h.id}] (score {h.score:.3f}) {_short(h.text, 200)}" for n, h in enumerate(hits, 1)]
        return f"Found {len(hits)} memories:\n" + "\n".join(lines)

    @tool
    def memory_retrieve(
        user_id: str,
        query: str,
        session_id: str | None = None,
        hops: Int | None = None,
        max_tokens: Int | None = None,
        preset: Preset | None = None,
    ) -> RetrieveResult:
        """Run the traced retrieval pipeline; returns the context for the prompt and the stored trace's id. ``preset``
        names a set of retrieval settings: deep puts recall before speed (2 hops, sentence keys: they must have been
        written), llmemory is llmemory 0.2.x's rules; hops and max_tokens win over it."""
        trace = engine.retrieval.retrieve(
            user_id, query, session_id=session_id, hops=hops, budget=max_tokens, preset=preset
        )
        return RetrieveResult(
            trace_id=trace.trace_id,
            context=trace.context,
            memory_ids=list(trace.context_ids),
            context_tokens=trace.context_tokens,
        )

    @tool
    def memory_feedback(
        user_id: str,
        useful: list[str] | None = None,
        harmful: list[str] | None = None,
        trace_id: str | None = None,
        note: str = "",
        labeller: str = "mcp",
    ) -> str:
        """Label memories useful (+1) or harmful (-1), optionally tied to the retrieval trace that surfaced them.
        Each labeller has one label per trace and memory: reporting it again does not count twice, and the other
        label replaces it."""
        events = engine.feedback.report(user_id, useful or (), harmful or (), trace_id, note, labeller=labeller)
        n_useful = sum(1 for e in events if e.label == "useful")
        return f"Feedback recorded: {n_useful} useful, {len(events) - n_useful} harmful."

    @tool
    def memory_working_get(user_id: str, session_id: str = "default") -> str:
        """The session's working-memory slots as a JSON object."""
        return json.dumps(to_plain(engine.working.get(user_id, session_id)), ensure_ascii=False, indent=2)

    @tool
    def memory_working_set(user_id: str, slots: dict[str, Any], session_id: str = "default") -> str:
        """Set working-memory slots in one transaction (a null value removes the slot); returns all slots."""
        result = engine.working.update(user_id, session_id, slots, source="agent")
        return json.dumps(to_plain(result), ensure_ascii=False, indent=2)

    @tool
    def memory_episode_record(
        user_id: str,
        steps: list[StepInput],
        summary: str | None = None,
        outcome: str | None = None,
        importance: Number | None = None,
        session_id: str | None = None,
    ) -> str:
        """Record an episode (a trajectory of observation/action/result steps) with an optional outcome."""
        ep = engine.episodes.record(user_id, [s.model_dump() for s in steps], summary, outcome, importance, session_id)
        return f"Episode recorded: {ep.id} ({len(ep.steps)} steps)"

    @tool
    def memory_episodes(user_id: str, query: str | None = None, outcome: str | None = None, limit: Int = 10) -> str:
        """Recent episodes, or those matching a query/outcome: one line each."""
        page = engine.episodes.list_episodes(user_id, outcome=outcome, query=query, limit=limit)
        if not page.rows:
            return "No episodes found."
        return "\n".join(
            f"[{e.id}] (importance: {e.importance:.2f}; outcome: {e.outcome or '-'}) {_short(e.summary, 120)}"
            for e in page.rows
        )

    @tool
    def memory_skill_register(
        user_id: str, name: str, body: str, description: str = "", kind: SkillKind = "prompt"
    ) -> str:
        """Register a skill; the same name again becomes its next version (with fresh counters)."""
        skill = engine.skills.register(user_id, name, body, description, kind, provenance={"source": "mcp"})
        return f"Skill registered: {skill.id} ({skill.name} v{skill.version})"

    @tool
    def memory_skill_report(user_id: str, skill_id: str, success: Bool, episode_id: str | None = None) -> str:
        """Record one success or failure of a skill (optionally linked to the episode it happened in)."""
        s = engine.skills.report_outcome(user_id, skill_id, success, episode_id)
        return (
            f"Outcome recorded for {s.name} ({s.id}): success {s.success_count} / failure {s.failure_count} "
            f"(rate {s.success_rate:.2f})"
        )

    @tool
    def memory_skills(user_id: str, query: str | None = None, kind: SkillKind | None = None, limit: Int = 10) -> str:
        """Skills ranked by proven utility (Wilson lower bound of the success rate), one line per skill."""
        ranked: list[RankedSkill] = engine.skills.rank(user_id, query, kind, limit)
        if not ranked:
            return "No skills found."
        return "\n".join(skill_line(r.skill) for r in ranked)

    @tool
    def memory_forget(user_id: str, kind: ForgetKind, ids: list[str], reason: str, mode: Mode = "soft") -> str:
        """Forget memories: soft archives them (unretrievable, restorable), hard deletes them; always audited. Kind
        "graph" takes entity and relation ids (an entity's relations and mentions go with it)."""
        r = engine.forgetting.forget(user_id, kind, ids, reason, mode, actor="mcp")
        text = f"Forgot {r.count} entries from {r.memory_type} memory for user {user_id} ({r.mode})."
        if r.unknown:
            text += f" Not found or already forgotten: {', '.join(r.unknown)}."
        return text

    @tool
    def memory_reflect(user_id: str, window: Int = 10) -> str:
        """Derive insights from the last ``window`` episodes and store them in the ``insights`` category."""
        items, strategy = engine.items.reflect(user_id, window)
        head = f"Reflection ({strategy}): {len(items)} insight(s)."
        return "\n".join([head, *(f"[{i.id}] {_short(i.content, 200)}" for i in items)])

    @tool
    def memory_stats(user_id: str | None = None) -> str:
        """Counts per memory kind and of the graph (for the whole store, or one user), the embedder and the LLM."""
        st = engine.admin.stats()
        if user_id is not None:
            from ..ids import check_id

            counts = st.per_user.get(check_id(user_id, "user id"), {})
            shown = ", ".join(
                f"{k}: {counts.get(k, 0)}"
                for k in ("sessions", "messages", "items", "episodes", "skills", "traces", "entities", "relations")
            )
            return f"User {user_id}: {shown}\nEmbedder: {st.embedder}; LLM: {st.llm}"
        lines = [
            f"Store: {st.store}",
            f"Embedder: {st.embedder}; LLM: {st.llm}",
            f"Users: {st.users}",
            f"Sessions: {st.sessions}; messages: {st.messages}; working slots: {st.working_slots}",
            f"Items: {st.items}; categories: {st.categories}; episodes: {st.episodes}; skills: {st.skills}",
            f"Feedback events: {st.feedback_events}; forget-log entries: {st.forget_log_entries}; traces: {st.traces}",
            f"Graph: entities: {st.graph.get('entities', 0)}; relations valid now: {st.graph.get('relations', 0)}; "
            f"superseded: {st.graph.get('superseded', 0)}",
        ]
        return "\n".join(lines + [f"Warning: {w}" for w in st.warnings])

    from .graph_tools import register_graph_tools  # imported here: they import this module
    from .timeline_tools import register_timeline_tools

    register_timeline_tools(engine, tool, tools)
    register_graph_tools(engine, tool)
    maintenance_tools.register(tool, engine)
    return MCPServer("memlens", instructions=INSTRUCTIONS, log_level="WARNING", tools=tools)
