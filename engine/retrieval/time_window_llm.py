"""The LLM's reading of the date window a question names (``time_parser`` llm, or auto with an LLM configured):
structured output when the server offers it, a plain call otherwise, and a reason string (never an exception) when
the answer is unusable, so the offline rules (time_window.py) take over."""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any

from ..providers.llm import LLM, LLMResult
from ..trace.time_records import TimeWindow

__all__ = ["LLM_PROMPT", "SCHEMA", "llm_window", "parse_answer"]

OPERATION = "time_window"
LLM_PROMPT = (
    "Today is {today} ({weekday}). Does this question restrict what it asks about to a period of time (a date, "
    "a month, a year, 'last week', 'two weeks before 8 May 2023', 'in the past month')? A question that only asks "
    "FOR a time ('When did ...?', 'How many days ago ...?') names none.\n"
    'Reply with only a JSON object: {{"start": "YYYY-MM-DD", "end": "YYYY-MM-DD", "phrase": "<the words that '
    'name the period>"}} (both days included), or {{"start": null, "end": null, "phrase": null}} when it names no '
    "period.\n\nQuestion: {question}"
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "start": {"type": ["string", "null"]},
        "end": {"type": ["string", "null"]},
        "phrase": {"type": ["string", "null"]},
    },
    "required": ["start", "end", "phrase"],
    "additionalProperties": False,
}


def parse_answer(text: str) -> tuple[date, date, str] | None | str:
    """The LLM's answer: (start, end, phrase), None when it names no period, or a string saying what was wrong."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return "no JSON object"
    try:
        value = json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return "no JSON object"
    if not isinstance(value, dict):
        return "no JSON object"
    if value.get("start") is None and value.get("end") is None:
        return None
    try:
        first = date.fromisoformat(str(value.get("start") or value.get("end")))
        last = date.fromisoformat(str(value.get("end") or value.get("start")))
    except ValueError:
        return "dates not in YYYY-MM-DD form"
    if last < first:
        return "end before start"
    return first, last, " ".join(str(value.get("phrase") or "").split())[:200]


def llm_window(llm: LLM, question: str, now: datetime, user_id: str | None) -> TimeWindow | None | str:
    """The window the LLM reads in ``question`` (None: it names none), or a string saying why it failed."""
    prompt = LLM_PROMPT.format(today=now.date().isoformat(), weekday=now.strftime("%A"), question=question)
    structured = getattr(llm, "complete_structured", None)
    answer: tuple[date, date, str] | None | str = "no answer"
    if callable(structured):
        result: LLMResult = structured(prompt, SCHEMA, "time_window", OPERATION, user_id)
        answer = parse_answer(result.text) if result.ok else result.error or "failed"
    if isinstance(answer, str):
        result = llm.complete(prompt, OPERATION, user_id)
        answer = parse_answer(result.text) if result.ok else f"LLM unavailable: {result.error}"
    if answer is None or isinstance(answer, str):
        return answer
    first, last, phrase = answer
    return TimeWindow(first.isoformat(), last.isoformat(), phrase, "llm")
