"""Permissions: which tool calls run, following the Claude Agent SDK's evaluation order.

The agent loop builds one :class:`PermissionGate` per agent and calls :meth:`PermissionGate.check`
for every tool call. Rules (``allowed_tools``/``disallowed_tools`` and ask rules) are parsed by
:func:`parse_rule` and compiled into a :class:`RuleSet` once, at startup.

>>> rules = RuleSet.from_strings(allow=["Bash(npm *)", "Read(./src/**)"], deny=["Bash(rm *)"])
>>> gate = PermissionGate(mode="default", rules=rules, cwd="/repo")
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from ._types import PERMISSION_MODES as PERMISSION_MODES
from ._types import CanUseTool as CanUseTool
from ._types import Classifier as Classifier
from ._types import PermissionCheck as PermissionCheck
from ._types import PermissionMode as PermissionMode
from ._types import PermissionOutcome as PermissionOutcome
from ._types import PermissionResult as PermissionResult
from ._types import PermissionResultAllow as PermissionResultAllow
from ._types import PermissionResultDeny as PermissionResultDeny
from ._types import ToolPermissionContext as ToolPermissionContext

if _typing.TYPE_CHECKING:
    from ._pipeline import PermissionGate as PermissionGate
    from ._rules import PermissionRule as PermissionRule
    from ._rules import RuleSet as RuleSet
    from ._rules import parse_rule as parse_rule

__all__ = [
    "PERMISSION_MODES",
    "CanUseTool",
    "Classifier",
    "PermissionCheck",
    "PermissionGate",
    "PermissionMode",
    "PermissionOutcome",
    "PermissionResult",
    "PermissionResultAllow",
    "PermissionResultDeny",
    "PermissionRule",
    "RuleSet",
    "ToolPermissionContext",
    "parse_rule",
]


#: Loaded on first use (when a session builds its gate), not with ``import agents``: the rule
#: engine and the pipeline (shell parsing, path rules) are most of this package's import time.
_LAZY = {
    "PermissionGate": "._pipeline",
    "PermissionRule": "._rules",
    "RuleSet": "._rules",
    "parse_rule": "._rules",
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
