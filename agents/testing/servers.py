"""Throw-away PostgreSQL and Redis servers on 127.0.0.1, for tests of the scale-out backends.

Each server runs from a fresh temporary directory on a free port and is stopped (and its
directory removed) when the context manager exits, so a test suite can start its own servers
without touching any that the machine runs::

    with postgres_server() as dsn, redis_server() as url:
        store = PostgresSessionStore(dsn)
        ...

They use the Debian packages' binaries (``postgresql``, ``redis-server``); when one is missing,
:class:`ServerUnavailable` says which package to install. PostgreSQL refuses to run as root, so
under root the cluster is created and run as the ``postgres`` system user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["ServerUnavailable", "free_port", "postgres_server", "redis_server"]

_START_DEADLINE_S = 30.0


class ServerUnavailable(RuntimeError):
    """The server's binaries are not installed (the message names the package)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on at the moment of the call."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _find(binary: str, package: str) -> str:
    found = shutil.which(binary) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{binary}"), reverse=True)), None
    )
    if found is None:
        raise ServerUnavailable(f"{binary} not found: install the Debian package {package!r}")
    return found


def _wait_for_port(port: int, proc: subprocess.Popen[bytes] | None, what: str) -> None:
    deadline = time.monotonic() + _START_DEADLINE_S
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before accepting connections")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.02)
    raise TimeoutError(f"{what} did not accept connections on 127.0.0.1:{port} within 30 s")


def _as_postgres_user() -> list[str]:
    """The prefix that runs a command as ``postgres`` when we are root; nothing otherwise."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    if runuser is None:
        raise ServerUnavailable("running PostgreSQL as root needs runuser (package 'util-linux')")
    return [runuser, "-u", "postgres", "--"]


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Start a PostgreSQL cluster on a free port; yield its DSN; stop and remove it on exit."""
    initdb = _find("initdb", "postgresql")
    pg_ctl = _find("pg_ctl", "postgresql")
    prefix = _as_postgres_user()
    base = Path(tempfile.mkdtemp(prefix="trio-agents-pg-"))
    data = base / "data"
    if prefix:
        shutil.chown(base, "postgres", "postgres")
    port = free_port()
    try:
        subprocess.run(
            [*prefix, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
            check=True,
            capture_output=True,
        )
        options = (
            f"-p {port} -k {base} -h 127.0.0.1 -c fsync=off -c synchronous_commit=off"
            " -c full_page_writes=off -c max_connections=200"
        )
        subprocess.run(
            [
                *prefix,
                pg_ctl,
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(base / "log"),
                "-w",
                "start",
            ],
            check=True,
            capture_output=True,
        )
        _wait_for_port(port, None, "postgres")
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """Start a Redis server (no persistence) on a free port; yield its URL; stop it on exit."""
    binary = _find("redis-server", "redis-server")
    base = Path(tempfile.mkdtemp(prefix="trio-agents-redis-"))
    port = free_port()
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(base),
            "--daemonize",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, proc, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(base, ignore_errors=True)
