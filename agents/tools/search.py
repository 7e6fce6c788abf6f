"""Glob and Grep on ripgrep: Claude Code's search tools, with ripgrep's speed and semantics.

Both tools run the ``rg`` binary (``ripgrep==14.1.0`` on PyPI ships it in the venv's ``bin``) rather
than walking the tree in Python: ripgrep respects ``.gitignore``, skips binary files and searches in
parallel, which a Python walk cannot match. The binary is found once per process, with
``shutil.which("rg")`` first and then next to ``sys.executable``; without it both tools return an
error result saying how to install it.

Glob lists files with ``rg --files`` and matches the pattern itself (:func:`glob_regex`), because
an ``rg --glob`` that happens to match a directory whitelists it past ``.gitignore``. A small tree
(up to ``WALK_LIMIT`` directory entries) is listed in-process instead, with ripgrep's ignore rules
(:mod:`agents.tools._walk`): a process start costs more than the whole walk. Grep searches a
small tree in-process too (:mod:`agents.tools._grep`) when the pattern is in the subset where
Python's ``re`` and ripgrep's Rust ``regex`` agree and the files are ones both read alike;
otherwise it runs ripgrep.

Each search is one ``trio.run_process`` in its own process group, killed (the whole group) when
the call is cancelled (DESIGN rule 6). ``.gitignore`` files are honoured even outside a git
repository (``--no-require-git``); hidden files are searched, ``.git`` itself never.

Search results obey the Read deny rules in every mode: a file a rule covers (as listed, or by
its real path) is left out of the names, counts and lines returned, and the result says how many
files were withheld (``ctx.files``, from the permission gate). ripgrep runs on the real path of
the search root and never follows a symlink beneath it, so every file it lists has the real path
it is listed under; the results name files under the root as it was spelled. Paths printed by
ripgrep are NUL-terminated (``--null``) so that a file name cannot pass for another.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
from typing import Any, Literal

import msgspec
import trio

from ..permissions.files import absolute, home_dir, real
from ._globs import glob_regex, literal_prefix, split_absolute_pattern
from ._grep import files_searched as grep_files
from ._grep import search as grep_search
from ._walk import list_files as walk_files
from .base import Tool, ToolContext, ToolOutput, truncate

__all__ = ["find_ripgrep", "glob_regex", "glob_tool", "grep_tool", "run_ripgrep"]

#: Paths returned by Glob at most (Claude Code's cap).
GLOB_LIMIT = 100
#: Characters of Grep output kept (the default cap on tool output).
GREP_OUTPUT_CAP = 30_000
#: Longest line ripgrep prints in content mode (longer ones become a placeholder).
MAX_COLUMNS = 500

#: Directory entries Glob walks in-process at most; past them (or at 0) ripgrep lists the files.
WALK_LIMIT = 1_000

#: Whether Grep searches in-process when it can promise ripgrep's result (a small tree and a
#: pattern both engines read alike); off, every Grep starts ripgrep.
GREP_IN_PROCESS = True
#: Files an in-process Grep searches on the event loop at most; more, and it runs in a thread.
GREP_INLINE_FILES = 100


@functools.cache
def find_ripgrep() -> str | None:
    """The ``rg`` executable: on ``PATH``, else beside this Python (the ripgrep wheel), or None."""
    found = shutil.which("rg")
    if found:
        return found
    candidate = os.path.join(os.path.dirname(sys.executable), "rg")
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return candidate
    return None


RG_MISSING = (
    "ripgrep (rg) is not available: install it (pip install ripgrep==14.1.0, or your system's "
    "ripgrep package) so that Grep and Glob can search"
)


async def _kill_group(process: trio.Process) -> None:
    """``deliver_cancel`` for run_process: SIGKILL the whole process group, not just rg."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def run_ripgrep(args: list[str], cwd: str) -> tuple[int, bytes, bytes]:
    """Run ``rg args`` in ``cwd``; (exit code, stdout, stderr). The caller checks rg exists."""
    rg = find_ripgrep()
    assert rg is not None
    result = await trio.run_process(
        [rg, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        start_new_session=True,
        deliver_cancel=_kill_group,
    )
    return result.returncode, result.stdout, result.stderr


def _kind(path: str) -> str | None:
    """``"dir"``, ``"file"`` or None if missing (a stat: cheap enough for the event loop)."""
    try:
        return "dir" if os.path.isdir(path) else ("file" if os.path.exists(path) else None)
    except OSError:
        return None


def _resolve(path: str | None, cwd: str) -> str:
    """``path`` absolute against ``cwd``: ``~``/``~user`` expanded and ``..`` applied as the
    kernel does, with the gate's own function."""
    if not path:
        return cwd
    return absolute(path, cwd, home_dir())


class _Shown:
    """Maps paths ripgrep printed (under the real root) to the root as spelled, and keeps out
    the files a Read deny rule covers, counting them."""

    def __init__(self, ctx: ToolContext, root: str, real_root: str) -> None:
        self.root = root
        self.real_root = real_root
        self.files = ctx.files
        self.withheld: set[str] = set()
        self._last: tuple[str, str | None] = ("\0", None)  # content mode repeats a name

    def show(self, printed: str) -> str | None:
        """The name to show for ``printed``, or None if it is withheld."""
        if printed == self._last[0]:
            return self._last[1]
        name = printed
        if printed.startswith(self.real_root):
            name = self.root + printed[len(self.real_root) :]
        shown: str | None = name
        if self.files is not None and self.files.withheld(name, printed):
            self.withheld.add(printed)
            shown = None
        self._last = (printed, shown)
        return shown

    def note(self) -> str:
        n = len(self.withheld)
        if not n:
            return ""
        return f"\n\n({n} file{'s' if n != 1 else ''} withheld: a Read deny rule covers them)"


_COMMON_RG = ["--no-config", "--no-require-git", "--hidden", "--glob", "!.git"]


# --- Glob -------------------------------------------------------------------------------------


class GlobInput(msgspec.Struct):
    """Glob's input: ``{pattern, path?}``."""

    pattern: str
    path: str | None = None


GLOB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "The glob pattern to match files against"},
        "path": {
            "type": "string",
            "description": "The directory to search in. If not specified, the current working "
            "directory will be used. IMPORTANT: Omit this field to use the default directory. "
            'DO NOT enter "undefined" or "null" - simply omit it for the default behavior. '
            "Must be a valid directory path if provided.",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}

GLOB_DESCRIPTION = """- Fast file pattern matching tool that works with any codebase size
- Supports glob patterns like "**/*.js" or "src/**/*.ts"
- Returns matching file paths sorted by modification time (newest first), respecting .gitignore
- Use this tool when you need to find files by name patterns"""


async def list_files(real_base: str) -> list[str] | str:
    """The files ``rg --files`` lists under ``real_base`` (an error text if it failed): walked
    here for a small tree, which costs a fraction of a process start, else by ripgrep."""
    walked = walk_files(real_base, WALK_LIMIT) if WALK_LIMIT > 0 else None
    if walked is not None:
        await trio.lowlevel.checkpoint()
        return walked
    code, out, err = await run_ripgrep(["--files", "--null", *_COMMON_RG, real_base], cwd=real_base)
    if code not in (0, 1) and not out:
        return f"Glob failed: {err.decode(errors='replace').strip()}"
    return [p for p in out.decode(errors="surrogateescape").split("\0") if p]


def _newest_first(paths: list[str]) -> list[str]:
    """Sorted by modification time, newest first; ties (and unstat-able paths) by name."""

    def key(p: str) -> tuple[float, str]:
        try:
            return (-os.stat(p).st_mtime, p)
        except OSError:
            return (0.0, p)

    return sorted(paths, key=key)


async def _glob(args: GlobInput, ctx: ToolContext) -> ToolOutput:
    pattern = args.pattern
    root = _resolve(args.path, ctx.cwd)
    if os.path.isabs(pattern):
        # An absolute pattern carries its own root (and overrides ``path``).
        root, pattern = split_absolute_pattern(pattern)
    kind = _kind(root)
    if kind is None:
        return ToolOutput.error(f"Directory does not exist: {root}")
    if kind != "dir":
        return ToolOutput.error(f"Path is not a directory: {root}")
    if find_ripgrep() is None:
        return ToolOutput.error(RG_MISSING)
    if not pattern:
        return ToolOutput.error("pattern must not be empty")
    prefix, rest = literal_prefix(pattern.removeprefix("./"))
    base = _resolve(prefix, root) if prefix else root
    if _kind(base) != "dir":
        return ToolOutput("No files found", data={"filenames": [], "numFiles": 0})
    # rg lists the files (parallel, .gitignore-aware); the glob is matched here, because an rg
    # --glob that matches a directory would whitelist it past .gitignore.
    real_base = real(base)
    if ctx.files is not None and ctx.files.withheld(base, real_base):
        return ToolOutput.error(f"Permission to read {base} is denied by a Read deny rule")
    listed = await list_files(real_base)
    if isinstance(listed, str):
        return ToolOutput.error(listed)
    matcher = glob_regex(rest).fullmatch
    cut = len(real_base.rstrip("/")) + 1
    shown = _Shown(ctx, base.rstrip("/"), real_base.rstrip("/"))
    paths = []
    for printed in listed:
        if matcher(printed[cut:]):
            name = shown.show(printed)
            if name is not None:
                paths.append(name)
    note = shown.note()
    if not paths:
        data = {"filenames": [], "numFiles": 0, "withheld": len(shown.withheld)}
        return ToolOutput("No files found" + note, data=data)
    if len(paths) > 2_000:
        paths = await trio.to_thread.run_sync(_newest_first, paths)
    else:
        paths = _newest_first(paths)
    listed = paths[:GLOB_LIMIT]
    text = "\n".join(listed)
    if len(paths) > GLOB_LIMIT:
        text += (
            f"\n(Results are truncated: showing {GLOB_LIMIT} of {len(paths)} files. "
            "Consider using a more specific path or pattern.)"
        )
    data = {
        "filenames": listed,
        "numFiles": len(paths),
        "truncated": len(paths) > GLOB_LIMIT,
        "withheld": len(shown.withheld),
    }
    return ToolOutput(text + note, data=data)


def glob_tool() -> Tool:
    """A fresh ``Glob`` tool (read-only)."""
    return Tool(
        name="Glob",
        description=GLOB_DESCRIPTION,
        input_schema=GLOB_SCHEMA,
        handler=_glob,
        read_only=True,
        input_type=GlobInput,
    )


# --- Grep -------------------------------------------------------------------------------------


class GrepInput(msgspec.Struct):
    """Grep's input, with Claude Code's field names (``-i``, ``-n``, ``-A``, ``-B``, ``-C``)."""

    pattern: str
    path: str | None = None
    glob: str | None = None
    type: str | None = None
    output_mode: Literal["content", "files_with_matches", "count"] = "files_with_matches"
    case_insensitive: bool = msgspec.field(default=False, name="-i")
    line_numbers: bool = msgspec.field(default=True, name="-n")
    after: int | None = msgspec.field(default=None, name="-A")
    before: int | None = msgspec.field(default=None, name="-B")
    context: int | None = msgspec.field(default=None, name="-C")
    multiline: bool = False
    head_limit: int | None = None
    offset: int = 0


GREP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "description": "The regular expression pattern to search for in file contents",
        },
        "path": {
            "type": "string",
            "description": "File or directory to search in (rg PATH). Defaults to current "
            "working directory.",
        },
        "glob": {
            "type": "string",
            "description": 'Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps to '
            "rg --glob",
        },
        "output_mode": {
            "type": "string",
            "enum": ["content", "files_with_matches", "count"],
            "description": 'Output mode: "content" shows matching lines (supports -A/-B/-C '
            'context, -n line numbers, head_limit), "files_with_matches" shows file paths '
            '(supports head_limit), "count" shows match counts (supports head_limit). Defaults '
            'to "files_with_matches".',
        },
        "-B": {
            "type": "number",
            "description": "Number of lines to show before each match (rg -B). Requires "
            'output_mode: "content", ignored otherwise.',
        },
        "-A": {
            "type": "number",
            "description": "Number of lines to show after each match (rg -A). Requires "
            'output_mode: "content", ignored otherwise.',
        },
        "-C": {
            "type": "number",
            "description": "Number of lines to show before and after each match (rg -C). "
            'Requires output_mode: "content", ignored otherwise.',
        },
        "-n": {
            "type": "boolean",
            "description": "Show line numbers in output (rg -n). Requires output_mode: "
            '"content", ignored otherwise. Defaults to true.',
        },
        "-i": {"type": "boolean", "description": "Case insensitive search (rg -i)"},
        "type": {
            "type": "string",
            "description": "File type to search (rg --type). Common types: js, py, rust, go, "
            "java, etc. More efficient than include for standard file types.",
        },
        "head_limit": {
            "type": "number",
            "description": 'Limit output to first N lines/entries, equivalent to "| head -N". '
            "Works across all output modes.",
        },
        "offset": {
            "type": "number",
            "description": "Skip first N lines/entries before applying head_limit, equivalent "
            'to "| tail -n +N | head -N". Defaults to 0.',
        },
        "multiline": {
            "type": "boolean",
            "description": "Enable multiline mode where . matches newlines and patterns can "
            "span lines (rg -U --multiline-dotall). Default: false.",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}

GREP_DESCRIPTION = """A powerful search tool built on ripgrep

Usage:
- ALWAYS use Grep for search tasks. NEVER invoke `grep` or `rg` as a Bash command.
- Supports full regex syntax (e.g., "log.*Error", "function\\s+\\w+")
- Filter files with glob parameter (e.g., "*.js", "**/*.tsx") or type parameter (e.g., "js", "py", "rust")
- Output modes: "content" shows matching lines, "files_with_matches" shows only file paths (default), "count" shows match counts
- Pattern syntax: Uses ripgrep (not grep) - literal braces need escaping (use `interface\\{\\}` to find `interface{}` in Go code)
- Multiline matching: By default patterns match within single lines only. For cross-line patterns, use `multiline: true`"""  # noqa: E501


def _grep_args(args: GrepInput, target: str, is_dir: bool) -> list[str]:
    argv = [*_COMMON_RG, "--max-columns", str(MAX_COLUMNS), "--max-columns-preview"]
    if args.case_insensitive:
        argv.append("-i")
    if args.multiline:
        argv += ["-U", "--multiline-dotall"]
    if args.type:
        argv += ["--type", args.type]
    if args.glob:
        for g in _split_globs(args.glob):
            argv += ["--glob", g]
    if args.output_mode == "files_with_matches":
        argv.append("--files-with-matches")
    elif args.output_mode == "count":
        argv.append("--count-matches")
    else:
        # in a directory the numbers are always asked for: they tell match lines (``12:``)
        # from context lines (``12-``) once the NUL-terminated name is cut off
        numbers = args.line_numbers or is_dir
        argv.append("--line-number" if numbers else "--no-line-number")
        if args.context is not None:
            argv += ["-C", str(args.context)]
        else:
            if args.after is not None:
                argv += ["-A", str(args.after)]
            if args.before is not None:
                argv += ["-B", str(args.before)]
    if is_dir:
        argv += ["--with-filename", "--null"]
    # -e keeps a pattern that starts with "-" from being read as a flag.
    argv += ["-e", args.pattern, "--", target]
    return argv


async def _search_in_process(args: GrepInput, real_target: str, is_dir: bool) -> bytes | None:
    """What ripgrep would print for this call, searched here (:mod:`agents.tools._grep`), or
    None when ripgrep must run. Past a few dozen files the search runs in a worker thread."""
    if args.glob or args.type or args.multiline:
        return None
    files = grep_files(real_target, is_dir)
    if files is None:
        return None

    def run() -> bytes | None:
        return grep_search(
            files, pattern=args.pattern, is_dir=is_dir, mode=args.output_mode,
            case_insensitive=args.case_insensitive, numbers=args.line_numbers,
            before=args.before, after=args.after, context=args.context,
        )  # fmt: skip

    if len(files) > GREP_INLINE_FILES:
        return await trio.to_thread.run_sync(run)
    out = run()
    await trio.lowlevel.checkpoint()
    return out


def _split_globs(spec: str) -> list[str]:
    """``"*.ts *.tsx"`` or ``"*.ts,*.tsx"`` → two globs; commas inside ``{a,b}`` are kept."""
    out: list[str] = []
    for word in spec.split():
        if "{" in word:
            out.append(word)
        else:
            out += [g for g in word.split(",") if g]
    return out


_NUMBERED = re.compile(r"(\d+)([:-])")


def _grep_lines(out: str, mode: str, shown: _Shown, numbers: bool) -> list[str]:
    """ripgrep's NUL-terminated output as the lines to show, withheld files left out."""
    if mode == "files_with_matches":
        return [name for p in out.split("\0") if p and (name := shown.show(p)) is not None]
    lines: list[str] = []
    for line in out.splitlines():
        printed, nul, rest = line.partition("\0")
        if not nul:  # a `--` between context groups
            if lines and lines[-1] != "--":
                lines.append(line)
            continue
        name = shown.show(printed)
        if name is None:
            continue
        if mode == "count":
            lines.append(f"{name}:{rest}")
            continue
        m = _NUMBERED.match(rest)
        if m is None:
            lines.append(f"{name}:{rest}")
        elif numbers:
            lines.append(f"{name}{m.group(2)}{rest}")
        else:
            lines.append(f"{name}{m.group(2)}{rest[m.end() :]}")
    while lines and lines[-1] == "--":
        lines.pop()
    return lines


async def _grep(args: GrepInput, ctx: ToolContext) -> ToolOutput:
    target = _resolve(args.path, ctx.cwd)
    real_target = real(target)
    kind = _kind(real_target)
    if kind is None:
        return ToolOutput.error(f"Path does not exist: {target}")
    for name, value in (("-A", args.after), ("-B", args.before), ("-C", args.context)):
        if value is not None and value < 0:
            return ToolOutput.error(f"{name} must be >= 0, got {value}")
    if args.head_limit is not None and args.head_limit < 0:
        return ToolOutput.error(f"head_limit must be >= 0, got {args.head_limit}")
    if find_ripgrep() is None:
        return ToolOutput.error(RG_MISSING)
    if ctx.files is not None and ctx.files.withheld(target, real_target):
        return ToolOutput.error(f"Permission to read {target} is denied by a Read deny rule")
    is_dir = kind == "dir"
    out = await _search_in_process(args, real_target, is_dir) if GREP_IN_PROCESS else None
    if out is None:
        cwd = real_target if is_dir else os.path.dirname(real_target)
        code, out, err = await run_ripgrep(_grep_args(args, real_target, is_dir), cwd=cwd)
        if code == 2 and not out:
            return ToolOutput.error(f"Grep failed: {err.decode(errors='replace').strip()}")
    mode = args.output_mode
    shown = _Shown(ctx, target.rstrip("/"), real_target.rstrip("/"))
    text_out = out.decode(errors="replace")
    if is_dir:
        lines = _grep_lines(text_out, mode, shown, args.line_numbers)
    else:
        lines = text_out.splitlines()
    note = shown.note()
    if mode == "files_with_matches" and len(lines) > 1:
        if len(lines) <= 2_000:
            lines = _newest_first(lines)
        else:
            lines = await trio.to_thread.run_sync(_newest_first, lines)
    total = len(lines)
    start = max(args.offset, 0)
    end = None if args.head_limit in (None, 0) else start + args.head_limit
    window = lines[start:end]
    data: dict[str, Any] = {"mode": mode, "numLines": total, "withheld": len(shown.withheld)}
    if mode == "files_with_matches":
        data["numFiles"] = total
        if not window:
            return ToolOutput("No files found" + note, data=data)
        head = f"Found {total} file{'s' if total != 1 else ''}"
        if len(window) < total:
            head += f" (showing {len(window)} from entry {start + 1})"
        body = truncate(head + "\n" + "\n".join(window), GREP_OUTPUT_CAP)
        return ToolOutput(body + note, data=data)
    if mode == "count":
        matches = 0
        for line in lines:
            _, _, n = line.rpartition(":")
            matches += int(n) if n.isdigit() else 0
        data.update(numFiles=total, numMatches=matches)
        if not window:
            return ToolOutput("No matches found" + note, data=data)
        tail = (
            f"\n\nFound {matches} total occurrence{'s' if matches != 1 else ''} across "
            f"{total} file{'s' if total != 1 else ''}."
        )
        return ToolOutput(truncate("\n".join(window), GREP_OUTPUT_CAP) + tail + note, data=data)
    if not window:
        return ToolOutput("No matches found" + note, data=data)
    text = "\n".join(window)
    if len(window) < total:
        text += f"\n\n(Showing {len(window)} of {total} lines; use offset/head_limit for more.)"
    return ToolOutput(truncate(text, GREP_OUTPUT_CAP) + note, data=data)


def grep_tool() -> Tool:
    """A fresh ``Grep`` tool (read-only)."""
    return Tool(
        name="Grep",
        description=GREP_DESCRIPTION,
        input_schema=GREP_SCHEMA,
        handler=_grep,
        read_only=True,
        input_type=GrepInput,
    )
