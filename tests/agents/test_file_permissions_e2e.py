"""File and network permissions through the real loop and the real tools, in a temporary tree:
symlinks followed before ``..``, search results that obey Read deny rules, ``~user``, hard
links, network egress, and reading commands in Bash."""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import Any

import pytest

from agents import AgentOptions, SystemMessage
from agents.testing import ScriptedBackend, Step, text, tool_use

from .helpers import collect, result_of


def one_call(name: str, tool_input: dict[str, Any]) -> ScriptedBackend:
    return ScriptedBackend([Step([tool_use(name, tool_input, id="c1")]), Step([text("done")])])


async def run_one(
    project: Path, name: str, tool_input: dict[str, Any], **options: Any
) -> tuple[str, bool]:
    """Run one tool call through a session; the tool result's text and whether it was denied."""
    backend = one_call(name, tool_input)
    messages, _ = await collect("go", AgentOptions(cwd=str(project), backend=backend, **options))
    result: dict[str, Any] = backend.requests[1].messages[-1]["content"][0]
    assert result["type"] == "tool_result"
    content = result["content"]
    body = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    denied = any(
        isinstance(m, SystemMessage) and m.subtype == "permission_denied" for m in messages
    )
    assert denied == bool(result_of(messages).permission_denials)
    return body, denied


@pytest.fixture
def escape(tmp_path: Path, project: Path) -> Path:
    """``project/src/out`` is a link to ``outside/deep``; ``outside/target.txt`` exists."""
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "target.txt").write_text("outside text\n")
    (project / "src").mkdir()
    (project / "src" / "out").symlink_to(outside / "deep")
    return outside


# -- `..` after a symlink --------------------------------------------------------------------


async def test_a_write_through_dotdot_after_a_symlink_is_judged_where_it_lands(
    project: Path, escape: Path
) -> None:
    """allow Edit(./src/**) does not cover ``src/out/../pwned``: the kernel puts it outside."""
    path = f"{project}/src/out/../pwned"
    body, denied = await run_one(
        project, "Write", {"file_path": path, "content": "x"}, allowed_tools=["Edit(./src/**)"]
    )
    assert denied, body
    assert not (escape / "pwned").exists()
    assert not (project / "src" / "pwned").exists()


async def test_a_read_through_dotdot_after_a_symlink_outside_cwd_asks(
    project: Path, escape: Path
) -> None:
    """``src/out/../target.txt`` is outside the working directory: default mode asks."""
    body, denied = await run_one(project, "Read", {"file_path": f"{project}/src/out/../target.txt"})
    assert denied, body
    assert "outside text" not in body


async def test_a_denied_file_reached_through_dotdot_after_a_symlink_is_denied(
    project: Path,
) -> None:
    """deny Read(./.env): ``sub/l/../.env`` with ``sub/l -> inner`` is ``./.env``."""
    (project / ".env").write_text("SECRET_TOKEN=hunter2\n")
    (project / "inner").mkdir()
    (project / "sub").mkdir()
    (project / "sub" / "l").symlink_to(project / "inner")
    body, denied = await run_one(
        project,
        "Read",
        {"file_path": f"{project}/sub/l/../.env"},
        disallowed_tools=["Read(./.env)"],
    )
    assert denied and "denied by rule 'Read(./.env)'" in body
    assert "hunter2" not in body


# -- search results obey Read deny rules -----------------------------------------------------


@pytest.fixture
def secret_project(project: Path) -> Path:
    (project / ".env").write_text("SECRET_TOKEN=hunter2\n")
    (project / "app.py").write_text("print('SECRET is not here')\n")
    return project


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
async def test_grep_over_the_project_never_shows_a_denied_file(
    secret_project: Path, mode: str
) -> None:
    body, denied = await run_one(
        secret_project,
        "Grep",
        {"pattern": "SECRET", "output_mode": "content"},
        disallowed_tools=["Read(./.env)"],
        permission_mode=mode,
    )
    assert not denied, body
    assert "hunter2" not in body and ".env" not in body
    assert "app.py" in body
    assert "1 file withheld" in body


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
async def test_glob_never_lists_a_denied_file(secret_project: Path, mode: str) -> None:
    body, denied = await run_one(
        secret_project,
        "Glob",
        {"pattern": "**/.env"},
        disallowed_tools=["Read(./.env)"],
        permission_mode=mode,
    )
    assert not denied, body
    assert ".env" not in body.replace("withheld", "")
    assert "1 file withheld" in body


async def test_grep_over_a_project_with_no_deny_rules_runs_without_asking(
    secret_project: Path,
) -> None:
    body, denied = await run_one(
        secret_project, "Grep", {"pattern": "SECRET", "output_mode": "files_with_matches"}
    )
    assert not denied
    assert ".env" in body and "app.py" in body
    assert "withheld" not in body


# -- one expansion of ~user ------------------------------------------------------------------


async def test_tilde_user_means_the_same_directory_to_the_gate_and_the_tools(
    project: Path,
) -> None:
    """deny Read(//<home>/**) covers ``~user`` as it covers the home directory's own path."""
    me = pwd.getpwuid(os.getuid())
    rule = f"Read(/{me.pw_dir}/**)"
    for spelling in (me.pw_dir, f"~{me.pw_name}"):
        body, denied = await run_one(
            project,
            "Glob",
            {"pattern": "*", "path": spelling},
            disallowed_tools=[rule],
            permission_mode="bypassPermissions",
        )
        assert denied and "denied by rule" in body, (spelling, body)


# -- hard links ------------------------------------------------------------------------------


@pytest.fixture
def hard_link(tmp_path: Path, project: Path) -> tuple[Path, Path]:
    """``project/src/link.txt`` is a second name of ``outside.txt``."""
    outside = tmp_path / "outside.txt"
    outside.write_text("original\n")
    (project / "src").mkdir()
    link = project / "src" / "link.txt"
    os.link(outside, link)
    return link, outside


async def test_accept_edits_does_not_approve_a_write_to_a_hard_linked_file(
    project: Path, hard_link: tuple[Path, Path]
) -> None:
    link, outside = hard_link
    body, denied = await run_one(
        project,
        "Edit",
        {"file_path": str(link), "old_string": "original", "new_string": "pwned"},
        permission_mode="acceptEdits",
    )
    assert denied, body
    assert outside.read_text() == "original\n"


async def test_a_directory_wide_allow_rule_does_not_approve_a_hard_linked_file(
    project: Path, hard_link: tuple[Path, Path]
) -> None:
    link, outside = hard_link
    body, denied = await run_one(
        project,
        "Write",
        {"file_path": str(link), "content": "pwned"},
        allowed_tools=["Edit(./src/**)"],
    )
    assert denied, body
    assert outside.read_text() == "original\n"


async def test_an_allow_rule_naming_a_hard_linked_file_approves_it(
    project: Path, hard_link: tuple[Path, Path]
) -> None:
    link, outside = hard_link
    backend = ScriptedBackend(
        [
            Step([tool_use("Read", {"file_path": str(link)}, id="r")]),
            Step([tool_use("Write", {"file_path": str(link), "content": "mine\n"}, id="w")]),
            Step([text("done")]),
        ]
    )
    options = AgentOptions(
        cwd=str(project), backend=backend, allowed_tools=["Edit(./src/link.txt)"]
    )
    messages, _ = await collect("go", options)
    assert result_of(messages).permission_denials == []
    assert outside.read_text() == "mine\n"


# -- network egress --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "tool_input"),
    [
        ("WebFetch", {"url": "http://127.0.0.1:9/x", "prompt": "p"}),
        ("WebSearch", {"query": "weather"}),
    ],
)
async def test_network_egress_asks_in_the_default_mode(
    project: Path, name: str, tool_input: dict[str, Any]
) -> None:
    body, denied = await run_one(project, name, tool_input)
    assert denied and "requires approval" in body


async def test_web_fetch_with_an_allow_rule_runs_without_asking(project: Path) -> None:
    body, denied = await run_one(
        project,
        "WebFetch",
        {"url": "http://127.0.0.1:9/x", "prompt": "p"},
        allowed_tools=["WebFetch(domain:127.0.0.1)"],
    )
    assert not denied, body  # it ran (and failed to connect: nothing listens on port 9)


# -- reading commands in Bash ----------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cat .env",
        "head -n1 ./.env",
        "grep -r SECRET .",
        "cp .env copy.txt",
        "sed -n 1p .env",
        "cat < .env",  # an input redirection reads the file too
        "mkdir -p sub && cd sub && cat ../.env",  # judged from the shell's directory
        "echo $(timeout 5 cat .env)",  # inside a substitution, behind a wrapper
        "ls && sudo -u root tail .env",
    ],
)
async def test_a_read_deny_rule_covers_reading_commands_in_bash(
    secret_project: Path, command: str
) -> None:
    body, denied = await run_one(
        secret_project,
        "Bash",
        {"command": command},
        disallowed_tools=["Read(./.env)"],
        permission_mode="bypassPermissions",
    )
    assert denied and "denied by rule 'Read(./.env)'" in body, (command, body)
    assert "hunter2" not in body


# -- add_dirs: taken as the session's tools take paths ---------------------------------------


@pytest.mark.parametrize("spelled", ["../shared", "~/shared", "{tmp}/shared"])
async def test_an_added_directory_is_found_from_the_sessions_cwd_and_home(
    spelled: str, tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``add_dirs=["../shared"]`` is beside the session's ``cwd`` (the Agent SDK starts its
    CLI there), and ``~`` is the user's home, wherever the process itself runs: a read there
    passes without asking (before: made absolute against the process's directory, so
    ``../shared`` was beside that, and ``~/shared`` a directory named ``~``)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "notes.txt").write_text("shared notes\n")
    elsewhere = tmp_path / "elsewhere" / "deeper"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("HOME", str(tmp_path))
    add = spelled.format(tmp=tmp_path)
    body, denied = await run_one(
        project, "Read", {"file_path": str(shared / "notes.txt")}, add_dirs=[add]
    )
    assert not denied, body
    assert "shared notes" in body
