"""Hard-forgotten text in stored traces: the candidates' texts blanked, the assembled context rebuilt with a
placeholder, and the text replaced where the trace quotes it (question, hop queries, proposals). Works on a trace's
plain JSON form, inside the forget's transaction (TraceStore.mark_forgotten)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# What a hard-forgotten memory's text becomes in a trace's assembled context.
FORGOTTEN_TEXT = "[forgotten memory {id}]"
REDACTED_PROPOSAL = "made from a forgotten memory's text"
REDACTED_QUERY = "[query made from a forgotten memory]"


def redact_trace(data: dict[str, Any], ids: set[str], tombstone: dict[str, Any]) -> None:
    """Mark the candidates ``ids`` of a trace (its plain JSON form) as forgotten with ``tombstone``.

    Soft (archived): only the mark; the text stays, as it does in the store. Hard: every copy of the memory's text
    goes: the candidates' ``text`` and ``preceding_text``, its block in the assembled ``context`` (the context is
    rebuilt from the ranking with a placeholder), and what the offline bridge reasoner quoted from it (``from_text``
    or ``also_from``, the names and terms it took, and the later hop's query made of them). Scores, ranks and ids
    stay, so the trace still explains the retrieval. A hard tombstone is never downgraded by a later soft one."""
    hard = tombstone.get("mode") == "hard"
    texts: dict[str, str] = {}
    forgotten = data.setdefault("forgotten", {})
    for hop in data.get("hops", ()):
        for c in hop.get("candidates", ()):
            if c["id"] not in ids or (c.get("forgotten") or {}).get("mode") == "hard":
                continue
            c["forgotten"] = dict(tombstone)
            forgotten[c["id"]] = dict(tombstone)
            if hard:
                texts.setdefault(c["id"], c.get("text") or "")
                c["text"], c["preceding_text"] = "", ""
    if not hard or not texts:
        return
    data["context"] = _redacted_context(data, texts)
    quoted = [t for t in texts.values() if t]
    # A hop's proposal is what made its query; the offline bridge reasoner's quotes the memory it took names from
    # (from_text), and the query is made of those names.
    for hop in data.get("hops", ()):
        if hop.get("hop", 1) > 1 and _quotes(hop.get("proposal"), quoted):
            hop["proposal"] = {"redacted": REDACTED_PROPOSAL}
            hop["query"] = hop["relevance_text"] = REDACTED_QUERY
    if _quotes(data.get("stop_details"), quoted):
        data["stop_details"] = {"redacted": REDACTED_PROPOSAL}


def redact_quotes(data: dict[str, Any], texts: Mapping[str, str]) -> bool:
    """Replace each hard-forgotten memory's text (``texts``: id -> the text retrieval showed for it) where the trace
    quotes it outside its candidates: the question, each hop's query, relevance text and proposal, the reasoner's
    stop details. Exact substring matches of the whole text, longest first, each replaced with
    ``[forgotten memory <id>]``; a paraphrase or a part of the text is not recognised and stays. True if anything
    changed."""
    pairs = sorted(((t, i) for i, t in texts.items() if t and t.strip()), key=lambda p: -len(p[0]))
    changed = False

    def sub(value: Any) -> Any:
        nonlocal changed
        if isinstance(value, str):
            out = value
            for text, item_id in pairs:
                if text in out:
                    out = out.replace(text, FORGOTTEN_TEXT.format(id=item_id))
            changed = changed or out != value
            return out
        if isinstance(value, list):
            return [sub(v) for v in value]
        if isinstance(value, dict):
            return {k: sub(v) for k, v in value.items()}
        return value

    if not pairs:
        return False
    if isinstance(data.get("question"), str):
        data["question"] = sub(data["question"])
    for hop in data.get("hops", ()):
        for key in ("query", "relevance_text", "proposal"):
            if key in hop:
                hop[key] = sub(hop[key])
    if "stop_details" in data:
        data["stop_details"] = sub(data["stop_details"])
    return changed


def _quotes(details: Any, texts: Sequence[str]) -> bool:
    if not isinstance(details, dict):
        return False
    # The offline bridge reasoner quotes the best result (from_text) and the next best ones it took names from.
    quotes = [details.get("from_text"), *(details.get("also_from") or ())]
    return any(q and (q in t or t.startswith(str(q))) for q in quotes for t in texts)


def _redacted_context(data: dict[str, Any], texts: Mapping[str, str]) -> str:
    """The context rebuilt from the trace's ranking with each forgotten memory's text replaced (the format of
    stages.render_context). When the rebuild with the original texts does not give back the stored context (a
    format from another version), the texts are replaced where they stand instead."""
    context = data.get("context") or ""
    if not context:
        return context
    by_hop = {(h.get("hop"), c["id"]): c for h in data.get("hops", ()) for c in h.get("candidates", ())}

    def render(replace: bool) -> str:
        parts = ["=== RELEVANT MEMORIES ===", ""]
        for r in data.get("ranking", ()):
            if not r.get("in_context"):
                continue
            c = by_hop.get((r.get("hop"), r["id"]))
            if c is None:
                return ""
            text = texts.get(r["id"], c.get("text") or "")
            if replace and r["id"] in texts:
                text = FORGOTTEN_TEXT.format(id=r["id"])
            parts += [f"[{c.get('created_at')}] (confidence: {float(r.get('final') or 0):.2f})", text, ""]
        parts.append("=== END MEMORIES ===")
        return "\n".join(parts)

    if render(False) == context:
        return render(True)
    for item_id, text in texts.items():
        if text:
            context = context.replace(text, FORGOTTEN_TEXT.format(id=item_id))
    return context
