"""Read, Write and Edit: the file tools, with Claude Code's schemas and its read-before-write rule.

The model is trained on Claude Code's behaviour, so these tools mirror it: ``Read`` returns
``cat -n`` style numbered lines (``{n:>6}\\t{line}``), at most 2000 lines from ``offset`` and
at most 2000 characters per line; ``Write`` and ``Edit`` refuse to touch an existing file the
agent has not read (or that changed on disk since it read it), so the model never overwrites what
it has not seen. The bookkeeping lives in ``ctx.state["read_files"]`` (real path →
``st_mtime_ns`` at read), which is per agent.

Large files are read and written in a worker thread behind a :class:`trio.CapacityLimiter`, so a
2 GB log never stalls the event loop (DESIGN concurrency rule 5); small ones are handled inline,
where a thread hop would cost more than the I/O. Edit and Write hold the text as pieces
(:mod:`._pieces`) and work on it piece by piece: one C call over a whole 100 MB text (decoding,
finding, replacing, encoding) holds the interpreter, and so the loop, for all its length.

Files are decoded as UTF-8 with ``surrogateescape``, so an edit round-trips bytes that are not
valid UTF-8 unchanged.

The file used is the file checked: a path is resolved as the kernel resolves it (symlinks
followed before ``..``), and opened through :func:`~agents.permissions.files.open_checked`
against the identity the permission gate took when it approved the call (``ctx.files``; without
a gate, the identity taken when the tool starts). A symlink or directory swapped in since is
refused with an error, never followed.
"""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Callable
from typing import IO, Annotated, Any, TypeVar

import msgspec
import trio

from .._regular import file_kind
from ..permissions.files import (
    CheckedPath,
    PathChanged,
    absolute,
    check_path,
    home_dir,
    open_checked,
)
from ._pieces import PiecedText
from ._text_lines import (
    DEFAULT_READ_LIMIT,
    MAX_LINE_CHARS,
    MAX_READ_CHARS,
    count_lines,
    numbered,
    read_slice,
)
from .base import Tool, ToolContext, ToolOutput

__all__ = ["edit_tool", "read_tool", "write_tool"]

T = TypeVar("T")

#: Files (or contents) larger than this are read/written in a worker thread.
INLINE_IO_BYTES = 256 * 1024
#: Images up to this size are returned as image blocks (the Messages API's limit is 5 MB base64).
MAX_IMAGE_BYTES = 3_750_000
#: Lines of context shown around an edit.
SNIPPET_CONTEXT = 4

_IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
_io_limiter: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("files_io_limiter")


def _limiter() -> trio.CapacityLimiter:
    """One limiter per Trio run: at most 8 file tools doing blocking I/O in threads at once."""
    try:
        return _io_limiter.get()
    except LookupError:
        limiter = trio.CapacityLimiter(8)
        _io_limiter.set(limiter)
        return limiter


async def _blocking(fn: Callable[[], T], size: int) -> T:
    """Run ``fn`` inline when the I/O is small, else in a worker thread (never stall the loop)."""
    if size <= INLINE_IO_BYTES:
        return fn()
    return await trio.to_thread.run_sync(fn, limiter=_limiter())


def _stat(path: str) -> os.stat_result | None:
    """``os.stat`` or None if missing: metadata only, microseconds, fine on the event loop."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _require_absolute(path: str) -> str | None:
    if not os.path.isabs(path):
        return f"file_path must be an absolute path, got {path!r}"
    return None


def _checked(path: str, ctx: ToolContext) -> CheckedPath:
    """The check this call's file was approved on (the gate's), else one taken now."""
    found = ctx.files.checked(ctx.tool_use_id, path) if ctx.files is not None else None
    return found if found is not None else check_path(absolute(path, ctx.cwd, home_dir()))


def _open(checked: CheckedPath, flags: int, *, make_dirs: bool = False) -> IO[bytes]:
    """The checked file opened as a binary file object (see ``open_checked``)."""
    fd = open_checked(checked, flags | getattr(os, "O_CLOEXEC", 0), make_dirs=make_dirs)
    mode = "rb" if flags & (os.O_WRONLY | os.O_RDWR) == 0 else "wb"
    return os.fdopen(fd, mode)


def _changed(path: str, exc: PathChanged) -> ToolOutput:
    return ToolOutput.error(
        f"Refused to open {path}: {exc.strerror} (a symlink or directory was swapped in after "
        "the permission check); check the path and try again"
    )


def _read_files(ctx: ToolContext) -> dict[str, int]:
    files: dict[str, int] = ctx.state.setdefault("read_files", {})
    return files


# --- Read -------------------------------------------------------------------------------------


class ReadInput(msgspec.Struct, forbid_unknown_fields=False):
    """Read's input: Claude Code's ``{file_path, offset?, limit?}``."""

    file_path: str
    offset: Annotated[int, msgspec.Meta(ge=0)] | None = None
    limit: Annotated[int, msgspec.Meta(ge=1)] | None = None


READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "The absolute path to the file to read"},
        "offset": {
            "type": "number",
            "description": "The line number to start reading from. Only provide if the file is "
            "too large to read at once",
        },
        "limit": {
            "type": "number",
            "description": "The number of lines to read. Only provide if the file is too large "
            "to read at once.",
        },
    },
    "required": ["file_path"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}

READ_DESCRIPTION = """Reads a file from the local filesystem.

Usage:
- The file_path parameter must be an absolute path, not a relative path
- By default, it reads up to 2000 lines starting from the beginning of the file
- You can optionally specify a line offset and limit (especially handy for long files)
- Any lines longer than 2000 characters will be truncated
- Results are returned using cat -n format, with line numbers starting at 1
- Images (PNG, JPG, GIF, WEBP) are returned as images; other binary files are refused
- This tool can only read files, not directories. To list a directory, use ls via the Bash tool
- If you read a file that exists but has empty contents you will receive a warning"""


async def _read(args: ReadInput, ctx: ToolContext) -> ToolOutput:
    path = args.file_path
    if (problem := _require_absolute(path)) is not None:
        return ToolOutput.error(problem)
    try:
        checked = _checked(path, ctx)
        if not checked.existed:
            return ToolOutput.error(f"File does not exist: {path}")
        # never waits: a named pipe's open would wait for a writer, here on the event loop
        f = _open(checked, os.O_RDONLY | os.O_NONBLOCK)
    except PathChanged as exc:
        return _changed(path, exc)
    except FileNotFoundError:
        return ToolOutput.error(f"File does not exist: {path}")
    except IsADirectoryError:
        return _directory(path)
    except OSError as exc:
        return ToolOutput.error(f"Cannot read {path}: {exc.strerror}")
    with f:
        return await _read_open(f, path, checked.real, args, ctx)


def _directory(path: str) -> ToolOutput:
    return ToolOutput.error(
        f"Path is a directory, not a file: {path}. Use Glob, or ls through Bash, to list it."
    )


async def _read_open(
    f: IO[bytes], path: str, key: str, args: ReadInput, ctx: ToolContext
) -> ToolOutput:
    st = os.fstat(f.fileno())
    if stat.S_ISDIR(st.st_mode):
        return _directory(path)
    if not stat.S_ISREG(st.st_mode):
        # a pipe waits for a writer, a device may never end (``/dev/zero``): neither is a file
        kind = file_kind(st.st_mode)
        return ToolOutput.error(f"Cannot read {path}: not a regular file ({kind})")
    ext = os.path.splitext(path)[1].lower()
    if ext in _IMAGE_TYPES:
        return await _read_image(f, path, st, ext, key, ctx)
    start = max(args.offset or 1, 1) - 1
    limit = args.limit or DEFAULT_READ_LIMIT
    # A long window is numbered in the thread too: 260 000 empty lines of a 256 KiB file took
    # 150 ms to read and number. A size of 0 says nothing (``/proc`` files hold text): read in
    # the thread, as a file of unknown size.
    size = st.st_size or INLINE_IO_BYTES + 1
    work = size if limit <= DEFAULT_READ_LIMIT else max(size, INLINE_IO_BYTES + 1)
    try:
        window = await _blocking(lambda: read_slice(f, path, start, limit), work)
    except OSError as exc:
        return ToolOutput.error(f"Cannot read {path}: {exc.strerror}")
    if window.binary:
        return ToolOutput.error(
            f"Cannot read binary file: {path} (this tool reads text files and images only)"
        )
    _read_files(ctx)[key] = st.st_mtime_ns
    if not window.count:
        total = 0 if start == 0 else await _blocking(lambda: count_lines(f), size)
        if total == 0:
            return ToolOutput(
                "<system-reminder>Warning: the file exists but the contents are empty."
                "</system-reminder>"
            )
        return ToolOutput(
            "<system-reminder>Warning: the file exists but is shorter than the provided offset "
            f"({start + 1}). The file has {total} lines.</system-reminder>"
        )
    text = window.text
    more = window.more
    end = start + window.count
    if window.capped:
        text += (
            f"\n\n(Showing lines {start + 1}-{end}: Read returns at most {MAX_READ_CHARS} "
            f"characters (MAX_READ_CHARS). Read with offset={end + 1} to continue.)"
        )
    elif more:
        text += (
            f"\n\n(Showing lines {start + 1}-{end}; the file has more. "
            f"Read with offset={end + 1} to continue.)"
        )
    data = {"file_path": path, "start_line": start + 1, "num_lines": window.count, "more": more}
    return ToolOutput(text, data=data)


async def _read_image(
    f: IO[bytes], path: str, st: os.stat_result, ext: str, key: str, ctx: ToolContext
) -> ToolOutput:
    size = st.st_size
    if size > MAX_IMAGE_BYTES:
        return ToolOutput.error(
            f"Image too large: {path} is {size} bytes (max {MAX_IMAGE_BYTES} bytes)"
        )
    raw = await _blocking(f.read, size)
    _read_files(ctx)[key] = st.st_mtime_ns
    block = {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": _IMAGE_TYPES[ext],
            "data": base64.b64encode(raw).decode("ascii"),
        },
    }
    return ToolOutput([block], data={"file_path": path, "bytes": size})


def read_tool() -> Tool:
    """A fresh ``Read`` tool (read-only, so the scheduler may run several at once)."""
    return Tool(
        name="Read",
        description=READ_DESCRIPTION,
        input_schema=READ_SCHEMA,
        handler=_read,
        read_only=True,
        input_type=ReadInput,
    )


# --- Write and Edit: the read-first rule ---------------------------------------------------


def _check_read_first(checked: CheckedPath, path: str, ctx: ToolContext, verb: str) -> str | None:
    """Why writing ``path`` is refused (not read, or changed since read), or None if allowed."""
    if not checked.existed:
        return None
    try:
        mtime = os.stat(checked.real).st_mtime_ns
    except FileNotFoundError:
        return None
    seen = _read_files(ctx).get(checked.real)
    if seen is None:
        return f"File has not been read yet. Read it first before {verb} to it: {path}"
    if seen != mtime:
        return (
            f"File has been modified since read, either by the user or by a linter: {path}. "
            f"Read it again before {verb} to it."
        )
    return None


def _write_text(checked: CheckedPath, content: PiecedText) -> int:
    """Write ``content`` to the checked file (creating parent directories), then release it;
    the new ``st_mtime_ns``. It is encoded before the file is opened (and so emptied): a text
    that cannot be encoded (a lone surrogate a hook's rewrite brought) raises with the file as
    it was. Each piece is freed once written (see :meth:`PiecedText.release`)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    try:
        encoded = content.encoded()
        with _open(checked, flags, make_dirs=True) as f:
            encoded.reverse()
            while encoded:
                f.write(encoded.pop())
            f.flush()
            return os.fstat(f.fileno()).st_mtime_ns
    finally:
        content.release()


def _load_text(checked: CheckedPath) -> PiecedText:
    with _open(checked, os.O_RDONLY) as f:
        return PiecedText.read(f)


class WriteInput(msgspec.Struct, forbid_unknown_fields=False):
    """Write's input: ``{file_path, content}``."""

    file_path: str
    content: str


WRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {
            "type": "string",
            "description": "The absolute path to the file to write (must be absolute, "
            "not relative)",
        },
        "content": {"type": "string", "description": "The content to write to the file"},
    },
    "required": ["file_path", "content"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}

WRITE_DESCRIPTION = """Writes a file to the local filesystem.

Usage:
- This tool will overwrite the existing file if there is one at the provided path.
- If this is an existing file, you MUST use the Read tool first to read the file's contents. This tool will fail if you did not read the file first.
- Parent directories are created as needed.
- ALWAYS prefer editing existing files with the Edit tool. NEVER write new files unless explicitly required."""  # noqa: E501


async def _write(args: WriteInput, ctx: ToolContext) -> ToolOutput:
    path = args.file_path
    if (problem := _require_absolute(path)) is not None:
        return ToolOutput.error(problem)
    try:
        checked = _checked(path, ctx)
    except OSError as exc:
        return ToolOutput.error(f"Cannot write {path}: {exc.strerror}")
    st = _stat(checked.real) if checked.existed else None
    if st is not None and stat.S_ISDIR(st.st_mode):
        return ToolOutput.error(f"Path is a directory, not a file: {path}")
    existed = st is not None
    if (problem := _check_read_first(checked, path, ctx, "writing")) is not None:
        return ToolOutput.error(problem)
    content = args.content
    try:
        mtime = await _blocking(lambda: _write_text(checked, PiecedText.of(content)), len(content))
    except PathChanged as exc:
        return _changed(path, exc)
    except OSError as exc:
        return ToolOutput.error(f"Cannot write {path}: {exc.strerror}")
    _read_files(ctx)[checked.real] = mtime
    kind = "update" if existed else "create"
    text = (
        f"The file {path} has been updated successfully."
        if existed
        else f"File created successfully at: {path}"
    )
    return ToolOutput(text, data={"type": kind, "file_path": path})


def write_tool() -> Tool:
    """A fresh ``Write`` tool (mutating)."""
    return Tool(
        name="Write",
        description=WRITE_DESCRIPTION,
        input_schema=WRITE_SCHEMA,
        handler=_write,
        read_only=False,
        input_type=WriteInput,
    )


class EditInput(msgspec.Struct, forbid_unknown_fields=False):
    """Edit's input: ``{file_path, old_string, new_string, replace_all?}``."""

    file_path: str
    old_string: str
    new_string: str
    replace_all: bool = False


EDIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
        "old_string": {"type": "string", "description": "The text to replace"},
        "new_string": {
            "type": "string",
            "description": "The text to replace it with (must be different from old_string)",
        },
        "replace_all": {
            "type": "boolean",
            "default": False,
            "description": "Replace all occurences of old_string (default false)",
        },
    },
    "required": ["file_path", "old_string", "new_string"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}

EDIT_DESCRIPTION = """Performs exact string replacements in files.

Usage:
- You must use your `Read` tool at least once in the conversation before editing. This tool will error if you attempt an edit without reading the file.
- When editing text from Read tool output, preserve the exact indentation (tabs/spaces) as it appears AFTER the line number prefix (spaces + line number + tab). Never include any part of the line number prefix in the old_string or new_string.
- The edit will FAIL if `old_string` is not unique in the file. Either provide a larger string with more surrounding context to make it unique or use `replace_all` to change every instance of `old_string`.
- Use `replace_all` for replacing and renaming strings across the file."""  # noqa: E501


def _snippet(content: PiecedText, start: int, length: int) -> str:
    """Numbered lines around ``content[start:start+length]``, with a few lines of context.

    Only those lines are looked for, and of each only what ``numbered`` shows (a character
    more tells it to cut the line): splitting a 100 MB text into lines was one call of 0.2 s.
    """
    first = content.count("\n", 0, start)
    last = first + content.count("\n", start, start + length)
    lo = max(first - SNIPPET_CONTEXT, 0)
    count = last + SNIPPET_CONTEXT + 1 - lo
    lines = content.lines(start, first - lo, count, MAX_LINE_CHARS + 1)
    return numbered(lines, lo + 1)


async def _edit(args: EditInput, ctx: ToolContext) -> ToolOutput:
    path = args.file_path
    old, new = args.old_string, args.new_string
    if (problem := _require_absolute(path)) is not None:
        return ToolOutput.error(problem)
    if old == new:
        return ToolOutput.error(
            "No changes to make: old_string and new_string are exactly the same."
        )
    try:
        checked = _checked(path, ctx)
    except OSError as exc:
        return ToolOutput.error(f"Cannot edit {path}: {exc.strerror}")
    st = _stat(checked.real) if checked.existed else None
    if st is not None and stat.S_ISDIR(st.st_mode):
        return ToolOutput.error(f"Path is a directory, not a file: {path}")
    if st is None:
        if old == "":
            # Claude Code's rule: an empty old_string on a missing file creates it.
            try:
                mtime = await _blocking(lambda: _write_text(checked, PiecedText.of(new)), len(new))
            except PathChanged as exc:
                return _changed(path, exc)
            except OSError as exc:
                return ToolOutput.error(f"Cannot write {path}: {exc.strerror}")
            _read_files(ctx)[checked.real] = mtime
            return ToolOutput(f"File created successfully at: {path}")
        return ToolOutput.error(f"File does not exist: {path}")
    if (problem := _check_read_first(checked, path, ctx, "writing")) is not None:
        return ToolOutput.error(problem)
    # Loading, finding, replacing, the snippet and writing take time with the file's size
    # (counting "aa" in 10 MB of "a" held the event loop 1.2 s): a large file's edit is one
    # trip to the worker thread, where its texts are freed too (15 ms for those of a 100 MB
    # file of bytes that are not UTF-8).
    work = _edit_work(st.st_size, args)
    edited = await _blocking(lambda: _edit_file(checked, path, args), work)
    if isinstance(edited, ToolOutput):
        return edited
    mtime, snippet = edited
    _read_files(ctx)[checked.real] = mtime
    data = {"file_path": path, "replace_all": args.replace_all}
    if args.replace_all:
        text = (
            f"The file {path} has been updated. All occurrences of '{old}' were successfully "
            f"replaced with '{new}'."
        )
        return ToolOutput(text, data=data)
    text = (
        f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet "
        f"of the edited file:\n{snippet}"
    )
    return ToolOutput(text, data=data)


def _edit_work(size: int, args: EditInput) -> int:
    """At most the characters an edit of a ``size``-byte file handles: the file's and what it
    may write (a small file's ``replace_all`` can write megabytes)."""
    old, new = args.old_string, args.new_string
    matches = size // len(old) + 1 if args.replace_all and old else 1
    return size + matches * len(new)


def _edit_file(checked: CheckedPath, path: str, args: EditInput) -> tuple[int, str] | ToolOutput:
    """Edit the checked file: its new ``st_mtime_ns`` and the snippet, or the error result."""
    try:
        content = _load_text(checked)
    except PathChanged as exc:
        return _changed(path, exc)
    except OSError as exc:
        return ToolOutput.error(f"Cannot read {path}: {exc.strerror}")
    edited = _apply_edit(content, args)
    content.release()  # (what the edited text shares with it stays)
    if isinstance(edited, str):
        return ToolOutput.error(edited)
    updated, snippet = edited
    try:
        return _write_text(checked, updated), snippet
    except PathChanged as exc:
        return _changed(path, exc)
    except OSError as exc:
        return ToolOutput.error(f"Cannot write {path}: {exc.strerror}")


def _apply_edit(content: PiecedText, args: EditInput) -> tuple[PiecedText, str] | str:
    """``(the edited text, its snippet)`` (no snippet for ``replace_all``), or why the edit
    cannot be made. Only an ambiguous edit counts every match (for its message): a unique one
    is known by a second search."""
    old, new = args.old_string, args.new_string
    if old == "":
        if not content.blank():
            return (
                "Cannot create new file - file already exists. "
                "Provide the old_string to replace instead."
            )
        made = PiecedText.of(new)
        return made, "" if args.replace_all else _snippet(made, 0, len(new))
    at = content.find(old)
    if at == -1:
        return f"String to replace not found in file.\nString: {old}"
    if args.replace_all:
        return content.replace_all(old, new), ""
    if content.find(old, at + 1) != -1:
        n = content.count_overlapping(old)
        return (
            f"Found {n} matches of the string to replace, but replace_all is false. To "
            "replace all occurrences, set replace_all to true. To replace only one "
            "occurrence, please provide more context to uniquely identify the instance.\n"
            f"String: {old}"
        )
    updated = content.replaced(at, len(old), new)
    return updated, _snippet(updated, at, len(new))


def edit_tool() -> Tool:
    """A fresh ``Edit`` tool (mutating)."""
    return Tool(
        name="Edit",
        description=EDIT_DESCRIPTION,
        input_schema=EDIT_SCHEMA,
        handler=_edit,
        read_only=False,
        input_type=EditInput,
    )
