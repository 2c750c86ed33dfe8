"""Pruning LanceDB's old table versions.

Every LanceDB write commits a new version and compaction rewrites the data files, but the files of earlier versions
stay on disk until they are cleaned up, by default for seven days: a 100k-item store took ~2 GB for ~0.25 GB of live
data. memlens never reads an old version (traces keep their own snapshot), so it deletes them once no reader can still
be on them.

LanceDB removes versions *created* before a cutoff. What matters for a reader in another process, though, is when a
version stopped being the latest: a version created a day ago and replaced a second ago may still be in use. So a
version is only deleted once its successor is older than the retention.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import lancedb

log = logging.getLogger(__name__)

# LanceDB compares creation times with its own clock, read a moment after ours (after a compaction with nothing to
# do); this slack keeps the first version that must stay from falling before its cutoff.
_SLACK = timedelta(seconds=1)
# LanceDB's "every version but the latest" (0 itself makes it warn on every call).
_NO_RETENTION = timedelta(milliseconds=1)


def prune_before(created: Sequence[datetime], now: datetime, retention: timedelta) -> datetime | None:
    """The creation time before which versions can go, given every version's creation time in commit order, or None
    when every version must stay. A version can go when its successor was created before ``now - retention``."""
    if len(created) < 2:
        return None
    horizon = now - retention
    keep = len(created) - 1  # the latest always stays
    for i in range(len(created) - 1):
        if created[i + 1] >= horizon:
            keep = i
            break
    if keep == 0:
        return None
    return created[keep]


def prune_versions(tb: lancedb.table.Table, retention_s: float) -> bool:
    """Delete the versions of one table that no reader can still be on; return whether anything was due. Call it
    right after ``tb.optimize()``: LanceDB prunes only inside optimize(), which then has nothing left to compact, so
    its own "now" is within a moment of ours. Housekeeping: a failure is logged and leaves the versions for the next
    call."""
    try:
        if retention_s <= 0:  # the caller says no other process is using the store: keep the latest version only
            tb.optimize(cleanup_older_than=_NO_RETENTION)
            return True
        versions = sorted(tb.list_versions(), key=lambda v: v["version"])  # ~7 ms for 100 versions
        now = datetime.now()  # LanceDB reports creation times as naive local times
        cutoff = prune_before([v["timestamp"] for v in versions], now, timedelta(seconds=retention_s))
        if cutoff is None:
            return False
        tb.optimize(cleanup_older_than=max(now - cutoff + _SLACK, _SLACK))
        return True
    except Exception as exc:  # a concurrent commit or an unreadable manifest; the data itself is untouched
        log.warning("could not prune old versions of %s: %s", getattr(tb, "name", "?"), exc)
        return False
