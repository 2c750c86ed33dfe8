"""``AgentMemory``: the few calls an agent loop makes, bound to one user and session.

    from engine import AgentMemory, MemoryEngine

    memory = AgentMemory(MemoryEngine.open("data/store"), user_id="agent-1", session_id="run-42")
    ctx = memory.recall("How do I deploy the service?")   # traced retrieval: ctx.context, ctx.trace_id
    memory.message("user", "Deploy the service")          # short-term memory
    memory.working(goal="deploy", step=1)                  # working-memory slots (None removes one)
    ep = memory.episode([{"observation": "...", "action": "...", "result": "..."}], outcome="success")
    memory.skill_outcome(skill_id, success=True, episode_id=ep.id)
    memory.feedback(useful=ctx.context_ids[:1], trace_id=ctx.trace_id)
    memory.consolidate()                                    # this session's new messages -> semantic memories
    memory.maintain()                                       # consolidate, reflect, mine skills, expire

Everything is stored at once in the shared store, so the dashboard (another process) shows it on its next rerun and
the agent sees the dashboard's edits (working memory, feedback, forgetting) on its next call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .engine import MemoryEngine
from .ids import check_id
from .records import Episode, FeedbackEvent, Item, MaintenanceReport, Message, Skill
from .trace.records import RetrievalTrace


class AgentMemory:
    """A thin view of a :class:`MemoryEngine` for one agent run (``user_id`` + ``session_id``)."""

    def __init__(self, engine: MemoryEngine, user_id: str, session_id: str = "default") -> None:
        self.engine = engine
        self.user_id = check_id(user_id, "user id")
        self.session_id = check_id(session_id, "session id")

    def message(self, role: str, content: str) -> Message:
        """Append a message (user, assistant, system, tool, tool_result) to this session."""
        return self.engine.sessions.add_message(self.user_id, self.session_id, role, content)

    def working(self, **slots: Any) -> dict[str, Any]:
        """Set working-memory slots (``None`` removes one); returns every slot of the session."""
        return self.engine.working.update(self.user_id, self.session_id, slots, source="agent")

    def slots(self) -> dict[str, Any]:
        """The session's working memory as it is now (including edits made in the dashboard)."""
        return self.engine.working.get(self.user_id, self.session_id)

    def remember(
        self,
        content: str,
        category: str = "general",
        importance: float | None = None,
        preceding_text: str | None = None,
    ) -> Item:
        """Store one fact in semantic memory; ``preceding_text`` is what came right before it (e.g. the question it
        answers), embedded with it."""
        return self.engine.items.remember(
            self.user_id, content, category, importance, source="agent", preceding_text=preceding_text
        )

    def recall(
        self,
        question: str,
        hops: int | None = None,
        budget: int | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> RetrievalTrace:
        """The traced retrieval pipeline; ``.context`` goes into the prompt, ``.trace_id`` into feedback."""
        return self.engine.retrieval.retrieve(
            self.user_id, question, session_id=self.session_id, hops=hops, budget=budget, overrides=overrides
        )

    def episode(
        self,
        steps: Sequence[Mapping[str, Any]],
        summary: str | None = None,
        outcome: str | None = None,
        importance: float | None = None,
    ) -> Episode:
        """Record a trajectory of {observation, action, result} steps in this session."""
        return self.engine.episodes.record(self.user_id, steps, summary, outcome, importance, self.session_id)

    def skill(self, name: str, body: str, description: str = "", kind: str = "prompt") -> Skill:
        """Register a skill (the same name again makes a new version)."""
        return self.engine.skills.register(self.user_id, name, body, description, kind, provenance={"source": "agent"})

    def skill_outcome(self, skill_id: str, success: bool, episode_id: str | None = None) -> Skill:
        """Record one success or failure of a skill."""
        return self.engine.skills.report_outcome(self.user_id, skill_id, success, episode_id)

    def feedback(
        self, useful: Sequence[str] = (), harmful: Sequence[str] = (), trace_id: str | None = None, note: str = ""
    ) -> list[FeedbackEvent]:
        """Label memories useful/harmful, tied to the trace that surfaced them."""
        return self.engine.feedback.report(self.user_id, useful, harmful, trace_id, note)

    def consolidate(self, clear_session: bool = False) -> MaintenanceReport:
        """Turn this session's messages that no earlier consolidation covered into semantic memories, each naming
        the message it came from (llmemory's ``consolidate!``); ``clear_session`` then deletes the session's messages.
        Applied at once, by actor ``agent``, in the maintenance log."""
        return self.engine.maintenance.consolidate(
            self.user_id, self.session_id, apply=True, clear_session=clear_session, actor="agent"
        )

    def maintain(self, reflect: bool = True, mine_skills: bool | None = None, expire: bool = True) -> MaintenanceReport:
        """The maintenance cycle for this user (llmemory's ``maintain!``): consolidate every session's new messages,
        reflect over recent episodes, mine skills (default: the ``skill_mining_enabled`` setting), expire by the TTL
        settings. Applied at once, by actor ``agent``; a second call changes nothing new."""
        return self.engine.maintenance.maintain(
            self.user_id, reflect=reflect, mine_skills=mine_skills, expire=expire, apply=True, actor="agent"
        )
