"""Structured output: draft-07 validation, re-prompts, the retry limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from agents import AgentOptions
from agents._features.structured import MAX_STRUCTURED_OUTPUT_FAILURES
from agents.testing import ScriptedBackend, Step, text

from .helpers import collect, result_of

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
