"""What the tools share with the permission gate: one way to resolve a path, one way to open it.

The gate judges a path as the kernel resolves it (symlinks followed component by component before
``..`` is applied, ``~`` and ``~user`` expanded once); the file tools must open exactly the file it
judged. Both go through this module, so the two can never disagree. The tool sets name which tools
take a path to read and which write one.
"""

from __future__ import annotations

from ._checked import CheckedPath as CheckedPath
from ._checked import PathChanged as PathChanged
from ._checked import check_path as check_path
from ._checked import open_checked as open_checked
from ._modes import NETWORK_TOOLS as NETWORK_TOOLS
from ._modes import NO_PERMISSION_TOOLS as NO_PERMISSION_TOOLS
from ._paths import EDIT_PATH_TOOLS as EDIT_PATH_TOOLS
from ._paths import READ_PATH_TOOLS as READ_PATH_TOOLS
from ._paths import absolute as absolute
from ._paths import home_dir as home_dir
from ._paths import real as real

__all__ = [
    "EDIT_PATH_TOOLS",
    "NETWORK_TOOLS",
    "NO_PERMISSION_TOOLS",
    "READ_PATH_TOOLS",
    "CheckedPath",
    "PathChanged",
    "absolute",
    "check_path",
    "home_dir",
    "open_checked",
    "real",
]
