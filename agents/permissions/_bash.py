"""Splitting a shell command line into the simple commands that would run.

Permission rules are written per command (``Bash(npm *)``), but the model sends whole command
lines: ``npm test && rm -rf build``. Before any rule is consulted the line is cut into the simple
commands that bash would execute — on ``&& || ; ;; | |& &`` and newlines, respecting quotes — and
the bodies of ``$(...)``, backticks, ``<(...)``, ``>(...)`` and ``( ... )`` subshells become
commands of their own, since they run too.

This is a deliberately small tokenizer, not a shell: it never raises, and where it cannot be sure
it errs on the side that makes *allow* rules match less and *deny* rules match more (an unparsable
fragment stays a literal command that only a ``Bash``/``Bash(*)`` rule allows).
"""

from __future__ import annotations

import posixpath
import re

import attrs

__all__ = ["SimpleCommand", "command_start", "split_command"]

#: Nesting deeper than this is not parsed further: the rest becomes one opaque command.
_MAX_DEPTH = 32

#: Reserved words that may precede a command (``if x; then y; fi`` runs ``x`` and ``y``).
_LEADING_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{"})
#: Reserved words that close a construct and run nothing themselves.
_CLOSING_KEYWORDS = frozenset({"fi", "done", "esac", "}", "then", "else", "do"})

#: A run of characters with no meaning to the tokenizer, consumed in one step.
_PLAIN = re.compile(r"[^\s\\'\"$`<>()&|;#]+")

#: Characters that need the full tokenizer; without them a command line splits with one regex.
_NEEDS_PARSER = re.compile(r"[\\'\"$`<>()#]")
_SEPARATOR_RE = re.compile(r"&&|\|\||;;|\|&|;|\||&|\n")

_SEPARATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n")


@attrs.frozen
class SimpleCommand:
    """One simple command: its words with quotes removed, and their source text.

    ``raw`` keeps each word as written (quotes included) so that rules match what the user
    reads; ``words`` is what the program receives, used to recognise the command name.
    """

    words: tuple[str, ...]
    raw: tuple[str, ...]
    redirect: bool = False

    @property
    def text(self) -> str:
        """The command as written, words joined by single spaces."""
        return " ".join(self.raw)


def split_command(command: str) -> tuple[SimpleCommand, ...]:
    """Return every simple command that ``command`` would run, in source order.

    A substitution's body is listed before the command that contains it (it runs first):

    >>> [c.text for c in split_command("npm test && echo $(rm -rf x)")]
    ['npm test', 'rm -rf x', 'echo $(rm -rf x)']
    """
    out: list[SimpleCommand] = []
    if _NEEDS_PARSER.search(command) is None:
        # No quoting, substitution, redirection or grouping: separators and spaces say it all.
        for segment in _SEPARATOR_RE.split(command):
            words = segment.split()
            _append_command(out, words, words, False)
        return tuple(out)
    try:
        _Parser(command, 0, out).parse()
    except Exception:  # pragma: no cover - defensive: the tokenizer must never raise
        out = [SimpleCommand(words=(command,), raw=(command,))]
    return tuple(out)


def _append_command(
    out: list[SimpleCommand], words: list[str], raws: list[str], redirect: bool
) -> None:
    """Append one command, minus the reserved words around it (``then``, ``do``, ``fi`` ...)."""
    k = 0
    while k < len(words) and words[k] in _LEADING_KEYWORDS and raws[k] == words[k]:
        k += 1
    if k:
        words, raws = words[k:], raws[k:]
    if not words or (len(words) == 1 and words[0] in _CLOSING_KEYWORDS and raws[0] == words[0]):
        return
    out.append(SimpleCommand(words=tuple(words), raw=tuple(raws), redirect=redirect))


def command_start(words: tuple[str, ...], *, strip_env: bool) -> int:
    """Index of the real command word after wrappers (and, if asked, ``VAR=value``) are skipped.

    Wrappers (``timeout``, ``time``, ``nice``, ``nohup``, ``stdbuf``, ``command``) run their
    argument, so rules judge the wrapped command. With ``strip_env`` leading assignments and
    ``env [-i] [-u NAME] [VAR=value...]`` are skipped too: deny rules use that form, allow rules
    do not (an assignment such as ``LD_PRELOAD=...`` changes what the command does).
    """
    i = 0
    n = len(words)
    while i < n:
        w = words[i]
        if strip_env and _is_assignment(w):
            i += 1
        elif strip_env and w == "env":
            i = _skip_env(words, i + 1)
        elif w == "timeout":
            j = _skip_timeout(words, i + 1)
            if j is None:
                return i
            i = j
        elif w == "time":
            i += 1
            while i < n and words[i] == "-p":
                i += 1
        elif w == "nice":
            i = _skip_nice(words, i + 1)
        elif w == "nohup":
            i += 1
        elif w == "stdbuf":
            i = _skip_stdbuf(words, i + 1)
        elif w == "command":
            if i + 1 < n and words[i + 1] in ("-v", "-V"):
                return i  # `command -v x` looks x up; it runs nothing
            i += 1
            while i < n and words[i] in ("-p", "--"):
                i += 1
        else:
            return i
    return i


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return (
        bool(eq)
        and bool(name)
        and (name[0].isalpha() or name[0] == "_")
        and all(ch.isalnum() or ch == "_" for ch in name)
    )


def _skip_env(words: tuple[str, ...], i: int) -> int:
    n = len(words)
    while i < n:
        w = words[i]
        if w in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
            i += 2
        elif w.startswith("-") or _is_assignment(w):
            i += 1
        else:
            break
    return i


def _skip_timeout(words: tuple[str, ...], i: int) -> int | None:
    n = len(words)
    while i < n and words[i].startswith("-"):
        if words[i] in ("-s", "-k", "--signal", "--kill-after"):
            i += 2
        else:
            i += 1
    if i >= n:
        return None
    duration = words[i].rstrip("smhd")
    if not duration or not duration.replace(".", "", 1).isdigit():
        return None
    return i + 1


def _skip_nice(words: tuple[str, ...], i: int) -> int:
    n = len(words)
    while i < n and words[i].startswith("-"):
        i += 2 if words[i] in ("-n", "--adjustment") else 1
    return i


def _skip_stdbuf(words: tuple[str, ...], i: int) -> int:
    n = len(words)
    while i < n and words[i].startswith("-"):
        i += 2 if words[i] in ("-i", "-o", "-e") else 1
    return i


def find_close(src: str, i: int, closer: str) -> int:
    """Index of the ``closer`` that ends the construct opened just before ``i``, else ``len(src)``.

    Iterative (an explicit stack), so deeply nested input cannot exhaust the recursion limit.
    """
    stack = [closer]
    n = len(src)
    while i < n:
        c = src[i]
        top = stack[-1]
        if c == "\\":
            i += 2
            continue
        if top == '"':
            if c == '"':
                stack.pop()
            elif c == "$" and i + 1 < n and src[i + 1] in "({":
                stack.append(")" if src[i + 1] == "(" else "}")
                i += 1
            elif c == "`":
                stack.append("`")
        elif top == "`":
            if c == "`":
                stack.pop()
        elif c == "'":
            j = src.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        elif c == '"' or c == "`":
            stack.append(c)
        elif c == "(":
            stack.append(")")
        elif c == "$" and i + 1 < n and src[i + 1] == "{":
            stack.append("}")
            i += 1
        elif c == top:
            stack.pop()
        if not stack:
            return i
        i += 1
    return n


def _unescape_backticks(text: str) -> str:
    return text.replace("\\`", "`").replace("\\$", "$").replace("\\\\", "\\")


class _Parser:
    """Single left-to-right pass over one source string; nested bodies recurse with depth + 1."""

    def __init__(self, src: str, depth: int, out: list[SimpleCommand]) -> None:
        self.src = src
        self.depth = depth
        self.out = out
        self.words: list[str] = []
        self.raws: list[str] = []
        self.redirect = False
        self.value: list[str] = []
        self.start = -1  # source index where the current word began, -1 if none
        self.quoted = False
        self.heredoc_next: bool | None = None  # after `<<`: the next word is a delimiter
        self.heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, quoted, strip_tabs)

    def _nested(self, text: str) -> None:
        if self.depth >= _MAX_DEPTH:
            if text.strip():
                self.out.append(SimpleCommand(words=(text,), raw=(text,)))
            return
        _Parser(text, self.depth + 1, self.out).parse()

    def _scan_substitutions(self, text: str) -> None:
        """Find and parse the substitutions inside double-quoted-like text (no word splitting)."""
        i = 0
        n = len(text)
        while i < n:
            c = text[i]
            if c == "\\":
                i += 2
            elif c == "$" and i + 1 < n and text[i + 1] == "(":
                j = find_close(text, i + 2, ")")
                self._nested(text[i + 2 : j])
                i = j + 1
            elif c == "$" and i + 1 < n and text[i + 1] == "{":
                j = find_close(text, i + 2, "}")
                if self.depth < _MAX_DEPTH:
                    self._scan_substitutions(text[i + 2 : j])
                i = j + 1
            elif c == "`":
                j = find_close(text, i + 1, "`")
                self._nested(_unescape_backticks(text[i + 1 : j]))
                i = j + 1
            else:
                i += 1

    def _begin(self, i: int) -> None:
        if self.start < 0:
            self.start = i

    def _end_word(self, i: int) -> None:
        if self.start < 0:
            return
        value = "".join(self.value)
        self.words.append(value)
        self.raws.append(self.src[self.start : i])
        if self.heredoc_next is not None:
            self.heredocs.append((value, self.quoted, self.heredoc_next))
            self.heredoc_next = None
        self.value = []
        self.start = -1
        self.quoted = False

    def _end_command(self) -> None:
        _append_command(self.out, self.words, self.raws, self.redirect)
        self.words = []
        self.raws = []
        self.redirect = False

    def _skip_heredocs(self, i: int) -> int:
        """Skip here-document bodies that start after the newline at ``i - 1``."""
        src = self.src
        for delimiter, quoted, strip_tabs in self.heredocs:
            body_start = i
            while i < len(src):
                nl = src.find("\n", i)
                line_end = len(src) if nl < 0 else nl
                line = src[i:line_end]
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    if not quoted:
                        self._scan_substitutions(src[body_start:i])
                    i = line_end + 1
                    break
                i = line_end + 1
            else:
                if not quoted:
                    self._scan_substitutions(src[body_start:])
        self.heredocs = []
        return i

    def parse(self) -> None:
        src = self.src
        n = len(src)
        i = 0
        while i < n:
            c = src[i]
            nxt = src[i + 1] if i + 1 < n else ""
            if c in " \t\r":
                self._end_word(i)
                i += 1
            elif c == "\\":
                if nxt == "\n":
                    self._end_word(i)
                    i += 2
                    continue
                self._begin(i)
                self.quoted = True
                self.value.append(nxt)
                i += 2
            elif c == "'":
                self._begin(i)
                self.quoted = True
                j = src.find("'", i + 1)
                j = n if j < 0 else j
                self.value.append(src[i + 1 : j])
                i = j + 1
            elif c == "$" and nxt == "'":
                self._begin(i)
                self.quoted = True
                j = i + 2
                while j < n and src[j] != "'":
                    j += 2 if src[j] == "\\" else 1
                self.value.append(src[i + 2 : j])
                i = j + 1
            elif c == '"':
                self._begin(i)
                self.quoted = True
                j = find_close(src, i + 1, '"')
                body = src[i + 1 : j]
                self._scan_substitutions(body)
                self.value.append(body)
                i = j + 1
            elif c == "$" and nxt == "(":
                self._begin(i)
                j = find_close(src, i + 2, ")")
                if src.startswith("(", i + 2) and src[j - 1 : j + 1] == "))":
                    # `$((...))` is arithmetic: only substitutions inside it run anything
                    if self.depth < _MAX_DEPTH:
                        self._scan_substitutions(src[i + 3 : j - 1])
                else:
                    self._nested(src[i + 2 : j])
                self.value.append(src[i : j + 1])
                i = j + 1
            elif c == "$" and nxt == "{":
                self._begin(i)
                j = find_close(src, i + 2, "}")
                if self.depth < _MAX_DEPTH:
                    self._scan_substitutions(src[i + 2 : j])
                self.value.append(src[i : j + 1])
                i = j + 1
            elif c == "`":
                self._begin(i)
                j = find_close(src, i + 1, "`")
                self._nested(_unescape_backticks(src[i + 1 : j]))
                self.value.append(src[i : j + 1])
                i = j + 1
            elif c in "<>" and nxt == "(":
                self._begin(i)
                j = find_close(src, i + 2, ")")
                self._nested(src[i + 2 : j])
                self.value.append(src[i : j + 1])
                i = j + 1
            elif c == "(" and self.start < 0 and not self.words:
                j = find_close(src, i + 1, ")")
                self._nested(src[i + 1 : j])
                i = j + 1
            elif c == "#" and self.start < 0:
                nl = src.find("\n", i)
                i = n if nl < 0 else nl
            elif c in "<>" or (c == "&" and nxt == ">"):
                i = self._redirection(i)
            else:
                sep = next(s for s in _SEPARATORS if src.startswith(s, i)) if c in "&|;\n" else None
                if sep is None:
                    self._begin(i)
                    m = _PLAIN.match(src, i + 1)
                    end = m.end() if m else i + 1
                    self.value.append(src[i:end])
                    i = end
                    continue
                self._end_word(i)
                self._end_command()
                i += len(sep)
                if sep == "\n" and self.heredocs:
                    i = self._skip_heredocs(i)
        self._end_word(n)
        self._end_command()

    def _redirection(self, i: int) -> int:
        """Consume a redirection operator; a pending all-digit word is its file descriptor."""
        src = self.src
        fd = "".join(self.value) if self.start >= 0 and not self.quoted else ""
        if fd.isdigit():
            self.value = []
            self.start = -1
        else:
            self._end_word(i)
            fd = ""
        j = i + 1
        if src[i] == "&":
            j += 1  # `&>`
            if src.startswith(">", j):
                j += 1
        elif src[i] == "<" and src.startswith("<<", i + 1):
            j += 2  # `<<<` here-string
        elif src[i] == "<" and src.startswith("<", j):
            j += 1
            strip = src.startswith("-", j)
            if strip:
                j += 1
            self.heredoc_next = strip
        elif src.startswith(src[i], j) or (src[i] == ">" and src.startswith("|", j)):
            j += 1
        if j < len(src) and src[j] == "&":
            j += 1  # `>&2`, `<&0`, `>&-`: the target descriptor belongs to the operator
            while j < len(src) and (src[j].isdigit() or src[j] == "-"):
                j += 1
        op = fd + src[i:j]
        self.words.append(op)
        self.raws.append(op)
        self.redirect = True
        return j


def basename(word: str) -> str:
    """``/usr/bin/rm`` -> ``rm``: deny rules should not be dodged with an absolute path."""
    return posixpath.basename(word) if "/" in word else word
