"""memlens engine: agent memory you can open up. The public API is what this module exports."""

from .api import MemoryEngine
from .config import Settings
from .errors import (InvalidInput, LLMUnavailable, MemlensError, ModelMismatch, NotFound, StoreBusy,
                     StoreCorrupt)
from .records import (KINDS, ROLES, TYPED_SLOTS, Category, Episode, FeedbackEvent, ForgetLogEntry, ForgetResult,
                      Item, Message, Page, PrunePlan, RankedSkill, SearchHit, SessionInfo, Skill, SkillOutcome,
                      SlotEdit, Step, StoreStats, to_plain)
from .retrieval.reasoners import CallableReasoner, OfflineBridgeReasoner, Proposal
from .retrieval.trace import CandidateTrace, HopTrace, RetrievalTrace

__all__ = [
    "MemoryEngine", "Settings", "MemlensError", "InvalidInput", "NotFound", "StoreBusy", "StoreCorrupt",
    "ModelMismatch", "LLMUnavailable", "KINDS", "ROLES", "TYPED_SLOTS", "Category", "Episode", "FeedbackEvent",
    "ForgetLogEntry", "ForgetResult", "Item", "Message", "Page", "PrunePlan", "RankedSkill", "SearchHit",
    "SessionInfo", "Skill", "SkillOutcome", "SlotEdit", "Step", "StoreStats", "to_plain", "CallableReasoner",
    "OfflineBridgeReasoner", "Proposal", "CandidateTrace", "HopTrace", "RetrievalTrace",
]
