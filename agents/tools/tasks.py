"""TaskCreate, TaskUpdate, TaskGet, TaskList: the session's shared task list.

Claude Code gives the model a task list to plan and track multi-step work; subagents of the same
session see and update the same list (so one agent can pick up what another left, via ``owner``
and ``blockedBy``). The list lives in ``ctx.session_state["tasks"]``; every operation is
synchronous between two checkpoints, so concurrent agents on one Trio thread never see a torn
update. Ids are ``"1"``, ``"2"``, ... in creation order and never reused; a deleted task keeps its
id and disappears from ``TaskList``.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs
import msgspec
import trio

from .base import Tool, ToolContext, ToolOutput

__all__ = [
    "TaskItem",
    "TaskList",
    "task_create_tool",
    "task_get_tool",
    "task_list_tool",
    "task_update_tool",
]

Status = Literal["pending", "in_progress", "completed", "deleted"]


@attrs.define(eq=False)
class TaskItem:
    """One task. ``blocks``/``blockedBy`` are kept symmetric by :class:`TaskList`."""

    id: str
    subject: str
    description: str
    active_form: str | None = None
    status: Status = "pending"
    owner: str | None = None
    blocks: list[str] = attrs.Factory(list)
    blocked_by: list[str] = attrs.Factory(list)
    metadata: dict[str, Any] = attrs.Factory(dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "subject": self.subject,
            "description": self.description,
            "status": self.status,
            "blocks": list(self.blocks),
            "blockedBy": list(self.blocked_by),
        }
        if self.active_form is not None:
            out["activeForm"] = self.active_form
        if self.owner is not None:
            out["owner"] = self.owner
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        return out


@attrs.define(eq=False)
class TaskList:
    """The session's tasks, in creation order."""

    tasks: dict[str, TaskItem] = attrs.Factory(dict)
    next_id: int = 1

    def create(
        self,
        subject: str,
        description: str,
        active_form: str | None,
        metadata: dict[str, Any] | None,
    ) -> TaskItem:
        item = TaskItem(
            str(self.next_id), subject, description, active_form, metadata=dict(metadata or {})
        )
        self.next_id += 1
        self.tasks[item.id] = item
        return item

    def open_blockers(self, item: TaskItem) -> list[str]:
        """Blockers of ``item`` that are not completed or deleted yet."""
        return [
            b
            for b in item.blocked_by
            if b in self.tasks and self.tasks[b].status not in ("completed", "deleted")
        ]

    def link(self, blocker: str, blocked: str) -> None:
        a, b = self.tasks[blocker], self.tasks[blocked]
        if blocked not in a.blocks:
            a.blocks.append(blocked)
        if blocker not in b.blocked_by:
            b.blocked_by.append(blocker)


def task_list_of(ctx: ToolContext) -> TaskList:
    """The session's :class:`TaskList`, created on first use."""
    tasks = ctx.session_state.get("tasks")
    if tasks is None:
        tasks = ctx.session_state["tasks"] = TaskList()
    assert isinstance(tasks, TaskList)
    return tasks


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
        "$schema": "http://json-schema.org/draft-07/schema#",
    }


_TASK_ID = {"type": "string", "description": "The ID of the task"}
_METADATA = {
    "type": "object",
    "additionalProperties": {},
    "description": "Arbitrary metadata to attach to the task (a null value removes a key)",
}

# --- TaskCreate ---------------------------------------------------------------------------


class TaskCreateInput(msgspec.Struct):
    """TaskCreate's input."""

    subject: str
    description: str
    active_form: str | None = msgspec.field(default=None, name="activeForm")
    metadata: dict[str, Any] | None = None


async def _create(args: TaskCreateInput, ctx: ToolContext) -> ToolOutput:
    await trio.lowlevel.checkpoint()
    if not args.subject.strip():
        return ToolOutput.error("subject must not be empty")
    item = task_list_of(ctx).create(args.subject, args.description, args.active_form, args.metadata)
    return ToolOutput(
        f"Task #{item.id} created successfully: {item.subject}",
        data={"task": {"id": item.id, "subject": item.subject}},
    )


def task_create_tool() -> Tool:
    """A fresh ``TaskCreate`` tool (mutating)."""
    return Tool(
        name="TaskCreate",
        description="Create a task in the session's task list to plan and track multi-step work. "
        "Returns the new task's ID. New tasks start as pending.",
        input_schema=_schema(
            {
                "subject": {"type": "string", "description": "A brief title for the task"},
                "description": {"type": "string", "description": "What needs to be done"},
                "activeForm": {
                    "type": "string",
                    "description": "Present continuous form shown while in progress (e.g. "
                    '"Running tests")',
                },
                "metadata": _METADATA,
            },
            ["subject", "description"],
        ),
        handler=_create,
        read_only=False,
        input_type=TaskCreateInput,
    )


# --- TaskUpdate ---------------------------------------------------------------------------


class TaskUpdateInput(msgspec.Struct):
    """TaskUpdate's input: any field to change, plus blocking links to add."""

    task_id: str = msgspec.field(name="taskId")
    subject: str | None = None
    description: str | None = None
    active_form: str | None = msgspec.field(default=None, name="activeForm")
    status: Status | None = None
    add_blocks: list[str] | None = msgspec.field(default=None, name="addBlocks")
    add_blocked_by: list[str] | None = msgspec.field(default=None, name="addBlockedBy")
    owner: str | None = None
    metadata: dict[str, Any] | None = None


async def _update(args: TaskUpdateInput, ctx: ToolContext) -> ToolOutput:
    await trio.lowlevel.checkpoint()
    tasks = task_list_of(ctx)
    item = tasks.tasks.get(args.task_id)
    if item is None:
        return ToolOutput.error(f"Task not found: {args.task_id}")
    links = [(item.id, other) for other in args.add_blocks or ()]
    links += [(other, item.id) for other in args.add_blocked_by or ()]
    for blocker, blocked in links:
        other = blocked if blocker == item.id else blocker
        if other not in tasks.tasks:
            return ToolOutput.error(f"Task not found: {other}")
        if other == item.id:
            return ToolOutput.error(f"Task #{item.id} cannot block itself")
    changed: list[str] = []
    for field, value in (
        ("subject", args.subject),
        ("description", args.description),
        ("active_form", args.active_form),
        ("status", args.status),
        ("owner", args.owner),
    ):
        if value is not None and getattr(item, field) != value:
            setattr(item, field, value)
            changed.append({"active_form": "activeForm"}.get(field, field))
    for blocker, blocked in links:
        tasks.link(blocker, blocked)
    if links:
        changed.append("blocks")
    if args.metadata:
        for key, value in args.metadata.items():
            if value is None:
                item.metadata.pop(key, None)
            else:
                item.metadata[key] = value
        changed.append("metadata")
    text = (
        f"Updated task #{item.id} {', '.join(changed)}"
        if changed
        else (f"Task #{item.id} unchanged")
    )
    if item.status == "in_progress" and (open_ := tasks.open_blockers(item)):
        text += f" (note: still blocked by {', '.join('#' + b for b in open_)})"
    return ToolOutput(text, data={"success": True, "taskId": item.id, "updatedFields": changed})


def task_update_tool() -> Tool:
    """A fresh ``TaskUpdate`` tool (mutating)."""
    ids = {"type": "array", "items": {"type": "string"}}
    return Tool(
        name="TaskUpdate",
        description="Update a task in the task list: its status (pending, in_progress, "
        "completed, or deleted to remove it), subject, description, activeForm, owner, "
        "metadata, or dependencies (addBlocks / addBlockedBy).",
        input_schema=_schema(
            {
                "taskId": {"type": "string", "description": "The ID of the task to update"},
                "subject": {"type": "string", "description": "New subject for the task"},
                "description": {"type": "string", "description": "New description"},
                "activeForm": {"type": "string", "description": "New present-continuous form"},
                "status": {
                    "type": "string",
                    "enum": ["pending", "in_progress", "completed", "deleted"],
                    "description": "New status for the task",
                },
                "addBlocks": {**ids, "description": "Task IDs that this task blocks"},
                "addBlockedBy": {**ids, "description": "Task IDs that block this task"},
                "owner": {"type": "string", "description": "New owner for the task"},
                "metadata": _METADATA,
            },
            ["taskId"],
        ),
        handler=_update,
        read_only=False,
        input_type=TaskUpdateInput,
    )


# --- TaskGet and TaskList -------------------------------------------------------------------


class TaskGetInput(msgspec.Struct):
    """TaskGet's input."""

    task_id: str = msgspec.field(name="taskId")


async def _get(args: TaskGetInput, ctx: ToolContext) -> ToolOutput:
    await trio.lowlevel.checkpoint()
    tasks = task_list_of(ctx)
    item = tasks.tasks.get(args.task_id)
    if item is None or item.status == "deleted":
        return ToolOutput.error(f"Task not found: {args.task_id}")
    lines = [
        f"Task #{item.id}: {item.subject}",
        f"Status: {item.status}",
        f"Description: {item.description}",
    ]
    if item.active_form:
        lines.append(f"Active form: {item.active_form}")
    if item.owner:
        lines.append(f"Owner: {item.owner}")
    if item.blocked_by:
        lines.append("Blocked by: " + ", ".join("#" + b for b in item.blocked_by))
    if item.blocks:
        lines.append("Blocks: " + ", ".join("#" + b for b in item.blocks))
    if item.metadata:
        lines.append("Metadata: " + msgspec.json.encode(item.metadata).decode())
    return ToolOutput("\n".join(lines), data={"task": item.to_json()})


def task_get_tool() -> Tool:
    """A fresh ``TaskGet`` tool (read-only)."""
    return Tool(
        name="TaskGet",
        description="Get a task's full details by ID (subject, description, status, owner, "
        "dependencies).",
        input_schema=_schema({"taskId": _TASK_ID}, ["taskId"]),
        handler=_get,
        read_only=True,
        input_type=TaskGetInput,
    )


class TaskListInput(msgspec.Struct):
    """TaskList takes no input."""


async def _list(args: TaskListInput, ctx: ToolContext) -> ToolOutput:
    await trio.lowlevel.checkpoint()
    tasks = task_list_of(ctx)
    live = [t for t in tasks.tasks.values() if t.status != "deleted"]
    if not live:
        return ToolOutput("No tasks found", data={"tasks": []})
    lines = []
    for t in live:
        line = f"#{t.id} [{t.status}] {t.subject}"
        if t.owner:
            line += f" (owner: {t.owner})"
        if open_ := tasks.open_blockers(t):
            line += f" [blocked by {', '.join('#' + b for b in open_)}]"
        lines.append(line)
    return ToolOutput("\n".join(lines), data={"tasks": [t.to_json() for t in live]})


def task_list_tool() -> Tool:
    """A fresh ``TaskList`` tool (read-only)."""
    return Tool(
        name="TaskList",
        description="List all tasks in the task list with their status, owner and open blockers.",
        input_schema=_schema({}, []),
        handler=_list,
        read_only=True,
        input_type=TaskListInput,
    )
