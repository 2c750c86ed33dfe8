"""Drive ``python -m engine`` in-process (fast) or as a real subprocess, and read what it printed."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import MemoryEngine, Settings
from engine.cli import main

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    @property
    def one_error_line(self) -> bool:
        """The CLI's error contract: exactly one line on stderr, starting with ``error:``, no traceback."""
        return (
            self.err.startswith("error: ")
            and self.err.endswith("\n")
            and self.err.count("\n") == 1
            and "Traceback" not in self.err
        )


def cli(store: Path, *argv: str) -> Run:
    """Run the CLI in this process with an empty environment (a developer's OPENAI_API_KEY must not matter).
    Bugs still raise (``raise_unexpected``) so a test never mistakes a crash for a handled error."""
    out, err = io.StringIO(), io.StringIO()
    code = main(["--store", str(store), *argv], environ={}, stdout=out, stderr=err, raise_unexpected=True)
    return Run(code, out.getvalue(), err.getvalue())


def cli_subprocess(store: Path, *argv: str, timeout: float = 300) -> Run:
    """Run ``python -m engine`` as a real process from the project root, without LLM or store variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMLENS_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "--store", str(store), *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def open_store(store: Path, embedder) -> MemoryEngine:
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(store), lock_timeout_s=30), embedder=embedder)


def copy_store(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest)
    return dest
