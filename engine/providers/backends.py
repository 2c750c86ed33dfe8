"""The embedder and LLM a store's settings ask for, built once when an engine opens."""

from __future__ import annotations

from typing import Any

from ..config import Settings
from .embedders import Embedder, OpenAIEmbedder
from .llm import LLM, NoLLM, OpenAIChat
from .local_models import local_embedder


class UsageRelay:
    """Token usage reported by the OpenAI backends, passed on to the engine once it exists (the backends are built
    before it)."""

    def __init__(self) -> None:
        self.target: Any = None

    def __call__(self, user_id: str | None, operation: str, model: str, input_tokens: int, output_tokens: int) -> None:
        if self.target is not None:
            self.target.record_usage(user_id, operation, model, input_tokens, output_tokens)


def configured_backends(
    settings: Settings, embedder: Embedder | None, llm: LLM | None, sink: UsageRelay
) -> tuple[Embedder, LLM]:
    """The given backends, or the ones the settings name: OpenAI (or a compatible server) when a key is set, else
    the local model ``local_model`` names and no LLM."""
    client = None
    if settings.llm_configured:
        import openai

        client = openai.OpenAI(
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url or None,
            timeout=settings.llm_timeout_s,
            max_retries=0,
        )
    if embedder is None:
        # Embeddings use the openai client's own retries (429/5xx/connection, with backoff); chat retries itself.
        embedder = (
            OpenAIEmbedder(client.with_options(max_retries=settings.llm_retries), settings.embedding_model, sink)
            if settings.embedder_choice == "openai" and client is not None
            else local_embedder(settings.local_model, settings.embed_precision)
        )
    if llm is None:
        llm = (
            OpenAIChat(client, settings.chat_model, settings.llm_retries, sink, settings.llm_backoff_s)
            if client
            else NoLLM()
        )
    return embedder, llm
