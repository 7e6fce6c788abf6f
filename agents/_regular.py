"""Opening a path only when it is a regular file: one check for the file tools, the searches'
ignore files and the session store.

A path named like a file may be a named pipe, a device, a socket or a directory: in a cloned
repository, in a hook's rewrite, in the user's data directory. Opening a pipe waits for the other
end (on the event loop: the whole session hangs), a device may never end (``/dev/zero``) or
swallow everything (``/dev/null``). So the path is opened without waiting (``O_NONBLOCK``, which
changes nothing for a regular file) and its type checked on the descriptor opened.
"""

from __future__ import annotations

import os
import stat

__all__ = ["READ_FLAGS", "NotRegularFile", "file_kind", "open_regular"]

#: read, without waiting, not inherited
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)

#: what a file that is not regular is, by its type bits
_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words (``a named pipe``)."""
    return (
        "a regular file" if stat.S_ISREG(mode) else _KINDS.get(stat.S_IFMT(mode), "a special file")
    )


class NotRegularFile(OSError):
    """The path names something else than a regular file; ``kind`` says what."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path}: not a regular file ({kind})")
        self.kind = kind


def open_regular(
    path: str, flags: int = READ_FLAGS, mode: int = 0o644
) -> tuple[int, os.stat_result]:
    """``path`` opened with ``flags`` (which must hold ``O_NONBLOCK``) and its status, if it is
    a regular file; else :class:`NotRegularFile`, with nothing left open. Any other ``OSError``
    as ``open`` raises it."""
    try:
        fd = os.open(path, flags, mode)
    except IsADirectoryError:  # (opened for writing)
        raise NotRegularFile(path, "a directory") from None
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegularFile(path, file_kind(st.st_mode))
    return fd, st
