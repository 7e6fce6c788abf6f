"""Skills and slash commands from .claude/skills and .claude/commands, per setting_sources."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.settings import (
    FrontMatterError,
    SlashCommand,
    expand_command,
    load_commands,
    load_skills,
    skill_tool,
    skills_prompt_block,
)
from agents.tools.base import ToolContext

CTX = ToolContext(cwd="/", agent_id="main", tool_use_id="t1", session_id="s1")


def skill(root: Path, directory: str, text: str) -> Path:
    path = root / ".claude" / "skills" / directory / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def command(root: Path, name: str, text: str) -> None:
    path = root / ".claude" / "commands" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_skill_front_matter_gives_name_and_description(project: Path) -> None:
    skill(
        project,
        "pdf",
        '---\nname: pdf-tools\ndescription: "Work with PDF files"\n---\nUse pdftotext.\n',
    )
    (found,) = load_skills(str(project), ["project"]).values()
    assert (found.name, found.description, found.body) == (
        "pdf-tools",
        "Work with PDF files",
        "Use pdftotext.",
    )


def test_skills_need_a_source(project: Path) -> None:
    skill(project, "pdf", "---\ndescription: d\n---\nbody")
    assert load_skills(str(project), None) == {}
    assert load_skills(str(project), ["local"]) == {}


def test_a_project_skill_wins_over_a_user_skill(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    skill(home, "lint", "---\ndescription: user's\n---\nuser body")
    skill(project, "lint", "---\ndescription: project's\n---\nproject body")
    assert load_skills(str(project), ["user", "project"], home)["lint"].body == "project body"


def test_a_skill_without_description_is_an_error_naming_the_file(project: Path) -> None:
    path = skill(project, "x", "---\nname: x\n---\nbody")
    with pytest.raises(FrontMatterError, match=rf"^{path}: description is required"):
        load_skills(str(project), ["project"])


def test_malformed_front_matter_names_file_and_line(project: Path) -> None:
    path = skill(project, "x", "---\ndescription: d\nthis is not yaml\n---\nbody")
    with pytest.raises(FrontMatterError, match=rf"^{path}:3: expected 'key: value'"):
        load_skills(str(project), ["project"])


def test_skill_descriptions_go_into_the_system_block(project: Path) -> None:
    skill(project, "pdf", "---\ndescription: Work with PDF files\n---\nsecret body")
    block = skills_prompt_block(load_skills(str(project), ["project"]).values())
    assert block is not None and "- pdf: Work with PDF files" in block["text"]
    assert "secret body" not in block["text"]


async def test_the_skill_tool_loads_the_body(project: Path) -> None:
    skill(project, "pdf", "---\ndescription: d\n---\nUse pdftotext.")
    tool = skill_tool(load_skills(str(project), ["project"]))
    output = await tool.handler(tool.validate({"skill": "pdf"}), CTX)
    assert not output.is_error
    assert isinstance(output.content, str) and output.content.endswith("Use pdftotext.")


async def test_an_unknown_skill_is_an_error_listing_the_known(project: Path) -> None:
    skill(project, "pdf", "---\ndescription: d\n---\nbody")
    tool = skill_tool(load_skills(str(project), ["project"]))
    output = await tool.handler(tool.validate({"skill": "docx"}), CTX)
    assert output.is_error and output.content == "unknown skill 'docx' (available: pdf)"


def test_a_command_expands_arguments(project: Path) -> None:
    command(
        project, "fix", "---\ndescription: Fix an issue\n---\nFix issue #$1 with care: $ARGUMENTS"
    )
    commands = load_commands(str(project), ["project"])
    assert commands["fix"].description == "Fix an issue"
    assert expand_command("/fix 42 now", commands) == "Fix issue #42 with care: 42 now"


def test_a_placeholder_past_every_word_is_empty_however_many_digits_it_has(project: Path) -> None:
    """``$`` and 5 000 digits (past Python's 4 300 for an int) names no word, as ``$9`` does for
    two words: empty, not a ValueError out of the prompt's expansion."""
    command(project, "far", "[$9] [$" + "9" * 5000 + "] [$" + "0" * 5000 + "2]")
    commands = load_commands(str(project), ["project"])
    assert expand_command("/far a b", commands) == "[] [] [b]"


def test_a_command_without_placeholders_gets_the_arguments_appended(project: Path) -> None:
    command(project, "review", "Review the diff.")
    commands = load_commands(str(project), ["project"])
    assert expand_command("/review", commands) == "Review the diff."
    assert expand_command("/review main", commands) == "Review the diff.\n\nARGUMENTS: main"


def test_unknown_and_built_in_commands_are_not_expanded(project: Path) -> None:
    command(project, "clear", "not the real clear")
    commands = load_commands(str(project), ["project"])
    assert expand_command("/clear", commands) is None
    assert expand_command("/nope x", commands) is None
    assert expand_command("plain prompt", commands) is None


def test_a_file_over_the_limit_is_refused_naming_it_and_one_at_it_is_read(
    project: Path,
) -> None:
    """A settings source's file is read up to MAX_SETTINGS_FILE_BYTES (a cloned repository's
    200 MB SKILL.md was read whole, decoded and held): one byte over is an error naming the
    file, its size and the limit; a skill of exactly the limit loads."""
    from agents.settings import SettingsError
    from agents.settings._files import MAX_SETTINGS_FILE_BYTES

    head = "---\ndescription: d\n---\n"
    at_limit = skill(project, "fits", head + "b" * (MAX_SETTINGS_FILE_BYTES - len(head)))
    assert at_limit.stat().st_size == MAX_SETTINGS_FILE_BYTES
    (found,) = load_skills(str(project), ["project"]).values()
    assert len(found.body) == MAX_SETTINGS_FILE_BYTES - len(head)
    over = skill(project, "over", head + "b" * (MAX_SETTINGS_FILE_BYTES - len(head) + 1))
    with pytest.raises(SettingsError) as caught:
        load_skills(str(project), ["project"])
    assert str(caught.value) == (
        f"{over}: {MAX_SETTINGS_FILE_BYTES + 1} bytes, over the {MAX_SETTINGS_FILE_BYTES}-byte "
        "limit of a settings source's file"
    )


@pytest.mark.parametrize("where", [".claude/commands/big.md", ".claude/settings.json", ".mcp.json"])
def test_every_kind_of_settings_file_has_the_limit(
    project: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents.settings import SettingsError, _files, load_settings
    from agents.settings._mcp_json import load_mcp_json

    monkeypatch.setattr(_files, "MAX_SETTINGS_FILE_BYTES", 100)
    path = project / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{" + " " * 200 + "}")
    with pytest.raises(
        SettingsError, match=r"over the 100-byte limit of a settings source's file$"
    ):
        load_commands(str(project), ["project"])
        load_settings(str(project), ["project"])
        load_mcp_json(str(project))


@settings(max_examples=100)
@given(text=st.lists(st.sampled_from(["a", "é", "\r", "\n", "\r\n", "\u2028", "-"])).map("".join))
def test_the_bounded_read_reads_as_read_text(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    """CR and CRLF line ends come out as read_text's universal newlines make them."""
    from agents.settings._files import read_settings_text

    path = tmp_path_factory.mktemp("text") / "f.md"
    path.write_bytes(text.encode())
    assert read_settings_text(path) == path.read_text(encoding="utf-8")


@given(
    body=st.lists(st.sampled_from(["$ARGUMENTS", "$1", "$2", "$10", " t ", "$", "#"])).map("".join),
    arguments=st.lists(st.sampled_from(["$1", "$ARGUMENTS", "$2", "a", "b", " "])).map("".join),
)
def test_what_an_argument_brings_is_never_read_as_a_placeholder(body: str, arguments: str) -> None:
    """Placeholders are replaced in one pass over the command's body: ``$1`` in an argument
    stays ``$1`` (it was substituted again, the word it named put in its place)."""
    words = arguments.split()

    def reference(match: re.Match[str]) -> str:
        if match.group(0) == "$ARGUMENTS":
            return arguments
        index = int(match.group(1))
        return words[index - 1] if 0 < index <= len(words) else ""

    expected = re.sub(r"\$ARGUMENTS|\$(\d+)", reference, body)
    if not re.search(r"\$ARGUMENTS|\$\d", body) and arguments:
        expected = f"{body}\n\nARGUMENTS: {arguments}"
    command = SlashCommand(name="c", description="", body=body, path="/c.md")
    assert command.expand(arguments) == expected
