"""AskUserQuestion: schema limits, answers supplied by can_use_tool, and no callback."""

from __future__ import annotations

from typing import Any

import pytest

from agents.tools.ask import NO_ANSWER, ask_user_question_tool
from agents.tools.base import ToolContext, ToolInputError

from .toolkit import call, text_of

ASK = ask_user_question_tool()


def _question(text: str = "Which database?", n_options: int = 2) -> dict[str, Any]:
    return {
        "question": text,
        "header": "Database",
        "options": [{"label": f"opt{i}", "description": f"option {i}"} for i in range(n_options)],
        "multiSelect": False,
    }


async def test_answers_from_the_callback_are_returned(ctx: ToolContext) -> None:
    raw = {"questions": [_question()], "answers": {"Which database?": "opt1"}}
    out = await call(ASK, raw, ctx)
    assert not out.is_error
    assert text_of(out).startswith('User has answered your questions: "Which database?"="opt1".')
    assert out.data == {"questions": ["Which database?"], "answers": {"Which database?": "opt1"}}


async def test_without_answers_no_one_can_answer(ctx: ToolContext) -> None:
    out = await call(ASK, {"questions": [_question()]}, ctx)
    assert out.is_error
    assert (
        text_of(out)
        == NO_ANSWER
        == ("No one can answer: AskUserQuestion needs a can_use_tool callback")
    )


@pytest.mark.parametrize(
    ("questions", "path"),
    [
        ([], r"\$\.questions"),
        ([_question(f"q{i}?") for i in range(5)], r"\$\.questions"),
        ([_question(n_options=1)], r"\$\.questions\[0\]\.options"),
        ([_question(n_options=5)], r"\$\.questions\[0\]\.options"),
        ([{**_question(), "header": "a" * 13}], r"\$\.questions\[0\]\.header"),
    ],
)
def test_limits_are_input_errors(questions: list[dict[str, Any]], path: str) -> None:
    with pytest.raises(ToolInputError, match=path):
        ASK.validate({"questions": questions})


async def test_duplicate_questions_or_labels_are_errors(ctx: ToolContext) -> None:
    out = await call(ASK, {"questions": [_question(), _question()]}, ctx)
    assert text_of(out) == "questions must be unique"
    q = _question()
    q["options"][1]["label"] = "opt0"
    out = await call(ASK, {"questions": [q]}, ctx)
    assert text_of(out).startswith("option labels must be unique")


def test_ask_is_not_read_only() -> None:
    assert ASK.read_only is False
