"""The file used is the file checked: a path's identity taken at the permission check, and an
open that refuses any other file.

A permission check judges a path by what it resolves to *now*; the tool opens it a moment
later. In between, a component may become a symlink (or be swapped for another directory) and
the open would land on a file nobody approved. :func:`check_path` records the real path and the
identity (``st_dev``, ``st_ino``) of its longest existing prefix; :func:`open_checked` opens
that real path again without following any symlink that has appeared since — the existing
prefix is opened and compared by identity, every component below it is opened with
``O_NOFOLLOW`` relative to its parent — and raises :class:`PathChanged` when the file is not
the one that was checked.

:class:`FileAccess` is what the permission gate hands to the file tools (``ToolContext.files``):
the path each approved call was checked on, and the Read deny rules search tools must apply to
every file they would list or show.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import stat
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ._paths import EDIT_PATH_TOOLS, READ_PATH_TOOLS, absolute, real, relative_to

__all__ = [
    "CheckedPath",
    "FileAccess",
    "PathChanged",
    "check_path",
    "hard_linked",
    "open_checked",
]

_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)
_O_DIR = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

#: Approved calls remembered per gate; a call whose record was dropped is checked again by
#: its tool (an identity taken then), so the bound costs a re-check, never a bypass.
_MAX_RECORDS = 4096


class PathChanged(OSError):
    """The path no longer leads to the file the permission check saw (a symlink or directory
    was swapped in since)."""


@attrs.frozen
class CheckedPath:
    """A path as checked: its real form, the longest prefix that existed, and that prefix's
    identity ``(st_dev, st_ino)``. ``spelled`` is the absolute path the check was made for."""

    spelled: str
    real: str
    existing: str
    identity: tuple[int, int]

    @property
    def existed(self) -> bool:
        """Whether the file itself existed at the check (else only a parent directory did)."""
        return self.existing == self.real


def hard_linked(path: str) -> bool:
    """Whether ``path`` (followed) is an existing regular file with more than one hard link:
    writing it also changes a file under another name, which may lie anywhere on the device."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


def check_path(path: str) -> CheckedPath:
    """Resolve the absolute ``path`` and take the identity of its longest existing prefix."""
    resolved = real(path)
    existing = resolved
    while True:
        try:
            st = os.stat(existing)
            break
        except (FileNotFoundError, NotADirectoryError):
            parent = os.path.dirname(existing)
            if parent == existing:
                raise
            existing = parent
    return CheckedPath(path, resolved, existing, (st.st_dev, st.st_ino))


#: Called between the check and the open (tests swap links here); a no-op otherwise.
def _between_check_and_open(checked: CheckedPath) -> None:
    return None


def open_checked(
    checked: CheckedPath, flags: int, mode: int = 0o666, *, make_dirs: bool = False
) -> int:
    """A file descriptor for ``checked.real`` opened with ``flags``, or :class:`PathChanged`.

    The existing prefix must still be the same file (compared by identity); components below
    it are opened one by one relative to their parent with ``O_NOFOLLOW`` (created first when
    ``make_dirs``), and the last one with ``flags | O_NOFOLLOW``: a symlink anywhere below the
    checked prefix is refused, not followed.
    """
    _between_check_and_open(checked)
    rest = relative_to(checked.real, checked.existing)
    components = [c for c in (rest or "").split("/") if c]
    if not components:
        # truncation waits until the file is known to be the checked one
        try:
            fd = os.open(checked.real, (flags & ~os.O_TRUNC) | _O_NOFOLLOW | _O_CLOEXEC, mode)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathChanged(
                    exc.errno, f"{checked.spelled} became a symlink since it was checked"
                ) from None
            raise
        try:
            _same(fd, checked)
            if flags & os.O_TRUNC:
                os.ftruncate(fd, 0)
        except BaseException:
            os.close(fd)
            raise
        return fd
    if flags & os.O_CREAT:
        flags |= os.O_EXCL  # it was absent when checked: a file that appeared since is not it
    try:
        dir_fd = os.open(checked.existing, _O_PATH | _O_DIR | _O_CLOEXEC)
    except (NotADirectoryError, FileNotFoundError) as exc:
        raise PathChanged(exc.errno, f"{checked.spelled} changed since it was checked") from None
    try:
        _same(dir_fd, checked)
        for component in components[:-1]:
            if make_dirs:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(component, dir_fd=dir_fd)
            try:
                next_fd = os.open(
                    component, _O_PATH | _O_DIR | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=dir_fd
                )
            except (NotADirectoryError, OSError) as exc:
                if isinstance(exc, FileNotFoundError):
                    raise
                raise PathChanged(
                    exc.errno, f"{checked.spelled} changed since it was checked"
                ) from None
            os.close(dir_fd)
            dir_fd = next_fd
        try:
            return os.open(components[-1], flags | _O_NOFOLLOW | _O_CLOEXEC, mode, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP or _is_link(components[-1], dir_fd):
                raise PathChanged(
                    exc.errno, f"{checked.spelled} became a symlink since it was checked"
                ) from None
            if isinstance(exc, FileExistsError):
                raise PathChanged(
                    exc.errno, f"{checked.spelled} was created by someone else since it was checked"
                ) from None
            raise
    finally:
        os.close(dir_fd)


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _same(fd: int, checked: CheckedPath) -> None:
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != checked.identity:
        raise PathChanged(0, f"{checked.spelled} is not the file that was checked")


_PATH_TOOLS = {**READ_PATH_TOOLS, **EDIT_PATH_TOOLS}


@attrs.define(eq=False)
class FileAccess:
    """The gate's word to the file tools: what each approved call was checked on, and which
    files the Read deny rules keep out of search results (in every mode).

    ``deny_read`` is the gate's current matcher (it changes when a callback adds rules); None
    when no Read deny rule exists, so that searches skip the filtering entirely.
    """

    cwd: str
    home: str
    deny_read: Callable[[str, str], bool] | None = None
    #: tool_use_id -> (the path as the call spelled it, its check)
    _records: collections.OrderedDict[str, tuple[str, CheckedPath]] = attrs.field(
        factory=collections.OrderedDict, init=False
    )

    def record(self, tool_use_id: str, tool_name: str, tool_input: Mapping[str, Any]) -> None:
        """Remember the checked identity of an approved Read/Write/Edit call's file."""
        key = _PATH_TOOLS.get(tool_name)
        if key is None or tool_name in ("Glob", "Grep", "LS"):
            return
        value = tool_input.get(key)
        if not isinstance(value, str) or not value.startswith("/"):
            return  # the tool refuses relative paths itself
        try:
            checked = check_path(absolute(value, self.cwd, self.home))
        except (OSError, ValueError):
            return
        self._records[tool_use_id] = (value, checked)
        while len(self._records) > _MAX_RECORDS:
            self._records.popitem(last=False)

    def checked(self, tool_use_id: str, spelled: str) -> CheckedPath | None:
        """The check of call ``tool_use_id`` if it was made for the path ``spelled`` exactly as
        the tool received it (consumed). Compared as text, not resolved again: a link changed
        since the check must not turn the record into one for another file."""
        found = self._records.pop(tool_use_id, None)
        if found is None or found[0] != spelled:
            return None
        return found[1]

    def withheld(self, written: str, target: str) -> bool:
        """Whether a search must leave out the file at ``written`` (real path ``target``)."""
        return self.deny_read is not None and self.deny_read(written, target)
