"""Exports loaded on first use (PEP 562), so that importing a package costs only what is used.

A package lists its public names with the module each comes from, and hands the table to
:func:`lazy_exports`; ``from package import Name`` (and ``package.Name``) imports that module the
first time, then the value is an ordinary attribute. Type checkers see the same names through
``if TYPE_CHECKING:`` imports in the package::

    if TYPE_CHECKING:
        from .state import TreeState as TreeState
    __getattr__, __dir__ = lazy_exports(__name__, {"TreeState": ".state"})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package``'s lazily loaded names.

    ``table`` maps a public name to its module (relative to ``package``), or to
    ``"module:attribute"`` when the name is an alias of another attribute.
    """
    table = dict(table)

    def __getattr__(name: str) -> Any:
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, _, attribute = target.partition(":")
        value = getattr(importlib.import_module(module_name, package), attribute or name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
