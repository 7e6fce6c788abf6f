"""A tool's input against a JSON Schema whose regexes could backtrack without bound.

The schema is the tool's (an MCP server's) and the strings the model's: ``^(a+)+$`` over 28 a's
and a ``!`` took 8 s in ``re``, on the event loop, where nothing can cancel it. So the schema's
regex keywords (``pattern``, ``patternProperties`` and the keywords that read it) search a string
in process only where Grep's rule bounds the search (:func:`~._grep.bounded_search`); any other
input is checked by ``jsonschema`` in a Python process of its own (:func:`check_apart`), which a
cancellation or :data:`INPUT_CHECK_SECONDS` kills.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ._apart import last_error_line, run_python

__all__ = ["INPUT_CHECK_SECONDS", "UNBOUNDED", "Unbounded", "check_apart", "guarded"]

#: How long checking one input against its schema in a process of its own may take.
INPUT_CHECK_SECONDS = 10.0


class Unbounded(Exception):
    """A regex of the schema could backtrack without bound over a string of the input."""


#: What a check answers for an input only a process of its own can check.
UNBOUNDED = "a pattern could backtrack without bound"


def guarded(cls: Any) -> Any:
    """``cls`` whose regex keywords raise :class:`Unbounded` rather than search a string they
    could backtrack over without bound (everything else is ``cls``'s own)."""
    import jsonschema

    from ._grep import bounded_search  # (with the walk it imports: only richer schemas need it)

    own = cls.VALIDATORS

    def pattern(validator: Any, regex: str, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "string") and not bounded_search(regex, (len(instance),)):
            raise Unbounded
        return own["pattern"](validator, regex, instance, schema)

    def keyed(keyword: str) -> Any:
        # these match the object's keys against ``patternProperties``
        def check(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
            if validator.is_type(instance, "object"):
                for regex in schema.get("patternProperties") or ():
                    if any(not bounded_search(regex, (len(key),)) for key in instance):
                        raise Unbounded
            return own[keyword](validator, value, instance, schema)

        return check

    replaced = {"pattern": pattern}
    for keyword in ("patternProperties", "additionalProperties", "unevaluatedProperties"):
        if keyword in own:
            replaced[keyword] = keyed(keyword)
    return jsonschema.validators.extend(cls, replaced)  # type: ignore[no-untyped-call]


async def check_apart(
    name: str, schema: Mapping[str, Any], raw: Mapping[str, Any]
) -> dict[str, Any]:
    """``raw`` checked against ``schema`` by ``jsonschema`` in a Python process of its own,
    which a cancellation or :data:`INPUT_CHECK_SECONDS` kills; raises ``ToolInputError`` naming
    what is wrong, or the deadline."""
    from .base import ToolInputError  # (base imports this module)

    payload = msgspec.json.encode({"schema": schema, "instance": raw})
    done = await run_python(_CHECK_SCRIPT, [], payload, INPUT_CHECK_SECONDS)
    if done is None:
        raise ToolInputError(
            f"invalid input for {name}: checking it against the tool's schema took "
            f"longer than {INPUT_CHECK_SECONDS:g} s (a pattern of the schema backtracks "
            "over it)"
        )
    if done.returncode != 0:  # (a check that fails is no pass)
        raise ToolInputError(
            f"invalid input for {name}: it could not be checked: {last_error_line(done)}"
        )
    message = done.stdout.decode("utf-8", "replace")
    if message:
        raise ToolInputError(f"invalid input for {name}: {message}")
    return dict(raw)


_CHECK_SCRIPT = """
import json, sys
import jsonschema
given = json.loads(sys.stdin.buffer.read())
schema = given["schema"]
cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
error = jsonschema.exceptions.best_match(cls(schema).iter_errors(given["instance"]))
if error is not None:
    sys.stdout.write(f"{error.message} - at `{error.json_path}`")
"""
