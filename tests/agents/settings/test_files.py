"""Settings files per setting_sources: what each source loads, how they merge, and errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.settings import SettingsError, load_settings


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_no_sources_load_nothing(project: Path, home: Path) -> None:
    write(project / ".claude" / "settings.json", {"permissions": {"allow": ["Read"]}})
    assert load_settings(str(project), None, home).allow == ()


def test_each_source_loads_only_its_file(project: Path, home: Path) -> None:
    write(home / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(user *)"]}})
    write(project / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(proj *)"]}})
    write(project / ".claude" / "settings.local.json", {"permissions": {"allow": ["Bash(loc *)"]}})
    assert load_settings(str(project), ["project"], home).allow == ("Bash(proj *)",)
    assert load_settings(str(project), ["user"], home).allow == ("Bash(user *)",)
    assert load_settings(str(project), ["local"], home).allow == ("Bash(loc *)",)


def test_rule_lists_combine_across_files(project: Path, home: Path) -> None:
    write(home / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(rm *)"]}})
    write(project / ".claude" / "settings.json", {"permissions": {"deny": ["WebFetch"]}})
    settings = load_settings(str(project), ["user", "project"], home)
    assert settings.deny == ("Bash(rm *)", "WebFetch")


def test_the_most_specific_file_wins_for_scalars_and_env(project: Path, home: Path) -> None:
    write(
        home / ".claude" / "settings.json",
        {"permissions": {"defaultMode": "plan"}, "env": {"A": "user", "B": "user"}},
    )
    write(
        project / ".claude" / "settings.json",
        {"permissions": {"defaultMode": "acceptEdits"}, "env": {"A": "project"}},
    )
    write(project / ".claude" / "settings.local.json", {"env": {"A": "local"}})
    settings = load_settings(str(project), ["user", "project", "local"], home)
    assert settings.default_mode == "acceptEdits"
    assert settings.env == {"A": "local", "B": "user"}


def test_additional_directories_resolve_against_the_project(project: Path, home: Path) -> None:
    write(
        project / ".claude" / "settings.json",
        {"permissions": {"additionalDirectories": ["../shared"]}},
    )
    settings = load_settings(str(project), ["project"], home)
    assert settings.additional_directories == (str((project.parent / "shared").resolve()),)


def test_hooks_from_every_file_are_kept(project: Path, home: Path) -> None:
    hook = {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "true", "timeout": 5}]}
        ]
    }
    write(home / ".claude" / "settings.json", {"hooks": hook})
    write(project / ".claude" / "settings.json", {"hooks": hook})
    settings = load_settings(str(project), ["user", "project"], home)
    assert [(h.event, h.matcher, h.command, h.timeout) for h in settings.hooks] == [
        ("PreToolUse", "Bash", "true", 5.0)
    ] * 2


def test_unknown_keys_are_ignored(project: Path, home: Path) -> None:
    write(
        project / ".claude" / "settings.json", {"model": "opus", "statusLine": {"type": "command"}}
    )
    assert load_settings(str(project), ["project"], home).files == (
        str(project / ".claude" / "settings.json"),
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"permissions": {"allow": ["Read",]}}', r"invalid JSON at line 1 column \d+"),
        ("[1, 2]", r"must be a JSON object, got list$"),
        (
            {"permissions": {"allow": "Read"}},
            r"permissions\.allow must be a list of strings, got 'Read'$",
        ),
        ({"permissions": []}, r"permissions must be a JSON object"),
        (
            {"permissions": {"defaultMode": "yolo"}},
            r"permissions\.defaultMode must be one of default, ",
        ),
        ({"env": {"A": ["x"]}}, r"env\.A must be a string"),
        ({"hooks": {"BeforeTool": []}}, r"hooks\.BeforeTool: unknown hook event 'BeforeTool'"),
        (
            {"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}},
            r"hooks\.Stop\[0\]\.hooks\[0\]\.command must be",
        ),
        (
            {"hooks": {"Stop": [{"hooks": [{"command": "x", "timeout": 0}]}]}},
            r"hooks\.Stop\[0\]\.hooks\[0\]\.timeout must be",
        ),
    ],
)
def test_malformed_file_is_an_error_naming_file_and_key(
    project: Path, home: Path, content: Any, message: str
) -> None:
    path = write(project / ".claude" / "settings.json", content)
    with pytest.raises(SettingsError, match=rf"^{path}: .*{message}"):
        load_settings(str(project), ["project"], home)


def test_agent_hooks_are_read_with_prompt_model_and_timeout(project: Path, home: Path) -> None:
    from agents.settings import AgentHook

    hook = {"type": "agent", "prompt": "x", "model": "haiku", "timeout": 5}
    write(project / ".claude" / "settings.json", {"hooks": {"Stop": [{"hooks": [hook]}]}})
    (read,) = load_settings(str(project), ["project"], home).hooks
    assert isinstance(read, AgentHook)
    assert (read.prompt, read.model, read.timeout) == ("x", "haiku", 5.0)


def test_an_unknown_hook_type_names_file_and_key(project: Path, home: Path) -> None:
    path = write(
        project / ".claude" / "settings.json",
        {"hooks": {"Stop": [{"hooks": [{"type": "robot", "prompt": "x"}]}]}},
    )
    with pytest.raises(SettingsError, match=rf"^{path}: hooks\.Stop\[0\]\.hooks\[0\]\.type"):
        load_settings(str(project), ["project"], home)


def test_the_settings_option_comes_above_every_file(project: Path, home: Path) -> None:
    write(project / ".claude" / "settings.local.json", {"env": {"A": "local"}})
    extra = {"env": {"A": "option"}, "permissions": {"deny": ["Bash"]}}
    settings = load_settings(str(project), ["local"], home, extra=extra)
    assert settings.env == {"A": "option"} and settings.deny == ("Bash",)


def test_the_settings_option_may_be_a_path_or_json(project: Path, home: Path) -> None:
    write(project / "more.json", {"permissions": {"allow": ["Read"]}})
    assert load_settings(str(project), None, home, extra="more.json").allow == ("Read",)
    assert load_settings(str(project), None, home, extra='{"env": {"B": "1"}}').env == {"B": "1"}
    with pytest.raises(SettingsError, match=r"^settings option: invalid JSON"):
        load_settings(str(project), None, home, extra="{nope")
