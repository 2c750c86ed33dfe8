"""``python tests/support/moto_server.py -H HOST -p PORT``: moto's S3 server (``python -m moto.server``) with one
hot spot made cheaper, its answers unchanged.

moto turns every timestamp of an answer back into a datetime with botocore's general parser (dateutil), ~1 ms each:
a LIST answer carries one per object, and LanceDB lists a table's versions on every read (read_consistency_interval
0), so half of the server's time in the team-store tests went to parsing the ``%Y-%m-%dT%H:%M:%S.000Z`` strings moto
itself had just formatted. Those are parsed here with ``strptime`` to the same aware UTC datetime; any other value
goes to botocore's parser as before.
"""

from __future__ import annotations

import re
import sys
from datetime import datetime
from typing import Any

from botocore.utils import parse_to_aware_datetime
from dateutil.tz import tzutc

_MOTO_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z")
_UTC = tzutc()


def aware_datetime(value: Any) -> datetime:
    """botocore's ``parse_to_aware_datetime``, without dateutil for the ISO 8601 UTC strings moto writes."""
    if isinstance(value, str) and _MOTO_STAMP.fullmatch(value):
        fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if "." in value else "%Y-%m-%dT%H:%M:%SZ"
        return datetime.strptime(value, fmt).replace(tzinfo=_UTC)
    return parse_to_aware_datetime(value)


def main() -> None:
    import moto.core.serialize
    from moto.server import main as moto_main

    moto.core.serialize.parse_to_aware_datetime = aware_datetime
    moto_main(sys.argv[1:])


if __name__ == "__main__":
    main()
