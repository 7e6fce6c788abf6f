"""A file's text held as pieces, so that Edit never makes one C call over the whole of it.

CPython holds the interpreter for the whole of one C call, and a worker thread does not change
that: decoding 100 MB, finding in it, replacing, splitting, joining or encoding it is one call
each, and while one runs the event loop cannot run either (an Edit of a 100 MB file held it
about 0.5 s). A :class:`PiecedText` is the decoded text as strings of at most ``piece``
characters, and each of its operations works piece by piece or window by window: no call is
over much more than one piece (or the needle's length), so the loop gets the interpreter back
every few milliseconds. A piece is 256 Ki characters: decoding 256 KiB of bytes that are not
UTF-8 (each one escaped) takes about 2.5 ms, the slowest piece there is.

Each operation gives exactly what the same operation on the joined string gives: the text is
decoded by an incremental decoder (which holds back a sequence cut at a piece's end), needles
are found in windows that overlap by ``len(needle) - 1``, and :meth:`PiecedText.replace_all`
makes the leftmost non-overlapping replacements ``str.replace`` makes (see there how a window
knows where the previous one's matches ended). A property test compares every operation with
the joined string's, with pieces of a few characters.
"""

from __future__ import annotations

import bisect
import codecs
from collections.abc import Iterable, Iterator
from itertools import accumulate
from typing import IO

from ._text_lines import ENCODING, ERRORS

__all__ = ["PIECE", "PiecedText"]

#: Characters of a piece (and bytes read and decoded at a time).
PIECE = 256 * 1024


class PiecedText:
    """A text as pieces of at most ``piece`` characters (none empty; short parts given one
    after another are joined into one piece), never changed until :meth:`release` empties it.

    >>> text = PiecedText.of("one\\ntwo\\nthree", piece=4)
    >>> text.find("two"), len(text), text.replace_all("o", "0").join()
    (4, 13, '0ne\\ntw0\\nthree')
    """

    __slots__ = ("_length", "_one", "_pieces", "_starts", "piece")

    def __init__(self, parts: Iterable[str], piece: int = PIECE) -> None:
        if piece < 1:
            raise ValueError(f"piece must be >= 1, got {piece}")
        pieces: list[str] = []
        held: list[str] = []  # parts joined into the next piece, of `size` characters
        size = 0
        for part in parts:
            if size + len(part) > piece:
                if held:
                    pieces.append("".join(held))  # (one part: the part itself, not a copy)
                # (a whole str slice is the str itself)
                pieces.extend(part[i : i + piece] for i in range(0, len(part) - piece, piece))
                rest = len(part) - (len(part) - 1) % piece - 1
                held, size = [part[rest:]], len(part) - rest
            elif part:
                held.append(part)
                size += len(part)
        if held:
            pieces.append("".join(held))
        self.piece = piece
        self._pieces = pieces
        self._starts = [0, *accumulate(map(len, pieces))]  # piece i is [starts[i], starts[i+1])
        self._length = self._starts[-1]
        # a text of one piece (most files) is searched as the string it is, without windows
        self._one = pieces[0] if len(pieces) == 1 else "" if not pieces else None

    @classmethod
    def of(cls, text: str, piece: int = PIECE) -> PiecedText:
        """``text`` cut into pieces."""
        return cls([text], piece)

    @classmethod
    def read(cls, f: IO[bytes], piece: int = PIECE) -> PiecedText:
        """The rest of ``f`` decoded as ``f.read().decode(ENCODING, ERRORS)`` decodes it, read
        and decoded ``piece`` bytes at a time."""
        decoder = codecs.getincrementaldecoder(ENCODING)(ERRORS)
        parts = []
        while chunk := f.read(piece):
            parts.append(decoder.decode(chunk))
        parts.append(decoder.decode(b"", final=True))
        return cls(parts, piece)

    def __len__(self) -> int:
        return self._length

    def join(self) -> str:
        """The whole text as one string (one call over all of it: for tests and failures)."""
        return "".join(self._pieces)

    def encoded(self) -> list[bytes]:
        """The text encoded as ``join().encode(ENCODING, ERRORS)`` encodes it, piece by piece.

        An unencodable character (a lone surrogate that no byte was decoded to: only a hook's
        rewrite of an input can bring one) raises the very error the whole string's encoding
        raises, with its position in the whole text.
        """
        try:
            return [piece.encode(ENCODING, ERRORS) for piece in self._pieces]
        except UnicodeEncodeError:
            self.join().encode(ENCODING, ERRORS)  # raises the same error, placed in the whole
            raise

    def release(self) -> None:
        """Let go of the pieces one at a time; the text is empty after.

        A list is freed in one call, which holds the interpreter while it frees every piece
        (a 100 MB file's text that is not UTF-8: 15 ms); dropped one by one, each is a step
        of its own.
        """
        pieces = self._pieces
        self._one = ""
        self._starts = [0]
        self._length = 0
        while pieces:
            pieces.pop()

    def blank(self) -> bool:
        """Whether the text is whitespace only (``not text.strip()``)."""
        return all(piece.isspace() for piece in self._pieces)

    # --- finding ---------------------------------------------------------------------------

    def _index(self, at: int) -> int:
        """The piece holding position ``at`` (``0 <= at < len(self)``)."""
        return bisect.bisect_right(self._starts, at) - 1

    def _parts(self, start: int, end: int) -> Iterator[str]:
        """The pieces' parts that make ``text[start:end]`` (whole pieces are not copied)."""
        if start >= end:
            return
        i = self._index(start)
        while i < len(self._pieces) and self._starts[i] < end:
            at = self._starts[i]
            yield self._pieces[i][max(start - at, 0) : end - at]
            i += 1

    def slice(self, start: int, end: int) -> str:
        """``text[start:end]`` (one call over that much of it)."""
        if self._one is not None:
            return self._one[start:end]
        return "".join(self._parts(start, end))

    def _windows(self, start: int, width: int) -> Iterator[tuple[int, str]]:
        """``(s, text[s:s + step + width - 1])`` for ``s`` from ``start`` by ``step``, while
        such a window can hold ``width`` characters: each string of ``width`` characters
        starting at or after ``start`` lies whole in the window of exactly one ``s``, the one
        with ``s <= its start < s + step``."""
        step = max(self.piece, width)
        s = start
        while s + width <= self._length:
            yield s, self.slice(s, min(s + step + width - 1, self._length))
            s += step

    def find(self, needle: str, start: int = 0) -> int:
        """``text.find(needle, start)`` for a non-empty ``needle`` and ``start >= 0``."""
        if self._one is not None:
            return self._one.find(needle, start)
        for s, window in self._windows(start, len(needle)):
            at = window.find(needle)
            if at != -1:
                return s + at
        return -1

    def count_overlapping(self, needle: str) -> int:
        """Occurrences of a non-empty ``needle``, overlapping ones included."""
        count = 0
        for _, window in self._windows(0, len(needle)):
            at = window.find(needle)
            while at != -1:  # (each starts before the window's step: its own)
                count += 1
                at = window.find(needle, at + 1)
        return count

    def count(self, char: str, start: int, end: int) -> int:
        """``text.count(char, start, end)`` for one character."""
        if self._one is not None:
            return self._one.count(char, start, end)
        return sum(part.count(char) for part in self._parts(start, end))

    def find_char(self, char: str, start: int) -> int:
        """``text.find(char, start)`` for one character, piece by piece."""
        if self._one is not None:
            return self._one.find(char, start)
        i = self._index(start) if start < self._length else len(self._pieces)
        while i < len(self._pieces):
            at = self._starts[i]
            found = self._pieces[i].find(char, max(start - at, 0))
            if found != -1:
                return at + found
            i += 1
        return -1

    def rfind_char(self, char: str, end: int) -> int:
        """``text.rfind(char, 0, end)`` for one character, piece by piece from ``end`` back."""
        if self._one is not None:
            return self._one.rfind(char, 0, end)
        end = min(end, self._length)
        i = self._index(end - 1) if end > 0 else -1
        while i >= 0:
            at = self._starts[i]
            found = self._pieces[i].rfind(char, 0, end - at)
            if found != -1:
                return at + found
            i -= 1
        return -1

    def lines(self, at: int, back: int, count: int, width: int) -> list[str]:
        """``count`` lines (fewer at the end) from the one ``back`` lines above the line holding
        ``at``, each cut at ``width`` characters: ``[line[:width] for line in
        text.split("\\n")[k - back : k - back + count]]`` where line ``k`` holds ``at``.
        Only those lines are looked for, and only so much of each is copied."""
        end = at
        for _ in range(back + 1):  # the line end before the first line (-1: none)
            end = self.rfind_char("\n", end)
        lines = []
        for _ in range(count):
            start = end + 1
            end = self.find_char("\n", start)
            stop = self._length if end == -1 else end
            lines.append(self.slice(start, min(stop, start + width)))
            if end == -1:
                break
        return lines

    # --- edited copies ---------------------------------------------------------------------

    def replaced(self, start: int, length: int, new: str) -> PiecedText:
        """``text[:start] + new + text[start + length:]`` (pieces shared, not copied)."""
        parts = [*self._parts(0, start), new, *self._parts(start + length, self._length)]
        return PiecedText(parts, self.piece)

    def replace_all(self, old: str, new: str) -> PiecedText:
        """``text.replace(old, new)`` for a non-empty ``old``, window by window.

        A window starts where ``str.replace``'s scan would be searching from: the text's
        start, or the end of the window's last match (found as below), or a place that no
        occurrence starts before since then. It is replaced up to the end of its last match
        by ``str.replace`` (the leftmost matches of a string are those of its prefix); past
        that, up to where a match may run out of the window, no occurrence starts.
        """
        width = len(old)
        step = max(self.piece, width)
        parts: list[str] = []
        at = 0
        while at < self._length:
            last = min(at + step + width - 1, self._length)
            window = self.slice(at, last)
            # the window's text from `done` on is left to the next window
            done = len(window) if last == self._length else len(window) - width + 1
            found = window.rfind(old)
            if found != -1:
                end = _end_of_last_match(window, old, found)
                parts.append(window[:end].replace(old, new))
                done = max(done, end)
                parts.extend(self._parts(at + end, at + done))
            else:
                parts.extend(self._parts(at, at + done))
            at += done
        return PiecedText(parts, self.piece)


def _end_of_last_match(window: str, old: str, last: int) -> int:
    """Where the last of ``str.replace``'s matches of ``old`` in ``window`` ends, given the
    last place ``old`` occurs (``last``).

    That match starts within ``len(old)`` before ``last`` (the scan would find ``last``
    otherwise), so at ``last`` itself unless another occurrence overlaps it from the left
    (``old`` then repeats itself, as ``aa`` does in ``aaaa``). Then it is the shortest prefix
    of the window holding as many (non-overlapping, leftmost) matches as the window:
    ``str.count`` counts them, a binary search over ``len(old)`` places finds it.
    """
    width = len(old)
    if window.find(old, max(last - width + 1, 0), last + width - 1) == -1:
        return last + width
    matches = window.count(old)
    low, high = last + 1, last + width
    while low < high:
        middle = (low + high) // 2
        if window.count(old, 0, middle) == matches:
            high = middle
        else:
            low = middle + 1
    return low
