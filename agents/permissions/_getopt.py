"""A command's arguments as GNU ``getopt_long`` reads them: one grammar for every command whose
file arguments the rules judge (the reading commands, the file-changing ones).

>>> list(gnu_options(["-rn5", "--", "-x"], frozenset({"-n"})))
[('-r', None), ('-n', '5'), (None, '-x')]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

__all__ = ["gnu_options"]


def gnu_options(
    args: Sequence[str | None],
    valued: frozenset[str],
    optional: frozenset[str] = frozenset(),
) -> Iterator[tuple[str | None, str | None]]:
    """Each argument of ``args`` (a command's, its name left out) as ``(None, operand)`` or
    ``(option, value)``.

    An option in ``valued`` takes a value, glued on (``-n5``, ``--lines=5``) or the next word
    (``-n 5``); one in ``optional`` takes only a glued value (``sed -i.bak``, ``--in-place``),
    "" when none; any other's value is None. Short flags clustered in one word come one at a
    time (``-rf`` is ``-r``, ``-f``), up to the first that takes a value. ``-`` is an operand,
    and ``--`` makes every word after it one. A word known only at run time (None) counts as
    an operand, or as the value of the option before it.
    """
    i = 0
    count = len(args)
    options_done = False
    while i < count:
        word = args[i]
        i += 1
        if word is None or options_done or word == "-" or not word.startswith("-"):
            yield None, word
            continue
        if word == "--":
            options_done = True
            continue
        if not word.startswith("--") and len(word) > 2:  # a cluster: `-rn`, `-n5`, `-i.bak`
            for k in range(1, len(word)):
                option = "-" + word[k]
                if option in valued or option in optional:
                    value = word[k + 1 :]
                    glued = bool(value)
                    break
                yield option, None
            else:
                continue
        else:
            option, eq, value = word.partition("=")
            glued = bool(eq)
            if option not in valued and option not in optional:
                yield option, None
                continue
        if glued or option in optional:
            yield option, value
        else:  # the next word
            yield option, args[i] if i < count else ""
            i += 1
