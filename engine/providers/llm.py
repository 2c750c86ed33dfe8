"""The LLM behind one small interface: ``complete(prompt, operation, user_id) -> LLMResult``.

``OpenAIChat`` talks to OpenAI or any OpenAI-compatible server through the real ``openai`` client, with timeouts,
retries with backoff on 429/5xx/connection errors, and token usage reported to a ledger. ``NoLLM`` is what runs
without a key: it always answers "unavailable", and every feature then uses its documented offline strategy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from openai import OpenAI

UsageSink = Callable[[str | None, str, str, int, int], None]  # user, operation, model, input, output tokens


@dataclass(frozen=True)
class LLMResult:
    ok: bool
    text: str = ""
    error: str = ""
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


class LLM(Protocol):
    name: str
    available: bool

    def complete(self, prompt: str, operation: str, user_id: str | None = None) -> LLMResult: ...


class NoLLM:
    name = "offline"
    available = False

    def complete(self, prompt: str, operation: str, user_id: str | None = None) -> LLMResult:
        return LLMResult(False, error="no LLM configured")


class OpenAIChat:
    available = True

    def __init__(
        self,
        client: OpenAI,
        model: str,
        retries: int = 2,
        usage_sink: Callable[..., None] | None = None,
        backoff_s: float = 0.5,
    ) -> None:
        self.client = client
        self.model = model
        self.name = f"openai:{model}"
        self.retries = retries
        self.backoff_s = backoff_s
        self.usage_sink = usage_sink

    def complete(self, prompt: str, operation: str, user_id: str | None = None) -> LLMResult:
        return self._chat(prompt, operation, user_id, {})

    def complete_structured(
        self, prompt: str, schema: dict[str, Any], schema_name: str, operation: str, user_id: str | None = None
    ) -> LLMResult:
        """An answer constrained to a JSON schema (OpenAI structured outputs, ``response_format`` json_schema,
        strict); a server that refuses the parameter gives a failed result, and the caller falls back to
        :meth:`complete`."""
        json_schema = {"name": schema_name, "schema": schema, "strict": True}
        response_format = {"type": "json_schema", "json_schema": json_schema}
        return self._chat(prompt, operation, user_id, {"response_format": response_format})

    def _chat(self, prompt: str, operation: str, user_id: str | None, extra: dict[str, Any]) -> LLMResult:
        import openai

        last = ""
        for attempt in range(1, self.retries + 2):
            try:
                resp = self.client.chat.completions.create(
                    model=self.model, messages=[{"role": "user", "content": prompt}], temperature=0.3, **extra
                )
            except (
                openai.RateLimitError,
                openai.InternalServerError,
                openai.APIConnectionError,
                openai.APITimeoutError,
            ) as exc:
                last = f"{type(exc).__name__}: {str(exc)[:200]}"
                if attempt <= self.retries:
                    time.sleep(self.backoff_s * 2 ** (attempt - 1))
                continue
            except openai.OpenAIError as exc:
                return LLMResult(False, error=f"{type(exc).__name__}: {str(exc)[:200]}", attempts=attempt)
            try:
                text = resp.choices[0].message.content or ""
            except (AttributeError, IndexError, TypeError):
                return LLMResult(False, error="malformed response: no choices", attempts=attempt)
            usage = getattr(resp, "usage", None)
            i = int(getattr(usage, "prompt_tokens", 0) or 0)
            o = int(getattr(usage, "completion_tokens", 0) or 0)
            if self.usage_sink is not None and (i or o):
                self.usage_sink(user_id, operation, self.model, i, o)
            return LLMResult(True, text.strip(), attempts=attempt, input_tokens=i, output_tokens=o)
        return LLMResult(False, error=f"gave up after {self.retries + 1} attempts: {last}", attempts=self.retries + 1)
