"""The built-in tools, by name, in the order Claude Code lists them.

``builtin_tools(options.tools)`` is what the loop registers: ``None`` means every
built-in of this module, a list means exactly those (``[]`` none). Each call returns fresh
:class:`Tool` objects, so per-registry state (cached definitions) is never shared between agents.
``Agent``, ``Skill`` and ``ToolSearch`` are built by their own modules, since they need the
supervisor and the session's skills and deferred tools.

    >>> [t.name for t in builtin_tools(["Read", "Grep"])]
    ['Read', 'Grep']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .ask import ask_user_question_tool
from .base import Tool
from .files import edit_tool, read_tool, write_tool
from .search import glob_tool, grep_tool
from .shell import bash_output_tool, bash_tool, kill_shell_tool
from .tasks import task_create_tool, task_get_tool, task_list_tool, task_update_tool
from .web import web_fetch_tool, web_search_tool

__all__ = ["BUILTIN_TOOL_NAMES", "READ_ONLY_BUILTINS", "builtin_tools"]

_FACTORIES: dict[str, Callable[[], Tool]] = {
    "Bash": bash_tool,
    "Glob": glob_tool,
    "Grep": grep_tool,
    "Read": read_tool,
    "Edit": edit_tool,
    "Write": write_tool,
    "WebFetch": web_fetch_tool,
    "WebSearch": web_search_tool,
    "BashOutput": bash_output_tool,
    "KillShell": kill_shell_tool,
    "AskUserQuestion": ask_user_question_tool,
    "TaskCreate": task_create_tool,
    "TaskGet": task_get_tool,
    "TaskUpdate": task_update_tool,
    "TaskList": task_list_tool,
}

#: The built-ins of this module, in Claude Code's order.
BUILTIN_TOOL_NAMES: tuple[str, ...] = tuple(_FACTORIES)

#: The built-ins the scheduler may run concurrently (read-only: they change nothing).
READ_ONLY_BUILTINS = frozenset(
    {"Read", "Glob", "Grep", "WebFetch", "WebSearch", "TaskGet", "TaskList"}
)


def builtin_tools(names: Iterable[str] | None = None) -> list[Tool]:
    """Fresh built-in tools: all of them (``None``) or the named ones, in the order given.

    An unknown name is a ``ValueError`` naming it and listing the available ones; a repeated name
    is returned once.
    """
    if names is None:
        return [factory() for factory in _FACTORIES.values()]
    if isinstance(names, str):
        raise TypeError(f"names must be an iterable of tool names, not a str: {names!r}")
    tools: list[Tool] = []
    seen: set[str] = set()
    for name in names:
        factory = _FACTORIES.get(name)
        if factory is None:
            raise ValueError(f"unknown tool {name!r} (available: {', '.join(BUILTIN_TOOL_NAMES)})")
        if name not in seen:
            seen.add(name)
            tools.append(factory())
    return tools
