"""The keeper: a tiny process between the agent's Python process and each shell (Linux).

Run as ``python -I -S _contain.py LIFELINE_FD COMMAND...`` (standard library only, never imported
by ``agents``). It makes sure that no descendant of ``COMMAND`` outlives the shell, whatever the
descendants do (``&``, ``nohup``, ``setsid``, double forks):

* it registers as a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``), so every orphaned
  descendant is reparented to it instead of to init, and stays findable under it in ``/proc``;
* it starts ``COMMAND`` in a session of its own (its group id is its pid, as the shell tools
  expect) with ``PR_SET_PDEATHSIG=SIGKILL``, so the command dies if the keeper is killed;
* it waits for the first of: the command exits; ``SIGTERM`` (the tools closing the shell); end
  of file on ``LIFELINE_FD``, the read end of a pipe whose write end only the agent's process
  holds — the kernel closes it when that process dies, even by ``SIGKILL``;
* then it ``SIGKILL``\\ s every descendant (the command's group, then whatever ``/proc`` still shows
  under it, until nothing is left), reaps them, and exits with the command's status (a signal
  death is mirrored by dying of the same signal).

The keeper's own stdin, stdout and stderr are swapped for ``/dev/null`` once the command runs,
so the pipes to the command close exactly when the command and its descendants are gone.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
#: Rounds of "find descendants, kill them" before giving up on a process that keeps forking.
_KILL_ROUNDS = 200


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """The live descendants of ``root``, found through the parent links in ``/proc``."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue  # gone meanwhile
        if fields and fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            found.append(child)
            stack.append(child)
    return found


def _reap_all() -> list[tuple[int, int]]:
    """Collect every exited child without blocking: ``[(pid, wait status)]``."""
    reaped: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped.append((pid, status))


def kill_tree(me: int, group: int) -> list[tuple[int, int]]:
    """SIGKILL the command's group and every descendant of ``me`` until none is left.

    "None left" takes two scans in a row that find none: a process whose parent is exiting
    is not yet under ``me`` for a moment (the kernel moves it to its subreaper as its parent
    goes), and one empty scan could end the search while it was on its way."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
    reaped = _reap_all()
    empty = 0
    for _ in range(_KILL_ROUNDS):
        alive = descendants(me)
        if not alive:
            empty += 1
            if empty == 2:
                break
            select.select([], [], [], 0.002)
            reaped += _reap_all()
            continue
        empty = 0
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        select.select([], [], [], 0.002)
        reaped += _reap_all()
    return reaped + _reap_all()


def _exit_like(status: int) -> None:
    """Exit with the command's wait status: its code, or death by its signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        # (SIGKILL's and SIGSTOP's handlers cannot be set, nor need to be: the reset raised,
        # and a shell killed by SIGKILL read as exit 1)
        with contextlib.suppress(OSError, ValueError):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def main(argv: list[str]) -> None:
    lifeline = int(argv[0])
    command = argv[1:]
    os.set_inheritable(lifeline, False)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    closing: list[bool] = []
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: closing.append(True))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the host's business
    child = os.fork()
    if child == 0:
        try:
            os.setsid()
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            # Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across
            # exec: the command gets their defaults back, as ``subprocess`` gives them
            for sig in (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    status: int | None = None
    while status is None and not closing:
        ready, _, _ = select.select([wake_r, lifeline], [], [])
        if lifeline in ready and not os.read(lifeline, 1):
            break  # the agent's process is gone
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
        for pid, st in _reap_all():
            if pid == child:
                status = st
    for pid, st in kill_tree(os.getpid(), child):
        if pid == child and status is None:
            status = st
    _exit_like(status if status is not None else signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv[1:])
