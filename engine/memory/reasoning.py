"""``reason``: one LLM step over working memory (llmemory §7.5, ``Actions::Reason``).

The template's ``{{slot}}`` placeholders are filled from the session's working memory (unknown slots render empty,
non-text values as JSON), the LLM answers, an optional parser turns the answer into a value, and the value is
written into one slot with source ``llm``. It never touches long-term memory. There is no offline strategy for
free-form reasoning, so without an LLM (or when the call fails) it raises ``LLMUnavailable`` and writes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput, LLMUnavailable
from ..ids import check_id, check_text
from ..providers.llm import LLM
from .working import WorkingMemory, check_slot, parse_json_value

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")


@dataclass(frozen=True)
class ReasonResult:
    value: Any  # what was written into the slot (the parsed output, or the text)
    output: str  # the model's raw answer
    prompt: str  # the rendered template
    slot: str | None  # where it was written (None: not written)
    model: str
    input_tokens: int = 0
    output_tokens: int = 0


def render(template: str, slots: dict[str, Any]) -> str:
    """Replace each ``{{slot}}`` by the slot's value: text as is, other JSON values as JSON, unknown -> ""."""

    def value(m: re.Match[str]) -> str:
        v = slots.get(m.group(1))
        if v is None:
            return ""
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)

    return PLACEHOLDER.sub(value, template)


class Reasoner:
    def __init__(self, working: WorkingMemory, llm: LLM) -> None:
        self.working = working
        self.llm = llm

    def reason(
        self,
        user_id: str,
        session_id: str,
        template: str | Callable[[dict[str, Any]], str],
        into: str | None = "intermediate_reasoning",
        parse: str | Callable[[str], Any] | None = None,
    ) -> ReasonResult:
        """Render, ask the LLM, parse (``"json"`` or a callable), write into ``into`` (``None``: do not write)."""
        check_id(user_id, "user id")
        check_id(session_id, "session id")
        if into is not None:
            check_slot(into)
        if parse is not None and parse != "json" and not callable(parse):
            raise InvalidInput("parse must be None, 'json' or a callable")
        limit = self.working.b.settings.max_text_chars
        slots = self.working.get(user_id, session_id)
        if callable(template):
            prompt = template(dict(slots))
            if not isinstance(prompt, str):
                raise InvalidInput("a template callable must return text")
        else:
            check_text(template, "template", limit)
            prompt = render(template, slots)
        if not self.llm.available:
            raise LLMUnavailable(
                "reason needs an LLM: set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible "
                "server); nothing was written"
            )
        result = self.llm.complete(prompt, "reason", user_id)
        if not result.ok:
            raise LLMUnavailable(f"the LLM call failed ({result.error}); nothing was written")
        if parse == "json":
            text = re.sub(r"^```[a-zA-Z]*\s*|\s*```$", "", result.text.strip())  # tolerate a code fence
            value: Any = parse_json_value(text, into or "reason output")
        elif callable(parse):
            try:
                value = parse(result.text)
            except (ValueError, TypeError, KeyError) as exc:  # the caller's parser refused the output
                raise InvalidInput(f"parse failed on the model's answer: {exc}; nothing was written") from None
        else:
            value = result.text
        if into is not None:
            self.working.update(user_id, session_id, {into: value}, source="llm")
        return ReasonResult(value, result.text, prompt, into, self.llm.name, result.input_tokens, result.output_tokens)
