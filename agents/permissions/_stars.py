"""Wildcard patterns as regexes that never backtrack without bound.

A rule's ``*`` is the regex ``.*`` (``[^/]*`` within a path component), and the plain
translation of ``a*b*c*d`` is ``a.*b.*c.*d``: against a text full of ``b`` and ``c`` that the
match must finally reject, Python's backtracking engine tries every way to place the pieces,
``O(n^k)`` for ``k`` stars. A Bash rule ``Bash(x*x*x*x*y)`` held the event loop 17 s over a
command of 800 characters, a path rule ``Read(*a*a*a*a*b)`` 8 s over a path of 200, and
nothing can cancel a regex match: one hostile command or path stalled every agent of the tree.

The translation here matches the same texts in time linear in the text for each piece. Every
piece between two stars is found at its *leftmost* place after the piece before it, inside an
atomic group (``(?>.*?piece)``), which the engine never re-enters. That is no loss: each piece
has a fixed length, so its leftmost place also ends first, and whatever the rest of the pattern
could match after a later place it can match after the leftmost one (its own star absorbs the
difference). Only the last star stays an ordinary ``.*``: the piece after it must end where
the text (or what follows the pattern) does, and one star backtracks in linear time.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["stars"]


def stars(pieces: Sequence[str], any_char: str = ".") -> str:
    """The regex source of ``pieces[0] * pieces[1] * … * pieces[-1]`` where each ``*`` is any
    run of ``any_char`` (a regex of one character: ``.`` or ``[^/]``) and each piece is regex
    source matching texts of one length (escaped literals, one-character classes).

    >>> stars(["a", "b", "c"])
    'a(?>.*?b).*c'
    """
    if len(pieces) == 1:
        return pieces[0]
    middle = "".join(f"(?>{any_char}*?{piece})" for piece in pieces[1:-1])
    return f"{pieces[0]}{middle}{any_char}*{pieces[-1]}"
