"""The labeller's queue and what labellers did together: which (trace, memory) pairs wait for a label, how far two
labellers agree on the pairs both labelled (counts and Cohen's kappa), and the labels as JSONL rows.

A queue entry is one memory that reached the context of one trace: labels are given per (labeller, trace, memory),
so the same memory in two traces is two entries. The queue reads the traces' ``context_ids`` column, never their
packed bodies, so it is built in one query however many traces match.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations
from typing import TYPE_CHECKING, Any

from .. import validation
from ..clock import optional_time
from ..errors import InvalidInput, NotFound
from ..ids import check_id

if TYPE_CHECKING:
    from .feedback import FeedbackLog


MAX_LABELLER_CHARS = 80


def check_labeller(value: object) -> str:
    """A labeller's name: 1-80 characters of text (spaces allowed), stored stripped."""
    return validation.check_text(value, "labeller", MAX_LABELLER_CHARS).strip()


@dataclass(frozen=True)
class QueueEntry:
    """One memory to label: where it stood in the context of which trace, and this labeller's label of it."""

    user_id: str
    trace_id: str
    item_id: str
    rank: int  # 1-based position in the trace's context
    question: str
    created_at: datetime
    label: str  # this labeller's current label of it from this trace, '' when none


@dataclass(frozen=True)
class PairAgreement:
    """Two labellers on the (trace, memory) pairs both labelled: the 2x2 counts and Cohen's kappa (None when it
    is undefined: both gave one and the same label to everything, so chance agreement is already 1)."""

    first: str
    second: str
    both_useful: int
    both_harmful: int
    first_useful_second_harmful: int
    first_harmful_second_useful: int
    kappa: float | None

    @property
    def both(self) -> int:
        return self.agreed + self.first_useful_second_harmful + self.first_harmful_second_useful

    @property
    def agreed(self) -> int:
        return self.both_useful + self.both_harmful


@dataclass(frozen=True)
class Agreement:
    labellers: tuple[tuple[str, int], ...]  # each named labeller with their number of current labels
    pairs: tuple[PairAgreement, ...]  # every pair of labellers that labelled at least one pair in common


def cohen_kappa(both_useful: int, both_harmful: int, first_only_useful: int, first_only_harmful: int) -> float | None:
    """Cohen's kappa of two raters over two categories, from the 2x2 table: (p_o - p_e) / (1 - p_e), with p_o the
    observed agreement and p_e the agreement expected from each rater's own label rates."""
    n = both_useful + both_harmful + first_only_useful + first_only_harmful
    if n == 0:
        return None
    observed = (both_useful + both_harmful) / n
    first_useful = (both_useful + first_only_useful) / n
    second_useful = (both_useful + first_only_harmful) / n
    expected = first_useful * second_useful + (1 - first_useful) * (1 - second_useful)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)


def build_queue(
    log: FeedbackLog,
    user_id: str,
    labeller: str,
    since: Any = None,
    until: Any = None,
    run_id: str | None = None,
    unlabelled_only: bool = True,
) -> list[QueueEntry]:
    """Every (trace, memory) of the user's traces that match: created in [since, until), or (``run_id``) the
    traces of that evaluation run's cases that lost an expected memory; evaluation traces only through a run.
    Newest trace first, each trace's memories in context order; memories no longer stored are left out."""
    check_id(user_id, "user id")
    labeller = check_labeller(labeller)
    start, end = optional_time(since, "since"), optional_time(until, "until")
    if start and end and end <= start:
        raise InvalidInput("the end of the date range must come after its start")
    where: list[str] = ["t.user_id = ?"]
    params: list[Any] = [user_id]
    if start:
        where.append("t.created_at >= ?")
        params.append(start)
    if end:
        where.append("t.created_at < ?")
        params.append(end)
    with log.b.db.read() as conn:
        if run_id is not None:
            check_id(run_id, "run id")
            if conn.execute("SELECT 1 FROM eval_runs WHERE id=?", [run_id]).fetchone() is None:
                raise NotFound(f"no evaluation run {run_id!r}")
            missed = [
                r[0]
                for r in conn.execute(
                    "SELECT trace_id, lost FROM eval_results WHERE run_id=? AND user_id=? AND trace_id IS NOT NULL",
                    [run_id, user_id],
                ).fetchall()
                if json.loads(r[1] or "{}")
            ]
            where.append("t.id IN (SELECT unnest(?))")
            params.append(missed)
        else:  # an evaluation's traces are its questions asked by the evaluator: not what the agent recalled
            where.append("NOT EXISTS (SELECT 1 FROM eval_results r WHERE r.trace_id = t.id)")
        traces = conn.execute(
            f"SELECT t.id, t.question, t.created_at, t.context_ids FROM traces t WHERE {' AND '.join(where)} "
            "ORDER BY t.created_at DESC, t.id",
            params,
        ).fetchall()
        labels = {
            (r[0], r[1]): r[2]
            for r in conn.execute(
                "SELECT trace_id, item_id, label FROM feedback WHERE user_id=? AND labeller=? "
                "AND replaced_at IS NULL AND trace_id IS NOT NULL",
                [user_id, labeller],
            ).fetchall()
        }
        contexts = [(t, json.loads(t[3] or "[]")) for t in traces]
        stored = log.existing_ids(conn, user_id, sorted({i for _, ids in contexts for i in ids}))
    out = []
    for (trace_id, question, created_at, _), ids in contexts:
        for rank, item_id in enumerate(ids, 1):
            label = labels.get((trace_id, item_id), "")
            if item_id in stored and not (unlabelled_only and label):
                out.append(QueueEntry(user_id, trace_id, item_id, rank, question, created_at, label))
    return out


def agreement(log: FeedbackLog, user_id: str) -> Agreement:
    """How the named labellers agree on the (trace, memory) pairs they both labelled (current labels; labels from
    before labellers were recorded are left out: they may be anyone's)."""
    check_id(user_id, "user id")
    with log.b.db.read() as conn:
        rows = conn.execute(
            "SELECT labeller, coalesce(trace_id, ''), item_id, label FROM feedback "
            "WHERE user_id=? AND replaced_at IS NULL AND labeller <> ''",
            [user_id],
        ).fetchall()
    by_labeller: dict[str, dict[tuple[str, str], str]] = {}
    for labeller, trace_id, item_id, label in rows:
        by_labeller.setdefault(labeller, {})[(trace_id, item_id)] = label
    pairs = []
    for first, second in combinations(sorted(by_labeller), 2):
        a, b = by_labeller[first], by_labeller[second]
        shared = [(a[k], b[k]) for k in a.keys() & b.keys()]
        if not shared:
            continue
        uu, hh, uh, hu = (sum(1 for pair in shared if pair == want) for want in _CELLS)
        pairs.append(PairAgreement(first, second, uu, hh, uh, hu, cohen_kappa(uu, hh, uh, hu)))
    counts = tuple((name, len(labels)) for name, labels in sorted(by_labeller.items()))
    return Agreement(counts, tuple(pairs))


_CELLS = (("useful", "useful"), ("harmful", "harmful"), ("useful", "harmful"), ("harmful", "useful"))


def label_rows(log: FeedbackLog, user_id: str, labeller: str | None = None) -> list[dict[str, Any]]:
    """The user's current labels (one labeller's, or everyone's) as JSONL-ready rows, oldest first: the memory
    and its text, the label, who gave it, and the trace's question."""
    events = log.events(user_id, labeller=labeller, current_only=True, limit=10_000_000)
    texts = log.memory_texts(user_id, sorted({e.item_id for e in events}))
    traced = sorted({e.trace_id for e in events if e.trace_id})
    questions = _questions(log, user_id, traced)
    return [
        {
            "user_id": e.user_id,
            "trace_id": e.trace_id,
            "question": questions.get(e.trace_id or ""),
            "item_id": e.item_id,
            "text": texts.get(e.item_id),
            "label": e.label,
            "labeller": e.labeller,
            "hop": e.hop,
            "note": e.note,
            "created_at": e.created_at.isoformat(),
        }
        for e in reversed(events)
    ]


def _questions(log: FeedbackLog, user_id: str, trace_ids: Sequence[str]) -> dict[str, str]:
    if not trace_ids:
        return {}
    with log.b.db.read() as conn:
        rows = conn.execute(
            "SELECT id, question FROM traces WHERE user_id=? AND id IN (SELECT unnest(?))", [user_id, list(trace_ids)]
        ).fetchall()
    return {r[0]: r[1] for r in rows}
