"""The critical-path guard counts what ``mv`` takes away: its sources (all operands but the
last, or all of them with ``-t``) are judged as ``rm``'s arguments are, in every mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.permissions import PermissionResultDeny

from .helpers import Recorder, decide, make_gate

MOVES_AWAY = [
    "mv ~ /tmp/x",
    "mv .. /tmp/x",
    "mv / x",
    "mv /usr /tmp/x",
    "mv -- .. /tmp/x",
    "mv -f ~/ /tmp/x",
    "mv -t /tmp ~",
    "mv -ft /tmp ~",
    "mv -t/tmp ..",
    "mv --target-directory=/tmp ..",
    "mv --target /tmp ..",
    "mv a ~ /tmp",
    "cd .. && mv proj /tmp/x",
    "mv $X /tmp/x",
    "sudo mv / x",
]

MOVES_WITHIN = [
    "mv a b",
    "mv a ..",
    "mv -t .. a",
    "mv --target-directory=.. a b",
    "mv src/a src/b",
    "mv -f a ~/b",
]


@pytest.mark.parametrize("command", MOVES_AWAY)
async def test_moving_a_critical_path_away_asks_in_every_mode(command: str, tmp_path: Path) -> None:
    """``mv ~ /tmp/x`` takes the home directory away as surely as ``rm -rf ~``: the
    critical-path guard asks under bypassPermissions too."""
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    callback = Recorder(PermissionResultDeny(message="no"))
    gate = make_gate(
        str(home / "proj"), mode="bypassPermissions", callback=callback, home=str(home)
    )
    outcome = await decide(gate, "Bash", {"command": command})
    assert outcome.decided_by == "callback", outcome


@pytest.mark.parametrize("command", MOVES_WITHIN)
async def test_a_move_that_takes_no_critical_path_away_stays_allowed(
    command: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    gate = make_gate(
        str(home / "proj"), mode="bypassPermissions", callback=Recorder(), home=str(home)
    )
    outcome = await decide(gate, "Bash", {"command": command})
    assert (outcome.behavior, outcome.decided_by) == ("allow", "mode"), outcome
