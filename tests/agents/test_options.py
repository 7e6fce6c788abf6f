"""AgentOptions validation: errors name the field, the value and what is allowed."""

from __future__ import annotations

import pytest

from agents import AgentDefinition, AgentOptions, HookMatcher


def test_max_turns_must_be_positive() -> None:
    """max_turns=0 is refused with the limit and the value."""
    with pytest.raises(ValueError, match=r"^max_turns must be >= 1, got 0$"):
        AgentOptions(max_turns=0)


def test_unknown_permission_mode_lists_the_modes() -> None:
    """An unknown permission mode names itself and the allowed ones."""
    with pytest.raises(
        ValueError,
        match=r"^unknown permission_mode 'yolo' \(expected one of default, acceptEdits, plan, "
        r"dontAsk, auto, bypassPermissions\)$",
    ):
        AgentOptions(permission_mode="yolo")


def test_budget_needs_a_price_for_the_model() -> None:
    """A budget on an unpriced model fails at construction; pricing= fixes it."""
    with pytest.raises(
        ValueError, match=r"^max_budget_usd set but no price for model 'x'; pass pricing=$"
    ):
        AgentOptions(model="x", max_budget_usd=1.0)
    options = AgentOptions(model="x", max_budget_usd=1.0, pricing={"x": {"input": 1, "output": 2}})
    assert options.price_table().cost("x", {"input_tokens": 10**6, "output_tokens": 0}) == 1.0


def test_dated_model_ids_price_as_their_alias() -> None:
    """claude-sonnet-4-5-20250929 costs what claude-sonnet-4-5 costs."""
    table = AgentOptions().price_table()
    use = {"input_tokens": 1000, "output_tokens": 1000}
    assert (
        table.cost("claude-sonnet-4-5-20250929", use)
        == table.cost("claude-sonnet-4-5", use)
        == 0.018
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"effort": "huge"},
            r"^unknown effort 'huge' \(expected one of low, medium, high, xhigh, max\)$",
        ),
        ({"max_budget_usd": -1}, r"^max_budget_usd must be >= 0, got -1$"),
        (
            {"budget_mode": "hard"},
            r"^unknown budget_mode 'hard' \(expected one of soft, reserve\)$",
        ),
        ({"max_tool_concurrency": 0}, r"^max_tool_concurrency must be >= 1, got 0$"),
        ({"allowed_tools": "Read"}, r"^allowed_tools must be a list of strings, got 'Read'$"),
        ({"fork_session": True}, r"^fork_session=True needs resume=<session id>$"),
        ({"setting_sources": ["team"]}, r"^unknown setting_sources entry 'team'"),
        ({"cwd": "/definitely/not/here"}, r"^cwd '/definitely/not/here' is not a directory$"),
        ({"cwd": 5}, r"^cwd must be a path, got 5$"),
        ({"add_dirs": "/tmp"}, r"^add_dirs must be a list of paths, got '/tmp'$"),
        ({"add_dirs": ["/tmp", 5]}, r"^add_dirs\[1\] must be a path, got 5$"),
        ({"max_budget_usd": float("nan")}, r"^max_budget_usd must be a finite number, got nan$"),
        ({"max_budget_usd": float("inf")}, r"^max_budget_usd must be a finite number, got inf$"),
        ({"max_turns": float("nan")}, r"^max_turns must be a finite number, got nan$"),
        ({"model": 5}, r"^model must be a string, got 5$"),
        ({"fallback_model": ["x"]}, r"^fallback_model must be a string, got \['x'\]$"),
        ({"resume": 5}, r"^resume must be a string, got 5$"),
        (
            {"session_id": "notauuid"},
            r"^session_id must be a UUID \(8-4-4-4-12 hex digits\), got 'notauuid'$",
        ),
        ({"session_id": "../../etc/x"}, r"^session_id must be a UUID .*, got '\.\./\.\./etc/x'$"),
        ({"session_id": "a" * 300}, r"^session_id must be a UUID .*, got 'aaaa"),
        ({"session_id": "{12345678-1234-5678-1234-567812345678}"}, r"^session_id must be a UUID"),
        ({"session_id": "12345678123456781234567812345678"}, r"^session_id must be a UUID"),
        ({"resume": "long"}, r"^resume must be a UUID \(8-4-4-4-12 hex digits\), got 'long'$"),
        ({"resume": "12345678-1234-5678-1234-56781234567g"}, r"^resume must be a UUID"),
        ({"system_prompt": 5}, r"^system_prompt must be a str or a preset dict \(.*\), got 5$"),
        ({"system_prompt": {"type": "x"}}, r"^system_prompt must be a str or a preset dict"),
        ({"thinking": {"type": "x"}}, r"^thinking must be a dict whose type is one of enabled, "),
        (
            {"thinking": {"type": "enabled"}},
            r"^thinking\['budget_tokens'\] must be an int >= 1024 when enabled, got None$",
        ),
        ({"env": {"A": 1}}, r"^env must map strings to strings, got 'A': 1$"),
        ({"env": "A=1"}, r"^env must be a dict of str -> str, got 'A=1'$"),
        (
            {"env": {"PATH": "/bin\x00/x"}},
            r"^env\['PATH'\] must not contain a NUL character, got '/bin\\x00/x'$",
        ),
        ({"env": {"": "1"}}, r"^env: '' is not a variable name \(non-empty, no '=' or NUL\)$"),
        ({"env": {"A=B": "1"}}, r"^env: 'A=B' is not a variable name \(non-empty, no '='"),
        ({"hooks": {"BadEvent": []}}, r"^unknown hook event 'BadEvent' \(expected one of "),
        (
            {"hooks": {"PreToolUse": HookMatcher(hooks=[])}},
            r"^hooks\['PreToolUse'\] must be a list of HookMatcher, got HookMatcher$",
        ),
        (
            {"hooks": {"PreToolUse": [print]}},
            r"^hooks\['PreToolUse'\]\[0\] must be a HookMatcher, got builtin_function_or_method$",
        ),
    ],
)
def test_bad_options_are_refused_with_a_clear_message(
    kwargs: dict[str, object], message: str
) -> None:
    """Each invalid option raises ValueError naming the field and value."""
    with pytest.raises(ValueError, match=message):
        AgentOptions(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"thinking": {"type": "adaptive"}},
        {"thinking": {"type": "enabled", "budget_tokens": 2048}},
        {"thinking": {"type": "disabled"}},
        {"system_prompt": {"type": "preset", "preset": "claude_code", "append": "Be brief."}},
        {"system_prompt": {"type": "preset", "preset": "claude_code"}},
        {"env": {"A": "1"}},
        {"add_dirs": ("/tmp",)},
        {"max_budget_usd": 0.5, "model": "claude-haiku-5-5", "fallback_model": "sonnet"},
        {"session_id": "12345678-1234-5678-1234-567812345678"},
        {"session_id": "ABCDEF01-1234-5678-1234-567812345678"},
        {"resume": "12345678-1234-5678-1234-567812345678", "fork_session": True},
    ],
)
def test_the_agent_sdks_option_shapes_are_accepted(kwargs: dict[str, object]) -> None:
    AgentOptions(**kwargs)  # type: ignore[arg-type]


def test_agent_definitions_are_checked() -> None:
    """agents= must map names to AgentDefinition; definitions validate their own fields."""
    with pytest.raises(ValueError, match=r"^agents\['r'\] must be an AgentDefinition, got dict$"):
        AgentOptions(agents={"r": {"description": "x"}})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"^AgentDefinition.max_turns must be >= 1, got 0$"):
        AgentDefinition(description="d", prompt="p", max_turns=0)


async def test_features_not_built_yet_fail_loudly(tmp_path: object) -> None:
    """Options for unbuilt features raise NotImplementedError naming them, never pass silently."""
    from agents import query
    from agents.testing import ScriptedBackend

    for options in (AgentOptions(backend=ScriptedBackend([]), enable_file_checkpointing=True),):
        with pytest.raises(NotImplementedError, match=r"not built yet"):
            async for _ in query(prompt="hi", options=options):
                pass
