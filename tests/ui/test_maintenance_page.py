"""The Maintenance page (issue 30): usable on an empty store; a preview lists each step's planned changes and writes
nothing; applying writes them and the audit log shows them; stored text stays inert."""

from __future__ import annotations

from apptest_helpers import button, no_errors, open_page, values

PAGE = "pages/maintenance.py"
U = "noor"


def test_an_empty_store_explains_what_to_do(empty_app):
    at = open_page(PAGE)
    no_errors(at)
    assert any("the store is empty" in v for v in values(at, "info"))


def test_preview_then_apply_then_the_audit_log(empty_app):
    empty_app.sessions.add_message(U, "s1", "user", "I **water** the ferns on Sundays.")
    at = open_page(PAGE, user=U)
    no_errors(at)
    assert any("No maintenance has been applied" in v for v in values(at, "info"))

    button(at, "Preview the cycle").click().run()
    no_errors(at)
    assert "I **water** the ferns on Sundays." in values(at, "text")  # the planned memory, as text
    assert empty_app.items.list_items(U).total == 0  # a preview writes nothing
    assert any(e.label.startswith("1 · Consolidate sessions — 2 changes") for e in at.expander)

    button(at, "Apply these 2 changes").click().run()
    no_errors(at)
    assert [i.content for i in empty_app.items.list_items(U).rows] == ["I **water** the ferns on Sundays."]
    assert any(v.startswith("Applied 2 changes (run run_") for v in values(at, "success"))
    log = at.dataframe[0].value
    assert sorted(log["action"]) == ["consolidated", "memorize"] and set(log["actor"]) == {"dashboard"}

    button(at, "Preview the cycle").click().run()
    assert any("Nothing to do" in v for v in values(at, "success"))
