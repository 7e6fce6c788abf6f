"""A custom tool's input check: the fast test of exact types (what a JSON decoder gives) only
ever passes what the full check passes; anything else gets the full check's verdict."""

from __future__ import annotations

from typing import Any

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from agents.tools.base import Tool, ToolContext, ToolInputError, ToolOutput, schema_from_shorthand


class _Int(int):
    pass


class _Str(str):
    pass


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.integers().map(_Int),
    st.text(max_size=3).map(_Str),
)
_TYPES = st.sampled_from([str, int, float, bool, list, dict])


async def _never(args: Any, ctx: ToolContext) -> ToolOutput:
    raise AssertionError("not run")


@given(
    fields=st.dictionaries(st.sampled_from(["a", "b", "c"]), _TYPES, min_size=1, max_size=3),
    optional=st.sets(st.sampled_from(["a", "b", "c"])),
    instance=st.one_of(
        st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _VALUES, max_size=4),
        _VALUES,
    ),
)
def test_the_input_check_agrees_with_json_schema(
    fields: dict[str, type], optional: set[str], instance: Any
) -> None:
    schema = schema_from_shorthand(fields)
    schema["required"] = [name for name in schema["required"] if name not in optional]
    tool = Tool("t", "t", schema, _never)
    valid = jsonschema.Draft7Validator(schema).is_valid(instance)
    try:
        parsed = tool.validate(instance)
    except ToolInputError:
        assert not valid
    else:
        assert valid and parsed == instance and parsed is not instance


def test_an_integer_field_takes_a_number_whose_fraction_is_zero() -> None:
    """As JSON Schema since draft 6 (``1.0`` is an integer), and as the full check says."""
    tool = Tool("t", "t", schema_from_shorthand({"b": int}), _never)
    assert tool.validate({"b": 0.0}) == {"b": 0.0}
    try:
        tool.validate({"b": 0.5})
    except ToolInputError as exc:
        assert str(exc) == "invalid input for t: 0.5 is not of type 'integer' - at `$.b`"
    else:
        raise AssertionError("0.5 passed as an integer")
