"""Commands that run another command, with their real option grammars.

``timeout -k 5 1e3 rm x`` runs ``rm x``: rules must judge ``rm``, so the wrapper and its options
are skipped exactly as the wrapper itself would parse them (``getopt``: clustered short options,
attached or separate values, ``--``, abbreviated long options). Where a wrapper's argument that
decides what runs is not static, the inner command is unknown and the caller fails closed.

Two kinds of wrappers:

* *benign* ones (``timeout time nice nohup stdbuf command builtin``) change how a command runs,
  not what it may do: allow rules see through them too;
* the others (``env``, ``sudo``/``doas``, ``exec``, ``xargs``) change the environment, the user
  or the arguments: only deny and ask rules see through them.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

import attrs

__all__ = ["BENIGN", "NOT_WRAPPED", "WRAPPERS", "Unwrapped", "basename", "is_assignment", "unwrap"]

BENIGN = frozenset({"timeout", "time", "nice", "nohup", "stdbuf", "command", "builtin"})

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=", re.DOTALL)


def basename(word: str) -> str:
    """``/usr/bin/rm`` -> ``rm``: a rule should not be dodged with the command's directory."""
    return posixpath.basename(word) if "/" in word else word


def is_assignment(word: str) -> bool:
    """``NAME=value`` (also ``NAME+=value``, ``NAME[i]=value``) as ``env`` would take it."""
    return _ASSIGNMENT.match(word) is not None


@attrs.frozen
class _Grammar:
    """The getopt grammar of one wrapper."""

    short_arg: str = ""  # short options taking a value (`-s KILL`, `-sKILL`)
    short_optional: str = ""  # short options whose value may only be attached (`-i{}`)
    long_arg: tuple[str, ...] = ()  # long options taking a value (`--signal KILL`)
    positional: int = 0  # operands before the command (timeout's duration)


_GRAMMARS = {
    "timeout": _Grammar(short_arg="ks", long_arg=("kill-after", "signal"), positional=1),
    "nice": _Grammar(short_arg="n", long_arg=("adjustment",)),
    "nohup": _Grammar(),
    "stdbuf": _Grammar(short_arg="ioe", long_arg=("input", "output", "error")),
    "time": _Grammar(short_arg="fo", long_arg=("format", "output")),
    "command": _Grammar(),
    "builtin": _Grammar(),
    "env": _Grammar(short_arg="uCS", long_arg=("unset", "chdir", "split-string")),
    "sudo": _Grammar(
        short_arg="CDghpRrTtUu",
        long_arg=(
            "close-from",
            "chdir",
            "group",
            "host",
            "prompt",
            "chroot",
            "role",
            "command-timeout",
            "type",
            "other-user",
            "user",
        ),
    ),
    "doas": _Grammar(short_arg="uC"),
    "exec": _Grammar(short_arg="a"),
    "xargs": _Grammar(
        short_arg="adEILnPs",
        short_optional="eil",
        long_arg=(
            "arg-file",
            "delimiter",
            "eof",
            "max-lines",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ),
    ),
}


#: Every command name :func:`unwrap` sees through.
WRAPPERS = frozenset(_GRAMMARS)


@attrs.define
class _Options:
    """What a wrapper's options said, as far as the analysis cares."""

    end: int  # index of the first word after options and positionals; -1 if unknown
    values: dict[str, list[str]] = attrs.field(factory=dict)  # option letter/name -> values


def _parse_options(values: Sequence[str | None], start: int, grammar: _Grammar) -> _Options:
    out = _Options(end=-1)
    i = start
    n = len(values)

    def record(key: str, value: str) -> None:
        out.values.setdefault(key, []).append(value)

    while i < n:
        word = values[i]
        if word is None:
            return out  # an option we cannot read: what runs is unknown
        if word == "--":
            i += 1
            break
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word[2:].partition("=")
            full = next((o for o in grammar.long_arg if o.startswith(name)), None)
            if full is not None and not eq:
                if i + 1 >= n or values[i + 1] is None:
                    return out
                value = values[i + 1] or ""
                i += 1
            record(full or name, value)
            i += 1
            continue
        if word.startswith("-") and len(word) > 1:
            k = 1
            while k < len(word):
                letter = word[k]
                if letter in grammar.short_arg:
                    if k + 1 < len(word):
                        record(letter, word[k + 1 :])
                    else:
                        if i + 1 >= n or values[i + 1] is None:
                            return out
                        record(letter, values[i + 1] or "")
                        i += 1
                    break
                if letter in grammar.short_optional:
                    record(letter, word[k + 1 :])
                    break
                record(letter, "")
                k += 1
            i += 1
            continue
        break
    for _ in range(grammar.positional):
        if i >= n:
            return out
        i += 1
    out.end = i
    return out


@attrs.define
class Unwrapped:
    """The layers of one simple command's words.

    ``allow_start``: where the command starts for allow rules (benign wrappers skipped, by their
    plain names only: ``./timeout`` is a program of its own). ``starts``: every layer's start for
    deny rules, the innermost last; ``inner`` is that innermost start, or None when it cannot be
    known. ``chdir``: the directory ``env -C`` moves to (None if none; ``""`` if not static).
    ``tail``: the inner command gets more arguments at run time (``xargs``). ``replace``: the
    string ``xargs -I`` substitutes. ``split``: the string ``env -S`` splits into a command.
    ``shell``: ``sudo -s``/``-i`` runs the command through a shell. ``lookup``: ``command -v``.
    """

    allow_start: int = 0
    starts: list[int] = attrs.field(factory=list)
    inner: int | None = 0
    chdir: str | None = None
    tail: bool = False
    replace: str | None = None
    split: str | None = None
    shell: bool = False
    lookup: bool = False
    writes: list[str] = attrs.field(factory=list)


#: The layers of a command no wrapper runs (shared: nothing changes an Unwrapped once made).
NOT_WRAPPED = Unwrapped(starts=[0])


def unwrap(values: Sequence[str | None]) -> Unwrapped:
    """Skip every wrapper at the front of ``values`` (the words' static values, None if not)."""
    first = values[0] if values else None
    if first is None or basename(first) not in _GRAMMARS:
        return NOT_WRAPPED  # no wrapper (most commands judged in full: `cd`, `find`...)
    out = Unwrapped(starts=[0])
    benign_only = True
    i = 0
    n = len(values)
    while i < n:
        word = values[i]
        if word is None:
            break
        name = basename(word)
        grammar = _GRAMMARS.get(name)
        if grammar is None:
            break
        if name == "command" and i + 1 < n and values[i + 1] in ("-v", "-V"):
            out.lookup = True
            break
        options = _parse_options(values, i + 1, grammar)
        if options.end < 0:
            out.inner = None
            return out
        if not _apply(name, options, out):
            out.inner = None
            return out
        i = options.end
        if name in ("env", "sudo"):
            while i < n and values[i] is not None and is_assignment(values[i] or ""):
                i += 1
            if i < n and values[i] is None:
                out.inner = None
                return out
        benign_only = benign_only and name in BENIGN and word == name
        if benign_only:
            out.allow_start = i
        out.starts.append(i)
        if out.split is not None:
            break
    out.inner = out.starts[-1]
    return out


def _apply(name: str, options: _Options, out: Unwrapped) -> bool:
    """Record what ``name``'s options mean; False when they make the inner command unknown."""
    given = options.values
    if name == "env":
        if "C" in given or "chdir" in given:
            out.chdir = (given.get("C") or given.get("chdir") or [""])[-1]
        split = given.get("S") or given.get("split-string")
        if split:
            out.split = split[-1]
    elif name in ("sudo", "doas"):
        if "e" in given or "edit" in given or "l" in given or "list" in given:
            return False
        if any(k in given for k in ("s", "i", "shell", "login")):
            out.shell = True
        if "D" in given or "chdir" in given:
            out.chdir = ""
    elif name == "xargs":
        out.tail = True
        for key in ("I", "i", "replace"):
            if key in given:
                out.replace = given[key][-1] or "{}"
                out.tail = False
    elif name == "time":
        out.writes.extend(given.get("o", []) + given.get("output", []))
    return True
