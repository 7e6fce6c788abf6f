"""AskUserQuestion: the model asks the user multiple-choice questions.

The tool itself cannot reach a user: the permission layer always routes it to ``can_use_tool``
(as the Agent SDK does), and the application shows the questions and answers them by returning
``PermissionResultAllow(updated_input={**input, "answers": {question: answer}})``. The handler then
only reports those answers back to the model. Without a callback nobody answers, and the model is
told so instead of waiting forever.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import trio

from .base import Tool, ToolContext, ToolOutput

__all__ = ["NO_ANSWER", "ask_user_question_tool"]

NO_ANSWER = "No one can answer: AskUserQuestion needs a can_use_tool callback"


class Option(msgspec.Struct):
    """One choice: a short ``label`` and what picking it means."""

    label: str
    description: str = ""


class Question(msgspec.Struct):
    """One question with 2-4 options; ``header`` is a chip label of at most 12 characters."""

    question: str
    header: Annotated[str, msgspec.Meta(max_length=12)]
    options: Annotated[list[Option], msgspec.Meta(min_length=2, max_length=4)]
    multi_select: bool = msgspec.field(default=False, name="multiSelect")


class AskInput(msgspec.Struct):
    """AskUserQuestion's input: 1-4 questions, and the ``answers`` the callback adds."""

    questions: Annotated[list[Question], msgspec.Meta(min_length=1, max_length=4)]
    answers: dict[str, str] | None = None


ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "minItems": 1,
            "maxItems": 4,
            "description": "Questions to ask the user (1-4 questions)",
            "items": {
                "type": "object",
                "properties": {
                    "question": {
                        "type": "string",
                        "description": "The complete question to ask the user, ending with a "
                        "question mark",
                    },
                    "header": {
                        "type": "string",
                        "description": "Very short label displayed as a chip/tag (max 12 chars)",
                    },
                    "options": {
                        "type": "array",
                        "minItems": 2,
                        "maxItems": 4,
                        "description": "The available choices (2-4 options). An 'Other' choice "
                        "is provided automatically.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "label": {
                                    "type": "string",
                                    "description": "The display text of this option (1-5 words)",
                                },
                                "description": {
                                    "type": "string",
                                    "description": "What this option means or implies",
                                },
                            },
                            "required": ["label", "description"],
                            "additionalProperties": False,
                        },
                    },
                    "multiSelect": {
                        "type": "boolean",
                        "description": "Set to true to allow the user to select multiple options",
                    },
                },
                "required": ["question", "header", "options", "multiSelect"],
                "additionalProperties": False,
            },
        },
        "answers": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "User answers collected by the permission component",
        },
    },
    "required": ["questions"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}

ASK_DESCRIPTION = """Use this tool when you need to ask the user questions during execution. This allows you to:
1. Gather user preferences or requirements
2. Clarify ambiguous instructions
3. Get decisions on implementation choices as you work

Users can always select "Other" to provide custom text input. Use multiSelect: true to allow multiple answers."""  # noqa: E501


async def _ask(args: AskInput, ctx: ToolContext) -> ToolOutput:
    await trio.lowlevel.checkpoint()
    texts = [q.question for q in args.questions]
    if len(set(texts)) != len(texts):
        return ToolOutput.error("questions must be unique")
    for q in args.questions:
        labels = [o.label for o in q.options]
        if len(set(labels)) != len(labels):
            return ToolOutput.error(f"option labels must be unique within a question: {q.question}")
    if args.answers is None:
        return ToolOutput.error(NO_ANSWER)
    pairs = ", ".join(f'"{q}"="{args.answers.get(q, "")}"' for q in texts)
    text = (
        f"User has answered your questions: {pairs}. "
        "You can now continue with the user's answers in mind."
    )
    return ToolOutput(text, data={"questions": texts, "answers": dict(args.answers)})


def ask_user_question_tool() -> Tool:
    """A fresh ``AskUserQuestion`` tool (mutating: it waits on a person)."""
    return Tool(
        name="AskUserQuestion",
        description=ASK_DESCRIPTION,
        input_schema=ASK_SCHEMA,
        handler=_ask,
        read_only=False,
        input_type=AskInput,
    )
