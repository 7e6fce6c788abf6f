"""Permissions: which tool calls run, following the Claude Agent SDK's evaluation order (SPEC §3).

The agent loop builds one :class:`PermissionGate` per agent and calls :meth:`PermissionGate.check`
for every tool call. Rules (``allowed_tools``/``disallowed_tools`` and ask rules) are parsed by
:func:`parse_rule` and compiled into a :class:`RuleSet` once, at startup.

>>> rules = RuleSet.from_strings(allow=["Bash(npm *)", "Read(./src/**)"], deny=["Bash(rm *)"])
>>> gate = PermissionGate(mode="default", rules=rules, cwd="/repo")
"""

from __future__ import annotations

from ._pipeline import PermissionGate as PermissionGate
from ._rules import PermissionRule as PermissionRule
from ._rules import RuleSet as RuleSet
from ._rules import parse_rule as parse_rule
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
