"""How a LangGraph store's items map onto memlens (engine/interop/langgraph_store.py), as plain rules with no
LangGraph import: namespaces to users and categories, (namespace, key) to item ids, a value to the text memlens
embeds, and LangGraph's filter semantics.

- **User**: ``namespace[0]`` is the memlens user id (memlens's id rule: 1-128 letters, digits and ``_ : @ + -``;
  a namespace must have one label at least), because memlens retrieves per user and LangGraph's own examples put the
  user first (``(user_id, "memories")``). ``("langgraph", ...)`` is refused by LangGraph's ``put`` itself; a
  ``PutOp`` given to ``batch`` directly may use it, as LangGraph's InMemoryStore allows.
- **Category**: the other labels, each lowercased with every run of other characters made ``_``, joined by ``__``
  (``("ada", "Work prefs")`` -> ``work_prefs``; ``("ada",)`` -> ``general``). It is only how the dashboard groups
  them: the exact namespace and key live in the item's provenance (``origin``), which every lookup reads.
- **Id**: ``lg_<16 hex of sha256(namespace, key)>_<12 hex>``: the first part is derived from (namespace, key), so a
  key's versions are found by that prefix; the second is new for each version, so an id is never reused (a forgotten
  version's id stays in the traces that recalled it).
- **Text**: the texts LangGraph's ``index`` paths select (``get_text_at_path``, LangGraph's own function; the
  store's ``fields`` when a put gives none; ``["$"]`` is the whole value as sorted JSON), one per line. memlens keeps
  one vector per memory where LangGraph's stores keep one per text. With ``index=False``, or when no path selects
  any text, the content is the value's JSON and the item is not returned by a search with a query (still by ``get``
  and by a search without one).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .. import validation
from ..errors import InvalidInput
from ..ids import check_id

SYSTEM = "langgraph"  # the items' ``source`` column and their provenance's ``origin.system``
ID_PREFIX = "lg_"
MAX_LABELS = 16
MAX_LABEL_CHARS = 128
MAX_KEY_CHARS = 1_000
# The value lives in the item's provenance, which memlens caps at 64,000 characters of JSON with the rest of it.
MAX_VALUE_CHARS = 60_000
DEFAULT_CATEGORY = "general"
FILTER_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_NOT_CATEGORY = re.compile(r"[^a-z0-9]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_label(label: object, what: str = "namespace label") -> str:
    """One namespace label: text of 1-128 characters without periods (LangGraph's own rule) or control characters."""
    if not isinstance(label, str):
        raise InvalidInput(f"a {what} must be a string, got {type(label).__name__}")
    if not label or len(label) > MAX_LABEL_CHARS:
        raise InvalidInput(f"a {what} must have 1 to {MAX_LABEL_CHARS} characters, got {len(label)}")
    if "." in label:
        raise InvalidInput(f"{what} {label[:40]!r} has a period, which LangGraph's namespaces refuse")
    if _CONTROL.search(label):
        raise InvalidInput(f"{what} {label[:40]!r} has a control character")
    problem = validation.text_problem(label)
    if problem:
        raise InvalidInput(f"{what} {label[:40]!r} {problem}")
    return label


def check_namespace(namespace: object, *, prefix: bool = False) -> tuple[str, ...]:
    """A namespace (``prefix``: a search's namespace prefix, which may be empty) whose first label is a memlens user
    id."""
    if not isinstance(namespace, (tuple, list)):
        raise InvalidInput(f"a namespace must be a tuple of strings, got {type(namespace).__name__}")
    if not namespace and not prefix:
        raise InvalidInput("a namespace needs at least one label: the first is the memlens user id")
    if len(namespace) > MAX_LABELS:
        raise InvalidInput(f"a namespace may have at most {MAX_LABELS} labels, got {len(namespace)}")
    labels = tuple(check_label(label) for label in namespace)
    if labels:
        check_id(labels[0], "user id (a namespace's first label)")
    return labels


def check_key(key: object) -> str:
    if not isinstance(key, str):
        raise InvalidInput(f"a key must be a string, got {type(key).__name__}")
    if not key or len(key) > MAX_KEY_CHARS:
        raise InvalidInput(f"a key must have 1 to {MAX_KEY_CHARS} characters, got {len(key)}")
    if _CONTROL.search(key):
        raise InvalidInput(f"key {key[:40]!r} has a control character")
    problem = validation.text_problem(key)
    if problem:
        raise InvalidInput(f"key {key[:40]!r} {problem}")
    return key


def check_value(value: object) -> dict[str, Any]:
    """A put's value: a JSON object of at most ``MAX_VALUE_CHARS`` characters (validation's JSON rule: no NaN,
    no huge ints, text keys, not too deep)."""
    if not isinstance(value, Mapping):
        raise InvalidInput(f"a value must be a mapping (a JSON object), got {type(value).__name__}")
    validation.check_json_value(value, "value", max_chars=MAX_VALUE_CHARS)
    plain: dict[str, Any] = json.loads(json.dumps(value, allow_nan=False, ensure_ascii=False))
    size = len(value_json(plain))
    if size > MAX_VALUE_CHARS:
        raise InvalidInput(f"a value is {size:,} characters as JSON; memlens keeps at most {MAX_VALUE_CHARS:,}")
    return plain


def check_query(query: object, max_chars: int) -> str | None:
    """A search's query: None, or text memlens can retrieve with. A blank one is no query (LangGraph's stores take
    an empty query as none)."""
    if query is None:
        return None
    if not isinstance(query, str):
        raise InvalidInput(f"a query must be text, got {type(query).__name__}")
    if not query.strip():
        return None
    return validation.check_text(query, "query", max_chars)


def check_index(index: object) -> list[str] | Literal[False] | None:
    """A put's ``index``: None (the store's fields), False (not indexed) or a list of JSON paths."""
    if index is None or index is False:
        return None if index is None else False
    if not isinstance(index, (list, tuple)) or not all(isinstance(p, str) and p for p in index):
        raise InvalidInput("index must be None, False or a list of field paths (strings)")
    if len(index) > 100 or any(len(p) > 500 for p in index):
        raise InvalidInput("index may name at most 100 field paths of at most 500 characters each")
    return list(index)


def user_of(namespace: Sequence[str]) -> str:
    return namespace[0]


def category_of(namespace: Sequence[str]) -> str:
    """The memlens category of a namespace: its labels after the user, as described above (at most 64 characters,
    starting with a letter)."""
    parts = [_NOT_CATEGORY.sub("_", label.lower()).strip("_") or "x" for label in namespace[1:]]
    name = "__".join(parts)
    if not name:
        return DEFAULT_CATEGORY
    if not name[0].isalpha():
        name = "ns_" + name
    return name[:64].rstrip("_") or DEFAULT_CATEGORY


def key_prefix(namespace: Sequence[str], key: str) -> str:
    """The part of an item id derived from (namespace, key): every version of the key starts with it."""
    digest = hashlib.sha256(json.dumps([list(namespace), key], ensure_ascii=False).encode()).hexdigest()
    return f"{ID_PREFIX}{digest[:16]}_"


def value_json(value: Mapping[str, Any]) -> str:
    """A value as LangGraph's ``"$"`` path embeds it: sorted keys, not ASCII-escaped."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def index_texts(value: Mapping[str, Any], paths: Sequence[str], text_at: Callable[[Any, str], list[str]]) -> list[str]:
    """The texts ``paths`` select in ``value`` (``text_at`` is LangGraph's ``get_text_at_path``), blank ones left
    out."""
    texts: list[str] = []
    for path in paths:
        try:
            found = text_at(value, path)
        except (ValueError, IndexError, KeyError) as exc:  # a malformed path
            raise InvalidInput(f"index path {path[:60]!r} cannot be read: {exc}") from None
        texts.extend(t for t in found if t.strip())
    return texts


def matches_filter(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter semantics (its InMemoryStore's): every key must match; a value matches exactly (nested
    objects and lists compared element by element), or through operators ``$eq $ne $gt $gte $lt $lte``. A comparison
    of a value that is not a number (``$gt`` on text, say) does not match, where the InMemoryStore raises."""
    if not flt:
        return True
    return all(_matches(value.get(k), v) for k, v in flt.items())


def check_filter(flt: object) -> dict[str, Any] | None:
    """A search's filter: None or an object whose operator keys (starting with ``$``) are known ones."""
    if flt is None:
        return None
    if not isinstance(flt, Mapping):
        raise InvalidInput(f"a filter must be a mapping, got {type(flt).__name__}")
    validation.check_json_value(flt, "filter", max_chars=MAX_VALUE_CHARS)
    stack: list[Any] = [flt]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            for k, v in node.items():
                if k.startswith("$") and k not in FILTER_OPERATORS:
                    raise InvalidInput(f"unknown filter operator {k[:20]!r}; use one of {', '.join(FILTER_OPERATORS)}")
                stack.append(v)
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return dict(flt)


def _matches(item_value: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(item_value, op, arg) for op, arg in wanted.items())
        if not isinstance(item_value, Mapping):
            return False
        return all(_matches(item_value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(wanted)
            and all(_matches(a, b) for a, b in zip(item_value, wanted))
        )
    return bool(item_value == wanted)


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    try:
        left, right = float(value), float(arg)
    except (TypeError, ValueError):
        return False
    if op == "$gt":
        return left > right
    if op == "$gte":
        return left >= right
    if op == "$lt":
        return left < right
    return left <= right  # $lte (check_filter refused any other)


def namespace_matches(namespace: Sequence[str], path: Sequence[str], match_type: str) -> bool:
    """LangGraph's MatchCondition: ``path`` (``*`` matches any one label) at the start (prefix) or end (suffix)."""
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if match_type == "prefix" else zip(reversed(namespace), reversed(path))
    return all(p == "*" or n == p for n, p in pairs)


@dataclass(frozen=True)
class StoredVersion:
    """One version of a LangGraph item as memlens holds it: the item it is and where it came from."""

    memory_id: str
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    index: list[str] | Literal[False] | None
    indexed: bool  # some index path selected text: a search with a query can find it
    created_at: datetime  # the key's first version
    updated_at: datetime  # this version


def stored_version(memory_id: str, provenance: object, created_at: datetime) -> StoredVersion | None:
    """A row of ``items`` as a LangGraph item, or None when its provenance holds none (a memory this store did not
    write, or whose provenance another writer shaped otherwise: it is left out, never guessed at)."""
    try:
        prov = json.loads(provenance) if isinstance(provenance, str) else provenance
    except ValueError:
        return None
    origin = prov.get("origin") if isinstance(prov, dict) else None
    if not isinstance(origin, dict) or origin.get("system") != SYSTEM:
        return None
    namespace, key, value = origin.get("namespace"), origin.get("key"), origin.get("value")
    if not isinstance(namespace, list) or not namespace or not all(isinstance(label, str) for label in namespace):
        return None
    if not isinstance(key, str) or not isinstance(value, dict):
        return None
    index = origin.get("index")
    if not (index is None or index is False or (isinstance(index, list) and all(isinstance(p, str) for p in index))):
        index = None
    first = origin.get("first_created_at")
    try:
        first_created = datetime.fromisoformat(first) if isinstance(first, str) else created_at
    except ValueError:
        first_created = created_at
    return StoredVersion(
        memory_id, tuple(namespace), key, value, index, origin.get("indexed") is True, first_created, created_at
    )


def newest_per_key(found: Sequence[StoredVersion]) -> list[StoredVersion]:
    """``found`` (newest first) with only the newest version of each key."""
    seen: set[tuple[tuple[str, ...], str]] = set()
    out: list[StoredVersion] = []
    for version in found:
        if (version.namespace, version.key) not in seen:
            seen.add((version.namespace, version.key))
            out.append(version)
    return out
