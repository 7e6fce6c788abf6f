"""Structured output: a JSON Schema (draft-07) the final answer must satisfy.

``output_format={"type": "json_schema", "schema": {...}}`` is checked when the options are built
(``agents.options.check_output_format``: an invalid schema, or one declaring another draft in
``$schema``, is a ``ValueError``). The request carries ``output_format`` so the Anthropic backend
can ask for it. The main agent's final answer is parsed as JSON (a surrounding Markdown code fence
is tolerated) and validated; on a mismatch the model is told what was wrong and answers again. After
:data:`MAX_STRUCTURED_OUTPUT_FAILURES` failed answers the run ends with
``error_max_structured_output_retries``. The parsed value becomes
``ResultMessage.structured_output``."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

import msgspec

from .._loop.run import RunEnd

if TYPE_CHECKING:
    import jsonschema

    from .._loop.agent import AgentLoop
    from .._loop.response import Response
    from .._loop.run import Run

__all__ = ["MAX_STRUCTURED_OUTPUT_FAILURES", "structured_follow_up"]

#: failed answers (unparsable or invalid) before the run ends with an error
MAX_STRUCTURED_OUTPUT_FAILURES = 5
#: A fence's opening: its language tag (``json``) and the whitespace after it (possessive: read
#: once, never given back).
_OPENING = re.compile(r"```[a-zA-Z0-9_-]*+(\s*+)")
_MAX_ERRORS_SHOWN = 10


@functools.lru_cache(maxsize=32)
def _validator(schema_json: bytes) -> jsonschema.Draft7Validator:
    import json

    import jsonschema

    return jsonschema.Draft7Validator(json.loads(schema_json))


def unfenced(body: str) -> str | None:
    """What a Markdown code fence around ``body`` (already stripped) holds, or None.

    The same reading as the regex it replaces (a fence line with an optional language tag,
    whitespace holding a newline, the body, a newline and a closing fence at the very end), in
    linear time: as a regex, the whitespace before the body gave back one newline at a time and
    the greedy body was scanned to the end after each, so an answer of newlines took quadratic
    time on the event loop (20 000 of them, 1.4 s). The body starts after the last newline of
    that whitespace that leaves the closing fence's own newline to it, as the regex's greedy
    whitespace would have it.
    """
    if not body.endswith("\n```"):
        return None
    opening = _OPENING.match(body)
    if opening is None:
        return None
    closing = len(body) - 4
    newline = body.rfind("\n", opening.start(1), min(opening.end(1), closing))
    return None if newline < 0 else body[newline + 1 : closing]


def validation_errors(schema: dict[str, Any], text: str) -> tuple[Any, list[str]]:
    """The parsed answer and what is wrong with it (``[]`` when it is valid)."""
    import json  # here: ``import agents`` does not need it

    body = text.strip()
    inside = unfenced(body)
    if inside is not None:
        body = inside.strip()
    try:
        value = json.loads(body)
    except ValueError as exc:
        return None, [f"the answer is not valid JSON: {exc}"]
    except RecursionError:  # (the answer is the model's: it may nest [ a million deep)
        return None, ["the answer is not valid JSON: nested too deeply to be read"]
    validator = _validator(msgspec.json.encode(schema, order="sorted"))
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    return value, [
        "at $" + "".join(f"[{p!r}]" for p in e.absolute_path) + f": {e.message}" for e in errors
    ]


def structured_follow_up(loop: AgentLoop, response: Response, run: Run) -> str | None:
    """The main agent's final answer checked against ``output_format``.

    Returns None when there is no format or the answer is valid (``run.structured_output`` is
    set), the re-prompt when it is not, and ends the run after the last allowed failure.
    """
    output_format = loop.session.options.output_format
    if output_format is None or not loop.is_main:
        return None
    value, errors = validation_errors(output_format["schema"], response.text)
    if not errors:
        run.structured_output = value
        return None
    run.structured_failures += 1
    if run.structured_failures >= MAX_STRUCTURED_OUTPUT_FAILURES:
        raise RunEnd(
            "error_max_structured_output_retries",
            [
                f"structured output still invalid after {run.structured_failures} answers: "
                + "; ".join(errors[:_MAX_ERRORS_SHOWN])
            ],
            "structured_output_retries",
        )
    shown = "\n".join(f"- {e}" for e in errors[:_MAX_ERRORS_SHOWN])
    more = len(errors) - _MAX_ERRORS_SHOWN
    if more > 0:
        shown += f"\n- ... and {more} more"
    import json

    schema = json.dumps(output_format["schema"])
    return (
        "Your final answer must be a single JSON value matching this JSON Schema:\n"
        f"{schema}\n\nIt did not validate:\n{shown}\n\n"
        "Reply with only the corrected JSON, no other text."
    )
