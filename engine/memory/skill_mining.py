"""Skill mining from recent episodes (llmemory §5, ``SkillMining::Miner``): it PROPOSES skills and writes nothing.

A human accepts or rejects each proposal; accepting registers it with provenance ``{method: skill_mining, sources:
[every episode in the window]}``. With an LLM, one call reads the window and returns a JSON array of
``{name, kind, body, description, confidence}``; parsing follows the reference (blank name or body dropped, unknown
kind -> prompt, missing or out-of-range confidence -> 0.5, blank description -> none, not JSON -> no proposals).
Offline (no LLM, or the call failed): action sequences that recur in at least two successful episodes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import validation
from ..errors import InvalidInput
from ..ids import check_id
from ..providers.llm import LLM
from ..providers.llm_output import json_array, unit_number
from ..records import SKILL_KINDS, Episode, Skill
from .episodic import EpisodicMemory
from .procedural import SkillLibrary
from .reflection import render_episodes

DEFAULT_CONFIDENCE = 0.5
SUCCESS_LABELS = ("success", "succeeded", "successful", "ok", "solved", "resolved", "done", "passed", "completed")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
PROMPT = (
    "You are mining reusable skills from an AI agent's recent episodes.\n\n{episodes}\n\n"
    "Propose a skill only for a successful pattern that recurs across episodes. Do not propose one-off actions or "
    'failures. Return only a JSON array of objects {{"name": snake_case str, "kind": "prompt"|"template"|'
    '"code", "body": str, "description": one sentence on when to apply it, "confidence": number 0-1}}, '
    "or [] if nothing qualifies."
)


@dataclass(frozen=True)
class SkillProposal:
    """A mined skill nobody has accepted yet (nothing is stored until :func:`accept_proposal`)."""

    name: str
    kind: str
    body: str
    description: str | None
    confidence: float
    source_episode_ids: tuple[str, ...]
    method: str = "skill_mining"  # skill_mining (LLM) | skill_mining_offline


@dataclass(frozen=True)
class MiningResult:
    proposals: tuple[SkillProposal, ...]
    strategy: str  # skill_mining | skill_mining_offline (with the fallback reason) | none (...)
    episode_ids: tuple[str, ...] = ()
    dropped: int = 0  # proposals dropped as unusable (blank name/body, bad name)


def snake_name(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    name = re.sub(r"[^a-z0-9]+", "_", value.strip().lower()).strip("_")[:64]
    return name if NAME_PATTERN.fullmatch(name) else None


def parse_proposals(text: str, episode_ids: tuple[str, ...]) -> tuple[list[SkillProposal], int] | None:
    values = json_array(text)
    if values is None:
        return None
    out, dropped = [], 0
    for v in values:
        if not isinstance(v, dict):
            dropped += 1
            continue
        name, body = snake_name(v.get("name")), v.get("body")
        body = body.replace("\x00", "") if isinstance(body, str) else body
        if name is None or not isinstance(body, str) or not body.strip():
            dropped += 1
            continue
        kind = str(v["kind"]) if v.get("kind") in SKILL_KINDS else "prompt"
        conf = unit_number(v.get("confidence")) if v.get("confidence") is not None else None
        desc = v.get("description")
        desc = desc.replace("\x00", "").strip()[:4000] if isinstance(desc, str) and desc.strip() else None
        out.append(
            SkillProposal(name, kind, body.strip(), desc, DEFAULT_CONFIDENCE if conf is None else conf, episode_ids)
        )
    return out, dropped


def offline_proposals(episodes: Sequence[Episode], outcomes_given: bool) -> list[SkillProposal]:
    """Action sequences shared by at least two successful episodes (all filtered episodes when outcomes given)."""
    good = [e for e in episodes if outcomes_given or (e.outcome or "").strip().lower() in SUCCESS_LABELS]
    sequences: Counter[tuple[str, ...]] = Counter()
    sources: dict[tuple[str, ...], list[str]] = {}
    for e in good:
        seq = tuple(s.action.strip() for s in e.steps if s.action.strip())
        if len(seq) >= 2:
            sequences[seq] += 1
            sources.setdefault(seq, []).append(e.id)
    out = []
    for seq, count in sequences.most_common():
        if count < 2:
            break
        name = snake_name("_then_".join(seq[:3])) or "mined_procedure"
        body = "\n".join(f"{n}. {a}" for n, a in enumerate(seq, 1))
        out.append(
            SkillProposal(
                name[:64].rstrip("_"),
                "prompt",
                body,
                f"Recurring action sequence in {count} successful episodes.",
                round(count / max(len(good), 1), 3),
                tuple(sources[seq]),
                "skill_mining_offline",
            )
        )
    return out


class SkillMiner:
    def __init__(self, episodic: EpisodicMemory, skills: SkillLibrary, llm: LLM) -> None:
        self.episodic = episodic
        self.skills = skills
        self.llm = llm

    def mine(self, user_id: str, window: int = 20, outcomes: Sequence[str] | None = None) -> MiningResult:
        """Proposals from the last ``window`` episodes (optionally only those whose outcome is in ``outcomes``)."""
        check_id(user_id, "user id")
        validation.check_int(window, "window", "window")
        allow = None
        if outcomes is not None:
            if isinstance(outcomes, str) or not all(isinstance(o, str) for o in outcomes):
                raise InvalidInput("outcomes must be a list of labels")
            allow = {o.strip().lower() for o in outcomes}
        episodes = self.episodic.recent(user_id, window)
        if allow is not None:
            episodes = [e for e in episodes if (e.outcome or "").strip().lower() in allow]
        if not episodes:
            return MiningResult((), "none (no episodes)")
        ids = tuple(e.id for e in episodes)
        if self.llm.available:
            result = self.llm.complete(PROMPT.format(episodes=render_episodes(episodes)), "mine_skills", user_id)
            if result.ok:
                parsed = parse_proposals(result.text, ids)
                if parsed is None:
                    return MiningResult((), "skill_mining (malformed output: no proposals)", ids)
                return MiningResult(tuple(parsed[0]), "skill_mining", ids, parsed[1])
            strategy = f"skill_mining_offline (LLM failed: {result.error})"
        else:
            strategy = "skill_mining_offline"
        return MiningResult(tuple(offline_proposals(episodes, allow is not None)), strategy, ids)

    def accept(
        self,
        user_id: str,
        proposal: SkillProposal | Mapping[str, Any],
        name: str | None = None,
        body: str | None = None,
        description: str | None = None,
        kind: str | None = None,
    ) -> Skill:
        """Register a proposal (optionally edited) with provenance to its source episodes."""
        p = proposal if isinstance(proposal, Mapping) else proposal.__dict__
        sources = p.get("source_episode_ids") or ()
        if isinstance(sources, str) or not all(isinstance(s, str) for s in sources):
            raise InvalidInput("source_episode_ids must be a list of episode ids")
        for s in sources:
            check_id(s, "episode id")
        conf = unit_number(p.get("confidence")) if p.get("confidence") is not None else None
        final_name = snake_name(name if name is not None else p.get("name"))
        if final_name is None:
            raise InvalidInput("a mined skill needs a snake_case name")
        provenance = {
            "method": "skill_mining",
            "sources": [{"type": "episode", "id": s} for s in sources],
            "confidence": conf,
        }
        desc = description if description is not None else (p.get("description") or "")
        skill = self.skills.prepare(
            user_id,
            final_name,
            body if body is not None else p.get("body"),
            desc,
            kind if kind is not None else (p.get("kind") or "prompt"),
            provenance=provenance,
        )
        return self.skills.add([skill])[0]
