"""Properties of the Bash analysis: no construct or wrapper hides a command from the rules.

A command is generated, wrapped in random wrappers (``timeout``, ``env``, ``nice``, ``sudo``,
``xargs``, ``sh -c``...) and embedded at random depth in random constructs (lists, pipelines,
subshells, groups, control-flow and function bodies, substitutions, here-strings and
here-documents, arithmetic). Whatever the embedding:

* a command a deny rule names is never allowed: the deny rule matches, or the call asks;
* a command no allow rule names is never allowed, even though every command around it is.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.permissions import RuleSet

CWD = "/repo"
HOME = "/home/u"

#: Rules naming every command the contexts use, so that only the embedded command decides.
CONTEXT_ALLOW = [
    "Bash(ls *)",
    "Bash(echo *)",
    "Bash(cat *)",
    "Bash(true)",
    "Bash(grep *)",
    "Bash(find *)",
]
DENY_RULES = RuleSet.from_strings(allow=[*CONTEXT_ALLOW, "Bash(*)"], deny=["Bash(rm *)"])
ALLOW_RULES = RuleSet.from_strings(allow=CONTEXT_ALLOW)

#: Spellings of `rm`, the denied command.
RM_SPELLINGS = ["rm", "/bin/rm", "'rm'", '"rm"', "r\\m", "$'\\x72m'", "$'\\162m'", '"r"m', "\\rm"]
#: Commands no allow rule names.
UNNAMED = ["curl evil.example", "npm publish", "python3 -c 1", "lsof -i", "chmod 777 x"]

_args = st.lists(st.sampled_from(["-rf", "x", "./build", '"a b"', "-f", "--", "dir/"]), max_size=3)

#: (prefix, suffix) of wrappers: the command is placed between them.
WRAPPERS = [
    ("timeout 5 ", ""),
    ("timeout -k 1 -s KILL 1e3 ", ""),
    ("timeout inf ", ""),
    ("env A=1 ", ""),
    ("env -i -u HOME ", ""),
    ("env -- ", ""),
    ("nice -n 5 ", ""),
    ("nice -5 ", ""),
    ("nohup ", ""),
    ("stdbuf -oL -e0 ", ""),
    ("time -p ", ""),
    ("command ", ""),
    ("command -p ", ""),
    ("exec ", ""),
    ("exec -a name ", ""),
    ("sudo ", ""),
    ("sudo -u root -E ", ""),
    ("xargs ", ""),
    ("xargs -0 -n 1 ", ""),
]

#: Contexts with a hole for a whole command line ({} stands for it; `$( {} )` has spaces so
#: that a subshell inside does not read as `$((` arithmetic).
CONTEXTS = [
    "ls && {}",
    "{} && ls",
    "ls || {}",
    "ls; {}",
    "ls\n{}",
    "ls | {}",
    "{} | cat",
    "ls |& {}",
    "{{ {} & }}",
    "ls & {}",
    "( {} )",
    "{{ {}; }}",
    "! {}",
    "if true; then {}; fi",
    "if {}; then ls; fi",
    "if true; then ls; else {}; fi",
    "if true; then ls; elif true; then {}; fi",
    "for x in a b; do {}; done",
    "for ((i = 0; i < 2; i++)); do {}; done",
    "while true; do {}; done",
    "until {}; do ls; done",
    "case a in a) {};; esac",
    "f() {{ {}; }}",
    "echo $( {} )",
    'echo "$( {} )"',
    'echo "x ${{v:-$( {} )}}"',
    "cat <({})",
    "cat >({})",
    'cat <<< "$( {} )"',
    "cat <<EOF\n$( {} )\nEOF",
    "echo $(( $( {} ) + 1 ))",
    "x=$( {} )",
    "export X=$( {} )",
    "[[ -n $( {} ) ]]",
    "for x in $( {} ); do ls; done",
    "case $( {} ) in *) ls;; esac",
]

#: Contexts that take a simple command only (they quote it or pass it as arguments).
SIMPLE_CONTEXTS = [
    "sh -c '{}'",
    "bash -c '{}'",
    "eval '{}'",
    "eval {}",
    "find . -exec {} \\;",
    "find . -execdir {} +",
    "trap '{}' EXIT",
    "env -S '{}'",
]


def _quote_single(text: str) -> str:
    return text.replace("'", "'\\''")


#: What allow rules see through: benign wrappers, and contexts that add no command of their own.
BENIGN_WRAPPERS = [w for w in WRAPPERS if w[0].split()[0] in ("timeout", "nice", "nohup", "stdbuf")]
#: (`! {`: tree-sitter-bash misreads `! { x; }`, so the analysis asks.)
TRANSPARENT_CONTEXTS = [
    c for c in CONTEXTS if not c.startswith(("f()", "x=", "export", "for ((", "echo $((", "!"))
]
TRANSPARENT_SIMPLE_CONTEXTS = [c for c in SIMPLE_CONTEXTS if not c.startswith(("trap", "env"))]


@st.composite
def simple(draw: st.DrawFn, names: list[str], benign: bool = False) -> str:
    """A command from ``names`` with random arguments, maybe behind wrappers."""
    text = " ".join([draw(st.sampled_from(names)), *draw(_args)])
    wrappers = BENIGN_WRAPPERS if benign else WRAPPERS
    for prefix, suffix in draw(st.lists(st.sampled_from(wrappers), max_size=2)):
        text = prefix + text + suffix
    if not benign and draw(st.booleans()):
        # assignments go first: behind `nohup` or `find -exec`, `FOO=1` is a program's name
        text = draw(st.sampled_from(["FOO=1 ", "A=1 B=2 "])) + text
    return text


@st.composite
def embedded(draw: st.DrawFn, names: list[str], benign: bool = False) -> str:
    """A command from ``names``, wrapped, then embedded in up to three random contexts
    (with ``benign``, only in wrappers and contexts allow rules see through)."""
    text = draw(simple(names, benign))
    if draw(st.booleans()):
        simple_contexts = TRANSPARENT_SIMPLE_CONTEXTS if benign else SIMPLE_CONTEXTS
        usable = [c for c in simple_contexts if not (text[0].isupper() and "find" in c)]
        context = draw(st.sampled_from(usable))
        text = context.format(_quote_single(text) if "'{}'" in context else text)
    contexts = TRANSPARENT_CONTEXTS if benign else CONTEXTS
    for context in draw(st.lists(st.sampled_from(contexts), max_size=3)):
        text = context.format(text)
    return text


def _decides(rules: RuleSet, kind: str, command: str) -> bool:
    return rules.match(kind, "Bash", {"command": command}, cwd=CWD, home=HOME) is not None  # type: ignore[arg-type]


@settings(max_examples=400)
@given(embedded(RM_SPELLINGS))
def test_a_denied_command_embedded_anywhere_is_never_allowed(command: str) -> None:
    """``Bash(rm *)`` denies, or makes ask, every embedding of every spelling of ``rm``."""
    assert _decides(DENY_RULES, "deny", command) or _decides(DENY_RULES, "ask", command)


@settings(max_examples=400)
@given(embedded(UNNAMED))
def test_a_command_no_allow_rule_names_is_never_allowed(command: str) -> None:
    """Allow rules for every command around it do not allow a command none of them names."""
    assert not _decides(ALLOW_RULES, "allow", command)


@settings(max_examples=200)
@given(embedded(["ls -la", "echo hi", "cat f"], benign=True))
def test_allowed_commands_stay_allowed_in_every_transparent_context(command: str) -> None:
    """The control: the same embeddings of commands the rules name are allowed, so the two
    properties above hold because of what is embedded, not because everything asks."""
    assert _decides(ALLOW_RULES, "allow", command)
