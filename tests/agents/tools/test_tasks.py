"""TaskCreate/Update/Get/List: ids, fields, statuses, dependencies, sharing across agents."""

from __future__ import annotations

import pytest

from agents.tools.base import ToolContext, ToolInputError
from agents.tools.tasks import (
    task_create_tool,
    task_get_tool,
    task_list_tool,
    task_update_tool,
)

from .toolkit import call, text_of

CREATE, UPDATE, GET, LIST = (
    task_create_tool(),
    task_update_tool(),
    task_get_tool(),
    task_list_tool(),
)


async def _create(ctx: ToolContext, subject: str, **extra: object) -> str:
    out = await call(CREATE, {"subject": subject, "description": f"do {subject}", **extra}, ctx)
    assert out.data is not None
    task_id: str = out.data["task"]["id"]
    return task_id


async def test_create_returns_sequential_ids_in_the_text(ctx: ToolContext) -> None:
    out = await call(CREATE, {"subject": "Run tests", "description": "npm test"}, ctx)
    assert text_of(out) == "Task #1 created successfully: Run tests"
    assert await _create(ctx, "second") == "2"


async def test_list_and_get(ctx: ToolContext) -> None:
    await _create(ctx, "a", activeForm="Doing a", metadata={"k": 1})
    await _create(ctx, "b")
    assert text_of(await call(LIST, {}, ctx)) == "#1 [pending] a\n#2 [pending] b"
    got = text_of(await call(GET, {"taskId": "1"}, ctx))
    assert got.splitlines()[:4] == [
        "Task #1: a",
        "Status: pending",
        "Description: do a",
        "Active form: Doing a",
    ]
    assert 'Metadata: {"k":1}' in got


async def test_update_status_owner_and_metadata(ctx: ToolContext) -> None:
    await _create(ctx, "a", metadata={"keep": 1, "drop": 2})
    out = await call(
        UPDATE,
        {"taskId": "1", "status": "in_progress", "owner": "main", "metadata": {"drop": None}},
        ctx,
    )
    assert text_of(out) == "Updated task #1 status, owner, metadata"
    got = await call(GET, {"taskId": "1"}, ctx)
    assert got.data is not None
    task = got.data["task"]
    assert (task["status"], task["owner"], task["metadata"]) == ("in_progress", "main", {"keep": 1})
    assert text_of(await call(LIST, {}, ctx)) == "#1 [in_progress] a (owner: main)"


async def test_dependencies_are_symmetric_and_clear_on_completion(ctx: ToolContext) -> None:
    await _create(ctx, "build")
    await _create(ctx, "deploy")
    await call(UPDATE, {"taskId": "2", "addBlockedBy": ["1"]}, ctx)
    got = await call(GET, {"taskId": "1"}, ctx)
    assert got.data is not None and got.data["task"]["blocks"] == ["2"]
    assert (
        text_of(await call(LIST, {}, ctx)).splitlines()[1] == "#2 [pending] deploy [blocked by #1]"
    )
    out = await call(UPDATE, {"taskId": "2", "status": "in_progress"}, ctx)
    assert "still blocked by #1" in text_of(out)
    await call(UPDATE, {"taskId": "1", "status": "completed"}, ctx)
    assert text_of(await call(LIST, {}, ctx)).splitlines()[1] == "#2 [in_progress] deploy"


async def test_deleted_tasks_disappear_and_ids_are_not_reused(ctx: ToolContext) -> None:
    await _create(ctx, "a")
    await call(UPDATE, {"taskId": "1", "status": "deleted"}, ctx)
    assert text_of(await call(LIST, {}, ctx)) == "No tasks found"
    assert (await call(GET, {"taskId": "1"}, ctx)).is_error
    assert await _create(ctx, "b") == "2"


async def test_unknown_ids_are_errors(ctx: ToolContext) -> None:
    assert text_of(await call(GET, {"taskId": "9"}, ctx)) == "Task not found: 9"
    assert text_of(await call(UPDATE, {"taskId": "9", "status": "completed"}, ctx)) == (
        "Task not found: 9"
    )
    await _create(ctx, "a")
    out = await call(UPDATE, {"taskId": "1", "addBlocks": ["7"]}, ctx)
    assert out.is_error and text_of(out) == "Task not found: 7"
    out = await call(UPDATE, {"taskId": "1", "addBlocks": ["1"]}, ctx)
    assert text_of(out) == "Task #1 cannot block itself"


async def test_bad_status_is_an_input_error() -> None:
    with pytest.raises(ToolInputError, match=r"\$\.status"):
        UPDATE.validate({"taskId": "1", "status": "done"})
    with pytest.raises(ToolInputError, match="taskId"):
        UPDATE.validate({"status": "completed"})


async def test_empty_subject_is_an_error(ctx: ToolContext) -> None:
    out = await call(CREATE, {"subject": " ", "description": ""}, ctx)
    assert out.is_error and text_of(out) == "subject must not be empty"


async def test_the_list_is_shared_by_the_session(ctx: ToolContext) -> None:
    sub = ToolContext(
        cwd=ctx.cwd,
        agent_id="main/helper-1",
        tool_use_id="t2",
        session_id="s",
        session_state=ctx.session_state,
    )
    await _create(ctx, "from main")
    await call(UPDATE, {"taskId": "1", "owner": "helper"}, sub)
    assert text_of(await call(LIST, {}, ctx)) == "#1 [pending] from main (owner: helper)"


def test_read_only_flags() -> None:
    assert (CREATE.read_only, UPDATE.read_only, GET.read_only, LIST.read_only) == (
        False,
        False,
        True,
        True,
    )
