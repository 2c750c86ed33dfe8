"""A write-intent journal for the writes that touch both stores (DuckDB rows and LanceDB vectors).

The two stores cannot commit together. memlens orders each write so that a crash leaves at worst an invisible
vector (vectors first, then the DuckDB transaction; a forget deletes the rows first, then the vectors) and
retrieval only returns ids that are active in DuckDB. What is left behind is noted here: before the first vector
is touched, a small file names the memory kind and ids. It is removed only once both stores agree: when the write
ends normally, or when the caller has undone its vectors (``Note.settle``). A write that fails part-way (an
unreadable table, a full disk, a commit that went through and a vector delete that did not) keeps its note, renamed
``failed-<digest>.json`` so that any process repairs it at its next open, and a note whose process is gone (kill -9,
power loss) is repaired the same way: the note names exactly the ids to repair, so nothing is scanned.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import StoreReadOnly, disk_error

_COUNTER = itertools.count()
FAILED_PREFIX = "failed-"
# The notes of this process whose write is still running: every other note of this process is a leftover of a
# failed write (a note whose rename to failed-... did not go through) and may be repaired.
_IN_FLIGHT: set[Path] = set()
_IN_FLIGHT_LOCK = threading.Lock()
log = logging.getLogger(__name__)


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


class Note:
    """One two-store write's note (``path`` None: nothing was noted, e.g. a team store or no ids)."""

    def __init__(self, path: Path | None, kind: str = "", ids: Sequence[str] = ()) -> None:
        self.path = path
        self.kind = kind
        self.ids = list(ids)

    def settle(self) -> None:
        """Both stores agree again (the write finished, or its vectors were undone): remove the note."""
        if self.path is None:
            return
        path, self.path = self.path, None
        try:
            path.unlink(missing_ok=True)
        finally:
            with _IN_FLIGHT_LOCK:
                _IN_FLIGHT.discard(path)

    def keep(self) -> None:
        """The stores may disagree on these ids: leave the note for the next open to repair, under a name every
        process treats as a leftover (the same ids failing again overwrite it, so notes do not pile up)."""
        if self.path is None:
            return
        path, self.path = self.path, None
        digest = hashlib.sha256(json.dumps([self.kind, sorted(self.ids)]).encode()).hexdigest()[:24]
        try:
            os.replace(path, path.with_name(f"{FAILED_PREFIX}{digest}.json"))
        except OSError:  # it stays under this process's id: repaired by this process's next open, or after it ends
            pass
        finally:
            with _IN_FLIGHT_LOCK:
                _IN_FLIGHT.discard(path)


def _write_refused(exc: OSError, folder: Path) -> Exception:
    """The named error for a note that could not be written (nothing else has been touched yet)."""
    named = disk_error(exc, folder.parent)
    if named is not None:
        return named
    if exc.errno in (errno.EACCES, errno.EPERM):
        return StoreReadOnly(f"the store's journal {folder} cannot be written ({exc.strerror}); nothing was written")
    return exc


class WriteJournal:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    @contextmanager
    def intent(self, kind: str, ids: Sequence[str]) -> Iterator[Note]:
        """Note ``ids`` of ``kind`` for the duration of a two-store write. Removed when the block ends normally (or
        the caller settles it); kept when the block raises anything, since the vectors may then disagree with
        DuckDB. A full or read-only disk met inside the block is raised as StoreFull / StoreReadOnly."""
        if not ids:
            yield Note(None)
            return
        note = Note(self._write(kind, ids), kind, ids)
        try:
            yield note
        except Exception as exc:
            note.keep()
            named = disk_error(exc, self.folder.parent)
            if named is not None:
                raise named from exc
            raise
        except BaseException:  # the process is going down: the next open repairs these ids
            note.keep()
            raise
        note.settle()

    def _write(self, kind: str, ids: Sequence[str]) -> Path:
        path = self.folder / f"{os.getpid()}-{next(_COUNTER)}.json"
        tmp = path.with_suffix(".tmp")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"kind": kind, "ids": list(ids)}), encoding="utf-8")
            with _IN_FLIGHT_LOCK:
                _IN_FLIGHT.add(path)
            os.replace(tmp, path)  # a reader never sees half a file
        except OSError as exc:
            with _IN_FLIGHT_LOCK:
                _IN_FLIGHT.discard(path)
            try:
                tmp.unlink(missing_ok=True)  # a half-written note is no note
            except OSError:
                pass
            raise _write_refused(exc, self.folder) from None
        return path

    def leftovers(self) -> list[tuple[Path, str, list[str]]]:
        """Notes to repair: (file, kind, ids). Those of failed writes, of processes that are gone, and of this
        process's writes that are no longer running; never a write still in flight. An unreadable file (cut short
        by the crash before it was renamed into place cannot happen; garbage can) is reported with no ids."""
        out: list[tuple[Path, str, list[str]]] = []
        if not self.folder.is_dir():
            return out
        with _IN_FLIGHT_LOCK:
            in_flight = set(_IN_FLIGHT)
        for path in sorted(self.folder.glob("*.json")):
            if not path.name.startswith(FAILED_PREFIX):
                try:
                    pid = int(path.name.split("-", 1)[0])
                except ValueError:
                    continue
                if path in in_flight or (pid != os.getpid() and _alive(pid)):
                    continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                out.append((path, str(data["kind"]), [str(i) for i in data["ids"]]))
            except FileNotFoundError:  # another process repaired it meanwhile
                continue
            except (OSError, ValueError, KeyError, TypeError):
                out.append((path, "", []))
        for tmp in self.folder.glob("*.tmp"):
            try:
                if not _alive(int(tmp.name.split("-", 1)[0])):
                    tmp.unlink(missing_ok=True)
            except (ValueError, OSError):
                pass
        return out

    def recover(self, repair: Callable[[str, list[str]], Any], kinds: Sequence[str]) -> int:
        """Repair the ids of every leftover note with ``repair(kind, ids)``; a note is removed only once its repair
        went through (an unreadable vector table keeps it, and the store still opens: ``stats`` names the table and
        ``repair`` rebuilds it). Returns the notes still left."""
        left = 0
        for path, kind, ids in self.leftovers():
            if kind in kinds:
                try:
                    repair(kind, ids)
                except Exception as exc:  # the store must still open; the note waits for the next one
                    log.warning("could not repair %d %s id(s) noted in %s yet: %s", len(ids), kind, path.name, exc)
                    left += 1
                    continue
            try:
                path.unlink(missing_ok=True)
            except OSError:
                left += 1
        return left
