"""ripgrep's file listing (``rg --files``) in-process, for small trees.

Glob on a small tree used to cost a process start (a few milliseconds on this machine) for a
listing that takes a Python walk tens of microseconds. :func:`list_files` lists the regular
files under a directory as ``rg --files --no-config --no-require-git --hidden --glob '!.git'``
does — the same ignore rules, the same files — or returns None when it cannot promise that,
and the caller runs ripgrep:

* past ``limit`` directory entries (a big tree: ripgrep's parallel walk wins, and the event loop
  is not held for long);
* when an ignore file uses what this module does not translate (``{a,b}`` alternation,
  backslash escapes, an unclosed ``[``, more than three wildcards in a pattern: ``re``
  backtracks, and a hostile ``.gitignore`` line such as ``*a*a*a*a*a*b`` held the event loop
  for minutes over a long name), or a git repository has patterns in
  ``.git/info/exclude``, or a global git ignore file may apply (``core.excludesFile``,
  ``~/.config/git/ignore``).

The rules kept, as ripgrep's ``ignore`` crate applies them with ``--no-require-git``:
``.rgignore`` over ``.ignore`` over ``.gitignore`` (each read in the directory itself and every
ancestor up to ``/``; the deepest file with a matching pattern decides its kind, the last
matching line in it decides, ``!`` re-includes; a file above the search root matches each entry
as if it were directly in the root, as ripgrep 14 does); an ignored directory is not entered; hidden
files are listed; an entry named ``.git`` never is; symbolic links are not followed and not
listed, nor are sockets and FIFOs.
"""

from __future__ import annotations

import os
import re

from .._regular import NotRegularFile, open_regular

__all__ = ["list_files"]

#: The ignore files, highest precedence first (ripgrep's custom, then its own, then git's).
IGNORE_FILES = (".rgignore", ".ignore", ".gitignore")

#: The names whose presence in a directory the walk looks at: its ignore files and ``.git``.
_SPECIAL = frozenset({*IGNORE_FILES, ".git"})

#: Directory entries walked at most before giving the tree to ripgrep.
WALK_LIMIT = 1_000


#: The character classes translated: letters, digits, ``.``, ``_`` and ``a-z`` ranges.
_PLAIN_CLASS = re.compile(r"(?:[A-Za-z0-9._](?:-[A-Za-z0-9._])?)+")


class _Unsupported(Exception):
    """An ignore rule this module does not translate: ripgrep must list the files."""


#: One ignore file's patterns: (regex, is_negation, only_directories), in file order.
_Rules = list[tuple[re.Pattern[str], bool, bool]]


# globset's tokens for ``**``, kept apart from literal text until the regex is joined
_PREFIX, _SUFFIX, _MIDDLE, _STAR = "(?:/?|.*/)", "/.*", "(?:/|/.*/)", "[^/]*"


#: the tokens that choose where they end, and how many a pattern may have: with ``k`` of them
#: a path of ``L`` characters costs up to about ``L**k`` steps
_CHOOSING = frozenset({_PREFIX, _SUFFIX, _MIDDLE, _STAR})
_MAX_CHOOSING = 3


def _glob_part(glob: str) -> str:
    """A gitignore glob (no leading ``!``/``/`` nor trailing ``/``) as a regex over a relative
    path, with ripgrep's ``globset`` rules: ``*`` and ``?`` stop at ``/``; ``**/`` at the start
    is any number of directories, ``/**`` at the end everything inside, ``/**/`` in the middle
    one or more separators, any other ``**`` is ``*``; ``**`` alone matches everything."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**", i):
            after = glob[i + 2 : i + 3]
            if not out and after in ("/", ""):
                out.append(_PREFIX)
                i += 3 if after == "/" else 2
                continue
            if not out or glob[i - 1] != "/" or after not in ("/", ""):
                out += [_STAR, _STAR]
                i += 2
                continue
            suffix = after == ""
            i += 2 if suffix else 3
            last = out.pop()  # the separator before, or the ``**`` token that took it
            if last in (_PREFIX, _SUFFIX):
                out.append(last)
            else:
                out.append(_SUFFIX if suffix else _MIDDLE)
            continue
        if c == "*":
            out.append(_STAR)
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = glob.find("]", i + 2)  # a ``]`` first is part of the class
            body = glob[i + 1 : end] if end != -1 else ""
            if not _PLAIN_CLASS.fullmatch(body):
                raise _Unsupported("a negated, unclosed or unusual [class]")
            out.append(f"[{body}]")
            i = end
        elif c in "{}\\":
            raise _Unsupported(f"{c!r} in an ignore pattern")
        else:
            out.append(re.escape(c))
        i += 1
    if out == [_PREFIX]:
        return ".*"
    if sum(token in _CHOOSING for token in out) > _MAX_CHOOSING:
        # ``re`` backtracks: ``*a*a*a*a*a*b`` over a long name took minutes (globset does not)
        raise _Unsupported("more wildcards than a regex can match in bounded time")
    return "".join(out)


def parse_ignore(text: str) -> _Rules:
    """An ignore file's lines as rules (see :func:`_glob_part`); raises :class:`_Unsupported`."""
    rules: _Rules = []
    for raw in text.splitlines():
        line = raw
        if line.startswith("#"):
            continue
        if not line.endswith("\\ "):
            line = line.rstrip()
        if not line:
            continue
        negated = anchored = False
        if line.startswith(("\\!", "\\#")):
            line = line[1:]
            anchored = line.startswith("/")
        else:
            if line.startswith("!"):
                negated = True
                line = line[1:]
            if line.startswith("/"):
                line = line[1:]
                anchored = True
        only_dirs = line.endswith("/")
        if only_dirs:
            line = line[:-1]
        if not line:
            continue
        if not anchored and "/" not in line and not line.startswith("**/") and line != "**":
            line = "**/" + line
        if line.endswith("/**"):
            line += "/*"
        try:
            regex = re.compile(_glob_part(line), re.DOTALL)
        except re.error:  # e.g. a reversed range
            raise _Unsupported(f"the pattern {raw!r}") from None
        rules.append((regex, negated, only_dirs))
    return rules


class _Matcher:
    """One ignore file's rules, with each kind of entry's patterns joined into one regex: most
    entries match none of them, which one regex says at once."""

    __slots__ = ("any_dir", "any_file", "rules")

    def __init__(self, rules: _Rules) -> None:
        self.rules = rules
        self.any_dir = _joined([r for r, _, _ in rules])
        self.any_file = _joined([r for r, _, only_dirs in rules if not only_dirs])

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """True if the rules ignore ``rel``, False if they re-include it, None if no rule
        matches (the last matching rule decides)."""
        joined = self.any_dir if is_dir else self.any_file
        if joined is None or joined.fullmatch(rel) is None:
            return None
        for regex, negated, only_dirs in reversed(self.rules):
            if only_dirs and not is_dir:
                continue
            if regex.fullmatch(rel):
                return not negated
        return None  # pragma: no cover - the joined regex matched, so one of its parts does


def _joined(regexes: list[re.Pattern[str]]) -> re.Pattern[str] | None:
    if not regexes:
        return None
    return re.compile("|".join(f"(?:{r.pattern})" for r in regexes), re.DOTALL)


def read_regular(path: str) -> str:
    """The text of ``path`` (UTF-8, errors replaced) if it is a regular file, else "": an
    ignore file that is a named pipe or a device (a repository may hold one) counts as empty
    (see :func:`agents._regular.open_regular`)."""
    try:
        fd, _ = open_regular(path)
    except NotRegularFile:
        return ""
    with os.fdopen(fd, "rb") as f:
        return f.read().decode("utf-8", "replace")


def _read_rules(directory: str, present: list[str] | None = None) -> list[_Matcher | None]:
    """The rules of ``directory``'s ignore files, one slot per kind (None: no such file or no
    rule in it); ``present``, when known, names the entries that may be ignore files."""
    found: list[_Matcher | None] = []
    for name in IGNORE_FILES:
        if present is not None and name not in present:
            found.append(None)
            continue
        try:
            rules = parse_ignore(read_regular(os.path.join(directory, name)))
            found.append(_Matcher(rules) if rules else None)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            found.append(None)
        except OSError:
            raise _Unsupported("an unreadable ignore file") from None
    return found


def _has_git_excludes(directory: str) -> bool:
    """Whether ``directory/.git/info/exclude`` holds a pattern (``git init`` writes only
    comments there)."""
    try:
        text = read_regular(os.path.join(directory, ".git", "info", "exclude"))
    except OSError:
        return False
    return any(line.strip() and not line.startswith("#") for line in text.splitlines())


def _global_ignore_may_apply() -> bool:
    """Whether a global git ignore file may exist (ripgrep reads it): then it lists the files."""
    home = os.path.expanduser("~")
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    if os.path.exists(os.path.join(config_home, "git", "ignore")):
        return True
    for config in (os.path.join(home, ".gitconfig"), os.path.join(config_home, "git", "config")):
        try:
            if "excludesfile" in read_regular(config).lower():
                return True
        except OSError:
            continue
    return False


#: A chain of ignore files, root first: (the directory with a trailing "/", its rules per
#: kind, and for a directory above the search root the root's path relative to it, else None).
_Chain = list[tuple[str, list[_Matcher | None], str | None]]


def _ignored(chain: _Chain, path: str, name: str, is_dir: bool) -> bool:
    """Whether ``path`` (absolute; ``name`` its last component) is ignored: per kind in
    precedence order, the deepest directory whose file has a matching pattern decides; the
    first kind with a say wins.

    An ignore file above the search root sees every entry as if it were directly in the root
    (``root/name``), as ripgrep 14 matches them: its patterns with a ``/`` do not reach into
    the root's subdirectories."""
    for kind in range(len(IGNORE_FILES)):
        for directory, rules, root_rel in reversed(chain):
            kind_rules = rules[kind]
            if kind_rules:
                rel = path[len(directory) :] if root_rel is None else root_rel + name
                verdict = kind_rules.verdict(rel, is_dir)
                if verdict is not None:
                    return verdict
    return False


def list_files(root: str, limit: int = WALK_LIMIT) -> list[str] | None:
    """The regular files under ``root`` (a real, absolute directory path) that ``rg --files``
    lists, as ``root/relative`` paths in no particular order; None when ripgrep must list them
    (see the module's docstring)."""
    try:
        return _list(root.rstrip("/") or "/", limit)
    except _Unsupported:
        return None


def _list(root: str, limit: int) -> list[str] | None:
    if _global_ignore_may_apply():
        return None
    chain: _Chain = []
    ancestors = []
    parent = root
    while parent != "/":
        parent = os.path.dirname(parent)
        ancestors.append(parent)
    for directory in reversed(ancestors):
        if _has_git_excludes(directory):
            return None
        rules = _read_rules(directory)
        if any(rules):
            prefix = directory.rstrip("/") + "/"
            chain.append((prefix, rules, root[len(prefix) :] + "/"))
    files: list[str] = []
    seen = 0
    # depth first; each directory's chain of ignore files travels with it
    stack: list[tuple[str, _Chain]] = [(root, chain)]
    while stack:
        directory, dir_chain = stack.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError:
            continue  # ripgrep reports it on stderr and lists the rest
        seen += len(entries)
        if seen > limit:
            return None
        # the directory's own ignore files, known from its listing: no open() of absent ones
        present = [e.name for e in entries if e.name in _SPECIAL]
        if present:
            if ".git" in present and _has_git_excludes(directory):
                return None
            rules = _read_rules(directory, present)
            if any(rules):
                dir_chain = [*dir_chain, (directory + "/", rules, None)]
        for entry in entries:
            name = entry.name
            if name == ".git":
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    path = entry.path
                    if not (dir_chain and _ignored(dir_chain, path, name, True)):
                        stack.append((path, dir_chain))
                elif entry.is_file(follow_symlinks=False):
                    path = entry.path
                    if not (dir_chain and _ignored(dir_chain, path, name, False)):
                        files.append(path)
            except OSError:
                continue
    return files
