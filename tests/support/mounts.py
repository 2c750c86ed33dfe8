"""Real mounts for the partial-write tests: a small tmpfs (a disk that fills up) and read-only bind mounts.

They need root (CAP_SYS_ADMIN), as the suite has in CI and on these machines. They are made in the test process's own
mount namespace, under the test's temporary folder, and always unmounted (lazily, so a file LanceDB or DuckDB still
holds open cannot keep the mount alive). A machine where mounting fails fails these tests loudly instead of skipping
them: the guarantees they check would otherwise go untested.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _run(*argv: str) -> None:
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()} (run as root)")


def unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=60)


@contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (e.g. ``"48m"``) mounted at ``path`` for the block."""
    path.mkdir(parents=True, exist_ok=True)
    _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path))
    try:
        yield path
    finally:
        unmount(path)


@contextmanager
def read_only(source: Path, target: Path | None = None) -> Iterator[Path]:
    """``source`` seen read-only at ``target`` (default: over itself, so open handles now see a read-only disk)."""
    target = target or source
    target.mkdir(parents=True, exist_ok=True)
    _run("mount", "--bind", str(source), str(target))
    try:
        _run("mount", "-o", "remount,bind,ro", str(target))
        yield target
    finally:
        unmount(target)


def fill(folder: Path, leave: int) -> Path:
    """Fill the file system holding ``folder`` up, then give back ``leave`` bytes; returns the filler file."""
    filler = folder / "filler"
    block = b"\0" * (1 << 20)
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    size = 0
    try:
        for chunk in (1 << 20, 65536, 4096, 512, 1):  # big blocks, then the last partial ones
            while True:
                try:
                    size += os.write(fd, block[:chunk])
                except OSError:
                    break
    finally:
        os.close(fd)
    os.truncate(filler, max(0, size - leave))
    return filler


def file_digests(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by relative path, as a sha256 of its bytes (byte-for-byte comparison)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }
