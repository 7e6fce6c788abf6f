"""Structured output: draft-07 validation, re-prompts, the retry limit."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import example, given
from hypothesis import strategies as st

from agents import AgentOptions
from agents._features.structured import (
    MAX_STRUCTURED_OUTPUT_FAILURES,
    unfenced,
    validation_errors,
)
from agents.testing import ScriptedBackend, Step, text

from .helpers import collect, result_of
from .tools.toolkit import printed_within_a_deadline

SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"name": {"type": "string"}, "count": {"type": "integer", "minimum": 0}},
    "required": ["name", "count"],
    "additionalProperties": False,
}
FORMAT = {"type": "json_schema", "schema": SCHEMA}


def opts(project: Path, backend: ScriptedBackend) -> AgentOptions:
    return AgentOptions(cwd=str(project), backend=backend, tools=[], output_format=FORMAT)


async def test_a_valid_answer_is_the_parsed_structured_output(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    backend = ScriptedBackend([Step([text('```json\n{"name": "x", "count": 3}\n```')])])
    messages, error = await collect("count", opts(project, backend))
    assert error is None
    result = result_of(messages)
    assert result.structured_output == {"name": "x", "count": 3}
    assert backend.requests[0].output_format == FORMAT


async def test_an_invalid_answer_is_re_prompted_with_the_errors(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    backend = ScriptedBackend(
        [Step([text('{"name": "x", "count": -1}')]), Step([text('{"name": "x", "count": 1}')])]
    )
    messages, _ = await collect("count", opts(project, backend))
    assert result_of(messages).structured_output == {"name": "x", "count": 1}
    reprompt = backend.requests[1].messages[-1]
    assert reprompt["role"] == "user"
    assert "at $['count']: -1 is less than the minimum of 0" in reprompt["content"]


async def test_five_invalid_answers_end_with_max_structured_output_retries(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    backend = ScriptedBackend([Step([text("not json")])] * MAX_STRUCTURED_OUTPUT_FAILURES)
    messages, error = await collect("count", opts(project, backend))
    backend.assert_consumed()
    result = result_of(messages)
    assert result.subtype == "error_max_structured_output_retries"
    assert result.structured_output is None
    assert error is not None and error.subtype == "error_max_structured_output_retries"
    assert "not valid JSON" in (result.errors or [""])[0]


def test_a_draft_2020_12_schema_is_refused_at_startup() -> None:
    schema = {**SCHEMA, "$schema": "https://json-schema.org/draft/2020-12/schema"}
    with pytest.raises(ValueError, match=r"^output_format\['schema'\]\['\$schema'\] must be draft"):
        AgentOptions(output_format={"type": "json_schema", "schema": schema})


@pytest.mark.parametrize(
    ("output_format", "message"),
    [
        ({"type": "json_schema", "schema": {"type": "nope"}}, r"not a valid draft-07 schema"),
        ({"type": "json", "schema": {}}, r"^output_format must be"),
        ({"type": "json_schema"}, r"^output_format\['schema'\] must be a dict"),
    ],
)
def test_an_invalid_output_format_is_refused_at_startup(
    output_format: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        AgentOptions(output_format=output_format)


# -- the final answer is the model's text: reading it never holds the event loop ---------------

#: The fence as it was matched: ``\s*\n`` before the body backtracks a newline at a time, and
#: the greedy body scans to the end of the answer again after each, so an answer of 20 000
#: newlines took 1.4 s (a minute and more at the output limit). Kept as the reference.
_REFERENCE_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n(.*)\n```\s*$", re.DOTALL)

_FENCE_TEXT = st.lists(
    st.sampled_from(["`", "```", "\n", " ", "\t", "\x1c", "\xa0", "json", "-", "{}", "1", "é"]),
    max_size=40,
).map("".join)


@given(_FENCE_TEXT)
@example("```\n```")
@example("```json\n\n```")
@example("```json \n \n1\n```")
@example("```\n\n\n```")
@example("```a b\n1\n```")
def test_the_fence_is_read_as_the_regex_read_it(text: str) -> None:
    """The unfenced body is the one the backtracking regex gave, for any (stripped) answer."""
    body = text.strip()
    reference = _REFERENCE_FENCE.match(body)
    assert unfenced(body) == (None if reference is None else reference.group(1))


def test_an_answer_of_newlines_is_read_at_once() -> None:
    """A fence opened over 200 000 newlines answers in linear time (the regex: hours)."""
    script = (
        "from agents._features.structured import validation_errors\n"
        "print(validation_errors({}, '```' + '\\n' * 200_000 + 'x')[1][0][:30])"
    )
    assert printed_within_a_deadline(script, seconds=30) == "the answer is not valid JSON:"


def test_an_answer_nested_too_deeply_is_invalid_json_not_a_crash() -> None:
    """JSON nested past Python's recursion limit is an answer to re-prompt, not an error that
    ends the session."""
    value, errors = validation_errors({}, "[" * 100_000 + "]" * 100_000)
    assert value is None
    assert errors == ["the answer is not valid JSON: nested too deeply to be read"]
