"""A custom tool's input check: the fast test of exact types (what a JSON decoder gives) only
ever passes what the full check passes; anything else gets the full check's verdict."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.tools.base import (
    Tool,
    ToolContext,
    ToolInputError,
    ToolOutput,
    UncheckedInput,
    schema_from_shorthand,
    validated,
)

from .toolkit import printed_within_a_deadline


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


# -- a schema's regex is the tool's, the string it is searched in the model's ---------------------

_PATTERNS = st.sampled_from(
    ["^a+$", "a.*b", "^[a-z]{2,4}$", "x", "^(a+)+$", "^(ab|a)*c$", "(?=a)a", "^\\d+-\\d+$", ""]
)
_STRINGS = st.text(st.sampled_from("abcx-1!\n"), max_size=12)


def _plain(schema: dict[str, Any], instance: Any) -> str | None:
    """The verdict of jsonschema itself (the reference)."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    error = jsonschema.exceptions.best_match(cls(schema).iter_errors(instance))
    return None if error is None else f"{error.message} - at `{error.json_path}`"


@given(
    pattern=_PATTERNS,
    keys=_PATTERNS,
    instance=st.dictionaries(st.sampled_from(["q", "aa", "ab", "x!"]), _STRINGS, max_size=3),
    closed=st.booleans(),
)
def test_a_schema_with_regexes_gives_jsonschemas_verdict_or_asks_for_a_process(
    pattern: str, keys: str, instance: dict[str, str], closed: bool
) -> None:
    """In process, the verdict is jsonschema's own; where a regex could backtrack without
    bound the input is left to a process (``UncheckedInput``), never passed or failed here."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"q": {"type": "string", "pattern": pattern}},
        "patternProperties": {keys: {"type": "string", "maxLength": 5}},
    }
    if closed:
        schema["additionalProperties"] = False
    tool = Tool("t", "", schema, _never)
    expected = _plain(schema, instance)
    try:
        tool.validate(instance)
    except UncheckedInput:
        return
    except ToolInputError as exc:
        assert str(exc) == f"invalid input for t: {expected}"
    else:
        assert expected is None


_HOSTILE = "'a' * 40 + '!'"


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        ("{'type': 'object', 'properties': {'q': {'type': 'string', 'pattern': '^(a+)+$'}}}",
         f"{{'q': {_HOSTILE}}}"),
        ("{'type': 'object', 'patternProperties': {'^(a+)+$': {}}, 'additionalProperties': False}",
         f"{{{_HOSTILE}: 1}}"),
        ("{'type': 'object', 'propertyNames': {'pattern': '^(a+)+$'}}", f"{{{_HOSTILE}: 1}}"),
    ],
    ids=["pattern", "patternProperties", "propertyNames"],
)  # fmt: skip
def test_a_regex_that_backtracks_is_checked_in_a_process_killed_at_the_deadline(
    schema: str, instance: str
) -> None:
    """``^(a+)+$`` over 40 a's and a ``!`` (in process: hours), on a value or a key: an error
    naming the deadline, and the event loop ran other tasks all along."""
    script = (
        "import trio\n"
        "from agents.tools import _schema_guard, base\n"
        "_schema_guard.INPUT_CHECK_SECONDS = 1.0\n"
        "async def never(args, ctx): pass\n"
        f"tool = base.Tool('t', '', {schema}, never)\n"
        "async def main():\n"
        "    ticks = 0\n"
        "    async def tick():\n"
        "        nonlocal ticks\n"
        "        while True:\n"
        "            await trio.sleep(0.01)\n"
        "            ticks += 1\n"
        "    async with trio.open_nursery() as nursery:\n"
        "        nursery.start_soon(tick)\n"
        "        try:\n"
        f"            await base.validated(tool, {instance})\n"
        "        except base.ToolInputError as exc:\n"
        "            print(exc, ticks > 10, sep='|')\n"
        "        nursery.cancel_scope.cancel()\n"
        "trio.run(main)\n"
    )
    assert printed_within_a_deadline(script, seconds=30) == (
        "invalid input for t: checking it against the tool's schema took longer than 1 s "
        "(a pattern of the schema backtracks over it)|True"
    )


async def test_an_input_checked_in_a_process_gets_jsonschemas_verdict() -> None:
    """A regex outside Grep's bounded subset (a quantified group): the process passes what
    fits and names what does not, as jsonschema does."""
    schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": "^(ab|a)+$"}}}
    tool = Tool("t", "", schema, _never)
    assert await validated(tool, {"q": "abaab"}) == {"q": "abaab"}
    with pytest.raises(ToolInputError) as caught:
        await validated(tool, {"q": "abc"})
    assert str(caught.value) == f"invalid input for t: {_plain(schema, {'q': 'abc'})}"


def test_an_input_nested_past_the_recursion_limit_is_an_input_error() -> None:
    """A schema that refers to itself and an input nested 5 000 deep: an input error, not a
    RecursionError out of the tool call (refused by the depth check, before the schema's)."""
    schema = {
        "type": "object",
        "properties": {"x": {"$ref": "#/definitions/n"}},
        "definitions": {"n": {"type": "array", "items": {"$ref": "#/definitions/n"}}},
    }
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(ToolInputError, match=r"^invalid input for t: objects and arrays nest 65 "):
        Tool("t", "", schema, _never).validate({"x": deep})
