"""``engine.maintenance``: llmemory's maintenance cycle (§7.6, CognitivePass): consolidate -> reflect -> mine skills
-> TTL expiry, previewed first and then applied, every applied change in the audit log ``maintenance_log``.

- **Preview, then apply.** ``apply=False`` (the default) plans every step and writes nothing (an LLM step still
  calls the model and its token use is billed in ``llm_usage``, the one table a preview can touch). The report's
  changes carry everything their write needs, so :meth:`Maintenance.apply` writes exactly what the preview showed,
  the LLM's answers included. ``apply=True`` plans and applies each step in turn, so a later step sees what an earlier
  one wrote, as llmemory's pass does.
- **Isolated steps.** An error in one step is reported in that step (``MaintenanceStep.error``); the others still run.
- **Idempotent.** Consolidation skips the messages an earlier one covered, reflection skips a window of episodes it
  already drew insights from and never stores an insight twice, mining never registers a skill the user already has
  (same name and body), and expiry only finds what is still active: a second run changes nothing.
- **Which sessions.** ``maintain`` consolidates every session of the user that holds messages no consolidation
  covered (the API has no "live session"); the MCP tool ``memory_maintain`` runs, as llmemory's does, without one,
  so without the consolidate step (``memory_consolidate`` consolidates one session).
- **Applying a stale preview** re-checks each change first: messages consolidated meanwhile, an insight or skill
  stored meanwhile, and memories already forgotten are skipped, so applying one preview twice changes nothing. The
  re-check runs again inside the writing transaction, under the store's write lock, so two applies (or two runs) at
  the same moment still consolidate each message once (engine/memory/maintenance_apply.py).
- **Audited atomically.** Each applied change commits together with its ``maintenance_log`` row; a hard forget takes
  the forgotten memories' texts out of the log in its own transaction (engine/memory/maintenance_redact.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .. import validation
from ..clock import utcnow
from ..errors import InvalidInput
from ..ids import check_id, new_id
from ..providers.llm import LLM
from ..records import MaintenanceChange, MaintenanceLogEntry, MaintenanceReport, MaintenanceStep
from .base import Backends, page_args
from .episodic import EpisodicMemory
from .forgetting import Forgetter
from .maintenance_apply import ChangeWriter
from .maintenance_steps import StepPlanner, sessions_with_pending
from .procedural import SkillLibrary
from .semantic import SemanticMemory

STEPS = ("consolidate", "reflect", "mine_skills", "expire")
LOG_COLUMNS = "id, user_id, run_id, step, action, target_kind, target_ids, detail, actor, occurred_at"


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


class Maintenance:
    """``engine.maintenance``: the maintenance cycle (consolidate, reflect, mine skills, TTL expiry) as a preview or
    applied, a preview applied as it stands, and the audit log of applied changes."""

    def __init__(
        self,
        b: Backends,
        llm: LLM,
        items: SemanticMemory,
        episodes: EpisodicMemory,
        skills: SkillLibrary,
        forgetting: Forgetter,
    ) -> None:
        self.b = b
        self.items = items
        self.skills = skills
        self.forgetting = forgetting
        self.planner = StepPlanner(b, llm, items, episodes, skills)
        self.writer = ChangeWriter(b, items, skills, forgetting)

    # -- public API --------------------------------------------------------------------------------------------------
    def consolidate(
        self, user_id: str, session_id: str, *, apply: bool = False, clear_session: bool = False, actor: str = "api"
    ) -> MaintenanceReport:
        """Turn a session's messages that no earlier consolidation covered into semantic memories, each naming its
        source messages ``{"type": "message", "id": "<session>#<seq>"}``; with ``clear_session`` the session's
        messages are then deleted (llmemory's clear_session!). A preview unless ``apply``."""
        check_id(user_id, "user id")
        check_id(session_id, "session id")
        self._check_flags(apply=apply, clear_session=clear_session)
        actor = self._actor(actor)
        run_id = new_id("run")
        step = self._run_step(
            "consolidate",
            lambda: self.planner.consolidate(user_id, session_id, clear_session),
            user_id,
            run_id,
            actor,
            apply,
        )
        return MaintenanceReport(run_id, user_id, apply, (step,), actor, utcnow())

    def maintain(
        self,
        user_id: str,
        *,
        consolidate: bool = True,
        reflect: bool = True,
        mine_skills: bool | None = None,
        expire: bool = True,
        reflection_window: int = 10,
        mining_window: int = 20,
        apply: bool = False,
        actor: str = "api",
    ) -> MaintenanceReport:
        """The maintenance cycle in llmemory's order: consolidate (every session with messages no consolidation
        covered), reflect over the last ``reflection_window`` episodes, mine skills from the last ``mining_window``
        (registered automatically; default ``settings.skill_mining_enabled``), expire by the TTL settings. Each step is
        isolated. A preview unless ``apply``; apply a preview as it stands with :meth:`apply`."""
        check_id(user_id, "user id")
        if mine_skills is None:
            mine_skills = self.b.settings.skill_mining_enabled
        self._check_flags(consolidate=consolidate, reflect=reflect, mine_skills=mine_skills, expire=expire, apply=apply)
        validation.check_int(reflection_window, "reflection_window", "window")
        validation.check_int(mining_window, "mining_window", "window")
        actor = self._actor(actor)
        run_id = new_id("run")
        planners: dict[str, Callable[[], tuple[list[MaintenanceChange], str]]] = {
            "consolidate": lambda: self._plan_all_sessions(user_id),
            "reflect": lambda: self.planner.reflect(user_id, reflection_window),
            "mine_skills": lambda: self.planner.mine_skills(user_id, mining_window),
            "expire": lambda: self.planner.expire(user_id),
        }
        wanted = {"consolidate": consolidate, "reflect": reflect, "mine_skills": mine_skills, "expire": expire}
        steps = []
        for name in STEPS:
            if not wanted[name]:
                steps.append(MaintenanceStep(name, note="skipped"))
                continue
            steps.append(self._run_step(name, planners[name], user_id, run_id, actor, apply))
        return MaintenanceReport(run_id, user_id, apply, tuple(steps), actor, utcnow())

    def apply(self, report: MaintenanceReport, actor: str | None = None) -> MaintenanceReport:
        """Apply a previewed report's changes as they stand (re-checked first: what another run did meanwhile is
        skipped). Returns the applied report, under the preview's run id."""
        if not isinstance(report, MaintenanceReport):
            raise InvalidInput("apply takes the MaintenanceReport of a preview")
        if report.applied:
            raise InvalidInput(f"run {report.run_id} was applied already")
        check_id(report.user_id, "user id")
        actor = self._actor(actor if actor is not None else report.actor)
        steps = []
        for step in report.steps:
            if step.error is not None or not step.changes:
                steps.append(step)
                continue
            applied, error = self.writer.apply(report.user_id, report.run_id, step.name, step.changes, actor)
            steps.append(MaintenanceStep(step.name, tuple(applied), error, step.note))
        return MaintenanceReport(report.run_id, report.user_id, True, tuple(steps), actor, utcnow())

    def log(self, user_id: str | None = None, run_id: str | None = None, limit: int = 200) -> list[MaintenanceLogEntry]:
        """Applied maintenance changes, newest first (optionally one user's, one run's)."""
        where, params = ["TRUE"], []
        if user_id is not None:
            where.append("user_id = ?")
            params.append(check_id(user_id, "user id"))
        if run_id is not None:
            where.append("run_id = ?")
            params.append(check_id(run_id, "run id"))
        limit = page_args(limit, 0, 100_000)[0]
        with self.b.db.read() as conn:
            rows = conn.execute(
                f"SELECT {LOG_COLUMNS} FROM maintenance_log WHERE {' AND '.join(where)} "
                "ORDER BY occurred_at DESC, id DESC LIMIT ?",
                [*params, limit],
            ).fetchall()
        return [
            MaintenanceLogEntry(
                r[0], r[1], r[2], r[3], r[4], r[5], tuple(_json(r[6]) or ()), _json(r[7]) or {}, r[8], r[9]
            )
            for r in rows
        ]

    # -- running steps -----------------------------------------------------------------------------------------------
    @staticmethod
    def _check_flags(**flags: object) -> None:
        for name, value in flags.items():
            if not isinstance(value, bool):
                raise InvalidInput(f"{name} must be true or false")

    @staticmethod
    def _actor(actor: object) -> str:
        return validation.check_text(actor, "actor", 100).strip()

    def _run_step(
        self,
        name: str,
        plan: Callable[[], tuple[list[MaintenanceChange], str]],
        user_id: str,
        run_id: str,
        actor: str,
        apply: bool,
    ) -> MaintenanceStep:
        try:
            changes, note = plan()
        except Exception as exc:  # isolated, as llmemory's pass: the step reports it and the next one runs
            return MaintenanceStep(name, (), f"{type(exc).__name__}: {exc}")
        if not apply or not changes:
            return MaintenanceStep(name, tuple(changes), None, note)
        applied, error = self.writer.apply(user_id, run_id, name, changes, actor)
        return MaintenanceStep(name, tuple(applied), error, note)

    def _plan_all_sessions(self, user_id: str) -> tuple[list[MaintenanceChange], str]:
        with self.b.db.read() as conn:
            sessions = sessions_with_pending(conn, user_id)
        changes: list[MaintenanceChange] = []
        notes = []
        for sid in sessions:
            got, note = self.planner.consolidate(user_id, sid, False)
            changes += got
            notes.append(f"{sid}: {note}")
        return changes, "; ".join(notes) or "no messages to consolidate"
