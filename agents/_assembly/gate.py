"""The loop's side of the permission pipeline: one verdict per tool call.

``agents.permissions`` decides (hooks → deny → ask → mode → allow → ``can_use_tool``); this
adapter feeds it what the loop knows — the agent, the call, whether the tool is read-only — and
turns the outcome into what the loop needs: run with this input, or answer with this error.

The pipeline runs the session's PreToolUse and PermissionRequest hooks (``Session.hooks``; the
other events fire from ``agents._features.hookpoints``). This module also builds ``auto`` mode's
default classifier: one small model call through the session's backend
(``purpose="classifier"``), charged to the budget like any response.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import warnings
from typing import TYPE_CHECKING, Any

import attrs
import trio

from .._features.hookpoints import hook_input
from .._loop.contracts import Verdict
from .._loop.one_shot import ask_once
from ..backends.base import ModelRequest
from ..messages import ToolUseBlock
from ..permissions import Classifier, PermissionCheck, PermissionGate, RuleSet
from ..permissions.files import EDIT_PATH_TOOLS, NETWORK_TOOLS, NO_PERMISSION_TOOLS, READ_PATH_TOOLS
from ..tools.base import FileAccess, Tool

if TYPE_CHECKING:
    from .._loop.agent import AgentLoop
    from .._loop.session import Session
    from ..options import AgentOptions

__all__ = [
    "CLASSIFIER_PROMPT",
    "LoopGate",
    "default_classifier",
    "lookout_gate",
    "make_gate",
    "rules_for",
]

log = logging.getLogger("agents.permissions")

_NO_HOOK_INPUT: dict[str, Any] = {}
#: Tools whose input must come back from a person (they always go to ``can_use_tool``).
USER_INPUT_TOOLS = frozenset({"AskUserQuestion"})
#: tools whose rules have specifiers (paths, commands, domains, agent types), or that always ask
_SCOPED_TOOLS = frozenset(
    {*READ_PATH_TOOLS, *EDIT_PATH_TOOLS, *USER_INPUT_TOOLS, *NETWORK_TOOLS, "Bash", "Agent", "Task"}
)

_AGENT_TOOLS = frozenset({"Agent", "Task"})

#: names rules may use besides the built-in tools: Agent (and its alias Task), tools of later
#: issues, and the tool families Read(...)/Edit(...) rules cover
_RULE_ONLY_TOOLS = frozenset(
    {"Agent", "Task", "Skill", "ToolSearch", "NotebookEdit", "NotebookRead", "MultiEdit", "LS"}
)

CLASSIFIER_SYSTEM = (
    "You are the permission classifier of an autonomous coding agent. You decide whether one "
    "tool call may run without asking the user. Answer with a single word: yes or no."
)
CLASSIFIER_PROMPT = """The agent, working in {cwd}, wants to make this tool call:

Tool: {tool}
Input: {input}

Answer yes if the call is a routine, reversible step of a software task that stays inside the \
working directory, does not delete or overwrite data outside it, does not send data or secrets \
anywhere, and does not change system or security settings. Otherwise answer no.
Answer with exactly one word: yes or no."""
_WORD = re.compile(r"[a-z]+")


@attrs.define(eq=False)
class LoopGate:
    """Wraps a :class:`PermissionGate` for one session (subagents share it, or a copy of it in
    another mode); implements ``agents._loop.contracts.Gate``."""

    gate: PermissionGate
    session: Session
    has_hooks: bool = False
    #: the fast path's answer per tool name, valid for the rules and mode it was computed under
    _fast: dict[str, bool] = attrs.field(factory=dict, init=False)
    _fast_rules: RuleSet | None = attrs.field(default=None, init=False)
    _fast_mode: str = attrs.field(default="", init=False)

    def set_mode(self, mode: str) -> None:
        self.gate.set_mode(mode)

    def with_mode(self, mode: str) -> LoopGate:
        """This gate under another mode (a subagent definition's ``permission_mode``): same
        rules, callback and hooks."""
        return attrs.evolve(self, gate=self.gate.with_mode(mode))

    @property
    def mode(self) -> str:
        return self.gate.mode

    @property
    def files(self) -> FileAccess:
        return self.gate.files

    def passes_at_once(self, call: ToolUseBlock, tool: Tool) -> bool:
        """The common case decided without the pipeline, with no hooks and no rule naming the
        tool: a read-only tool whose input names no path, command or domain, in a mode that
        approves read-only calls (every mode but ``dontAsk``); or a tool that needs no
        permission in any mode (``Agent``, the task list ...). The pipeline would say allow.

        Decided once per tool name while the rules (replaced whole when a callback adds some)
        and the mode stay the same."""
        if self.has_hooks or not (tool.read_only or call.name in NO_PERMISSION_TOOLS):
            return False
        gate = self.gate
        rules, mode = gate.rules, gate.mode
        if rules is not self._fast_rules or mode != self._fast_mode:
            self._fast.clear()
            self._fast_rules, self._fast_mode = rules, mode
        name = call.name
        passes = self._fast.get(name)
        if passes is None:
            if name in _AGENT_TOOLS:  # specified by agent type, and only if a rule does so
                specified = rules.names_agent_types("deny") or rules.names_agent_types("ask")
            else:
                specified = name in _SCOPED_TOOLS
            passes = not (
                specified
                or (mode == "dontAsk" and name not in NO_PERMISSION_TOOLS)
                or rules.names_tool("deny", name)
                or rules.names_tool("ask", name)
            )
            self._fast[name] = passes
        return passes

    async def check(self, loop: AgentLoop, call: ToolUseBlock, tool: Tool) -> Verdict | None:
        """The verdict on ``call``; None when it may run as it is, with nothing to add (the
        common case, decided without the pipeline: see :meth:`passes_at_once`)."""
        if self.passes_at_once(call, tool):
            await trio.lowlevel.checkpoint_if_cancelled()
            return None
        outcome = await self.gate.check(
            PermissionCheck(
                tool_name=call.name,
                tool_input=call.input,
                tool_use_id=call.id,
                read_only=tool.read_only,
                agent_id=None if loop.is_main else loop.agent_id,
                agent_type=None if loop.is_main else loop.agent_type,
                asks_user=call.name in USER_INPUT_TOOLS,
            ),
            hook_input(loop) if self.has_hooks else _NO_HOOK_INPUT,
        )
        for text in outcome.system_messages:
            await loop.inform(text)
        context = outcome.additional_context
        if outcome.behavior == "allow":
            return Verdict(
                input=outcome.updated_input, stop=outcome.stop, additional_context=context
            )
        if outcome.behavior == "defer":
            why = f": {outcome.message}" if outcome.message else ""
            return Verdict(
                input=outcome.updated_input,
                denied=f"{call.name} call deferred by a PreToolUse hook{why}",
                stop=outcome.stop,
                additional_context=context,
                deferred=True,
            )
        message = outcome.message or f"Permission to use {call.name} was denied."
        return Verdict(
            input=call.input,
            denied=message,
            interrupt=outcome.interrupt,
            stop=outcome.stop,
            additional_context=context,
        )


def parse_verdict(text: str) -> bool | None:
    """The classifier's first word: True for yes, False for no, None (ask) for anything else."""
    words = _WORD.findall(text.lower())
    return {"yes": True, "no": False}.get(words[0]) if words else None


def default_classifier(session: Session) -> Classifier:
    """``auto`` mode's judge: asks the session's backend a yes/no question about the call.

    The request has ``purpose="classifier"`` (a ``ScriptedBackend`` plays the script of that
    name) and is charged to the tree's ledger (in ``reserve`` budget mode, booked first). Once
    the budget is spent (or has no room for the question), or when the answer is neither yes nor
    no, it has no opinion and the call goes on to ``can_use_tool``.
    """

    async def classify(check: PermissionCheck) -> bool | None:
        if session.ledger.exhausted:
            return None
        model = session.options.resolved_model
        agent_id = check.agent_id or "main"
        prompt = CLASSIFIER_PROMPT.format(
            cwd=session.cwd,
            tool=check.tool_name,
            input=json.dumps(check.tool_input, ensure_ascii=False, default=str)[:4000],
        )
        request = ModelRequest(
            model=model,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=16,
            system=[{"type": "text", "text": CLASSIFIER_SYSTEM}],
            agent_id=agent_id,
            agent_type=check.agent_type or "main",
            purpose="classifier",
        )
        response = await ask_once(session, request)
        if response is None:  # no room left for the question: no opinion
            return None
        verdict = parse_verdict(response.text)
        if verdict is None:
            log.info("auto-mode classifier gave no yes/no (%r): asking", response.text[:200])
        return verdict

    return classify


@functools.lru_cache(maxsize=64)
def _parsed_rules(
    allow: tuple[str, ...], deny: tuple[str, ...], ask: tuple[str, ...] = ()
) -> RuleSet:
    # RuleSets are immutable (updated_permissions make new ones), so sessions with the same
    # rule strings can share one parse and index.
    return RuleSet.from_strings(allow=allow, deny=deny, ask=ask)


def rules_for(options: AgentOptions) -> RuleSet:
    """The options' allow/deny rules (and the settings files' ask rules), parsed; a malformed
    rule raises ValueError."""
    ask = tuple(options.extra.get("ask_rules", ()))
    return _parsed_rules(tuple(options.allowed_tools), tuple(options.disallowed_tools), ask)


@functools.cache
def _known_tools() -> frozenset[str]:
    """The tool names a rule may name without a warning (built once: the set is fixed)."""
    from ..tools.builtin import BUILTIN_TOOL_NAMES

    return frozenset({*BUILTIN_TOOL_NAMES, *_RULE_ONLY_TOOLS})


def lookout_gate(session: Session) -> LoopGate:
    """The gate of an agent with no one to ask (a settings file's agent hook): the session's
    rules and working directories in ``default`` mode, without a callback, hooks or classifier.
    Its reads inside the working directories pass; a deny rule denies, and whatever would be
    asked (a read outside them) is denied, since nobody can answer."""
    options = session.options
    gate = PermissionGate(
        rules=rules_for(options),
        cwd=session.cwd,
        add_dirs=options.add_dirs,  # relative to the session's cwd, ``~`` its user's home
    )
    return LoopGate(gate=gate, session=session)


def make_gate(options: AgentOptions, session: Session) -> LoopGate:
    """Build the session's gate; malformed rules fail here, at startup."""
    rules = rules_for(options)
    if rules.allow or rules.deny or rules.ask:
        known = _known_tools()
        for rule in (*rules.allow, *rules.deny, *rules.ask):
            if not rule.tool.startswith("mcp__") and rule.tool not in known:
                warnings.warn(f"permission rule {rule}: unknown tool {rule.tool!r}", stacklevel=2)
    runner = session.hooks
    gate = PermissionGate(
        mode=options.resolved_permission_mode,
        rules=rules,
        can_use_tool=options.can_use_tool,
        hooks=runner,
        cwd=session.cwd,
        # as the session's tools take a path: a relative one from the session's cwd (where the
        # Agent SDK starts its CLI), not the process's; ``~`` the user's home
        add_dirs=options.add_dirs,
        # built whatever the mode: set_permission_mode("auto") may switch to it mid-session
        classifier=default_classifier(session),
    )
    return LoopGate(gate=gate, session=session, has_hooks=runner is not None)
