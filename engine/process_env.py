"""The process environment memlens runs in: what every memlens process sets before LanceDB or torch loads, what a
program it starts inherits, and LanceDB's S3 options read from the standard AWS variables. The settings (and their
environment variables) are declared in engine/config.py."""

from __future__ import annotations

import os
from collections.abc import Mapping

# What every memlens process needs in its environment, set by prepare_process_environment() (never by importing this
# module): nothing may download at run time, LanceDB's per-query warnings are noise in a CLI, and torch's OpenMP
# threads otherwise spin for a while after each embedding and take a core from the LanceDB and DuckDB work that
# follows it (a retrieval measured ~25% slower). LanceDB and torch read these once, when they are imported.
PROCESS_ENV_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LANCEDB_LOG": "error",
    "TOKENIZERS_PARALLELISM": "false",
    "TRANSFORMERS_VERBOSITY": "error",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "OMP_WAIT_POLICY": "PASSIVE",
    "MEM0_TELEMETRY": "False",  # mem0 (the mem0 importer, engine/interop/mem0_import.py) reads it at its import
}


def prepare_process_environment() -> None:
    """Set PROCESS_ENV_DEFAULTS in this process, keeping any value already set. The entry points call it before
    LanceDB or torch is imported: the CLI (and so the MCP server), the dashboard, ``MemoryEngine`` and the local
    model's loader; both libraries are imported lazily, so a library user gets it from ``MemoryEngine`` too."""
    for name, value in PROCESS_ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)


# LanceDB storage_options from the standard AWS variables (and the two names some tools use for the endpoint).
_AWS_OPTIONS = (
    ("AWS_ENDPOINT_URL_S3", "endpoint"),
    ("AWS_ENDPOINT_URL", "endpoint"),
    ("AWS_REGION", "region"),
    ("AWS_DEFAULT_REGION", "region"),
    ("AWS_ACCESS_KEY_ID", "aws_access_key_id"),
    ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
    ("AWS_SESSION_TOKEN", "aws_session_token"),
)


def s3_storage_options(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """LanceDB's ``storage_options`` for s3:// from the AWS variables; an http:// endpoint (a local MinIO or moto)
    needs ``allow_http``."""
    env = os.environ if environ is None else environ
    options: dict[str, str] = {}
    for var, key in _AWS_OPTIONS:
        if env.get(var) and key not in options:
            options[key] = env[var]
    if options.get("endpoint", "").startswith("http://"):
        options["allow_http"] = "true"
    return options


def child_environment(overrides: Mapping[str, str]) -> dict[str, str]:
    """This process's environment with ``overrides``: what a program memlens starts (the dashboard) runs with."""
    return {**os.environ, **overrides}
