"""The permission gate: one decision per tool call, in a fixed order.

1. ``PreToolUse`` hooks — deny and defer end it; ask forces step 6; allow is remembered but
   does not skip steps 2-3.
2. deny rules — deny.
3. ask rules — force step 6.
4. the permission mode — may approve (``bypassPermissions`` approves everything left).
5. allow rules — approve (not for edits and shell commands in ``plan`` mode).
6. ``auto`` mode's classifier, then ``PermissionRequest`` hooks, then (after ``Notification``
   hooks) ``can_use_tool``; with no callback, or under ``dontAsk``, the call is denied.

Tools that need a person's answer (``PermissionCheck.asks_user``: AskUserQuestion) always go to
step 6, whatever the mode; with no callback they run unanswered and tell the model nobody can
answer.

Removing a critical path (``/``, its children, home, ``cwd`` and its parents) skips steps 4-5
and a hook's allow: only an explicit answer from step 6 can approve it.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Sequence
from typing import Any, Literal

import attrs
import msgspec
import trio

from ..hooks import HookRunner
from ._checked import FileAccess
from ._memo import CallMemo
from ._modes import WorkingDirs, critical_removal, is_write_tool, mode_approves
from ._rules import RuleSet, parse_rule
from ._types import (
    CanUseTool,
    Classifier,
    PermissionCheck,
    PermissionOutcome,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
    validate_mode,
)

__all__ = ["PermissionGate"]

logger = logging.getLogger("agents.permissions")

_Decider = Literal["hook", "rule", "mode", "callback", "default"]


@attrs.define(eq=False, init=False)
class PermissionGate:
    """Decides whether each tool call may run; the agent loop asks it once per call.

    >>> gate = PermissionGate(mode="acceptEdits", rules=RuleSet.from_strings(allow=["Bash(npm *)"]),
    ...                       can_use_tool=ask_user, hooks=HookRunner(hooks), cwd="/repo")
    >>> outcome = await gate.check(PermissionCheck("Bash", {"command": "npm test"}, "t1", False),
    ...                            {"session_id": sid, "cwd": "/repo"})  # doctest: +SKIP
    >>> outcome.behavior
    'allow'

    ``mode`` may be changed between calls (``set_mode``); ``updated_permissions`` returned by the
    callback add session rules.
    """

    _mode: str
    _rules: RuleSet
    _can_use_tool: CanUseTool | None
    _hooks: HookRunner | None
    _dirs: WorkingDirs
    _classifier: Classifier | None
    _files: FileAccess

    def __init__(
        self,
        *,
        mode: str = "default",
        rules: RuleSet | None = None,
        can_use_tool: CanUseTool | None = None,
        hooks: HookRunner | None = None,
        cwd: str,
        add_dirs: Sequence[str] = (),
        home: str | None = None,
        classifier: Classifier | None = None,
    ) -> None:
        if not isinstance(cwd, str) or not cwd:
            raise ValueError(f"cwd must be a non-empty path, got {cwd!r}")
        self._mode = validate_mode(mode)
        self._rules = rules if rules is not None else RuleSet()
        self._can_use_tool = can_use_tool
        self._hooks = hooks
        home = home if home is not None else os.path.expanduser("~")
        self._dirs = WorkingDirs(os.path.abspath(cwd), add_dirs, home)
        self._classifier = classifier
        self._files = FileAccess(
            self._dirs.cwd, home, self._rules.read_deny_matcher(self._dirs.cwd, home)
        )

    @property
    def mode(self) -> str:
        """The permission mode the next call is judged under."""
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        self._mode = validate_mode(mode)

    def with_mode(self, mode: str) -> PermissionGate:
        """A gate with the same rules, callback, hooks and directories under another mode
        (a subagent definition's ``permission_mode``). Rules added later to either
        gate stay with that gate."""
        twin = copy.copy(self)
        twin._mode = validate_mode(mode)
        files = self._files
        twin._files = FileAccess(files.cwd, files.home, files.deny_read)
        return twin

    def set_mode(self, mode: str) -> None:
        """Switch modes mid-session (``AgentClient.set_permission_mode``); validates ``mode``."""
        self.mode = mode

    @property
    def rules(self) -> RuleSet:
        """The current rules, including those added by ``updated_permissions``."""
        return self._rules

    @property
    def files(self) -> FileAccess:
        """What the file tools learn from this gate (``ToolContext.files``): the file each
        approved call was checked on, and the Read deny rules that filter search results."""
        return self._files

    async def check(self, check: PermissionCheck, hook_input: dict[str, Any]) -> PermissionOutcome:
        """Decide on one call; see the module docstring for the order of the steps.

        An approved file call's path is recorded with its identity (``files``), so that the
        tool opens the file that was checked and no other."""
        outcome = await self._decide(check, hook_input)
        if outcome.behavior == "allow":
            self._files.record(check.tool_use_id, check.tool_name, outcome.updated_input)
        return outcome

    async def _decide(
        self, check: PermissionCheck, hook_input: dict[str, Any]
    ) -> PermissionOutcome:
        name = check.tool_name
        tool_input = check.tool_input
        context: tuple[str, ...] = ()
        messages: tuple[str, ...] = ()
        hook_decision: str | None = None

        def outcome(
            behavior: Literal["allow", "deny", "defer"],
            decided_by: _Decider,
            message: str = "",
            *,
            interrupt: bool = False,
            stop: str | None = None,
        ) -> PermissionOutcome:
            # (by position, in the order of its fields: a class called with keywords gets
            # them in a dictionary, made and taken apart again at every check)
            return PermissionOutcome(
                behavior, tool_input, message, interrupt, decided_by, context, messages, stop
            )

        # (1) PreToolUse hooks
        if self._hooks is not None and self._hooks.has("PreToolUse"):
            result = await self._hooks.run(
                "PreToolUse",
                self._hook_input(hook_input, "PreToolUse", check, tool_input),
                match=name,
                tool_use_id=check.tool_use_id,
            )
            context, messages = result.additional_context, result.system_messages
            if result.errors:
                return outcome("deny", "hook", "blocked: " + "; ".join(result.errors))
            if result.stop is not None:
                why = f": {result.stop}" if result.stop else ""
                return outcome("deny", "hook", f"stopped by PreToolUse hook{why}", stop=result.stop)
            if result.updated_input is not None:
                tool_input = result.updated_input
            if result.decision == "deny":
                return outcome("deny", "hook", result.reason or f"{name} denied by PreToolUse hook")
            if result.decision == "defer":
                return outcome("defer", "hook", result.reason)
            hook_decision = result.decision
        else:
            # A cancel point without a schedule point: this runs before every tool call, and
            # the call that follows yields anyway (a full checkpoint costs more than the check).
            await trio.lowlevel.checkpoint_if_cancelled()

        rules, dirs = self._rules, self._dirs
        memo = CallMemo(dirs)
        cwd, home = dirs.cwd, dirs.home
        if memo.long_bash(name, tool_input) is not None:  # analysed off the loop
            await memo.prepare(name, tool_input)
        # (2) deny rules
        rule = rules._match("deny", name, tool_input, cwd, home, memo)
        if rule is not None:
            return outcome("deny", "rule", f"Permission to use {name} denied by rule '{rule}'")
        # (3) ask rules, a hook's ask, and critical removals all go straight to step 6
        rule = rules._match("ask", name, tool_input, cwd, home, memo)
        forced = rule is not None or hook_decision == "ask" or check.asks_user
        critical = critical_removal(name, tool_input, dirs, memo)
        if not forced and critical is None:
            if hook_decision == "allow":
                return outcome("allow", "hook")
            # (4) mode
            mode = self._mode
            effective = (
                check
                if tool_input is check.tool_input
                else msgspec.structs.replace(check, tool_input=tool_input)
            )
            if mode_approves(mode, effective, tool_input, dirs, memo):
                return outcome("allow", "mode")
            # (5) allow rules
            if not (mode == "plan" and is_write_tool(name)):
                rule = rules._match("allow", name, tool_input, cwd, home, memo)
                if rule is not None:
                    return outcome("allow", "rule")
            if mode == "auto" and self._classifier is not None:
                verdict = await self._classify(effective)
                if verdict is True:
                    return outcome("allow", "mode")
                if verdict is False:
                    return outcome("deny", "mode", f"{name} blocked by the auto-mode classifier")
        # (6) ask
        if self._mode == "dontAsk":
            why = "" if critical is None else f" (it removes the critical path {critical!r})"
            return outcome(
                "deny",
                "mode",
                f"Permission to use {name} was not pre-approved "
                f"and permission_mode is 'dontAsk'{why}",
            )
        if self._hooks is not None and self._hooks.has("PermissionRequest"):
            result = await self._hooks.run(
                "PermissionRequest",
                self._hook_input(hook_input, "PermissionRequest", check, tool_input),
                match=name,
                tool_use_id=check.tool_use_id,
            )
            context += result.additional_context
            messages += result.system_messages
            if result.stop is not None:
                why = f": {result.stop}" if result.stop else ""
                return outcome(
                    "deny", "hook", f"stopped by PermissionRequest hook{why}", stop=result.stop
                )
            if result.updated_input is not None and result.decision == "allow":
                tool_input = result.updated_input
            if result.decision == "allow":
                return outcome("allow", "hook")
            if result.decision == "deny":
                return outcome(
                    "deny",
                    "hook",
                    result.reason or f"{name} denied by PermissionRequest hook",
                    interrupt=result.interrupt,
                )
        if self._can_use_tool is None:
            if check.asks_user:  # nobody can answer: the tool itself tells the model so
                return outcome("allow", "default")
            return outcome(
                "deny",
                "default",
                f"Permission to use {name} requires approval and no can_use_tool callback is set",
            )
        if self._hooks is not None and self._hooks.has("Notification"):
            await self._notify(hook_input, name)
        answer = await self._ask(name, tool_input, check)
        if isinstance(answer, PermissionResultAllow):
            if answer.updated_input is not None:
                tool_input = answer.updated_input
            if answer.updated_permissions:
                self._apply_updates(answer.updated_permissions)
            return outcome("allow", "callback")
        return outcome(
            "deny",
            "callback",
            answer.message or f"Permission to use {name} denied",
            interrupt=answer.interrupt,
        )

    def _hook_input(
        self,
        base: dict[str, Any],
        event: str,
        check: PermissionCheck,
        tool_input: dict[str, Any],
    ) -> dict[str, Any]:
        payload = {
            **base,
            "hook_event_name": event,
            "permission_mode": self._mode,
            "tool_name": check.tool_name,
            "tool_input": tool_input,
            "tool_use_id": check.tool_use_id,
        }
        if check.agent_id is not None:
            payload.setdefault("agent_id", check.agent_id)
        if check.agent_type is not None:
            payload.setdefault("agent_type", check.agent_type)
        if event == "PermissionRequest":
            payload.setdefault("permission_suggestions", [])
        return payload

    async def _notify(self, base: dict[str, Any], name: str) -> None:
        """``Notification`` hooks learn that a permission prompt is about to be shown."""
        assert self._hooks is not None
        result = await self._hooks.run(
            "Notification",
            {
                **base,
                "permission_mode": self._mode,
                "message": f"Claude needs your permission to use {name}",
                "notification_type": "permission_prompt",
            },
        )
        for error in result.errors:
            logger.warning("%s", error)

    async def _classify(self, check: PermissionCheck) -> bool | None:
        assert self._classifier is not None
        try:
            verdict = await self._classifier(check)
            return verdict if isinstance(verdict, bool) else None
        except Exception:
            logger.warning(
                "auto-mode classifier failed on %s; asking instead", check.tool_name, exc_info=True
            )
            return None

    async def _ask(
        self, name: str, tool_input: dict[str, Any], check: PermissionCheck
    ) -> PermissionResultAllow | PermissionResultDeny:
        assert self._can_use_tool is not None
        context = ToolPermissionContext(tool_use_id=check.tool_use_id, agent_id=check.agent_id)
        try:
            answer = await self._can_use_tool(name, tool_input, context)
        except Exception as exc:
            logger.warning("can_use_tool raised on %s", name, exc_info=True)
            return PermissionResultDeny(message=f"can_use_tool raised {type(exc).__name__}: {exc}")
        if isinstance(answer, PermissionResultAllow | PermissionResultDeny):
            if isinstance(answer, PermissionResultAllow) and not (
                answer.updated_input is None or isinstance(answer.updated_input, dict)
            ):
                return PermissionResultDeny(
                    message="can_use_tool returned updated_input of type "
                    f"{type(answer.updated_input).__name__}, expected dict"
                )
            if isinstance(answer, PermissionResultDeny) and not isinstance(answer.message, str):
                # the message becomes the tool result's text: the API takes no other type
                return PermissionResultDeny(
                    message="can_use_tool returned a PermissionResultDeny whose message is of "
                    f"type {type(answer.message).__name__}, expected str",
                    interrupt=answer.interrupt,
                )
            return answer
        return PermissionResultDeny(
            message=f"can_use_tool returned {type(answer).__name__}, expected "
            "PermissionResultAllow or PermissionResultDeny"
        )

    def _apply_updates(self, updates: Sequence[Any]) -> None:
        """Apply ``addRules`` and ``setMode`` permission updates; ignore the other kinds."""
        for update in updates:
            get = (
                update.get
                if isinstance(update, dict)
                else (lambda key, default=None, u=update: getattr(u, key, default))
            )
            kind = get("type")
            if kind == "setMode":
                try:
                    self.mode = str(get("mode"))
                except ValueError:
                    logger.warning("ignored permission update with %s", update)
            elif kind == "addRules":
                behavior = get("behavior", "allow")
                if behavior not in ("allow", "deny", "ask"):
                    continue
                added = []
                for entry in get("rules") or ():
                    spec = entry.get("ruleContent") if isinstance(entry, dict) else None
                    tool = entry.get("toolName") if isinstance(entry, dict) else None
                    try:
                        added.append(parse_rule(f"{tool}({spec})" if spec else str(tool)))
                    except ValueError:
                        logger.warning("ignored malformed rule in permission update: %r", entry)
                rules = self._rules
                self._rules = RuleSet(
                    allow=rules.allow + tuple(added) if behavior == "allow" else rules.allow,
                    deny=rules.deny + tuple(added) if behavior == "deny" else rules.deny,
                    ask=rules.ask + tuple(added) if behavior == "ask" else rules.ask,
                )
                self._files.deny_read = self._rules.read_deny_matcher(
                    self._files.cwd, self._files.home
                )
