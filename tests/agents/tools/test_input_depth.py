"""A tool input nested deeper than MAX_INPUT_DEPTH is refused before any check recurses into
it, with the path, the depth and the limit; inputs within it pass as before."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.tools._input_depth import MAX_INPUT_DEPTH, MAX_INPUT_VALUES
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


def shared(levels: int) -> list[Any]:
    """``levels`` lists, each holding the next one twice: 2**levels paths over ``levels``
    objects (what a hook's callback can hand over; a JSON decoder never shares a value)."""
    value: list[Any] = []
    for _ in range(levels):
        value = [value, value]
    return value


def test_an_input_that_shares_its_parts_is_walked_once_per_part_not_once_per_path() -> None:
    """2**63 paths through 63 lists: judged in a moment (a walk of every path never ends)."""
    with pytest.raises(ToolInputError, match=rf"nest {MAX_INPUT_DEPTH + 1} levels deep"):
        ANY.validate({"a": shared(MAX_INPUT_DEPTH - 1)})


def test_shared_parts_that_expand_past_the_limit_are_refused_naming_it() -> None:
    """Within the depth limit, but 2**41 values once written out (what the transcript and
    every hook's JSON would have to write): refused, in a moment, saying why."""
    with pytest.raises(ToolInputError) as caught:
        ANY.validate({"a": shared(40)})
    assert str(caught.value) == (
        f"invalid input for Any: objects and arrays share parts that expand to more than "
        f"{MAX_INPUT_VALUES} values"
    )


def test_shared_parts_within_the_limit_pass_as_they_are() -> None:
    """A callback's input may well use one object twice (``{"a": x, "b": x}``)."""
    part = {"k": [1, 2, 3]}
    assert ANY.validate({"a": part, "b": [part, part]}) == {"a": part, "b": [part, part]}
    ANY.validate({"a": shared(18)})  # 2**19 values written out, within the limit


def test_expansion_counts_every_value_of_a_shared_part() -> None:
    """The count at the limit: the input, its list of the same list of n values k times."""
    n = 999
    values = list(range(n))
    k = (MAX_INPUT_VALUES - 2) // (n + 1)  # the input, "a"'s list, then k lists of n values
    ANY.validate({"a": [values] * k})
    with pytest.raises(ToolInputError, match="expand to more than"):
        ANY.validate({"a": [values] * (k + 1)})


@pytest.mark.parametrize("deep_first", [True, False])
def test_a_shared_part_reached_deeper_the_second_time_is_judged_at_that_depth(
    deep_first: bool,
) -> None:
    """The same object within the limit on one path and past it on another, in either order:
    refused (a walk that skipped whatever it had seen would pass one of the two)."""
    part = nested(MAX_INPUT_DEPTH - 2)  # 62 levels: 63 under the input's "a", 65 under "b"
    raw = {"b": [[part]], "a": part} if deep_first else {"a": part, "b": [[part]]}
    with pytest.raises(ToolInputError, match=rf"nest {MAX_INPUT_DEPTH + 1} levels deep at `\$\.b"):
        ANY.validate(raw)
