"""The cutter: a small process between the persistent shell and the agent's process.

Run as ``python -I -S _cutter.py HEAD TAIL SLOW_AFTER PACE COMMAND...`` (standard library only;
the shell tool imports it for :class:`Segment` in tests, and runs it as a script). It starts
``COMMAND`` (the shell) with its stdin and its merged stdout and stderr on pipes of its own, and:

* forwards to the shell what the agent's process writes, framed: a line ``TOKEN SIZE`` and then
  ``SIZE`` bytes of script. The token is that command's end marker (the shell prints
  ``__AGENTS_DONE_<token>__ <status> <pwd>`` after it): the cutter learns it from the agent,
  never from the shell's output, so a command cannot forge it;
* passes each command's output to the agent cut as the shell tool cuts it: its first ``HEAD``
  bytes as they come, then only its last ``TAIL`` to ``2 * TAIL`` bytes, held here until the
  end marker comes, and the end line with the number of bytes it dropped put after the marker
  (``__AGENTS_DONE_<token>__ <dropped> <status> <pwd>``). A command that prints no more than
  ``HEAD + 2 * TAIL`` bytes reaches the agent byte for byte;
* reads the shell's output only while a command runs (between commands, as before, the pipe
  fills and a background job that floods it waits), and once it has dropped more than
  ``SLOW_AFTER`` bytes of a command's output, at most once every ``PACE`` seconds: a flood then
  blocks on a full pipe instead of running at full speed until its timeout;
* exits when the shell does, as it did (its code, or death by its signal), after passing on
  what the shell had printed and, if it dropped any, a line ``__AGENTS_CUT_<token>__ <dropped>``.

A foreground command that floods (``yes``) was read whole by the agent's event loop, which kept
it about 87 % busy until the timeout only to drop what it read; now this process reads and drops
it, and the event loop reads at most ``HEAD + 2 * TAIL`` bytes and the end line per command.
This process then read the flood as fast as it came, about 1 GB/s: ``yes`` and the cutter took
a core each until the timeout (up to ten minutes). Past ``SLOW_AFTER`` (the shell tool's: 1 GiB,
about a second of such a flood) it reads a pipe's worth (1 MiB) per ``PACE``.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time

__all__ = ["CUT", "DONE", "Segment"]

#: The end marker's prefix, before the token (the shell tool prints the marker split in two).
DONE = b"\n__AGENTS_DONE_"
#: What the cutter writes, with the token, when the shell exits after bytes were dropped.
CUT = b"\n__AGENTS_CUT_"
#: Bytes read from the shell at once (its pipe is made this large where the system allows).
_READ = 1 << 20
#: An end line longer than this is passed on as it is (a directory is at most 4096 bytes).
_LINE_LIMIT = 64 * 1024


class Segment:
    """One command's output, cut: what to send now for each piece read.

    ``feed(data)`` returns the bytes to send and, once the end line is complete, the bytes read
    after it (the next command's); ``finish()`` the bytes to send when the shell's output ends
    first. What is sent is the output's first ``head`` bytes, then its last ``tail`` to
    ``2 * tail`` bytes, then the end line with the count of the bytes not sent after the marker.

    >>> segment = Segment(b"\\n__AGENTS_DONE_t__ ", head=2, tail=2)
    >>> segment.feed(b"abcdefgh\\n__AGENTS_DONE_t__ 0 /x\\nnext")
    (b'abgh\\n__AGENTS_DONE_t__ 4 0 /x\\n', b'next')
    """

    __slots__ = ("_head_left", "_kept", "_line", "_marker", "_pending", "_tail", "dropped")

    def __init__(self, marker: bytes, head: int, tail: int) -> None:
        self._marker = marker
        self._head_left = head
        self._tail = tail
        self._pending = bytearray()  # may hold the start of the marker
        self._kept = bytearray()  # read after the head: at most 2 * tail bytes
        self._line: bytearray | None = None  # after the marker: the end line so far
        self.dropped = 0

    def feed(self, data: bytes | bytearray | memoryview) -> tuple[bytes, bytes | None]:
        out = bytearray()
        line = self._line
        if line is None:
            pending = self._pending
            pending += data
            at = pending.find(self._marker)
            if at == -1:
                # (the last len(marker) - 1 bytes may start the marker: they wait)
                safe = len(pending) - len(self._marker) + 1
                if safe > 0:
                    self._take(memoryview(pending)[:safe], out)
                    del pending[:safe]
                return bytes(out), None
            self._take(memoryview(pending)[:at], out)
            out += self._kept
            self._kept.clear()
            out += self._marker
            out += b"%d " % self.dropped
            line = self._line = bytearray(memoryview(pending)[at + len(self._marker) :])
            pending.clear()
        else:
            line += data
        end = line.find(b"\n")
        if end == -1 and len(line) <= _LINE_LIMIT:
            return bytes(out), None
        end = len(line) - 1 if end == -1 else end
        out += memoryview(line)[: end + 1]
        return bytes(out), bytes(memoryview(line)[end + 1 :])

    def finish(self, token: bytes) -> bytes:
        """What to send when the shell's output ends before the end line: the rest, and a cut
        line naming the bytes dropped if any were."""
        out = bytearray()
        if self._line is not None:
            return bytes(self._line)
        self._take(memoryview(self._pending), out)
        self._pending.clear()
        out += self._kept
        self._kept.clear()
        if self.dropped:
            out += CUT + token + b"__ %d\n" % self.dropped
        return bytes(out)

    def _take(self, data: memoryview, out: bytearray) -> None:
        """Send what is left of the head from ``data``, keep the rest, ``2 * tail`` at most:
        past that, the last ``tail``."""
        n = min(self._head_left, len(data))
        if n:
            out += data[:n]
            self._head_left -= n
            data = data[n:]
        if not data:
            return
        kept, tail = self._kept, self._tail
        if len(kept) + len(data) <= 2 * tail:
            kept += data
        elif len(data) >= tail:
            self.dropped += len(kept) + len(data) - tail
            kept[:] = data[len(data) - tail :]
        else:
            kept += data
            excess = len(kept) - tail
            del kept[:excess]
            self.dropped += excess


# -- the process -------------------------------------------------------------------------------
#
# One thread, a select loop: a process with threads that is killed can leave its children, for
# a moment, parented to a thread that is still exiting while its main thread already shows as a
# zombie, where the keeper's search for descendants does not find them (the shell's zombie was
# then left to init).


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Frames:
    """The agent's framed scripts (``TOKEN SIZE`` line, then ``SIZE`` bytes), as they come."""

    def __init__(self) -> None:
        self._data = bytearray()
        self.tokens: list[bytes] = []  # of scripts given to the shell, whose end is not seen
        self.to_shell = bytearray()

    def add(self, data: bytes) -> None:
        self._data += data
        while True:
            end = self._data.find(b"\n")
            if end == -1:
                return
            token, size = bytes(self._data[:end]).split()
            if len(self._data) < end + 1 + int(size):
                return
            self.tokens.append(token)  # (before its script reaches the shell)
            self.to_shell += self._data[end + 1 : end + 1 + int(size)]
            del self._data[: end + 1 + int(size)]


def _exit_like(status: int) -> None:
    """Exit as the shell did: its code, or death by its signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # (SIGKILL and SIGSTOP keep theirs)
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _grow(fd: int) -> None:
    """Make the shell's pipe ``_READ`` bytes (fewer system calls), where the system allows."""
    with contextlib.suppress(OSError, AttributeError):
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _READ)  # type: ignore[attr-defined,unused-ignore]


def _start(command: list[str]) -> tuple[int, int, int]:
    """Start ``command`` on two new pipes: its pid, the write end of its stdin, the read end of
    its merged stdout and stderr."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    _grow(out_r)
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(in_r, 0)
            os.dup2(out_w, 1)
            os.dup2(out_w, 2)
            # Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across
            # exec: the shell gets their defaults back (``yes | head -1`` dies of SIGPIPE)
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    os.close(in_r)
    os.close(out_w)
    return pid, in_w, out_r


def main(argv: list[str]) -> None:
    head, tail, slow_after, pace = int(argv[0]), int(argv[1]), int(argv[2]), float(argv[3])
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # (only to wake the select below)
    pid, shell_in, shell_out = _start(argv[4:])
    os.set_blocking(shell_in, False)
    frames = _Frames()
    stdin_open = True
    status: int | None = None
    segment: Segment | None = None
    token = b""
    carry = b""  # read after the last end line: the next command's
    buffer = bytearray(_READ)
    left = _READ  # bytes read at most once the shell has exited
    # no read of the shell's output before this time (time.monotonic()), once a command's
    # output is past slow_after (the read of its end sets none: the next starts unpaused)
    paused_until = 0.0
    while True:
        if segment is None and frames.tokens:
            token = frames.tokens.pop(0)
            segment = Segment(DONE + token + b"__ ", head, tail)
            sent, after = segment.feed(carry)
            _write_all(1, sent)
            if after is not None:
                segment, carry = None, after
                continue
        if status is not None and segment is None:
            _exit_like(status)  # (a command that ended the shell has its token queued)
        readable = [wake_r]
        if stdin_open:
            readable.append(0)
        # (once the shell has exited, what is left in its pipe is read without waiting)
        wait: float | None = None if status is None else 0
        if segment is not None and status is None:
            paused = paused_until and paused_until - time.monotonic()
            if paused > 0:
                wait = paused
            else:
                readable.append(shell_out)
        writable = [shell_in] if frames.to_shell and shell_in >= 0 else []
        ready, can_write, _ = select.select(readable, writable, [], wait)
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                status = code
        if 0 in ready:
            data = os.read(0, 65536)
            if data:
                frames.add(data)
            else:
                stdin_open = False
        if can_write:
            try:
                del frames.to_shell[: os.write(shell_in, frames.to_shell[:65536])]
            except BlockingIOError:
                pass
            except OSError:  # the shell is gone: what it was given is not read
                frames.to_shell.clear()
        if not stdin_open and not frames.to_shell and shell_in >= 0:
            os.close(shell_in)  # the shell reads the end of its input and exits
            shell_in = -1
        if segment is None:
            continue
        if status is not None:  # the shell exited: what it printed is in the pipe (at most
            os.set_blocking(shell_out, False)  # its size; more is a background job's)
        elif shell_out not in ready:
            continue
        try:
            n = os.readv(shell_out, [buffer]) if left > 0 else 0
        except BlockingIOError:
            n = 0
        if status is not None:
            left -= n
        if n == 0:  # the end of the output (or all of it read after the exit)
            if status is None:
                status = os.waitpid(pid, 0)[1]
            _write_all(1, segment.finish(token))
            _exit_like(status)
        sent, after = segment.feed(memoryview(buffer)[:n])
        _write_all(1, sent)
        if after is not None:
            segment, carry = None, after
        elif segment.dropped > slow_after:
            paused_until = time.monotonic() + pace


if __name__ == "__main__":
    main(sys.argv[1:])
