"""Read deny rules against a reading command's words that are not plain text.

The words bash makes before the command runs are known to the check: a brace expansion
(``.env{,}``, ``~/.ssh/{id_rsa,x}``, ``secret{1..3}``) is as static as the text it spells, so a
reading command's file it names is judged like any other. A word known only at run time
(``$X``) is still not followed, but it keeps its place among the arguments: before, it was left
out, so the next word took its place (``grep $X .env`` read ``.env`` as the pattern, and
``head -n $N .env`` as the count), and the file walked past the rule.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agents.permissions import PermissionResultDeny
from agents.permissions._bash import analyze
from agents.permissions._bash_words import BraceLimit, bash_words

from .helpers import Recorder, decide, make_gate

SSH = "Read(~/.ssh/**)"
ENV = "Read(./.env)"


async def outcome(tmp: Path, command: str, deny: str) -> str:
    """``allow`` (by the mode, nobody asked), or ``deny`` (by the rule, or asked and refused)."""
    refuse = Recorder(PermissionResultDeny(message="no"))
    gate = make_gate(
        str(tmp), mode="bypassPermissions", deny=[deny], callback=refuse, home=str(tmp / "home")
    )
    return (await decide(gate, "Bash", {"command": command})).behavior


@pytest.mark.parametrize(
    ("command", "deny"),
    [
        ("cat ~/.ssh/{id_rsa,}", SSH),
        ("cat ~/.ssh/{id_rsa,x}", SSH),
        ("cat ~/{.ssh,x}/id_rsa", SSH),
        ("cat {~/.ssh/id_rsa,x}", SSH),
        ("cat ~/.s{sh,}/id_rsa", SSH),
        ("cat ~/.ssh/id_{rsa,dsa}", SSH),
        ("cat ~/.ssh/id_rs{a..b}", SSH),
        ("head -c 100 ~/.ssh/{id_rsa,}", SSH),
        ("grep -r x ~/{.ssh,}", SSH),
        ("cp ~/.ssh/{id_rsa,} /tmp/", SSH),
        ("diff {~/.ssh/id_rsa,x}", SSH),
        ("cat < ~/.ssh/{id_rsa,}", SSH),
        ("cat {.env,x}", ENV),
        ("cat .e{nv,}", ENV),
        ("cat ./{.,}env", ENV),
        ("cat .env{,}", ENV),
        ("cat .{e{nv,x},y}", ENV),
        ("cat {'.env',x}", ENV),
        ('cat {".env",x}', ENV),
        ("cat {\\.env,x}", ENV),
        ("cat ~+/.env", ENV),
        ("timeout 5 cat {.env,x}", ENV),
        # a word known only at run time keeps its place
        ("grep $X .env", ENV),
        ('grep "$X" .env', ENV),
        ("grep {a,b} .env", ENV),
        ("grep -e $X .env", ENV),
        ("sed $S .env", ENV),
        ("awk $P .env", ENV),
        ("head -n $N .env", ENV),
        ("tail -c $N .env", ENV),
        ("$X cat .env", ENV),
    ],
)
async def test_a_file_the_shell_names_before_running_is_judged(
    tmp_path: Path, command: str, deny: str
) -> None:
    assert await outcome(tmp_path, command, deny) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "cat {a,b}.txt",
        "cat '{.env,x}'",  # quoted: one file of that very name
        'cat "{.env,x}"',
        "cat {.env}",  # no comma: not an expansion, the name itself
        "cat .env{a}",
        "grep $X notes.txt",
        "head -n $N notes.txt",
        "cat ~-/.env",  # the previous directory: known only at run time
        "cat $(echo .env)",
    ],
)
async def test_what_names_no_denied_file_still_passes(tmp_path: Path, command: str) -> None:
    assert await outcome(tmp_path, command, ENV) == "allow"


async def test_an_expansion_too_big_to_list_counts_as_reading_everything(tmp_path: Path) -> None:
    """Past the limit the words are too many to tell, and the answer must not be "nothing
    denied": any Read deny rule denies (as for a tree too big to walk). Without a Read rule
    there is nothing to protect, and it passes."""
    for word in ("x{1..100000000}", "{a,b}" * 40, "{" + ",".join(map(str, range(5000))) + "}"):
        assert await outcome(tmp_path, f"cat {word}", "Read(./no/such/file)") == "deny"
        assert await outcome(tmp_path, f"cat {word}", "Edit(./x)") == "allow"


# -- the expansion is bash's own


def test_brace_expansion_as_bash_spells_it() -> None:
    assert bash_words("a{b,c}d") == ["abd", "acd"]
    assert bash_words("{a,b}{1,2}") == ["a1", "a2", "b1", "b2"]
    assert bash_words("a{b,c{d,e}}f") == ["abf", "acdf", "acef"]
    assert bash_words("x{1..3}") == ["x1", "x2", "x3"]
    assert bash_words("{3..1}") == ["3", "2", "1"]
    assert bash_words("{01..3}") == ["01", "02", "03"]
    assert bash_words("{1..10..4}") == ["1", "5", "9"]
    assert bash_words("{a..e..2}") == ["a", "c", "e"]
    assert bash_words("{a}{b,c}") == ["{a}b", "{a}c"]
    assert bash_words("'{a,b}'") == ["{a,b}"]
    assert bash_words("{'a,b',c}") == ["a,b", "c"]
    assert bash_words("~+/x") == ["./x"]
    # bash's own reading: after a `..`, a comma in quotes makes the braces a one-word expansion
    assert bash_words("{..'x,y'}") == ["..x,y"]
    assert bash_words("{a..'b,'c}") == ["a..b,c"]
    assert bash_words("{'x,y'..}") == ["{x,y..}"]
    assert bash_words("{..\\,x}") == ["{..,x}"]
    # a `}` met before anything makes the braces an expression is passed over
    assert bash_words("{a}b,c}") == ["a}b", "c"]
    assert bash_words("x{}a,b}") == ["x}a", "xb"]
    assert bash_words("{}a,b}") == ["{}a,b}"]  # (`{}` opening the text is left alone)
    assert bash_words("{..3$'\\x2c'}") == ["..3,"]  # ($'…' is decoded before expansions)
    assert bash_words("plain") == ["plain"]
    # an unquoted empty word goes, a quoted one stays
    assert bash_words("{,}") == []
    assert bash_words("{a,}") == ["a"]
    assert bash_words("''{,}") == ["", ""]
    assert bash_words("$X") is None
    assert bash_words('"$X"') is None
    assert bash_words("`x`") is None
    assert bash_words("~-/x") is None
    with pytest.raises(BraceLimit):
        bash_words("{1..100000}", limit=1000)
    with pytest.raises(BraceLimit):
        bash_words("{a,b}" * 11, limit=1000)


_PIECES = [
    *("a", "b", "1", "3", "-", ".", "..", ",", "{", "}", "{}"),
    *("'x,y'", "''", "'..'", '","', '"{c,d}"', '"\\,"', "$'q,'", "$'\\x2c'"),
    *("\\,", "\\{", "\\}", "\\.", "\\\\"),
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=10).map("".join))
def test_the_words_are_the_ones_bash_makes(word: str) -> None:
    script = f"set -f; for w in {word}; do printf '%s\\0' \"$w\"; done"
    done = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, check=True)
    expected = done.stdout.decode().split("\0")[:-1]
    assert bash_words(word) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=10).map("".join))
@example("{/etc/x,{y}}")
@example("{a}b,c}")
@example("{..'x,y'}")
@example("x{}a,b}")
def test_a_word_the_analysis_calls_static_is_one_word_to_bash(word: str) -> None:
    """What every rule trusts: a word the analysis gives a value is that very word to bash,
    one word and not several (``{/etc/x,{y}}`` passed for one before)."""
    analysis = analyze(f"cat {word}")
    if analysis.opaque or len(analysis.commands) != 1:
        return
    words = analysis.commands[0].words
    if len(words) != 2 or words[1].value is None or words[1].glob:
        return
    script = f"set -f; for w in {word}; do printf '%s\\0' \"$w\"; done"
    done = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, check=True)
    assert done.stdout.decode().split("\0")[:-1] == [words[1].value]
