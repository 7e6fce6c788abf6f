"""How deep a tool's input may nest, checked without recursion (:func:`nesting_error`).

The model's JSON may nest up to the decoder's recursion limit, and everything that reads an
input after it recurses, several frames a level; an input nested past :data:`MAX_INPUT_DEPTH`
is an input error before any of them sees it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_INPUT_DEPTH", "nesting_error"]

#: How deep objects and arrays may nest in a tool's input (the input itself is level 1). Tool
#: schemas nest a few levels (an object of arrays of objects); the model's JSON may nest up to
#: the decoder's recursion limit (about 1000), and what reads the input after the check recurses
#: too, several frames a level: the schema check (jsonschema failed past 200 levels with a
#: recursive schema), hooks' and MCP servers' JSON encoders, the transcript. 64 leaves every one
#: of them far from the interpreter's limit.
MAX_INPUT_DEPTH = 64
#: the types of the values that end a branch of the input (what a JSON decoder gives)
_LEAVES = frozenset({str, int, float, bool, type(None)})


def nesting_error(raw: Any) -> str | None:
    """What is wrong when objects and arrays nest in ``raw`` more than
    :data:`MAX_INPUT_DEPTH` levels, naming the path to one past the limit; None when they do
    not. Walked with a stack of its own, not by recursion (the input may nest about as deep as
    the interpreter's recursion limit), and never past the limit (a structure a callback made
    may refer to itself: it is too deep). The common flat input (an object of strings and
    numbers) is not walked."""
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
    return None


def _is_container(value: Any) -> bool:
    return isinstance(value, Mapping | list | tuple)
