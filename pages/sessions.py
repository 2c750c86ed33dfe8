"""Sessions: find users' sessions (search, activity dates), read their messages, and prune old sessions safely."""

from __future__ import annotations

from datetime import UTC, date, datetime, time

import streamlit as st

from engine import MemoryEngine, Message, SessionInfo, session_origin
from ui.components import can_edit, confirmed, fetch_page, flash, need_user, pager, reset_page_on_change, show_flash
from ui.error_display import engine_errors
from ui.resources import get_engine
from ui.sidebar import current_session, open_session
from ui.text import md_escape, when
from ui.url_state import incoming, write

ALL_USERS = "(all users)"
ROLE_AVATARS = {
    "user": "user",
    "assistant": "assistant",
    "system": ":material/settings:",
    "tool": ":material/build:",
    "tool_result": ":material/description:",
}
MESSAGES_PER_PAGE = 25
SCAN_PAGE = 500  # messages read per query while looking for a linked message's position
# Scrolls the linked message into view (a constant script: no stored text or URL value reaches it).
SCROLL_TO_LINKED = (
    "<script>const m = window.parent.document.querySelector('.st-key-sessions_linked_message')"
    " || document.querySelector('.st-key-sessions_linked_message');"
    " if (m) m.scrollIntoView({block: 'center'});</script>"
)


def day_start(d: date | None) -> datetime | None:
    return None if d is None else datetime.combine(d, time.min, tzinfo=UTC)


def day_end(d: date | None) -> datetime | None:
    return None if d is None else datetime.combine(d, time.max, tzinfo=UTC)


def session_filters(engine: MemoryEngine, default_user: str) -> tuple[str | None, str, date | None, date | None, int]:
    users = [ALL_USERS] + engine.sessions.users()
    # The filter follows the sidebar whenever the sidebar's user changes (it may then be set to another user or
    # to all users here, until the sidebar changes again).
    sidebar_changed = st.session_state.get("sessions_sidebar_user") != default_user
    st.session_state["sessions_sidebar_user"] = default_user
    if sidebar_changed or st.session_state.get("sessions_user") not in users:
        st.session_state["sessions_user"] = default_user if default_user in users else ALL_USERS
    c1, c2, c3, c4, c5 = st.columns([2, 3, 2, 2, 1])
    who = c1.selectbox("User", users, key="sessions_user", persist_state="session")
    search = c2.text_input(
        "Search",
        key="sessions_search",
        persist_state="session",
        placeholder="session id, user id or words in a message",
    )
    since = c3.date_input("Active on or after", value=None, key="sessions_since", persist_state="session")
    until = c4.date_input("Active on or before", value=None, key="sessions_until", persist_state="session")
    size = c5.selectbox("Per page", (10, 25, 50, 100), index=1, key="sessions_page_size", persist_state="session")
    return (None if who == ALL_USERS else who), search.strip(), since, until, size


def session_label(s: SessionInfo) -> str:
    return f"{s.session_id} · {s.user_id} · {s.message_count} messages · last active {when(s.last_activity_at)}"


def session_table(rows: tuple[SessionInfo, ...], key: str) -> None:
    st.dataframe(
        [
            {
                "user": s.user_id,
                "session": s.session_id,
                "created": when(s.created_at),
                "last activity": when(s.last_activity_at),
                "messages": s.message_count,
                "tokens": s.token_count,
            }
            for s in rows
        ],
        hide_index=True,
        key=key,
    )


def show_message(m: Message, linked: bool = False) -> None:
    with st.chat_message(m.role if m.role in ("user", "assistant") else "ai", avatar=ROLE_AVATARS.get(m.role)):
        mark = " · :orange-badge[linked message]" if linked else ""
        st.caption(f"#{m.seq} · **{m.role}** · {m.tokens:,} tokens · {when(m.created_at)}{mark}")
        if m.role in ("tool", "tool_result"):
            st.code(m.content, language=None, wrap_lines=True)
        else:
            st.text(m.content)


def linked_message(user: str) -> tuple[str, str, int] | None:
    """(user, session, seq) of the message a link opened (``?session=..&message=<seq>``, e.g. a memory's source
    message), kept while that session stays open; None without one."""
    seq = incoming("message")
    missing = st.session_state.pop("app_session_missing", None)
    if seq is not None and missing:
        st.warning(
            f"The linked session {md_escape(missing)} is not in this store (any more): message #{md_escape(seq)} of it "
            "cannot be shown."
        )
        write("message", None)
        st.session_state.pop("sessions_linked", None)
        return None
    if seq is not None and seq.isdigit() and current_session():
        st.session_state["sessions_linked"] = (user, current_session(), int(seq))
        st.session_state["sessions_linked_new"] = True
    return st.session_state.get("sessions_linked")


def message_page(engine: MemoryEngine, s: SessionInfo, seq: int) -> int | None:
    """The 1-based page of ``MESSAGES_PER_PAGE`` messages that holds message ``seq`` of ``s`` (None if it has none).
    Seqs count from 1 without gaps in a live session, so the first guess is nearly always right; otherwise (an
    imported session) the messages are read in order until it turns up."""
    guess = max(0, (seq - 1) // MESSAGES_PER_PAGE)
    rows = engine.sessions.messages(s.user_id, s.session_id, MESSAGES_PER_PAGE, guess * MESSAGES_PER_PAGE).rows
    if any(m.seq == seq for m in rows):
        return guess + 1
    for offset in range(0, s.message_count, SCAN_PAGE):
        rows = engine.sessions.messages(s.user_id, s.session_id, SCAN_PAGE, offset).rows
        for n, m in enumerate(rows):
            if m.seq == seq:
                return (offset + n) // MESSAGES_PER_PAGE + 1
    return None


def show_messages(engine: MemoryEngine, s: SessionInfo, linked: tuple[str, str, int] | None = None) -> None:
    st.subheader(f"Messages of {md_escape(s.session_id)}")
    st.caption(
        f"user {md_escape(s.user_id)} · created {when(s.created_at)} · last active "
        f"{when(s.last_activity_at)} · {s.message_count:,} messages · {s.token_count:,} tokens"
    )
    origin = session_origin(s.session_id)
    if origin is not None:  # an importer's session id is "<origin>:<the source's session or agent>"
        source = md_escape(s.session_id.partition(":")[2])
        st.caption(f":material/input: Imported from {md_escape(origin)} · source session {source}")
    if st.button("Make this the current session on every page", key="sessions_make_current"):
        open_session(s.user_id, s.session_id)
        st.rerun()
    reset_page_on_change("sessions_msg_page", s.user_id, s.session_id)
    seq = linked[2] if linked is not None and linked[:2] == (s.user_id, s.session_id) else None
    write("message", None if seq is None else str(seq))  # a reload opens the same message again
    fresh = seq is not None and bool(st.session_state.pop("sessions_linked_new", False))
    if seq is not None and fresh:
        number = message_page(engine, s, seq)
        if number is None:
            st.warning(f"Message #{seq} is not in this session (any more).")
        else:
            st.session_state["sessions_msg_page"] = number  # once per link: paging on is the person's own
    page = fetch_page(
        "sessions_msg_page",
        MESSAGES_PER_PAGE,
        lambda limit, offset: engine.sessions.messages(s.user_id, s.session_id, limit, offset),
    )
    pager("sessions_msg_page", page, "messages")
    if not page.rows:
        st.caption("This session has no messages.")
    for m in page.rows:
        if m.seq == seq:
            with st.container(border=True, key="sessions_linked_message"):
                show_message(m, linked=True)
            if fresh:  # once per link: paging back to it later does not pull the window along
                st.html(SCROLL_TO_LINKED, unsafe_allow_javascript=True)
        else:
            show_message(m)


def prune_section(engine: MemoryEngine, user: str | None) -> None:
    st.subheader("Lifecycle pruning")
    if not can_edit(engine, "pruning"):
        return
    if user is None:
        st.info("Pick one user in the filter above to preview pruning their sessions.")
        return
    s = engine.settings
    rules = {
        "idle": f"idle: no activity for more than {s.session_idle_minutes} minutes",
        "stale": f"stale: no activity for more than {s.session_stale_days} days",
        "max": f"max: keep only the newest {s.session_max_per_user} sessions",
    }
    rule = st.radio(
        "Rule", list(rules), format_func=rules.get, key="sessions_prune_rule", horizontal=True, persist_state="session"
    )
    st.caption(
        "Pruning deletes sessions and their messages only. Working memory, long-term memories, feedback "
        "labels and traces are kept."
    )
    if st.button("Preview what would be deleted", key="sessions_prune_preview"):
        with engine_errors("Could not preview pruning"):
            now = datetime.now(UTC)
            plan = engine.sessions.prune(user, rule, apply=False, now=now)
            st.session_state["sessions_prune_plan"] = {
                "user": user,
                "rule": rule,
                "now": now,
                "ids": [x.session_id for x in plan.sessions],
                "messages": plan.message_count,
                "rows": plan.sessions,
            }
    preview = st.session_state.get("sessions_prune_plan")
    if not preview or preview["user"] != user or preview["rule"] != rule:
        return
    if not preview["ids"]:
        st.success(f"Nothing to prune: no session of {md_escape(user)} matches the {rule} rule.")
        return
    st.warning(
        f"The {rule} rule would delete {len(preview['ids'])} session(s) with {preview['messages']:,} message(s) "
        f"of user {md_escape(user)}:"
    )
    session_table(preview["rows"], "sessions_prune_table")
    if confirmed(
        "sessions_prune_form",
        "sessions_prune_sure",
        f"I understand: delete these {len(preview['ids'])} session(s) and their messages for good",
        f"Delete {len(preview['ids'])} session(s)",
    ):
        with engine_errors("Pruning failed; nothing was deleted"):
            # The preview's clock, so idle/stale select the same sessions (minus any that became active since)
            done = engine.sessions.prune(user, rule, apply=True, now=preview["now"])
            deleted = [x.session_id for x in done.sessions]
            changed = " (the store changed since the preview, so this differs)"
            note = "" if set(deleted) == set(preview["ids"]) else changed
            flash("sessions", f"Deleted {len(deleted)} session(s) with {done.message_count:,} message(s){note}.")
            st.session_state.pop("sessions_prune_plan", None)
            st.rerun()


def main() -> None:
    engine = get_engine()
    st.title("Sessions")
    show_flash("sessions")
    user = need_user("the Sessions page")
    if not user:
        return
    with engine_errors("Could not list sessions"):
        who, search, since, until, size = session_filters(engine, user)
        if since and until and since > until:
            st.error("The 'on or after' date is later than the 'on or before' date.")
            return
        reset_page_on_change("sessions_page", who, search, since, until, size)
        page = fetch_page(
            "sessions_page",
            size,
            lambda limit, offset: engine.sessions.list_sessions(
                who, search or None, day_start(since), day_end(until), limit, offset
            ),
        )
        pager("sessions_page", page, "sessions")
        if not page.rows:
            st.info(
                "No session matches these filters."
                if page.total == 0 and (search or since or until)
                else "No sessions yet for this selection."
            )
        else:
            session_table(page.rows, "sessions_table")
            by_id = {(s.user_id, s.session_id): s for s in page.rows}
            linked = linked_message(user)
            if linked is not None:
                # A link to a message opens its session, wherever the list has it (or past these filters), and
                # keeps it open until another is picked.
                key = (linked[0], linked[1])
                new = bool(st.session_state.get("sessions_linked_new"))
                if key not in by_id and (new or st.session_state.get("sessions_open") == key):
                    try:
                        by_id = {key: engine.sessions.get_session(*key), **by_id}
                    except (KeyError, ValueError):  # NotFound: deleted since; InvalidInput: a mangled link
                        st.session_state.pop("sessions_linked", None)
                        linked = None
                if new and linked is not None:
                    st.session_state["sessions_open"] = key
            keys = list(by_id)
            preferred = (user, current_session())
            if st.session_state.get("sessions_open") not in keys:
                st.session_state["sessions_open"] = preferred if preferred in by_id else keys[0]
            chosen = st.selectbox(
                "Open a session", keys, key="sessions_open", format_func=lambda k: session_label(by_id[k])
            )
            show_messages(engine, by_id[chosen], linked)
        prune_section(engine, who)


main()
