"""Where a store lives: a local folder (or a file:// URI), checked before anything opens it."""

from __future__ import annotations

import shutil
from pathlib import Path

from .errors import InvalidInput
from .storage.database import release_under
from .validation import text_problem


def store_path(location: str | Path) -> Path:
    text = str(location)
    if not text.strip():  # "" would silently be the current directory
        raise InvalidInput("store location is empty: give a folder path (or a file:// URI)")
    problem = text_problem(text)
    if problem:
        raise InvalidInput(f"store location {problem}")
    if text.startswith("file://"):
        text = text[len("file://") :]
    elif "://" in text:
        raise InvalidInput(f"store {text[:60]!r}: only local folders (or file:// URIs) are supported so far")
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise InvalidInput(f"store {path} is a file, not a folder")
    return path


def remove_store(path: str | Path) -> None:
    """Delete a store folder (tests and benchmarks)."""
    release_under(store_path(path))
    shutil.rmtree(store_path(path), ignore_errors=True)
