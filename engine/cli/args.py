"""Argument types shared by the CLI's commands: ids and numbers are checked while parsing, before the store opens."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..errors import InvalidInput
from ..ids import check_id


def id_type(what: str) -> Callable[[str], str]:
    """An argparse type that applies the engine's id rule and keeps its message."""

    def parse(text: str) -> str:
        try:
            return check_id(text, what)
        except InvalidInput as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = what
    return parse


def bounded_int(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer from {lo} to {hi}, got {text[:40]!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer from {lo} to {hi}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


USER = id_type("user id")
SESSION = id_type("session id")
MEMORY_ID = id_type("id")
TRACE = id_type("trace id")
LIMIT = bounded_int(1, 10_000)
OFFSET = bounded_int(0, 10_000_000)


def add_user(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--user", "-u", dest="user", type=USER, required=required, metavar="U", help="user id")


def add_session(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--session", "-s", dest="session", type=SESSION, required=required, metavar="S", help="session id")


def add_page(p: argparse.ArgumentParser, limit: int = 50) -> None:
    p.add_argument("--limit", type=LIMIT, default=limit, metavar="N", help=f"rows to show (default {limit})")
    p.add_argument("--offset", type=OFFSET, default=0, metavar="N", help="rows to skip (default 0)")


def joined(words: list[str]) -> str:
    """A query given as several words (unquoted) is one query."""
    return " ".join(words)
