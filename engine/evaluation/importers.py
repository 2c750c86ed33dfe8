"""Benchmark importers: LoCoMo (``locomo10.json``) and LongMemEval (``longmemeval_s``) into a store, as users, one
semantic item per turn and an expectation set (protocols: ../shared/data/README.md).

Every turn becomes an item with its session's date as ``created_at`` and the turn before it in the same session as its
``preceding_text``. LoCoMo: one user per conversation, item text ``{speaker} said, "{text}"`` (plus ``and shared
{caption}`` for image turns), item id ``<conversation>:<dia_id>``, one case per QA with resolvable evidence
(category name, ``now`` = the last session date + 1 day). LongMemEval: one user per question holding its haystack,
item text ``{role}: {content}``, item id ``<user>:<session>:<turn>``, the ``has_answer`` turns expected,
``now`` = ``question_date``, the category = ``question_type``.

Importing is idempotent: items already in the store are skipped (not embedded again) and cases are replaced by id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..memory.semantic import SemanticMemory
from .sets import ExpectationSets

EVIDENCE = re.compile(r"D(\d+):(\d+)")
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
BATCH = 1024  # items embedded and written per transaction; 256 imported at 0.82x the encoder alone, 1024 at 1.06x
ImportProgress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Conversation:
    """One benchmark unit to import: a user's turns and the cases asked of them."""

    user_id: str
    turns: list[dict[str, Any]]  # id, content, created_at, preceding_text, category
    cases: list[dict[str, Any]]  # case_id, question, expected, category, now
    skipped: int  # questions without resolvable evidence


def safe_id(text: str) -> str:
    """A benchmark's name made into an id (letters, digits and . _ : @ + -)."""
    out = re.sub(r"[^A-Za-z0-9._:@+-]", "-", str(text)).strip("-.")[:100]
    return out if out and out[0].isalnum() else f"x{out}"[:100]


def locomo_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def locomo_evidence(qa: dict[str, Any]) -> set[str]:
    """Every ``D<s>:<t>`` in the evidence list, zero-padding dropped (``D30:05`` -> ``D30:5``)."""
    return {f"D{int(s)}:{int(t)}" for ev in qa.get("evidence") or [] for s, t in EVIDENCE.findall(str(ev))}


def locomo_units(data: Any) -> Iterator[Conversation]:
    if not isinstance(data, list):
        raise InvalidInput("a LoCoMo file is a JSON list of conversations")
    for n, conv in enumerate(data):
        try:
            c = conv["conversation"]
            user = safe_id(conv.get("sample_id") or f"locomo-{n}")
            turns: list[dict[str, Any]] = []
            keys = sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
            for key in keys:
                when = locomo_date(c[f"{key}_date_time"])
                previous = None
                for t in c[key]:
                    text = f'{t["speaker"]} said, "{t["text"]}"'
                    if t.get("blip_caption"):
                        text += f" and shared {t['blip_caption']}"
                    turns.append(
                        {
                            "id": f"{user}:{t['dia_id']}",
                            "content": text,
                            "created_at": when,
                            "preceding_text": previous,
                            "category": "dialog",
                        }
                    )
                    previous = text
            qas = conv["qa"]
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"LoCoMo conversation {n}: not in the locomo10.json format ({exc})") from None
        known = {t["id"] for t in turns}
        now = max((t["created_at"] for t in turns), default=datetime(2000, 1, 1, tzinfo=UTC)) + timedelta(days=1)
        cases, skipped = [], 0
        for q, qa in enumerate(qas):
            gold = sorted(g for g in (f"{user}:{e}" for e in locomo_evidence(qa)) if g in known)
            if not gold or not str(qa.get("question") or "").strip():
                skipped += 1
                continue
            cat = qa.get("category")
            cases.append(
                {
                    "case_id": f"{user}:q{q}",
                    "question": str(qa["question"]),
                    "expected": gold,
                    "category": LOCOMO_CATEGORIES.get(cat, safe_id(str(cat))),
                    "now": now,
                }
            )
        yield Conversation(user, turns, cases, skipped)


def longmemeval_date(text: str) -> datetime:
    """``2023/06/20 (Tue) 17:03`` -> an aware datetime (the weekday is dropped)."""
    cleaned = re.sub(r"\s*\([A-Za-z]+\)\s*", " ", str(text)).strip()
    return datetime.strptime(cleaned, "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def longmemeval_units(data: Any, max_chars: int) -> Iterator[Conversation]:
    if not isinstance(data, list):
        raise InvalidInput("a LongMemEval file is a JSON list of questions")
    for n, q in enumerate(data):
        try:
            user = safe_id(f"lme-{q['question_id']}")
            turns, gold, seen = [], [], set()
            for sid, date, session in zip(
                q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True
            ):
                when = longmemeval_date(date)
                previous = None
                for k, t in enumerate(session):
                    text = f"{t['role']}: {t['content']}"[:max_chars]
                    item_id = f"{user}:{safe_id(sid)}:{k}"
                    if item_id in seen:  # the same session twice in one haystack: its first copy is kept
                        continue
                    seen.add(item_id)
                    turns.append(
                        {
                            "id": item_id,
                            "content": text,
                            "created_at": when,
                            "preceding_text": previous,
                            "category": "user_turn" if t["role"] == "user" else "assistant_turn",
                        }
                    )
                    previous = text
                    if t.get("has_answer"):
                        gold.append(item_id)
            now = longmemeval_date(q["question_date"])
            question, qtype = str(q["question"]), safe_id(q["question_type"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"LongMemEval question {n}: not in the longmemeval_s format ({exc})") from None
        ok = bool(gold) and bool(question.strip())
        cases = (
            [{"case_id": user, "question": question, "expected": sorted(set(gold)), "category": qtype, "now": now}]
            if ok
            else []
        )
        yield Conversation(user, turns, cases, 0 if ok else 1)


def read_units(kind: str, path: str | Path, max_chars: int) -> list[Conversation]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path}: not JSON ({exc})") from None
    if kind == "locomo":
        return list(locomo_units(data))
    if kind == "longmemeval":
        return list(longmemeval_units(data, max_chars))
    raise InvalidInput(f"unknown benchmark {str(kind)[:20]!r}; use locomo or longmemeval")


def import_benchmark(
    semantic: SemanticMemory,
    sets: ExpectationSets,
    kind: str,
    path: str | Path,
    set_name: str,
    limit: int | None = None,
    preceding: bool = True,
    progress: ImportProgress | None = None,
) -> dict[str, Any]:
    """Write the benchmark's users, items and expectation set; returns counts. Items already stored are skipped."""
    units = read_units(kind, path, semantic.b.settings.max_text_chars)[: limit or None]
    sets.create(set_name, f"{kind} benchmark imported from {Path(path).name}", exist_ok=True)
    turns = [(u.user_id, t) for u in units for t in u.turns]
    with semantic.b.db.read() as conn:
        have = {
            r[0]
            for r in conn.execute(
                "SELECT id FROM items WHERE id IN (SELECT unnest(?))", [[t["id"] for _, t in turns]]
            ).fetchall()
        }
    todo = [(u, t) for u, t in turns if t["id"] not in have]
    with semantic.b.index.deferred_upkeep():  # one upkeep per table at the end (vectors/maintenance.py)
        _write_turns(semantic, kind, todo, preceding, progress)
    cases = [
        sets.prepare(
            set_name,
            u.user_id,
            c["question"],
            c["expected"],
            case_id=c["case_id"],
            now=c["now"],
            category=c["category"],
            source="imported",
        )
        for u in units
        for c in u.cases
    ]
    sets.add(cases)
    if progress is not None:
        progress("cases", len(cases), len(cases))
    return {
        "set": set_name,
        "benchmark": kind,
        "users": len(units),
        "turns": len(turns),
        "turns_added": len(todo),
        "turns_already_stored": len(turns) - len(todo),
        "cases": len(cases),
        "skipped_no_evidence": sum(u.skipped for u in units),
    }


def _write_turns(
    semantic: SemanticMemory,
    kind: str,
    todo: list[tuple[str, dict[str, Any]]],
    preceding: bool,
    progress: ImportProgress | None,
) -> None:
    for start in range(0, len(todo), BATCH):
        chunk = todo[start : start + BATCH]
        items = [
            semantic.prepare(
                user,
                t["content"],
                t["category"],
                None,
                False,
                {"method": kind},
                kind,
                t["created_at"],
                id=t["id"],
                method=kind,
                preceding_text=t["preceding_text"] if preceding else None,
            )
            for user, t in chunk
        ]
        semantic.add(items)
        if progress is not None:
            progress("turns", start + len(chunk), len(todo))
