"""What Read shows of a text file: its lines numbered as ``cat -n`` prints them, each cut at
``MAX_LINE_CHARS`` and all at ``MAX_READ_CHARS``, read so that neither a huge line nor a huge
window is ever held whole (a file of one 300 MB line costs a few megabytes to read).
"""

from __future__ import annotations

import os
from typing import IO

import attrs

__all__ = [
    "DEFAULT_READ_LIMIT",
    "ENCODING",
    "ERRORS",
    "MAX_LINE_CHARS",
    "MAX_READ_CHARS",
    "Window",
    "count_lines",
    "numbered",
    "read_line",
    "read_slice",
]

#: Lines returned by Read when no ``limit`` is given (Claude Code's default).
DEFAULT_READ_LIMIT = 2000
#: Characters kept of one line; the rest is cut with a marker.
MAX_LINE_CHARS = 2000
#: Characters of numbered lines Read returns at most, whatever ``limit`` asks: the default
#: window of the longest lines fits, and a larger ``limit`` stops at a line boundary with a
#: note saying so (the memory a read holds, and what reaches the model, stay bounded).
MAX_READ_CHARS = DEFAULT_READ_LIMIT * (MAX_LINE_CHARS + 64)
ENCODING = "utf-8"
ERRORS = "surrogateescape"

_BINARY_EXTENSIONS = frozenset(
    """.bmp .ico .tiff .tif .psd .pdf .zip .gz .tgz .bz2 .xz .zst .7z .rar .tar .jar .war .ear
    .class .exe .dll .so .dylib .o .a .lib .obj .pyc .pyo .whl .egg .wasm .bin .dat .db .sqlite
    .sqlite3 .mp3 .mp4 .m4a .wav .flac .ogg .avi .mov .mkv .webm .woff .woff2 .ttf .otf .eot
    .deb .rpm .dmg .iso .img .parquet .npy .npz .pkl .pickle .h5 .onnx .pt .safetensors""".split()  # noqa: SIM905 - a word list reads better
)


_LINE_CUT = "... [line truncated]"


def numbered(lines: list[str], first: int) -> str:
    """``cat -n`` format: the line number right-aligned in 6 columns, a tab, the line."""
    out = []
    for n, line in enumerate(lines, start=first):
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + _LINE_CUT
        out.append(f"{n:>6}\t{line}")
    return "\n".join(out)


def numbered_size(n: int, line: str) -> int:
    """Characters line ``n`` takes in :func:`numbered`'s text, its newline included."""
    shown = len(line) if len(line) <= MAX_LINE_CHARS else MAX_LINE_CHARS + len(_LINE_CUT)
    return max(6, len(str(n))) + 2 + shown


def _looks_binary(path: str, head: bytes) -> bool:
    ext = os.path.splitext(path)[1].lower()
    return ext in _BINARY_EXTENSIONS or b"\x00" in head


#: Bytes of a line read at most: enough for ``MAX_LINE_CHARS + 1`` characters of UTF-8, so a
#: longer line is known to be cut; the rest of it is skipped without being kept.
_LINE_HEAD_BYTES = 4 * (MAX_LINE_CHARS + 1)
#: Bytes read at a time while skipping (or counting) past what is kept.
_SKIP_BYTES = 1 << 20


def read_line(f: IO[bytes]) -> str | None:
    """The next line of ``f`` as Read shows it (its line end stripped; a line longer than
    ``MAX_LINE_CHARS`` as its first ``MAX_LINE_CHARS + 1`` characters, which ``numbered``
    cuts with its marker), or None at the end.

    At most ``_LINE_HEAD_BYTES`` of the line are held: a file of one line of gigabytes costs
    no more memory than a short one.
    """
    head = f.readline(_LINE_HEAD_BYTES)
    if not head:
        return None
    if len(head) < _LINE_HEAD_BYTES or head.endswith(b"\n"):
        return head.decode(ENCODING, ERRORS).rstrip("\r\n")
    only_line_ends = True  # whether the rest of the line is CRs only (then stripped)
    while rest := f.readline(_SKIP_BYTES):
        if only_line_ends and rest.strip(b"\r\n"):
            only_line_ends = False
        if rest.endswith(b"\n"):
            break
    text = head.decode(ENCODING, ERRORS)
    if only_line_ends and len(stripped := text.rstrip("\r\n")) <= MAX_LINE_CHARS:
        return stripped  # a short line followed by a long run of CRs
    return text[: MAX_LINE_CHARS + 1]


@attrs.frozen
class Window:
    """What Read shows of a text file: the numbered lines, how many, whether more follow and
    whether ``MAX_READ_CHARS`` stopped it before ``limit`` did."""

    text: str = ""
    count: int = 0
    more: bool = False
    capped: bool = False
    binary: bool = False


def read_slice(f: IO[bytes], path: str, start: int, limit: int) -> Window:
    """Lines ``start..start+limit`` (0-based) of a text file, numbered, at most
    ``MAX_READ_CHARS`` characters of them (at least one line).

    Stops reading as soon as one line past the window is seen, so a window near the top of a
    huge file costs only that much I/O; each line is read through :func:`read_line`, so a huge
    line costs no memory.
    """
    lines: list[str] = []
    head = f.read(8192)
    if _looks_binary(path, head):
        return Window(binary=True)
    f.seek(0)
    i = 0
    size = -1  # the text's characters so far (no newline before the first line)
    while (line := read_line(f)) is not None:
        if i >= start:
            if len(lines) == limit:
                return Window(numbered(lines, start + 1), len(lines), more=True)
            size += numbered_size(i + 1, line)
            if size > MAX_READ_CHARS and lines:
                return Window(numbered(lines, start + 1), len(lines), more=True, capped=True)
            lines.append(line)
        i += 1
    return Window(numbered(lines, start + 1), len(lines))


def count_lines(f: IO[bytes]) -> int:
    """Lines in ``f`` (a last line without its line end counts), read in bounded pieces."""
    f.seek(0)
    count = 0
    last = b"\n"
    while chunk := f.read(_SKIP_BYTES):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")
