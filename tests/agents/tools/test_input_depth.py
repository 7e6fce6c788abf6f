"""A tool input nested deeper than MAX_INPUT_DEPTH is refused before any check recurses into
it, with the path, the depth and the limit; inputs within it pass as before."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.tools._input_depth import MAX_INPUT_DEPTH
from agents.tools.base import Tool, ToolInputError, ToolOutput
from agents.tools.shell import bash_tool


async def _handler(args: Any, ctx: Any) -> ToolOutput:
    return ToolOutput("")


ANY = Tool("Any", "takes anything", {"type": "object", "properties": {"a": {}}}, _handler)
SCHEMA = Tool(  # a schema only jsonschema checks (it recurses into the input)
    "Schema",
    "a recursive schema",
    {
        "$ref": "#/definitions/n",
        "definitions": {"n": {"type": ["object", "array", "number"]}},
    },
    _handler,
)


def nested(depth: int) -> dict[str, Any]:
    """An input ``depth`` levels deep: ``{"a": [{"a": [...]}]}`` (built without recursion)."""
    value: Any = {}
    for wrap in range(1, depth):
        value = {"a": value} if (depth - 1 - wrap) % 2 == 0 else [value]
    return value


def depth_of(value: Any) -> int:
    """The reference: how deep objects and arrays nest (recursive; for small inputs)."""
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


def test_the_builder_nests_as_many_levels_as_asked() -> None:
    assert [depth_of(nested(d)) for d in (1, 2, 3, MAX_INPUT_DEPTH)] == [1, 2, 3, MAX_INPUT_DEPTH]


@pytest.mark.parametrize("tool", [ANY, SCHEMA, bash_tool()], ids=lambda t: t.name)
def test_an_input_at_the_limit_passes_the_depth_check(tool: Tool) -> None:
    raw = {"command": "ls", **nested(MAX_INPUT_DEPTH)}
    try:
        tool.validate(raw)
    except ToolInputError as exc:  # (the schema's own verdict: never about depth)
        assert "nest" not in str(exc)


@pytest.mark.parametrize("tool", [ANY, SCHEMA, bash_tool()], ids=lambda t: t.name)
def test_an_input_past_the_limit_is_refused_naming_path_depth_and_limit(tool: Tool) -> None:
    raw = {"command": "ls", **nested(MAX_INPUT_DEPTH + 1)}
    path = "$" + ".a[0]" * (MAX_INPUT_DEPTH // 2)
    with pytest.raises(ToolInputError) as caught:
        tool.validate(raw)
    assert str(caught.value) == (
        f"invalid input for {tool.name}: objects and arrays nest {MAX_INPUT_DEPTH + 1} levels "
        f"deep at `{path}`, more than the {MAX_INPUT_DEPTH} allowed"
    )


def test_an_input_deeper_than_the_recursion_limit_is_refused_without_recursing() -> None:
    """50 000 levels (what a hook's callback could hand over): refused, no RecursionError."""
    with pytest.raises(ToolInputError, match=r"nest 65 levels deep"):
        SCHEMA.validate(nested(50_000))


def test_an_input_that_contains_itself_is_refused() -> None:
    looped: dict[str, Any] = {"a": 1}
    looped["b"] = [looped]
    with pytest.raises(ToolInputError, match=r"nest 65 levels deep at `\$(\.b\[0\])+`"):
        ANY.validate(looped)


@st.composite
def inputs(draw: st.DrawFn) -> dict[str, Any]:
    """Objects of a spine of random depth around the limit, with shallow branches off it."""
    leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3))
    branch = st.recursive(
        leaf, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(), inner)
    )
    value: Any = draw(branch)
    for _ in range(draw(st.integers(0, MAX_INPUT_DEPTH + 3))):
        siblings = draw(st.lists(branch, max_size=2))
        if draw(st.booleans()):
            value = [*siblings, value]
        else:
            value = {**{f"s{i}": s for i, s in enumerate(siblings)}, "k": value}
    return {"x": value}


@given(inputs())
def test_an_input_passes_the_depth_check_exactly_when_it_nests_within_the_limit(
    raw: dict[str, Any],
) -> None:
    try:
        ANY.validate(raw)
        refused = False
    except ToolInputError:
        refused = True
    assert refused == (depth_of(raw) > MAX_INPUT_DEPTH)
