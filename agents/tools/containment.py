"""Process containment for the shell tools: no process a shell starts outlives it.

On Linux every shell is started under a *keeper* (:mod:`agents.tools._contain`): a small child
subreaper that kills the shell's whole descendant tree — ``nohup``, ``setsid`` and double-forked
processes included — when the shell exits, when the tools close it, and when this Python process
dies, even by ``SIGKILL`` (the keeper holds the read end of a *lifeline* pipe whose write end only
this process has; the kernel closes it on death). Nothing in this process changes: it does not
become a subreaper itself, so the host application's own children are left alone.

Elsewhere (no ``/proc``, no ``prctl``) the shell runs in its own session as before and a warning
is logged once: its process group is killed, but descendants that leave the group can escape.

::

    process = await open_contained(["bash", "-c", "sleep 300 &"], stdout=subprocess.PIPE)
    ...
    await reap(process)   # the shell and every descendant are gone
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import signal
import sys
from collections.abc import Sequence
from typing import Any

import trio

__all__ = ["containment_available", "end", "open_contained", "reap"]

log = logging.getLogger("agents.tools")

_KEEPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_contain.py")
#: How long a keeper gets to kill its tree before it is killed itself.
_KEEPER_GRACE_S = 2.0
#: How long a reap waits in all, shielded, before giving up on a process.
_REAP_LIMIT_S = 5.0

_lifeline: tuple[int, int] | None = None
_lifeline_pid: int | None = None
_warned = False


def containment_available() -> bool:
    """Whether shells run under a keeper (Linux with ``/proc``)."""
    return sys.platform.startswith("linux") and os.path.isdir("/proc/self")


def _lifeline_read_end() -> int:
    """The read end of this process's lifeline pipe (made once per process, both ends close on
    exec, so no other child keeps the write end open)."""
    global _lifeline, _lifeline_pid
    if _lifeline is None or _lifeline_pid != os.getpid():  # a forked child gets a pipe of its own
        _lifeline = os.pipe()
        _lifeline_pid = os.getpid()
    return _lifeline[0]


#: Pids of the processes started under a keeper (``end`` asks those to stop their tree).
_KEPT: set[int] = set()


async def open_contained(argv: Sequence[str], **options: Any) -> trio.Process:
    """Start ``argv`` as :func:`trio.lowlevel.open_process` would, contained (see the module).

    The returned process is the keeper on Linux (its exit status is the command's), else the
    command itself in a new session.
    """
    global _warned
    if not containment_available():
        if not _warned:
            _warned = True
            log.warning(
                "process containment needs Linux (/proc, prctl); on %s a shell's descendants "
                "that leave its process group (setsid, double fork) can outlive the session",
                sys.platform,
            )
        return await trio.lowlevel.open_process(list(argv), start_new_session=True, **options)
    _check_runnable(argv[0], options)
    lifeline = _lifeline_read_end()
    process = await trio.lowlevel.open_process(
        [sys.executable, "-I", "-S", _KEEPER, str(lifeline), *argv],
        start_new_session=True,
        pass_fds=(lifeline,),
        **options,
    )
    _KEPT.add(process.pid)
    return process


def _check_runnable(program: str, options: dict[str, Any]) -> None:
    """Raise what starting ``program`` directly would (``FileNotFoundError``,
    ``PermissionError``, with the same words): under a keeper, a program that cannot run is
    only a keeper that exits at once, and its caller would learn nothing of why."""
    if "/" in program:
        path = os.path.join(os.fspath(options.get("cwd") or "."), program)
    else:
        env = options.get("env")
        search = (env if env is not None else os.environ).get("PATH", os.defpath)
        path = shutil.which(program, path=search) or ""
    if not path or not os.path.isfile(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    if not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)


def end(process: trio.Process) -> None:
    """Ask ``process`` (from :func:`open_contained`) to end with all its descendants; no wait."""
    if process.returncode is not None:
        _KEPT.discard(process.pid)
        return
    sig = signal.SIGTERM if process.pid in _KEPT else signal.SIGKILL
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sig == signal.SIGTERM:
            os.kill(process.pid, sig)  # the keeper kills its tree, then exits
        else:
            os.killpg(process.pid, sig)


def _force(process: trio.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def reap(process: trio.Process) -> None:
    """End ``process`` and its descendants and wait for it, shielded and bounded: safe to call
    from a cancelled scope or a ``finally``."""
    end(process)
    with trio.CancelScope(shield=True):
        with trio.move_on_after(_KEEPER_GRACE_S):
            await process.wait()
        if process.returncode is None:
            log.warning("shell keeper %d did not end in %gs; killing it", process.pid,
                        _KEEPER_GRACE_S)  # fmt: skip
            _force(process)
            with trio.move_on_after(_REAP_LIMIT_S - _KEEPER_GRACE_S):
                await process.wait()
        _KEPT.discard(process.pid)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                await trio.aclose_forcefully(stream)
