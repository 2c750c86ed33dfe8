"""memlens engine: agent memory you can open up. The public API is what this module exports."""

from .agent import AgentMemory
from .api import MemoryEngine
from .config import Settings, prepare_process_environment
from .errors import (
    InvalidInput,
    LLMUnavailable,
    MemlensError,
    ModelMismatch,
    NotFound,
    StoreBusy,
    StoreCorrupt,
    StoreTooNew,
)
from .evaluation import CaseResult, Comparison, EvalCase, EvalRun, EvalSet
from .evaluation.metrics import TABLE_METRICS, rule_family
from .memory.memorize import MemorizeResult
from .memory.reasoning import ReasonResult
from .memory.skill_mining import MiningResult, SkillProposal
from .presets import PRESETS
from .records import (
    KINDS,
    ROLES,
    TYPED_SLOTS,
    Category,
    Episode,
    FeedbackEvent,
    ForgetLogEntry,
    ForgetResult,
    Item,
    Message,
    Page,
    PrunePlan,
    RankedSkill,
    SearchHit,
    SessionInfo,
    Skill,
    SkillOutcome,
    SlotEdit,
    Step,
    StoreStats,
    TracePrunePlan,
    to_plain,
)
from .retrieval.reasoners import CallableReasoner, OfflineBridgeReasoner, Proposal
from .retrieval.scores import RANK_STAGES, SCORE_KEYS, CandidateScores, StageRanks, Verdict
from .retrieval.trace import CandidateTrace, HopTrace, RetrievalTrace
from .retrieval.why_not import STAGE_NAMES, MemoryState, WhyNot, drop_rule, why_not

__all__ = [
    "MemoryEngine",
    "AgentMemory",
    "Settings",
    "MemlensError",
    "InvalidInput",
    "NotFound",
    "StoreBusy",
    "StoreCorrupt",
    "prepare_process_environment",
    "StoreTooNew",
    "ModelMismatch",
    "LLMUnavailable",
    "KINDS",
    "ROLES",
    "TYPED_SLOTS",
    "Category",
    "Episode",
    "FeedbackEvent",
    "ForgetLogEntry",
    "ForgetResult",
    "Item",
    "Message",
    "Page",
    "PrunePlan",
    "RankedSkill",
    "SearchHit",
    "SessionInfo",
    "Skill",
    "SkillOutcome",
    "SlotEdit",
    "Step",
    "StoreStats",
    "TracePrunePlan",
    "to_plain",
    "CallableReasoner",
    "OfflineBridgeReasoner",
    "Proposal",
    "CandidateTrace",
    "CandidateScores",
    "StageRanks",
    "Verdict",
    "SCORE_KEYS",
    "RANK_STAGES",
    "HopTrace",
    "RetrievalTrace",
    "MemorizeResult",
    "ReasonResult",
    "MiningResult",
    "SkillProposal",
    "STAGE_NAMES",
    "MemoryState",
    "WhyNot",
    "drop_rule",
    "why_not",
    "EvalSet",
    "EvalCase",
    "EvalRun",
    "CaseResult",
    "Comparison",
    "rule_family",
    "TABLE_METRICS",
    "PRESETS",
]
