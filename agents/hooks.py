"""Hooks: user callbacks that observe, veto or rewrite what the agent loop does.

``hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[check_bash], timeout=10)]}`` — for
each event, every :class:`HookMatcher` whose matcher accepts the event's subject (tool name,
agent type or compaction trigger) contributes its callbacks. :class:`HookRunner` runs all of them
concurrently in a nursery, each under its matcher's timeout, and folds their outputs into one
:class:`HookResult`: the loop never has to look at raw hook dictionaries.

Failures are contained: a hook that raises, times out or returns an invalid output is reported in
``HookResult.errors`` and logged on the ``agents.hooks`` logger. For ``PreToolUse`` the permission
gate turns such an error into a denial of the call (a broken guard must not open the gate); for
every other event the loop carries on as if the hook had said nothing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias, get_args

import attrs
import trio

__all__ = [
    "DEFAULT_HOOK_TIMEOUT",
    "HOOK_EVENTS",
    "USER_PROMPT_HOOK_TIMEOUT",
    "HookCallback",
    "HookContext",
    "HookEvent",
    "HookMatcher",
    "HookResult",
    "HookRunner",
]

logger = logging.getLogger("agents.hooks")

#: A hook event's name; :data:`HOOK_EVENTS` lists them, in the Agent SDK documentation's order.
HookEvent: TypeAlias = Literal[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "Notification",
    "PermissionRequest",
    "SessionStart",
    "SessionEnd",
]
HOOK_EVENTS: tuple[str, ...] = get_args(HookEvent)
#: Seconds a hook may run when its matcher sets no timeout.
DEFAULT_HOOK_TIMEOUT = 600.0
#: ...except for ``UserPromptSubmit``, which holds up the user's prompt.
USER_PROMPT_HOOK_TIMEOUT = 30.0

_PERMISSION_DECISIONS = ("allow", "deny", "ask", "defer")
#: Among hook outputs of one event the most restrictive permission decision wins.
_PRECEDENCE = {"deny": 0, "defer": 1, "ask": 2, "allow": 3}
_PLAIN_MATCHER = re.compile(r"[A-Za-z0-9_ ,|\-]*")


@attrs.frozen
class HookContext:
    """The third argument of every hook callback; reserved for an abort signal (always None)."""

    signal: None = None


HookCallback: TypeAlias = Callable[
    [dict[str, Any], str | None, HookContext], Awaitable[dict[str, Any]]
]


def _check_timeout(_: object, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"HookMatcher.{attribute.name} must be > 0 seconds, got {value!r}")


def _check_hooks(_: object, attribute: attrs.Attribute[Any], value: list[Any]) -> None:
    for index, hook in enumerate(value):
        if not callable(hook):
            raise ValueError(
                f"HookMatcher.{attribute.name}[{index}] must be an async callable, "
                f"got {type(hook).__name__}"
            )


@attrs.frozen
class HookMatcher:
    """Callbacks for one event, filtered by ``matcher`` (a tool name, a ``|`` list, or a regex).

    ``None``, ``""`` and ``"*"`` match everything; a string made only of letters, digits, ``_``,
    ``-``, spaces, ``,`` and ``|`` is an exact name or a list of them (``"Write|Edit"``); anything
    else is a regular expression searched anywhere in the name (``"Edit.*"``, ``"^mcp__"``).

    >>> HookMatcher(matcher="Write|Edit", hooks=[audit], timeout=30)  # doctest: +SKIP
    """

    matcher: str | None = None
    hooks: list[HookCallback] = attrs.field(factory=list, validator=_check_hooks)
    timeout: float | None = attrs.field(default=None, validator=_check_timeout)


@attrs.frozen
class HookResult:
    """What all the hooks of one event said, combined.

    * ``decision``: the winning permission decision (deny > defer > ask > allow) of PreToolUse
      hooks, or the ``decision.behavior`` of PermissionRequest hooks; ``reason`` explains it.
    * ``block``/``block_reason``: some hook returned top-level ``decision: "block"``.
    * ``updated_input``, ``updated_tool_output``: the first rewrite offered (registration order).
    * ``stop``: not None when a hook returned ``continue_=False``; its ``stopReason`` or "".
    * ``errors``: hooks that raised, timed out or returned something invalid.
    * ``interrupt``: a PermissionRequest hook denied with ``interrupt: True``.
    """

    decision: Literal["allow", "deny", "ask", "defer"] | None = None
    reason: str = ""
    block: bool = False
    block_reason: str = ""
    updated_input: dict[str, Any] | None = None
    updated_tool_output: Any | None = None
    additional_context: tuple[str, ...] = ()
    system_messages: tuple[str, ...] = ()
    stop: str | None = None
    errors: tuple[str, ...] = ()
    interrupt: bool = False


_NO_RESULT = HookResult()
_UNSET: Any = object()


@attrs.define
class _Output:
    """One hook's validated output."""

    decision: Literal["allow", "deny", "ask", "defer"] | None = None
    reason: str = ""
    block: bool = False
    block_reason: str = ""
    updated_input: dict[str, Any] | None = None
    updated_tool_output: Any = _UNSET
    additional_context: str = ""
    system_message: str = ""
    stop: str | None = None
    interrupt: bool = False


class _InvalidOutput(Exception):
    pass


def _compile_matcher(matcher: str | None) -> Callable[[str], bool]:
    if matcher is None or matcher.strip() in ("", "*"):
        return lambda _name: True
    if _PLAIN_MATCHER.fullmatch(matcher):
        names = frozenset(n.strip() for n in re.split(r"[|,]", matcher) if n.strip())
        return names.__contains__
    try:
        pattern = re.compile(matcher)
    except re.error as exc:
        raise ValueError(f"invalid hook matcher {matcher!r}: {exc}") from None
    return lambda name: pattern.search(name) is not None


def _hook_name(hook: object) -> str:
    return str(getattr(hook, "__qualname__", None) or repr(hook))


def _parse_output(event: str, output: object) -> _Output:
    """Validate one hook's return value: the fields and decisions its event allows."""
    result = _Output()
    if output is None:
        return result  # a hook that forgot to `return {}` has no opinion
    if not isinstance(output, Mapping):
        raise _InvalidOutput(f"expected a dict, got {type(output).__name__}")
    if output.get("async_") is True or output.get("async") is True:
        return result
    go_on = output.get("continue_", output.get("continue", True))
    if go_on is False:
        result.stop = str(output.get("stopReason") or "")
    message = output.get("systemMessage")
    if message:
        result.system_message = str(message)
    decision = output.get("decision")
    if decision == "block":
        result.block = True
        result.block_reason = str(output.get("reason") or "")
        if event == "PreToolUse":  # the older top-level form of permissionDecision
            result.decision, result.reason = "deny", result.block_reason
    elif decision == "approve" and event == "PreToolUse":
        result.decision, result.reason = "allow", str(output.get("reason") or "")
    elif decision is not None:
        raise _InvalidOutput(f"unknown decision {decision!r} (expected 'block')")
    specific = output.get("hookSpecificOutput")
    if specific is None:
        return result
    if not isinstance(specific, Mapping):
        raise _InvalidOutput(f"hookSpecificOutput must be a dict, got {type(specific).__name__}")
    named = specific.get("hookEventName")
    if named is not None and named != event:
        raise _InvalidOutput(f"hookSpecificOutput.hookEventName is {named!r}, expected {event!r}")
    if event == "PreToolUse":
        permission = specific.get("permissionDecision")
        if permission is not None:
            if permission not in _PERMISSION_DECISIONS:
                raise _InvalidOutput(
                    f"unknown permissionDecision {permission!r} "
                    f"(expected one of {', '.join(_PERMISSION_DECISIONS)})"
                )
            result.decision = permission
            result.reason = str(specific.get("permissionDecisionReason") or "")
        result.updated_input = _input_dict(specific.get("updatedInput"), "updatedInput")
    elif event == "PermissionRequest":
        answer = specific.get("decision")
        if answer is not None:
            if not isinstance(answer, Mapping) or answer.get("behavior") not in ("allow", "deny"):
                raise _InvalidOutput(
                    "hookSpecificOutput.decision must be {'behavior': 'allow' | 'deny', ...}, "
                    f"got {answer!r}"
                )
            result.decision = answer["behavior"]
            result.reason = str(answer.get("message") or "")
            result.interrupt = answer.get("interrupt") is True
            result.updated_input = _input_dict(answer.get("updatedInput"), "updatedInput")
    elif event == "PostToolUse" and "updatedToolOutput" in specific:
        result.updated_tool_output = specific["updatedToolOutput"]
    context = specific.get("additionalContext")
    if context:
        result.additional_context = str(context)
    return result


def _input_dict(value: object, field: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise _InvalidOutput(f"{field} must be a dict, got {type(value).__name__}")
    return dict(value)


def _combine(outputs: Sequence[_Output], errors: Sequence[str]) -> HookResult:
    decided = [o for o in outputs if o.decision is not None]
    decision = min(
        (o.decision for o in decided if o.decision is not None),
        key=_PRECEDENCE.__getitem__,
        default=None,
    )
    winners = [o for o in decided if o.decision == decision]
    rewrites = [o.updated_input for o in winners + list(outputs) if o.updated_input is not None]
    tool_outputs = [o.updated_tool_output for o in outputs if o.updated_tool_output is not _UNSET]
    stops = [o.stop for o in outputs if o.stop is not None]
    return HookResult(
        decision=decision,
        reason="; ".join(o.reason for o in winners if o.reason),
        block=any(o.block for o in outputs),
        block_reason="; ".join(o.block_reason for o in outputs if o.block and o.block_reason),
        updated_input=rewrites[0] if rewrites else None,
        updated_tool_output=tool_outputs[0] if tool_outputs else None,
        additional_context=tuple(o.additional_context for o in outputs if o.additional_context),
        system_messages=tuple(o.system_message for o in outputs if o.system_message),
        stop=stops[0] if stops else None,
        errors=tuple(errors),
        interrupt=any(o.interrupt for o in winners),
    )


@attrs.frozen
class _Registered:
    matches: Callable[[str], bool]
    matcher: HookMatcher


@attrs.define(eq=False, init=False)
class HookRunner:
    """Runs the hooks registered for each event and combines what they return.

    >>> runner = HookRunner({"PreToolUse": [HookMatcher("Bash", [guard])]})  # doctest: +SKIP
    >>> result = await runner.run("PreToolUse", base_input, match="Bash", tool_use_id="t1")
    """

    _events: dict[str, tuple[_Registered, ...]]

    def __init__(self, hooks: Mapping[str, Sequence[HookMatcher]] | None) -> None:
        events: dict[str, tuple[_Registered, ...]] = {}
        for event, matchers in (hooks or {}).items():
            if event not in HOOK_EVENTS:
                raise ValueError(
                    f"unknown hook event {event!r} (expected one of {', '.join(HOOK_EVENTS)})"
                )
            if isinstance(matchers, str | Mapping | HookMatcher) or not isinstance(
                matchers, Sequence
            ):
                raise ValueError(
                    f"hooks[{event!r}] must be a list of HookMatcher, got {type(matchers).__name__}"
                )
            registered = []
            for index, matcher in enumerate(matchers):
                if not isinstance(matcher, HookMatcher):
                    raise ValueError(
                        f"hooks[{event!r}][{index}] must be a HookMatcher, "
                        f"got {type(matcher).__name__}"
                    )
                registered.append(_Registered(_compile_matcher(matcher.matcher), matcher))
            if registered:
                events[event] = tuple(registered)
        self._events = events

    def has(self, event: str) -> bool:
        """Whether any hook is registered for ``event`` (lets callers skip building inputs)."""
        return event in self._events

    async def run(
        self,
        event: str,
        hook_input: dict[str, Any],
        *,
        match: str | None = None,
        tool_use_id: str | None = None,
    ) -> HookResult:
        """Run every hook of ``event`` whose matcher accepts ``match``, concurrently.

        With ``match=None`` (events without a subject, e.g. ``UserPromptSubmit``) every hook of
        the event runs. Each callback gets its own copy of ``hook_input`` with
        ``hook_event_name`` set.
        """
        if event not in HOOK_EVENTS:
            raise ValueError(
                f"unknown hook event {event!r} (expected one of {', '.join(HOOK_EVENTS)})"
            )
        calls = [
            (hook, entry.matcher.timeout)
            for entry in self._events.get(event, ())
            if match is None or entry.matches(match)
            for hook in entry.matcher.hooks
        ]
        if not calls:
            await trio.lowlevel.checkpoint()
            return _NO_RESULT
        default_timeout = (
            USER_PROMPT_HOOK_TIMEOUT if event == "UserPromptSubmit" else DEFAULT_HOOK_TIMEOUT
        )
        outputs: list[_Output | None] = [None] * len(calls)
        errors: list[str | None] = [None] * len(calls)
        payload = {**hook_input, "hook_event_name": event}

        async def run_one(index: int, hook: HookCallback, seconds: float) -> None:
            name = _hook_name(hook)
            with trio.move_on_after(seconds) as scope:
                try:
                    raw = await hook(dict(payload), tool_use_id, HookContext())
                    outputs[index] = _parse_output(event, raw)
                except _InvalidOutput as exc:
                    errors[index] = f"{event} hook {name} returned an invalid output: {exc}"
                except Exception as exc:
                    errors[index] = f"{event} hook {name} raised {type(exc).__name__}: {exc}"
                    logger.warning("%s", errors[index], exc_info=exc)
                    return
            if scope.cancelled_caught:
                errors[index] = f"{event} hook {name} timed out after {seconds:g}s"
            if errors[index] is not None:
                logger.warning("%s", errors[index])

        async with trio.open_nursery() as nursery:
            for index, (hook, timeout) in enumerate(calls):
                nursery.start_soon(run_one, index, hook, timeout or default_timeout)
        return _combine([o for o in outputs if o is not None], [e for e in errors if e is not None])
