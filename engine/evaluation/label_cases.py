"""Labels into an expectation set in one step: each labelled trace's question becomes a case whose expected
memories are the ones its labellers found useful ("these memories should have been found").

A memory is expected for a trace when its useful labels there outnumber its harmful ones (with one labeller named:
when that labeller's label is useful). Traces of the same question merge into one case; a question the set already
holds for that user has its case replaced (same case id), as pinning does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..ids import check_id
from ..memory.label_queue import check_labeller
from .records import EvalCase

if TYPE_CHECKING:
    from ..memory.base import Backends
    from ..trace.records import RetrievalTrace
    from .sets import ExpectationSets


def cases_from_labels(
    b: Backends,
    sets: ExpectationSets,
    get_trace: Callable[[str], RetrievalTrace],
    set_name: str,
    user_id: str,
    labeller: str | None = None,
    category: str | None = None,
) -> list[EvalCase]:
    check_id(user_id, "user id")
    where = ["user_id = ?", "replaced_at IS NULL", "trace_id IS NOT NULL"]
    params: list[Any] = [user_id]
    if labeller is not None:
        where.append("labeller = ?")
        params.append(check_labeller(labeller))
    with b.db.read() as conn:
        rows = conn.execute(
            f"SELECT trace_id, item_id, sum(delta) FROM feedback WHERE {' AND '.join(where)} "
            "GROUP BY trace_id, item_id ORDER BY trace_id, min(created_at), item_id",
            params,
        ).fetchall()
    expected: dict[str, list[str]] = {}
    for trace_id, item_id, net in rows:
        if net > 0:
            expected.setdefault(trace_id, []).append(item_id)
    if not expected:
        who = f"{labeller!r} has" if labeller is not None else "the labellers have"
        raise InvalidInput(f"{who} labelled no memory of {user_id!r} useful on a trace: nothing to expect yet")
    by_question: dict[str, dict[str, Any]] = {}
    for trace_id in sorted(expected):
        trace = get_trace(trace_id)
        case = by_question.setdefault(
            trace.question,
            {"question": trace.question, "session_id": trace.session_id, "now": trace.settings.now, "ids": []},
        )
        case["ids"] = list(dict.fromkeys([*case["ids"], *expected[trace_id]]))
    pinned = {c.question: c for c in sets.cases(set_name) if c.user_id == user_id} if sets.exists(set_name) else {}
    prepared = [
        sets.prepare(
            set_name,
            user_id,
            q,
            c["ids"],
            case_id=pinned[q].case_id if q in pinned else None,
            session_id=c["session_id"],
            now=c["now"],
            category=category or (pinned[q].category if q in pinned else None),
            source="pinned",
        )
        for q, c in by_question.items()
    ]
    return sets.add(prepared, create_set=True)  # one transaction: all cases or none
