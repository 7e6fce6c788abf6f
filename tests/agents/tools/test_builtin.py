"""builtin_tools(): names, order, fresh objects, read-only flags, schemas."""

from __future__ import annotations

import pytest

from agents.tools.builtin import BUILTIN_TOOL_NAMES, READ_ONLY_BUILTINS, builtin_tools


def test_all_builtins_in_claude_code_order() -> None:
    assert [t.name for t in builtin_tools()] == list(BUILTIN_TOOL_NAMES)
    assert BUILTIN_TOOL_NAMES[:6] == ("Bash", "Glob", "Grep", "Read", "Edit", "Write")
    assert not {"Agent", "Skill", "ToolSearch"} & set(BUILTIN_TOOL_NAMES)


def test_named_subset_in_given_order_and_empty() -> None:
    assert [t.name for t in builtin_tools(["Read", "Bash", "Read"])] == ["Read", "Bash"]
    assert builtin_tools([]) == []


def test_unknown_name_lists_the_available_ones() -> None:
    with pytest.raises(ValueError, match=r"^unknown tool 'Grepp' \(available: Bash, Glob, Grep, "):
        builtin_tools(["Grepp"])


def test_fresh_objects_each_call() -> None:
    a, b = builtin_tools(["Read"]), builtin_tools(["Read"])
    assert a[0] is not b[0]


def test_read_only_flags_match_spec_t5() -> None:
    flags = {t.name: t.read_only for t in builtin_tools()}
    assert (
        {n for n, ro in flags.items() if ro}
        == READ_ONLY_BUILTINS
        == {
            "Read",
            "Glob",
            "Grep",
            "WebFetch",
            "WebSearch",
            "TaskGet",
            "TaskList",
        }
    )


def test_every_tool_has_schema_description_and_validator() -> None:
    for t in builtin_tools():
        d = t.definition()
        assert d["input_schema"]["type"] == "object", t.name
        assert d["description"].strip(), t.name
        assert t.input_type is not None, t.name
        assert set(d["input_schema"].get("required", [])) <= set(d["input_schema"]["properties"])


def test_claude_code_field_names() -> None:
    props = {t.name: set(t.input_schema["properties"]) for t in builtin_tools()}
    assert props["Read"] == {"file_path", "offset", "limit"}
    assert props["Edit"] == {"file_path", "old_string", "new_string", "replace_all"}
    assert {"-i", "-n", "-A", "-B", "-C", "output_mode", "head_limit", "multiline"} <= props["Grep"]
    assert props["Bash"] == {"command", "timeout", "description", "run_in_background"}
