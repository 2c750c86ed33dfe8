"""Reading a Letta agent file (``.af``, JSON) into an ``ImportSource``.

The format is Letta's ``AgentFileSchema`` (letta/schemas/agent_file.py; the files of github.com/letta-ai/agent-file):
``{agents, groups, blocks, files, sources, tools, mcp_servers, metadata, created_at}``, each agent with its
``block_ids``, ``messages`` and ``in_context_message_ids``; the older single-agent form (letta 0.6,
``serialize_schemas``: ``core_memory`` and ``messages`` on the top level) is read too. The mapping:

- **user**: one memlens user for the file: ``user_id`` if given, else the first agent's name (lowercase, ``_``).
- **each agent is a session** ``letta:<agent name>``: its conversation becomes that session's messages (user and
  assistant turns with their times) and its **core memory blocks become that session's working-memory slots**, one
  custom slot per block label (``persona``, ``human``, ...) holding the block's text. A block shared by two agents
  is a slot in both sessions.
- **archival passages become semantic items** in category ``archival`` (``tags`` kept in the provenance). The agent
  files Letta writes today carry no passages (the agent-file README: "We currently do not support Passages");
  ``passages`` on the top level or on an agent, shaped like Letta's Passage (``id``, ``text``, ``created_at``,
  ``tags``), are read when present.
- **Left out, each with its reason**: the system prompt, tool calls and tool returns, inner thoughts and reasoning,
  Letta's heartbeat and login notices, tools, files and data sources, groups, MCP servers.

Letta puts what an assistant says to the user in the ``message`` argument of a ``send_message`` tool call (MemGPT
agents) or in the message's text (newer agents), and wraps what the user typed in JSON
(``{"type": "user_message", "message": ...}``): both are unwrapped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from .import_source import (
    ImportSkip,
    ImportSource,
    import_id,
    import_session_id,
    origin_provenance,
    read_json_file,
    slug,
)

ORIGIN = "letta"
ARCHIVAL_CATEGORY = "archival"
_NOTICES = {"heartbeat", "system_alert", "login"}  # Letta's own messages in the user's role


def _listed(value: Any, what: str) -> list[Any]:
    """A list field of the file (absent or null: empty); InvalidInput naming it when it is something else."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInput(f"Letta agent file: {what} must be a list, got {type(value).__name__}")
    return value


def _parsed(text: str) -> Any:
    """``text`` parsed as JSON, or None when it is not JSON (or nested past the parser's depth)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _text_parts(message: Mapping[str, Any]) -> tuple[str, bool]:
    """The visible text of a message, and whether it also held reasoning (inner thoughts) that was left out."""
    content = message.get("content")
    if isinstance(content, str):
        return content, False
    if content is None and isinstance(message.get("text"), str):
        return str(message["text"]), False
    if not isinstance(content, list):
        return "", False
    texts = [str(p.get("text") or "") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
    reasoning = any(isinstance(p, Mapping) and p.get("type") in ("reasoning", "omitted_reasoning") for p in content)
    return "\n".join(t for t in texts if t.strip()), reasoning


def _tool_calls(message: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(function name, parsed arguments) of a message's tool calls."""
    calls = []
    for call in _listed(message.get("tool_calls"), "a message's tool_calls"):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        arguments: Any = function.get("arguments")
        if isinstance(arguments, str):
            parsed = _parsed(arguments)
            arguments = arguments if parsed is None else parsed
        calls.append((str(function.get("name") or "?"), arguments))
    return calls


def _user_text(text: str) -> tuple[str, str | None]:
    """(what the user said, or "" with the notice's type for Letta's own heartbeat/login/system notices)."""
    wrapped = _parsed(text)
    if isinstance(wrapped, Mapping) and isinstance(wrapped.get("type"), str):
        if wrapped["type"] == "user_message" and isinstance(wrapped.get("message"), str):
            return wrapped["message"], None
        if wrapped["type"] in _NOTICES:
            return "", wrapped["type"]
    return text, None


class _Reader:
    def __init__(self, path: Path, user_id: str) -> None:
        self.path, self.user_id = path, user_id
        self.records: list[dict[str, Any]] = []
        self.skipped: list[ImportSkip] = []
        self.notes: list[str] = []
        self.memgpt = False  # the agent being read is a MemGPT agent (set per agent)

    def skip(self, kind: str, source_id: str, reason: str) -> None:
        self.skipped.append(ImportSkip(kind, source_id, reason))

    def agent(self, agent: Mapping[str, Any], name: str, blocks: list[Mapping[str, Any]]) -> None:
        session = import_session_id(ORIGIN, name)
        self.memgpt = str(agent.get("agent_type") or "").startswith("memgpt")
        for block in blocks:
            self.block(block, session)
        for n, message in enumerate(_listed(agent.get("messages"), f"agent {name!r}'s messages"), 1):
            if not isinstance(message, Mapping):
                raise InvalidInput(f"Letta agent {name!r} in {str(self.path)!r}: message {n} is not an object")
            self.message(message, session, str(message.get("id") or f"{name} message {n}"))
        for passage in _listed(agent.get("passages"), f"agent {name!r}'s passages"):
            self.passage(passage, name)

    def block(self, block: Mapping[str, Any], session: str) -> None:
        label, value = block.get("label"), block.get("value")
        ident = str(block.get("id") or label)
        if not isinstance(label, str) or not slug(label) or not slug(label)[0].isalpha():
            raise InvalidInput(f"Letta block {ident!r} in {str(self.path)!r} has no usable label: {label!r}")
        if not isinstance(value, str):
            raise InvalidInput(f"Letta block {ident!r} in {str(self.path)!r}: value must be text")
        slot = slug(label)
        self.records.append(
            {"kind": "working", "user_id": self.user_id, "session_id": session, "slot": slot, "value": value}
        )
        self.notes.append(f"core memory block {label!r} -> working slot {slot!r} of session {session!r}")

    def message(self, message: Mapping[str, Any], session: str, ident: str) -> None:
        role = message.get("role")
        text, reasoning = _text_parts(message)
        calls = _tool_calls(message)
        if role == "system":
            self.skip("message", ident, "the system prompt: Letta's instructions, not conversation")
            return
        if role == "tool":
            self.skip(
                "message", ident, f"tool return of {message.get('name') or 'a tool'}: memlens keeps no tool calls"
            )
            return
        if role == "user":
            text, notice = _user_text(text)
            if notice is not None:
                self.skip("message", ident, f"Letta's {notice} notice, not said by the user")
                return
        elif role == "assistant":
            said = [a["message"] for name, a in calls if name == "send_message" and isinstance(a, Mapping)]
            other = sorted({name for name, _ in calls if name != "send_message"})
            if other:
                self.skip("tool_call", ident, f"tool call(s) {', '.join(other)}: memlens keeps no tool calls")
            # A MemGPT agent speaks only through send_message: its text is inner monologue.
            thoughts = reasoning or (self.memgpt and bool(text.strip()))
            if said or self.memgpt:
                text = "\n".join(str(s) for s in said)
            if thoughts:
                self.skip("reasoning", ident, "inner thoughts: the agent's reasoning, not said to the user")
        else:
            self.skip("message", ident, f"role {str(role)[:30]!r} has no memlens counterpart")
            return
        if not text.strip():
            if role == "user" or not (calls or reasoning or self.memgpt):
                self.skip("message", ident, "no text")
            return
        record: dict[str, Any] = {
            "kind": "message",
            "user_id": self.user_id,
            "session_id": session,
            "role": role,
            "content": text,
        }
        if message.get("created_at"):
            record["created_at"] = message["created_at"]
        self.records.append(record)

    def passage(self, passage: Any, agent_name: str) -> None:
        if not isinstance(passage, Mapping):
            raise InvalidInput(f"a Letta passage in {str(self.path)!r} is not an object")
        ident = str(passage.get("id") or "")
        text = passage.get("text", passage.get("content"))
        if not ident:
            raise InvalidInput(f"a Letta passage in {str(self.path)!r} has no id (text: {str(text)[:40]!r})")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(f"Letta passage {ident!r} in {str(self.path)!r} has no text")
        tags = passage.get("tags")
        details: dict[str, Any] = {"agent": agent_name}
        if isinstance(tags, list) and tags:
            details["tags"] = [str(t) for t in tags]
        record: dict[str, Any] = {
            "kind": "item",
            "user_id": self.user_id,
            "id": import_id(ORIGIN, "item", self.user_id, agent_name, ident),
            "category": ARCHIVAL_CATEGORY,
            "content": text,
            "source": f"import:{ORIGIN}",
            "provenance": origin_provenance(ORIGIN, ident, details=details),
        }
        if passage.get("created_at"):
            record["created_at"] = passage["created_at"]
        self.records.append(record)


def _agents(data: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], list[Mapping[str, Any]]]]:
    """Each agent with its core memory blocks, from either form of the file."""
    if isinstance(data.get("agents"), list):
        blocks = {str(b.get("id")): b for b in _listed(data.get("blocks"), "blocks") if isinstance(b, Mapping)}
        out = []
        for agent in data["agents"]:
            if not isinstance(agent, Mapping):
                raise InvalidInput("an agent of the Letta agent file is not an object")
            ids = _listed(agent.get("block_ids"), "an agent's block_ids")
            missing = [b for b in ids if str(b) not in blocks]
            if missing:
                raise InvalidInput(f"Letta agent {str(agent.get('name'))[:80]!r} names unknown block(s) {missing[:3]}")
            out.append((agent, [blocks[str(b)] for b in ids]))
        return out
    if isinstance(data.get("core_memory"), list) or isinstance(data.get("messages"), list):
        return [(data, [b for b in _listed(data.get("core_memory"), "core_memory") if isinstance(b, Mapping)])]
    raise InvalidInput("not a Letta agent file: it has neither agents nor core_memory/messages")


def read_letta(path: str | Path, *, user_id: str | None = None) -> ImportSource:
    """Read the Letta agent file at ``path`` (see the module's docstring for the mapping). NotFound when the file is
    missing; InvalidInput naming the file and the record when it is not an agent file or a record is unusable."""
    file = Path(path)
    data = read_json_file(file, "Letta agent file")
    if not isinstance(data, Mapping):
        raise InvalidInput(f"{str(file)!r} is not a Letta agent file: the top level is not an object")
    agents = _agents(data)
    if not agents:
        raise InvalidInput(f"the Letta agent file {str(file)!r} holds no agent")
    names: list[str] = []
    for agent, _ in agents:
        name = slug(str(agent.get("name") or agent.get("id") or "agent")) or "agent"
        names.append(f"{name}_{len(names) + 1}" if name in names else name)
    user = user_id or names[0]
    reader = _Reader(file, user)
    for (agent, blocks), name in zip(agents, names, strict=True):
        reader.agent(agent, name, blocks)
    for passage in _listed(data.get("passages"), "passages"):
        reader.passage(passage, names[0])
    for kind in ("tools", "files", "sources", "groups", "mcp_servers"):
        for thing in _listed(data.get(kind), kind):
            ident = str(thing.get("name") or thing.get("id") or "?") if isinstance(thing, Mapping) else "?"
            reason = "code an agent calls, not memory" if kind == "tools" else "not memory of the agent"
            reader.skip(kind.rstrip("s"), ident, f"{kind.replace('_', ' ')}: {reason}")
    return ImportSource(ORIGIN, str(file), tuple(reader.records), tuple(reader.skipped), tuple(reader.notes))
