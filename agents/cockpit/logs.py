"""Logging: what a session does, told to the ``agents`` loggers, and the switch that shows it.

:func:`configure_logging` turns the ``agents`` loggers on (``agents run --verbose`` or
``TRIO_AGENTS_LOG=debug|info|warning``); :class:`EventLog` reads the message stream and logs, on
``agents.events``, the session's start, each model response (tokens in and out, and how long after
the agent's previous step it arrived), retries, budget events, subagents and, at DEBUG, every tool
call with its duration::

    12:00:01.204 INFO agents.events: session 3f2a… started: model claude-opus-5-5, 16 tools
    12:00:02.951 INFO agents.events: main: response msg_01… 2400 in / 180 out tokens, 1.74 s
    12:00:02.990 DEBUG agents.events: main: Grep done in 37 ms
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

import attrs

from ..messages import (
    AssistantMessage,
    Message,
    ResultMessage,
    SystemMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from .lines import printable, retry_line

__all__ = ["ENV_VAR", "EventLog", "configure_logging", "level_from_env"]

ENV_VAR = "TRIO_AGENTS_LOG"
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
_FORMAT = "%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s"
log = logging.getLogger("agents.events")


def level_from_env(environ: dict[str, str] | None = None) -> int | None:
    """The level ``TRIO_AGENTS_LOG`` asks for (``debug``, ``info``, ``warning``, ``error``, or a
    number); ``None`` when unset. An unknown value is a ``ValueError`` naming the variable."""
    value = (os.environ if environ is None else environ).get(ENV_VAR, "").strip().lower()
    if not value:
        return None
    if value.isdigit():
        return int(value)
    if value not in _LEVELS:
        raise ValueError(
            f"{ENV_VAR}={value!r} is not a log level (expected one of {', '.join(_LEVELS)})"
        )
    return _LEVELS[value]


def configure_logging(level: int, stream: TextIO | None = None) -> logging.Handler:
    """Send the ``agents`` loggers' records at ``level`` and above to ``stream`` (stderr).

    Returns the handler so a caller can remove it; the root logger is left alone.
    """
    handler = logging.StreamHandler(stream)
    handler.setFormatter(_Printable(_FORMAT, datefmt="%H:%M:%S"))
    logger = logging.getLogger("agents")
    logger.addHandler(handler)
    logger.setLevel(level)
    return handler


_ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]


class _Printable(logging.Formatter):
    """Records as a terminal may be given them: a record quotes what models, servers and
    files said (a command, an error, a path), shown by :func:`~.lines.printable`, not obeyed.
    A record is one line (a newline in what it quotes cannot forge the next record); the
    traceback after it keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return printable(super().formatMessage(record))

    def formatException(self, ei: _ExcInfo) -> str:
        return printable(super().formatException(ei), lines=True)

    def formatStack(self, stack_info: str) -> str:
        return printable(super().formatStack(stack_info), lines=True)


@attrs.define(eq=False)
class EventLog:
    """Logs what the message stream says happened; feed it every message with :meth:`observe`.

    It costs nothing when ``agents.events`` is not enabled for INFO (the check comes first).
    """

    logger: logging.Logger = log
    clock: Callable[[], float] = time.monotonic
    _labels: dict[str, str] = attrs.Factory(dict)
    _tools: dict[str, tuple[str, str, float]] = attrs.Factory(dict)
    _last: dict[str, float] = attrs.Factory(dict)
    _responses: set[str] = attrs.Factory(set)

    def observe(self, message: Message) -> None:
        if not self.logger.isEnabledFor(logging.INFO):
            return
        now = self.clock()
        match message:
            case SystemMessage(subtype=subtype, data=data):
                self._system(subtype, data, now)
            case AssistantMessage():
                self._assistant(message, now)
            case UserMessage(content=list() as blocks):
                agent = self._agent(message.parent_tool_use_id)
                for block in blocks:
                    if isinstance(block, ToolResultBlock):
                        self._tool_done(agent, block, now)
            case ResultMessage() as r:
                self.logger.info(
                    "result %s after %d turns: $%.4f, %d ms (%d ms in the API)%s",
                    r.subtype,
                    r.num_turns,
                    r.total_cost_usd,
                    r.duration_ms,
                    r.duration_api_ms,
                    f": {'; '.join(r.errors)}" if r.errors else "",
                )
                self._last["main"] = now

    def _agent(self, parent_tool_use_id: str | None) -> str:
        if parent_tool_use_id is None:
            return "main"
        return self._labels.get(parent_tool_use_id, parent_tool_use_id)

    def _system(self, subtype: str, data: dict[str, Any], now: float) -> None:
        info = self.logger.info
        if subtype == "init":
            self._last["main"] = now
            info(
                "session %s started: model %s, %d tools, permission mode %s, cwd %s",
                data.get("session_id"),
                data.get("model"),
                len(data.get("tools") or ()),
                data.get("permission_mode"),
                data.get("cwd"),
            )
        elif subtype == "api_retry":
            self.logger.warning("%s", retry_line(data))
        elif subtype == "permission_denied":
            info(
                "%s: permission denied for %s: %s",
                data.get("agent_id"),
                data.get("tool_name"),
                data.get("reason"),
            )
        elif subtype == "task_started":
            self._labels[str(data.get("tool_use_id"))] = str(data.get("task_id"))
            info("background agent %s started: %s", data.get("task_id"), data.get("description"))
        elif subtype == "task_notification":
            info(
                "background agent %s %s after %s turns, $%.4f",
                data.get("task_id"),
                data.get("status"),
                data.get("num_turns"),
                float(data.get("cost_usd") or 0),
            )
        elif subtype == "session_summary":
            cap = data.get("max_budget_usd")
            info(
                "tree spent $%.4f%s",
                float(data.get("total_cost_usd") or 0),
                "" if cap is None else f" of a ${cap:.4f} budget",
            )
        elif subtype in ("budget_overrun", "compact_boundary", "informational"):
            info("%s: %s", subtype, data)
        else:
            self.logger.debug("system %s: %s", subtype, data)

    def _assistant(self, message: AssistantMessage, now: float) -> None:
        agent = self._agent(message.parent_tool_use_id)
        if message.message_id not in self._responses:
            self._responses.add(message.message_id)
            usage = message.usage or {}
            since = now - self._last.get(agent, now)
            self.logger.info(
                "%s: response %s from %s: %s in (+%s cached) / %s out tokens, %.2f s after its "
                "previous step",
                agent,
                message.message_id,
                message.model,
                usage.get("input_tokens", 0),
                usage.get("cache_read_input_tokens", 0),
                usage.get("output_tokens", 0),
                since,
            )
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                self._tools[block.id] = (agent, block.name, now)
                if block.name == "Agent":
                    self._labels[block.id] = f"{agent}/{block.input.get('subagent_type')}"
                    self.logger.info(
                        "%s: spawns %s (%s)",
                        agent,
                        block.input.get("subagent_type"),
                        block.input.get("description"),
                    )
                else:
                    self.logger.debug("%s: calls %s %s", agent, block.name, block.input)
        self._last[agent] = now

    def _tool_done(self, agent: str, block: ToolResultBlock, now: float) -> None:
        owner, name, started = self._tools.pop(block.tool_use_id, (agent, "tool", now))
        self.logger.debug(
            "%s: %s %s in %.0f ms",
            owner,
            name,
            "failed" if block.is_error else "done",
            (now - started) * 1000,
        )
        self._last[owner] = now
