"""JSONL import and export of a user's memory. Import is all or nothing: every line is validated first, a bad line
is reported with its number, and nothing from the file is written.

The import is read into a plan (ingest_plan.py) and then written (ingest_write.py), both layers of ``Transfer``;
the export's order and shape are in export.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .base import Backends
from .episodic import EpisodicMemory
from .export import export_records
from .feedback import FeedbackLog
from .forgetting import Forgetter
from .ingest_plan import MAX_RECORD_CHARS, RECORD_KINDS, IngestPlan
from .ingest_write import PROGRESS_BATCH, IngestWriter, Progress
from .procedural import SkillLibrary
from .semantic import SemanticMemory
from .sessions import SessionStore
from .working import WorkingMemory

__all__ = ["MAX_RECORD_CHARS", "PROGRESS_BATCH", "RECORD_KINDS", "IngestPlan", "Progress", "Transfer"]


class Transfer(IngestWriter):
    def __init__(
        self,
        b: Backends,
        sessions: SessionStore,
        working: WorkingMemory,
        semantic: SemanticMemory,
        episodic: EpisodicMemory,
        skills: SkillLibrary,
        feedback: FeedbackLog,
        forgetter: Forgetter,
    ) -> None:
        self.b, self.sessions, self.working, self.semantic = b, sessions, working, semantic
        self.episodic, self.skills, self.feedback, self.forgetter = episodic, skills, feedback, forgetter

    # -- export -----------------------------------------------------------------------------------------------------
    def export(self, user_id: str) -> Iterator[dict[str, Any]]:
        """Every record of a user as JSON-ready dicts in an order :meth:`plan` reads back (export.py)."""
        return export_records(self, user_id)
