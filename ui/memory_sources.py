"""Where a memory or a fact came from, as links: a source message opens the Sessions page at that message, a source
memory opens the page that shows it. Used by every page that shows a memory (issue 30: "every memory shown anywhere
in the dashboard links to the message(s) it came from when it has them").

Sources are llmemory's provenance entries ``{type, id}`` (an item's ``provenance["sources"]``) or a relation's
:class:`engine.FactSource`: type ``message`` with id ``<session_id>#<seq>``; a memory kind (``semantic``,
``episodic``, ``procedural``, or the older ``item`` / ``episode`` / ``skill``) with the memory's id. Other types (a
text fingerprint, ``text``) have no page to open and are shown as text only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from engine import MemoryEngine, imported_origin

from .nav import page_file
from .text import md_escape, one_line

MAX_LINKS = 12  # a fact merged from many messages lists the first ones; the count says how many more

# memory kind -> (page, the query parameter that page opens a memory by)
MEMORY_PAGES = {
    "semantic": ("memories", "memory"),
    "item": ("memories", "memory"),
    "episodic": ("episodes", "episodes_episode"),
    "episode": ("episodes", "episodes_episode"),
    "procedural": ("skills", "memory"),
    "skill": ("skills", "memory"),
}
ICONS = {"sessions": ":material/forum:", "memories": ":material/inventory_2:", "episodes": ":material/timeline:"}


@dataclass(frozen=True)
class SourceLink:
    """One source as a link: the page file's name, its query parameters and what the link says."""

    page: str
    params: dict[str, str]
    label: str

    @property
    def url(self) -> str:
        """A URL relative to the current page (works under any base path), for table link columns."""
        return f"./{self.page}?{urlencode(self.params)}"


def _pair(source: Any) -> tuple[str, str] | None:
    """(type, id) of a provenance entry (a mapping) or a FactSource; None for anything else."""
    if isinstance(source, Mapping):
        kind, ident = source.get("type"), source.get("id")
    else:
        kind, ident = getattr(source, "type", None), getattr(source, "id", None)
    if not isinstance(kind, str) or ident in (None, ""):
        return None
    return kind, str(ident)


def message_of(source_id: str) -> tuple[str, int] | None:
    """(session id, seq) of a message source id ``<session_id>#<seq>`` (the session id may hold ``#`` itself)."""
    session, sep, seq = source_id.rpartition("#")
    if not sep or not session or not seq.isdigit():
        return None
    return session, int(seq)


def source_link(user_id: str, source: Any) -> SourceLink | None:
    """The link of one source, or None when it names nothing a page can open."""
    pair = _pair(source)
    if pair is None:
        return None
    kind, ident = pair
    if kind == "message":
        found = message_of(ident)
        if found is None:
            return None
        session, seq = found
        return SourceLink(
            "sessions",
            {"user": user_id, "session": session, "message": str(seq)},
            f"{one_line(session, 40)} · message #{seq}",
        )
    if kind in MEMORY_PAGES:
        page, param = MEMORY_PAGES[kind]
        return SourceLink(page, {"user": user_id, param: ident}, f"{kind} {one_line(ident, 40)}")
    return None


def source_links(user_id: str, sources: Iterable[Any], messages_only: bool = False) -> list[SourceLink]:
    """The links of ``sources`` in order, without repeats (message links only with ``messages_only``)."""
    out: dict[str, SourceLink] = {}
    for source in sources or ():
        link = source_link(user_id, source)
        if link is not None and (not messages_only or link.page == "sessions"):
            out.setdefault(link.url, link)
    return list(out.values())


def provenance_sources(provenance: Mapping[str, Any] | None) -> list[Any]:
    """The ``sources`` list of a memory's provenance (an empty list when it has none or it is malformed)."""
    sources = (provenance or {}).get("sources")
    return list(sources) if isinstance(sources, list) else []


def show_links(links: list[SourceLink], caption: str | None = None) -> None:
    """Draw ``links`` as page links in a wrapping row, under ``caption`` (markdown: the caller escapes it)."""
    if not links:
        return
    if caption:
        st.caption(caption)
    row = st.container(horizontal=True, gap="small")
    for link in links[:MAX_LINKS]:
        row.page_link(
            page_file(link.page), label=md_escape(link.label), icon=ICONS.get(link.page), query_params=link.params
        )
    if len(links) > MAX_LINKS:
        st.caption(f"… and {len(links) - MAX_LINKS} more")


def show_message_sources(user_id: str, provenance: Mapping[str, Any] | None) -> None:
    """The messages a memory came from, each a link to the Sessions page at that message (nothing when none)."""
    links = source_links(user_id, provenance_sources(provenance), messages_only=True)
    show_links(links, f"From {len(links)} message{'' if len(links) == 1 else 's'}:")


def show_item_message_sources(engine: MemoryEngine, user_id: str, memory_id: str) -> None:
    """The source messages of the semantic item ``memory_id`` if it is one and has any (other kinds keep no message
    sources), and where it was imported from if an importer wrote it: for pages that know a memory only by its id,
    such as the Retrieval trace."""
    try:
        item = engine.items.get(user_id, memory_id)
    except (KeyError, ValueError):  # NotFound (another kind, or hard-forgotten) / InvalidInput
        return
    show_origin(item.provenance)
    show_message_sources(user_id, item.provenance)


def show_origin(provenance: Mapping[str, Any] | None) -> None:
    """The line "Imported from Letta · source id ..." for a memory an importer wrote (engine.imports), else nothing."""
    found = imported_origin(dict(provenance or {}))
    if found is not None:
        system, source_id = md_escape(found[0]), md_escape(one_line(found[1], 80))
        st.caption(f":material/input: Imported from {system} · source id {source_id}")
