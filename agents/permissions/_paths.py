"""File paths in permission rules and tool inputs, with gitignore-style patterns.

A ``Read(...)``/``Edit(...)`` specifier is compiled once into an *anchor* (filesystem root, home
or the settings root, which is ``cwd`` here) and a regular expression over the path relative to
that anchor, so the same compiled rule serves any ``cwd``:

========================  =======================================================
``//abs/path``            absolute path ``/abs/path``
``~/x``                   ``x`` under the home directory
``/x``                    ``x`` under the settings root (``cwd``), *not* absolute
``./x``, ``x/y``          relative to ``cwd``
``name`` (no slash)       a file or directory called ``name`` at any depth under ``cwd``
``*``, ``?``, ``**``      one component, one character, any number of components
========================  =======================================================

As in gitignore, a pattern that matches a directory also covers everything beneath it, and ``a/**``
covers ``a`` itself. Character classes (``[abc]``) are not supported: ``[`` is literal.

Paths in tool inputs are resolved as the kernel resolves them: ``~`` and ``~user`` are expanded by
:func:`expand_home` (the gate and the tools share it), and ``..`` is applied *after* the symlinks
before it are followed (:func:`absolute`), so ``src/out/../x`` with ``src/out -> /outside/deep``
is ``/outside/x``, as ``open`` would find it. :func:`real` then follows the remaining links: the
real path of the longest existing prefix, then the rest. A rule check judges both forms: deny
applies if either matches, allow needs both.
"""

from __future__ import annotations

import os
import posixpath
import pwd
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from ._stars import stars

__all__ = [
    "EDIT_PATH_TOOLS",
    "READ_PATH_TOOLS",
    "Anchor",
    "absolute",
    "compile_path_pattern",
    "expand_home",
    "home_dir",
    "real",
    "relative_to",
    "resolve",
    "tool_path",
    "within",
]

Anchor = Literal["root", "home", "cwd"]

#: Tools that read files, and the input field holding the path (``Read(...)`` rules govern them).
READ_PATH_TOOLS: Mapping[str, str] = {
    "Read": "file_path",
    "Glob": "path",
    "Grep": "path",
    "NotebookRead": "notebook_path",
    "LS": "path",
}
#: Tools that write files, and the input field holding the path (``Edit(...)`` rules govern them).
EDIT_PATH_TOOLS: Mapping[str, str] = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}

_GLOB_CHARS = re.compile(r"[*?\[]")


def home_dir() -> str:
    """The current user's home directory (``$HOME``, else the password database)."""
    return os.path.expanduser("~")


def expand_home(path: str, home: str | None = None) -> str:
    """``~`` and ``~/x`` under ``home`` (default :func:`home_dir`), ``~user/x`` under that user's
    home directory; any other path, and ``~user`` for an unknown user, unchanged.

    The permission gate and the file tools both expand with this function, so a spelling such
    as ``~root`` names the same directory to the rules as to the tool that opens it.

    >>> expand_home("~/notes", "/home/u")
    '/home/u/notes'
    """
    if not path.startswith("~"):
        return path
    name, slash, rest = path[1:].partition("/")
    if not name:
        base = home if home is not None else home_dir()
    else:
        try:
            base = pwd.getpwnam(name).pw_dir
        except (KeyError, ValueError, OSError):
            return path  # no such user: the shell and the tools keep the word as it is
    if not slash:
        return base
    return base.rstrip("/") + "/" + rest


def absolute(path: str, cwd: str, home: str) -> str:
    """``path`` made absolute against ``cwd``, ``~`` expanded, ``..`` applied as the kernel does.

    A ``..`` after a symlink goes to the parent of the link's *target*: the part before it is
    resolved (:func:`real`) before the ``..`` is applied. Components not followed by ``..``
    keep their spelling (a link named ``key.pem`` still matches ``*.pem``), so a path without
    ``..`` costs no system call.

    >>> absolute("./a/../secrets/k", "/repo", "/home/u")  # /repo/a is not a symlink
    '/repo/secrets/k'
    """
    path = expand_home(path, home)
    joined = path if path.startswith("/") else cwd.rstrip("/") + "/" + path
    if "//" not in joined and "/." not in joined and (joined[-1] != "/" or joined == "/"):
        return joined  # (no empty, `.` or `..` component: already normal)
    parts = joined.split("/")
    if ".." not in parts:
        result = posixpath.normpath(joined)
        if result.startswith("//"):  # POSIX lets normpath keep a leading `//`; it is just `/`
            result = "/" + result.lstrip("/")
        return result
    return _apply_dotdot(parts)


def _apply_dotdot(parts: list[str]) -> str:
    """The components of an absolute path joined, each ``..`` applied to the resolved parent."""
    out: list[str] = []
    resolved = 0  # out[:resolved] is known to be free of symlinks
    for part in parts:
        if part in ("", "."):
            continue
        if part != "..":
            out.append(part)
            continue
        if len(out) > resolved:
            out = [c for c in real("/" + "/".join(out)).split("/") if c]
        if out:
            out.pop()
        resolved = len(out)
    return "/" + "/".join(out)


def resolve(path: str, cwd: str, home: str | None = None) -> str:
    """The real path the kernel would reach for ``path`` (relative to ``cwd``): every symlink
    followed, ``..`` applied after the links before it; for a path that does not exist yet, the
    real path of its longest existing prefix, then the rest.

    This is the one resolution every path-taking tool and the permission checks use.
    """
    return real(absolute(path, cwd, home if home is not None else home_dir()))


_O_PATH = getattr(os, "O_PATH", 0)
_PROC_FD = _O_PATH != 0 and os.path.isdir("/proc/self/fd")


def real(path: str, known: Callable[[str], str | None] | None = None) -> str:
    """The absolute ``path`` with symlinks resolved; the path itself when it cannot be resolved.

    On Linux an existing path is resolved by the kernel (``open(O_PATH)`` + ``/proc/self/fd``):
    three system calls instead of one ``lstat`` per component. A path that does not exist
    yet (a file about to be written) is its resolved parent plus its name — unless it is a
    dangling symlink, which the portable ``os.path.realpath`` follows. ``..`` in ``path`` is
    applied after the links before it, as the kernel does.

    ``known``: the real path of a directory already resolved at this moment (one check's
    memo), or None; a path that does not exist yet is then its parent's, without asking the
    kernel again (``mkdir build && cp -r src build/`` resolves ``build`` once).
    """
    if "/." in path:
        parts = path.split("/")
        if ".." in parts:
            path = _apply_dotdot(parts)
    try:
        if _PROC_FD:
            return _kernel_real(path, 8, known)
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _exists_here(path: str) -> bool:
    """Whether ``path`` names a directory entry, a dangling symlink included (``lstat``
    succeeds), told without raising an exception when it does not (``faccessat`` without
    following the last link)."""
    if _ACCESS_NOFOLLOW:
        return os.access(path, os.F_OK, follow_symlinks=False)
    try:
        os.lstat(path)
    except OSError:
        return False
    return True


_ACCESS_NOFOLLOW = os.access in os.supports_follow_symlinks


def _kernel_real(path: str, budget: int, known: Callable[[str], str | None] | None) -> str:
    # (a path that is not there is told by `access` first: a failed `open` costs an exception)
    if not _exists_here(path):  # (not even as a dangling symlink)
        parent, _, name = path.rpartition("/")  # (`path` is absolute: "" only for a top name)
        if budget == 0 or not name or not parent:
            return os.path.realpath(path)
        resolved = known(parent) if known is not None else None
        if resolved is None:
            resolved = _kernel_real(parent, budget - 1, known)
        return resolved.rstrip("/") + "/" + name
    try:
        fd = os.open(path, _O_PATH | os.O_CLOEXEC)
    except OSError:  # a dangling symlink, a loop: followed the portable way
        return os.path.realpath(path)
    try:
        resolved = os.readlink(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)
    return resolved if resolved.startswith("/") else os.path.realpath(path)


def relative_to(path: str, directory: str) -> str | None:
    """``path`` relative to ``directory`` ('' for the directory itself), None if outside it."""
    if directory == "/":
        return path[1:]
    if path == directory:
        return ""
    if path.startswith(directory) and path[len(directory) : len(directory) + 1] == "/":
        return path[len(directory) + 1 :]
    return None


def within(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or lies beneath it (both absolute and normalized)."""
    return relative_to(path, directory) is not None


def tool_path(tool_name: str, tool_input: Mapping[str, Any], cwd: str, home: str) -> str | None:
    """The absolute path a file tool call touches, or None when the tool has no path input.

    ``Glob`` and ``Grep`` default to ``cwd``; for ``Glob`` the fixed leading part of the pattern
    counts too, so ``pattern="../../etc/*"`` is judged as ``/etc``-ish, not as ``cwd``.
    """
    key = READ_PATH_TOOLS.get(tool_name) or EDIT_PATH_TOOLS.get(tool_name)
    if key is None:
        return None
    value = tool_input.get(key)
    if tool_name in ("Glob", "Grep", "LS") and (value is None or value == ""):
        value = cwd
    if not isinstance(value, str):
        return None
    base = absolute(value, cwd, home)
    pattern = tool_input.get("pattern") if tool_name == "Glob" else None
    if isinstance(pattern, str) and pattern:
        fixed: list[str] = []
        for part in pattern.split("/"):
            if _GLOB_CHARS.search(part):
                break
            fixed.append(part)
        if len(fixed) == len(pattern.split("/")):
            fixed = fixed[:-1]  # no glob at all: the pattern names a file; judge its directory
        prefix = "/".join(fixed)
        if prefix or pattern.startswith("/"):
            base = absolute(prefix or "/", base, home)
    return base


def _translate_component(component: str) -> str:
    """One component's pattern: ``*`` any run of characters but ``/``, ``?`` one of them (a
    run of stars is one); its stars never backtrack without bound (:func:`stars`)."""
    pieces = [
        "".join("[^/]" if ch == "?" else re.escape(ch) for ch in piece)
        for piece in _STAR_RUN.split(component)
    ]
    return stars(pieces, "[^/]")


#: A run of stars inside a component: one wildcard
_STAR_RUN = re.compile(r"\*+")
#: Where a ``**`` stood before components: the following ones may start at any depth below
_FLOAT = "(?:.*/)?"


def compile_path_pattern(spec: str) -> tuple[Anchor, str]:
    """The anchor and the regex source (for ``fullmatch`` on the anchor-relative path) of ``spec``.

    >>> compile_path_pattern("./secrets/**")
    ('cwd', 'secrets(?:/.*)?')
    """
    anchor: Anchor = "cwd"
    any_depth = False
    if spec.startswith("//"):
        anchor, rest = "root", spec[2:]
    elif spec == "~" or spec.startswith("~/"):
        anchor, rest = "home", spec[2:]
    elif spec.startswith("/"):
        rest = spec[1:]
    elif spec.startswith("./"):
        rest = spec[2:]
    else:
        rest = spec
        any_depth = "/" not in spec.rstrip("/")
    rest = rest.strip("/")
    if ".." in rest.split("/") or "." in rest.split("/") or "//" in rest:
        rest = posixpath.normpath(rest).lstrip("/")
        rest = "" if rest == "." else rest
    components = rest.split("/") if rest else []
    pieces: list[str] = []
    for index, component in enumerate(components):
        last = index == len(components) - 1
        if component == "**":
            if last:
                if pieces:
                    pieces[-1] = pieces[-1].removesuffix("/")
                pieces.append("(?:/.*)?" if pieces else ".*")
            elif not pieces or pieces[-1] != _FLOAT:  # `**/**` is one: any depth either way
                pieces.append(_FLOAT)
        else:
            pieces.append(_translate_component(component) + ("" if last else "/"))
    if not pieces:
        return anchor, ".*"
    if any_depth and pieces[0] != ".*":
        pieces.insert(0, _FLOAT)
    if pieces[-1] not in (".*", "(?:/.*)?"):
        pieces.append("(?:/.*)?")  # a matching directory covers its contents
    return anchor, _anchored_floats(pieces)


def _anchored_floats(pieces: list[str]) -> str:
    """The pieces joined; with several ``**`` before components (``(?:.*/)?``), each with the
    components up to the next found at their shallowest place, in an atomic group: the plain
    join backtracks through every way to split the path between them (``O(n^k)``). The
    shallowest place loses nothing, as in :func:`stars`: the components' end is fixed by the
    slash (or the end) that must follow them, and what comes after may start at any depth.
    (One ``**`` is left as it is: its components are matched once per slash, linear in the
    path, and the plain form is the faster for the common ``*.env``.)"""
    if pieces.count(_FLOAT) < 2:
        return "".join(pieces)
    out: list[str] = []
    index = 0
    while index < len(pieces):
        piece = pieces[index]
        index += 1
        if piece != _FLOAT:
            out.append(piece)
            continue
        run: list[str] = []
        while index < len(pieces) and pieces[index] not in (_FLOAT, ".*", "(?:/.*)?"):
            run.append(pieces[index])
            index += 1
        if not run:
            out.append(piece)
            continue
        components = "".join(run)
        # the last component ends at a slash or the end (its own ``/`` is in the run otherwise)
        boundary = "" if components.endswith("/") else "(?![^/])"
        out.append(f"(?>(?:.*?/)??{components}{boundary})")
    return "".join(out)
