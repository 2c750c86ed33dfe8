"""A write-intent journal for the writes that touch both stores (DuckDB rows and LanceDB vectors).

The two stores cannot commit together. memlens orders each write so that a crash leaves at worst an invisible
vector (vectors first, then the DuckDB transaction; a forget deletes the rows first, then the vectors) and
retrieval only returns ids that are active in DuckDB. What is left behind is noted here: before the first vector
is touched, a small file names the memory kind and ids; it is removed once both stores agree. A file whose process
is gone (kill -9, power loss) marks exactly the ids a repair must look at, so opening the store repairs them
without scanning whole tables.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

_COUNTER = itertools.count()


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


class WriteJournal:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    @contextmanager
    def intent(self, kind: str, ids: Sequence[str]) -> Iterator[None]:
        """Note ``ids`` of ``kind`` for the duration of a two-store write. Not removed when the block raises
        something other than an ordinary exception (the process is going down): the next open repairs them."""
        if not ids:
            yield
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{os.getpid()}-{next(_COUNTER)}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"kind": kind, "ids": list(ids)}), encoding="utf-8")
        os.replace(tmp, path)  # a reader never sees half a file
        try:
            yield
        except Exception:  # the caller has undone its vectors
            path.unlink(missing_ok=True)
            raise
        path.unlink(missing_ok=True)

    def leftovers(self) -> list[tuple[Path, str, list[str]]]:
        """Intents of processes that are gone: (file, kind, ids). An unreadable file (cut short by the crash
        before it was renamed into place cannot happen; garbage can) is reported with no ids."""
        out: list[tuple[Path, str, list[str]]] = []
        if not self.folder.is_dir():
            return out
        for path in sorted(self.folder.glob("*.json")):
            try:
                pid = int(path.name.split("-", 1)[0])
            except ValueError:
                continue
            if _alive(pid):
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                out.append((path, str(data["kind"]), [str(i) for i in data["ids"]]))
            except (OSError, ValueError, KeyError, TypeError):
                out.append((path, "", []))
        for tmp in self.folder.glob("*.tmp"):
            try:
                if not _alive(int(tmp.name.split("-", 1)[0])):
                    tmp.unlink(missing_ok=True)
            except ValueError:
                pass
        return out
