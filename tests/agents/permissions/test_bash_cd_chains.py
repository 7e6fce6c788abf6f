"""Directories followed through ``cd`` chains: linear in the line, judged as before.

A directory state was a set of tuples of ``cd`` targets, each ``cd`` copying its tuple one step
longer, so ``cd a && cd a && …`` cost the square of its length (0.57 s at 64 KB, holding the
interpreter). Places are now shared and made once per analysis; these tests compare that with
the tuples it replaced, the reference below, on generated chains: the same directories for every
command, write and read, and the same verdict from the gate.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import trio
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agents.permissions import PermissionResultDeny, _bash, _bash_commands, _bash_tree
from agents.permissions._bash import analyze
from agents.permissions._bash_model import MAX_DIRS, Analysis, Dirs, Place, spelled, steps
from agents.permissions._paths import absolute

from .helpers import Recorder, decide, make_gate

# -- the reference: directories as tuples, each cd copying its tuple ---------------------------


def _tuple_cd_dirs(dirs: Any, target: str, places: object) -> Any:
    moved = frozenset((*d, target) for d in dirs)
    return moved if len(moved) <= MAX_DIRS else None


@contextmanager
def tuple_directories() -> Iterator[None]:
    """The analysis as it was: each directory a tuple of ``cd`` targets."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_bash_commands, "cd_dirs", _tuple_cd_dirs)
        patch.setattr(_bash_tree, "cd_dirs", _tuple_cd_dirs)
        patch.setattr(_bash, "session_dirs", lambda: frozenset({()}))
        patch.setattr(_bash, "_resolve", _tuple_resolve)
        yield


def _tuple_resolve(steps: tuple[str, ...], cwd: str, home: str) -> str:
    """A directory resolved as it was: every ``cd`` target applied, for every command."""
    directory = cwd
    for step in steps:
        directory = absolute(step, directory, home)
    return directory


def _spelled(dirs: Any) -> frozenset[tuple[str, ...]] | None:
    if dirs is None or all(isinstance(d, tuple) for d in dirs):
        return dirs  # type: ignore[no-any-return]
    return spelled(dirs)


def _directories(analysis: Analysis) -> tuple[Any, ...]:
    """Every part of ``analysis`` with its directories spelled out as tuples."""
    return (
        [(c.text, _spelled(c.dirs)) for c in analysis.commands],
        [(w.target, _spelled(w.dirs)) for w in analysis.writes],
        [(r.target, _spelled(r.dirs)) for r in analysis.reads],
        analysis.opaque,
    )


# -- generated chains ------------------------------------------------------------------------

_TARGETS = ["a", "b", "..", "a/b", "/tmp", "~", "/repo/a", "''", '"$D"', "-", "../..", "sub dir"]
_MOVES = ["cd {}", "cd -P {}", "cd -- {}", "pushd {}", "popd", "cd", "env -C {} true"]
_ACTIONS = [
    "echo x > f",
    "echo x >> ../f",
    "rm -rf ..",
    "rm -rf *",
    "rm -rf ~",
    "mv .. /tmp/x",
    "cat < s",
    "cat s",
    "touch f",
    "sed -i s/a/b/ f",
    "ls",
    "git status",
]
_JOINS = [" && ", " && ", " && ", " || ", "; ", "\n", " | ", " & "]


@st.composite
def _pieces(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["move", "move", "move", "action", "group"] if depth < 2 else
                                ["move", "action"]))  # fmt: skip
    if kind == "move":
        target = draw(st.sampled_from(_TARGETS))
        if target == "sub dir":
            target = "'sub dir'"
        return draw(st.sampled_from(_MOVES)).format(target)
    if kind == "action":
        return draw(st.sampled_from(_ACTIONS))
    inner = draw(chains(depth + 1))
    shape = draw(st.sampled_from(["( {} )", "{{ {}; }}", "if true; then {}; fi",
                                  "if x; then {}; else cd b; fi", "echo $( {} )",
                                  "while x; do {}; done", "case $x in a) {};; esac"]))  # fmt: skip
    return shape.format(inner)


@st.composite
def chains(draw: st.DrawFn, depth: int = 0) -> str:
    """Chains of moves and actions joined by lists, pipelines and sequences, some grouped."""
    pieces = draw(st.lists(_pieces(depth), min_size=1, max_size=12 if depth == 0 else 4))
    line = pieces[0]
    for piece in pieces[1:]:
        line += draw(st.sampled_from(_JOINS)) + piece
    return line


#: Gates where the directory decides: a write or a read under ``a/a`` denied or allowed by a
#: rule, writes inside the working directory approved in acceptEdits mode, removals judged by
#: the critical-path guard.
_GATES: list[dict[str, Any]] = [
    {"mode": "acceptEdits", "deny": ["Edit(//repo/a/a/**)"]},
    {"mode": "default", "allow": ["Bash(cd *)", "Bash(echo *)", "Edit(//repo/a/a/**)"]},
    {"mode": "default", "allow": ["Bash(cd *)", "Bash(cat *)"], "deny": ["Read(//repo/a/a/s)"]},
    {"mode": "bypassPermissions"},
]


def _verdicts(line: str) -> list[tuple[str, str, str]]:
    async def decided() -> list[tuple[str, str, str]]:
        out = []
        for options in _GATES:
            callback = Recorder(PermissionResultDeny(message="asked"))
            gate = make_gate("/repo", callback=callback, home="/home/u", **options)
            outcome = await decide(gate, "Bash", {"command": line})
            out.append((outcome.behavior, outcome.decided_by, outcome.message or ""))
        return out

    return trio.run(decided)


CHAINS = settings(max_examples=300, deadline=None)


@CHAINS
@given(line=chains())
@example(line="cd a && cd a && echo x > f")
@example(line="cd a && cd .. && rm -rf ..")
@example(line="if x; then cd a; else cd a; fi && echo x > f")
@example(line="cd a || cd b; cd a && cat < b/s")
@example(line="cd a || cd b; " * 4 + "echo x > f")  # (more places than are followed)
def test_places_give_the_directories_tuples_gave(line: str) -> None:
    """Every command, write and read of a generated chain has the directories it had when each
    was a tuple of ``cd`` targets."""
    new = _directories(analyze(line))
    with tuple_directories():
        old = _directories(analyze(line))
    assert new == old


@CHAINS
@given(line=chains())
@example(line="cd a && cd a && echo x > f")
@example(line="cd a && cd a && cat s")
@example(line="cd b && cd .. && cd .. && touch f")
@example(line="cd .. && rm -rf proj")
@example(line="cd a || cd b; " * 4 + "touch f")
def test_places_give_the_verdicts_tuples_gave(line: str) -> None:
    """The gate decides a generated chain as it did with tuples of ``cd`` targets, in modes and
    under rules where the directory decides."""
    new = _verdicts(line)
    with tuple_directories():
        old = _verdicts(line)
    assert new == old


def test_the_comparison_sees_a_planted_difference() -> None:
    """The reference is not the code under test: a place made once per target alone (its
    parent forgotten) gives directories the tuples do not."""
    line = "cd a && cd b && echo x > f; cd b && echo y > g"
    good = _directories(analyze(line))

    def forgetful(dirs: Dirs, target: str, places: dict[Any, Place]) -> Dirs:
        assert dirs is not None
        root = next(iter(dirs))
        return frozenset({places.setdefault(("", target), Place(root, target))})  # type: ignore[index]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_bash_commands, "cd_dirs", forgetful)
        patch.setattr(_bash_tree, "cd_dirs", forgetful)
        planted = _directories(analyze(line))
    with tuple_directories():
        old = _directories(analyze(line))
    assert good == old
    assert planted != old


@pytest.mark.parametrize(("join", "cds"), [(" && ", 8000), (" || ", 2000), ("; ", 8000)])
def test_a_long_cd_chain_makes_at_most_one_place_per_cd(join: str, cds: int) -> None:
    """``cd a`` 8 000 times in a 64 KB line (2 000 joined by ``||``, within the pipes a line may
    hold) makes at most one place per ``cd``, each one step past its parent (a tuple of the
    whole sequence per ``cd`` was the quadratic cost), and the line, over the number of parts
    judged, asks."""
    line = join.join(["cd a"] * cds) + join + "ls"
    walkers: list[_bash_tree.Walker] = []
    walker_init = _bash_commands.SimpleCommands.__init__

    def recorded(walker: _bash_tree.Walker, *args: Any) -> None:
        walker_init(walker, *args)
        walkers.append(walker)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_bash_tree.Walker, "__init__", recorded)
        analysis = analyze(line)
    assert analysis.opaque and not analysis.commands
    (walker,) = walkers
    assert len(walker.places) <= cds
    if join == " && ":  # the one place the whole chain reaches
        assert max(len(steps) for steps in spelled(frozenset(walker.places.values())) or ()) == 8000


@CHAINS
@given(line=chains(), order=st.randoms(use_true_random=False))
def test_places_resolve_to_the_directories_their_steps_give(line: str, order: Any) -> None:
    """Each place is resolved once and kept: whatever the order in which the commands' places
    are resolved (and again, from another directory), each is the directory its ``cd``
    targets give applied one by one."""
    parts = [p.dirs for p in analyze(line).commands if p.dirs]
    order.shuffle(parts)
    for cwd, home in [("/repo", "/home/u"), ("/other/x", "/home/v"), ("/repo", "/home/u")]:
        for dirs in parts:
            expected = sorted(_tuple_resolve(steps(place), cwd, home) for place in dirs)
            assert sorted(_bash.resolve_dirs(dirs, cwd, home) or ()) == expected


def test_a_long_cd_chain_resolves_each_place_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """250 ``cd`` then a write, judged in acceptEdits mode: a directory resolved per ``cd``,
    not per ``cd`` before each command (32 000 resolutions held the event loop for 1.3 s with
    200-byte targets)."""
    line = " && ".join(["cd " + "d" * 200] * 250) + " && touch f"
    resolved: list[str] = []

    def counting(path: str, cwd: str, home: str) -> str:
        resolved.append(path)
        return absolute(path, cwd, home)

    monkeypatch.setattr(_bash, "absolute", counting)
    outcome = trio.run(decide, make_gate("/repo", mode="acceptEdits", home="/home/u"), "Bash",
                       {"command": line})  # fmt: skip
    assert outcome.behavior == "allow"
    assert 250 <= len(resolved) <= 2 * 250
