"""How deep a tool's input may nest, checked without recursion (:func:`nesting_error`).

The model's JSON may nest up to the decoder's recursion limit, and everything that reads an
input after it recurses, several frames a level; an input nested past :data:`MAX_INPUT_DEPTH`
is an input error before any of them sees it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_INPUT_DEPTH", "MAX_INPUT_VALUES", "nesting_error"]

#: How deep objects and arrays may nest in a tool's input (the input itself is level 1). Tool
#: schemas nest a few levels (an object of arrays of objects); the model's JSON may nest up to
#: the decoder's recursion limit (about 1000), and what reads the input after the check recurses
#: too, several frames a level: the schema check (jsonschema failed past 200 levels with a
#: recursive schema), hooks' and MCP servers' JSON encoders, the transcript. 64 leaves every one
#: of them far from the interpreter's limit.
MAX_INPUT_DEPTH = 64
#: How many values (objects, arrays and what they hold, the input included) an input whose
#: parts are shared may expand to. A JSON decoder never shares a value, but a hook's or a
#: permission callback's input may hold one list twice, and so on sixty levels down: 2**60
#: values for the transcript and every hook's JSON to write out. A model's input of a million
#: values would be far past its output limit.
MAX_INPUT_VALUES = 1_000_000
#: the types of the values that end a branch of the input (what a JSON decoder gives)
_LEAVES = frozenset({str, int, float, bool, type(None)})


def nesting_error(raw: Any) -> str | None:
    """What is wrong when objects and arrays nest in ``raw`` more than
    :data:`MAX_INPUT_DEPTH` levels, naming the path to one past the limit; None when they do
    not. Walked with a stack of its own, not by recursion (the input may nest about as deep as
    the interpreter's recursion limit), and never past the limit (a structure a callback made
    may refer to itself: it is too deep). The common flat input (an object of strings and
    numbers) is not walked.

    A container the input holds in several places (a callback's structure may share its parts:
    a list holding the same list twice, sixty levels down, has 2**60 paths) is walked again
    only when reached deeper than before: at most once per level for each, never once per
    path. Such an input is also measured written out, and refused past
    :data:`MAX_INPUT_VALUES` values."""
    if type(raw) is dict:
        leaves = _LEAVES
        for value in raw.values():
            if type(value) not in leaves:
                break
        else:
            return None
    if not _is_container(raw):
        return None
    stack: list[tuple[Any, int, Any]] = [(raw, 1, None)]
    #: id → the deepest level a container was walked at, and the container (held, so that no
    #: other object takes its id while the walk runs: a mapping may make its values on demand)
    walked: dict[int, tuple[int, Any]] = {}
    shared = False
    while stack:
        value, depth, link = stack.pop()
        if depth > MAX_INPUT_DEPTH:
            keys: list[Any] = []
            while link is not None:
                link, key = link
                keys.append(key)
            path = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in reversed(keys))
            return (
                f"objects and arrays nest {depth} levels deep at `${path}`, more than the "
                f"{MAX_INPUT_DEPTH} allowed"
            )
        before = walked.get(id(value))
        if before is not None:
            shared = True
            if before[0] >= depth:
                continue  # walked as deep or deeper already: nothing below nests deeper now
        walked[id(value)] = (depth, value)
        kind = type(value)
        items = (
            value.items()
            if kind is dict or (kind is not list and isinstance(value, Mapping))
            else enumerate(value)
        )
        depth += 1
        for key, item in items:
            kind = type(item)
            if kind is dict or kind is list or (kind not in _LEAVES and _is_container(item)):
                stack.append((item, depth, (link, key)))
    if shared and _written_out(raw) > MAX_INPUT_VALUES:
        return f"objects and arrays share parts that expand to more than {MAX_INPUT_VALUES} values"
    return None


def _written_out(raw: Any) -> int:
    """How many values ``raw`` holds written out, each shared part counted once per place it
    is in; counted once per part (``raw`` is acyclic: the depth walk refused any cycle), and
    no further than just past :data:`MAX_INPUT_VALUES`."""
    counts: dict[int, int] = {}
    held: list[Any] = []  # every part and its parts, so that no id is taken meanwhile
    stack: list[tuple[Any, list[Any] | None]] = [(raw, None)]
    while stack:
        value, parts = stack.pop()
        if parts is not None:  # its parts are counted: its own count is theirs, plus one
            total = 1
            for part in parts:
                total += counts.get(id(part), 1)
            counts[id(value)] = min(total, MAX_INPUT_VALUES + 1)
            continue
        if id(value) in counts:
            continue
        items = list(value.values() if isinstance(value, Mapping) else value)
        held.append((value, items))
        stack.append((value, items))
        for item in items:
            if type(item) not in _LEAVES and _is_container(item) and id(item) not in counts:
                stack.append((item, None))
    return counts[id(raw)]


def _is_container(value: Any) -> bool:
    return isinstance(value, Mapping | list | tuple)
