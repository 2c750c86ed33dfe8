"""The dashboard's gate: who may see any page at all.

The dashboard binds 127.0.0.1 by default (.streamlit/config.toml), so only this machine reaches it. Streamlit has no
password option of its own (``st.login`` needs an OpenID provider on the network), so a dashboard that listens beyond
loopback must have ``MEMLENS_DASHBOARD_TOKEN`` set: app.py calls :func:`signed_in` before ``st.navigation`` runs any
page, and without the token it serves a refusal instead of the store. When the token is set it is asked for on every
address, once per browser session (a reload is a new session and asks again: nothing is kept in a cookie or the URL).
"""

from __future__ import annotations

import hmac
import ipaddress
import time

import streamlit as st

from engine import Settings

MIN_TOKEN_CHARS = 16  # the MCP HTTP server's rule for a non-loopback bind, for the same reason
SIGNED_IN_KEY = "app_signed_in"
WRONG_TOKEN_DELAY_S = 1.0  # each wrong guess costs the guesser a second (a 16+ character token is not guessed)


def is_loopback(address: str | None) -> bool:
    """Whether a server bound to ``address`` is reachable from this machine only. Unset or empty means every
    interface (Streamlit's own default); a host name other than localhost may resolve to anything."""
    if not address:
        return False
    host = address.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _served_by_streamlit() -> bool:
    """Whether a real Streamlit server runs this script. AppTest runs it with a stand-in runtime and no server (so no
    address is configured and nothing listens); the real server reads .streamlit/config.toml, where an unset
    ``server.address`` really means every interface."""
    from streamlit.runtime import Runtime

    return Runtime.exists() and type(Runtime.instance()) is Runtime


def bind_address() -> str | None:
    """The address the dashboard's server listens on (``server.address``); ``None`` when no server listens."""
    address = st.get_option("server.address")
    if not address and not _served_by_streamlit():
        return "127.0.0.1"  # AppTest: nothing listens anywhere, as closed as loopback
    return str(address) if address else None


def signed_in() -> bool:
    """True when this browser session may see the pages. Otherwise draws the sign-in form (or, for a dashboard open
    beyond loopback without a token, the refusal) and returns False: the caller then stops before any page runs."""
    token = Settings.from_env().dashboard_token
    address = bind_address()
    if not is_loopback(address) and len(token) < MIN_TOKEN_CHARS:
        where = f"on {address}" if address else "on every network interface"
        st.error(
            f"This dashboard listens {where}, beyond this machine, and has no sign-in: it shows nothing. Set "
            f"MEMLENS_DASHBOARD_TOKEN (at least {MIN_TOKEN_CHARS} characters) to require it, or bind it to this "
            "machine only (`--server.address 127.0.0.1`, the default in .streamlit/config.toml).",
            icon=":material/lock:",
        )
        return False
    if not token or st.session_state.get(SIGNED_IN_KEY):
        return True
    st.title("memlens")
    with st.form("app_sign_in_form"):
        given = st.text_input("Dashboard token", type="password", key="app_sign_in_token")
        submit = st.form_submit_button("Sign in", type="primary")
    if submit:
        # compare_digest: the time taken does not tell how much of a guess was right
        if hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
            st.session_state[SIGNED_IN_KEY] = True
            st.session_state.pop("app_sign_in_token", None)
            st.rerun()
        time.sleep(WRONG_TOKEN_DELAY_S)
        st.error("Wrong token.", icon=":material/lock:")
    return False
