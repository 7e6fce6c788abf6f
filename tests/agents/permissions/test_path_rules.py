"""Read/Edit rules: gitignore-style paths, `..` and symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.permissions import RuleSet
from agents.permissions._paths import (
    absolute,
    compile_path_pattern,
    expand_home,
    real,
    resolve,
)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A project directory with secrets, sources and a home directory beside it."""
    cwd = tmp_path / "proj"
    home = tmp_path / "home"
    for d in (cwd / "secrets", cwd / "src" / "pkg", cwd / "a", home / ".ssh"):
        d.mkdir(parents=True)
    (cwd / "secrets" / "k").write_text("key")
    (cwd / "src" / "pkg" / "m.py").write_text("")
    return cwd, home


def match(
    rules: RuleSet, kind: str, tool: str, tool_input: dict[str, str], tree: tuple[Path, Path]
) -> str | None:
    cwd, home = tree
    rule = rules.match(kind, tool, tool_input, cwd=str(cwd), home=str(home))  # type: ignore[arg-type]
    return None if rule is None else str(rule)


@pytest.mark.parametrize(
    ("spec", "anchor", "regex"),
    [
        ("./secrets/**", "cwd", "secrets(?:/.*)?"),
        ("/src/*.py", "cwd", "src/[^/]*\\.py(?:/.*)?"),
        ("//etc/passwd", "root", "etc/passwd(?:/.*)?"),
        ("~/.ssh/**", "home", "\\.ssh(?:/.*)?"),
        ("*.env", "cwd", "(?:.*/)?[^/]*\\.env(?:/.*)?"),
        ("src/**/test_*.py", "cwd", "src/(?:.*/)?test_[^/]*\\.py(?:/.*)?"),
        ("**", "cwd", ".*"),
        ("./a/../b", "cwd", "b(?:/.*)?"),
    ],
)
def test_path_patterns_compile_to_anchor_and_regex(spec: str, anchor: str, regex: str) -> None:
    """Each path form picks its anchor; globs become component-aware regexes."""
    assert compile_path_pattern(spec) == (anchor, regex)


PATH_CASES = [
    # (rule, tool, path (relative to cwd unless absolute; "~" = home), matches)
    ("Read(./secrets/**)", "Read", "secrets/k", True),
    ("Read(./secrets/**)", "Read", "./a/../secrets/k", True),
    ("Read(./secrets/**)", "Read", "secrets", True),
    ("Read(./secrets/**)", "Read", "secrets2/k", False),
    ("Read(./secrets/**)", "Read", "a/secrets/k", False),
    ("Read(secrets)", "Read", "a/secrets/k", True),
    ("Read(*.env)", "Read", "a/b/.env", True),
    ("Read(*.env)", "Read", "a/prod.env", True),
    ("Read(*.env)", "Read", "a/env", False),
    ("Read(/src/**)", "Read", "src/pkg/m.py", True),
    ("Read(src/**/*.py)", "Read", "src/pkg/m.py", True),
    ("Read(src/*.py)", "Read", "src/pkg/m.py", False),
    ("Read(//etc/**)", "Read", "/etc/passwd", True),
    ("Read(//etc/**)", "Read", "etc/passwd", False),
    ("Read(/etc/**)", "Read", "/etc/passwd", False),
    ("Read(~/.ssh/**)", "Read", "~/.ssh/id_rsa", True),
    ("Read(./secrets/**)", "Grep", "secrets", True),
    ("Read(./secrets/**)", "Glob", "secrets", True),
    ("Read(./secrets/**)", "Write", "secrets/k", False),
    ("Edit(./secrets/**)", "Write", "secrets/k", True),
    ("Edit(./secrets/**)", "Edit", "secrets/k", True),
    ("Edit(./secrets/**)", "MultiEdit", "secrets/k", True),
    ("Edit(./secrets/**)", "NotebookEdit", "secrets/k", True),
    ("Edit(./secrets/**)", "Read", "secrets/k", False),
]

_FIELD = {
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "Grep": "path",
    "Glob": "path",
}


@pytest.mark.parametrize(("rule", "tool", "path", "matches"), PATH_CASES)
def test_path_rules_follow_gitignore_semantics(
    rule: str, tool: str, path: str, matches: bool, tree: tuple[Path, Path]
) -> None:
    """//abs, ~/home, /cwd-relative, ./relative, bare names at any depth, `**`, `..`."""
    if path.startswith("~"):
        path = str(tree[1]) + path[1:]
    rules = RuleSet.from_strings(deny=[rule])
    assert (match(rules, "deny", tool, {_FIELD[tool]: path}, tree) is not None) is matches


def test_glob_and_grep_default_to_cwd(tree: tuple[Path, Path]) -> None:
    """Without a path, Glob and Grep are judged on the working directory."""
    rules = RuleSet.from_strings(deny=["Read(/**)"])
    assert match(rules, "deny", "Glob", {"pattern": "*.py"}, tree) == "Read(/**)"
    assert match(rules, "deny", "Grep", {"pattern": "x"}, tree) == "Read(/**)"


def test_glob_pattern_escaping_upwards_is_judged_where_it_lands(tree: tuple[Path, Path]) -> None:
    """A Glob pattern climbing out with `..` is matched against the directory it reaches."""
    rules = RuleSet.from_strings(allow=["Read(/**)"])
    assert match(rules, "allow", "Glob", {"pattern": "src/**/*.py"}, tree) == "Read(/**)"
    assert match(rules, "allow", "Glob", {"pattern": "../../etc/*"}, tree) is None


def test_bare_read_and_edit_rules_cover_their_tool_families(tree: tuple[Path, Path]) -> None:
    """A bare `Read` rule governs Glob and Grep; a bare `Edit` rule governs Write."""
    rules = RuleSet.from_strings(deny=["Read", "Edit"])
    assert match(rules, "deny", "Grep", {"pattern": "x"}, tree) == "Read"
    assert match(rules, "deny", "Write", {"file_path": "f"}, tree) == "Edit"
    assert match(rules, "deny", "Bash", {"command": "cat f"}, tree) is None


def test_deny_applies_to_a_symlink_into_a_denied_directory(tree: tuple[Path, Path]) -> None:
    """A link outside secrets/ whose target is inside is denied by the secrets rule."""
    cwd, _ = tree
    (cwd / "a" / "innocent").symlink_to(cwd / "secrets" / "k")
    rules = RuleSet.from_strings(deny=["Read(./secrets/**)"])
    assert match(rules, "deny", "Read", {"file_path": "a/innocent"}, tree) == "Read(./secrets/**)"


def test_deny_applies_to_a_denied_link_whatever_its_target(tree: tuple[Path, Path]) -> None:
    """A denied link name is denied even if its target is allowed."""
    cwd, _ = tree
    (cwd / "a" / "key.pem").symlink_to(cwd / "src" / "pkg" / "m.py")
    rules = RuleSet.from_strings(deny=["Read(*.pem)"])
    assert match(rules, "deny", "Read", {"file_path": "a/key.pem"}, tree) == "Read(*.pem)"


def test_allow_needs_both_the_link_and_its_target_to_match(tree: tuple[Path, Path]) -> None:
    """An allowed link pointing outside the allowed tree is not allowed."""
    cwd, _ = tree
    (cwd / "src" / "out").symlink_to(cwd / "secrets" / "k")
    (cwd / "src" / "in").symlink_to(cwd / "src" / "pkg" / "m.py")
    rules = RuleSet.from_strings(allow=["Read(./src/**)"])
    assert match(rules, "allow", "Read", {"file_path": "src/out"}, tree) is None
    assert match(rules, "allow", "Read", {"file_path": "src/in"}, tree) == "Read(./src/**)"


def test_a_symlinked_working_directory_still_allows_its_files(tmp_path: Path) -> None:
    """When cwd itself is a symlink, targets are compared with the resolved cwd."""
    real_dir = tmp_path / "real"
    (real_dir / "src").mkdir(parents=True)
    (real_dir / "src" / "f.py").write_text("")
    link = tmp_path / "link"
    link.symlink_to(real_dir)
    rules = RuleSet.from_strings(allow=["Read(./src/**)"])
    rule = rules.match(
        "allow", "Read", {"file_path": "src/f.py"}, cwd=str(link), home="/nonexistent"
    )
    assert str(rule) == "Read(./src/**)"


@pytest.mark.parametrize("bad", [None, 3, "", "a\x00b", "/" * 3, "~nobody/x"])
def test_odd_path_inputs_never_raise(bad: object, tree: tuple[Path, Path]) -> None:
    """Missing, non-string, empty or NUL-containing paths are handled without exceptions."""
    rules = RuleSet.from_strings(allow=["Read(./src/**)"], deny=["Read(//**)"])
    match(rules, "allow", "Read", {"file_path": bad}, tree)  # type: ignore[dict-item]
    match(rules, "deny", "Read", {"file_path": bad}, tree)  # type: ignore[dict-item]


def test_real_agrees_with_os_path_realpath(tmp_path: Path) -> None:
    """The fast resolver gives os.path.realpath's answer for links, new files and dangling links."""
    (tmp_path / "d").mkdir()
    (tmp_path / "ln").symlink_to(tmp_path / "d")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "x")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for rel in ["d", "ln", "ln/new/file", "dangling", "nope/a/b", "ln/../d", "loop"]:
        path = str(tmp_path / rel)
        assert real(path) == os.path.realpath(path), rel


# -- paths resolved as the kernel resolves them -----------------------------------------------


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """``proj/src/out -> outside/deep`` and ``proj/sub/l -> proj/inner``."""
    proj = tmp_path / "proj"
    for d in (proj / "src", proj / "sub", proj / "inner", tmp_path / "outside" / "deep"):
        d.mkdir(parents=True)
    (proj / "src" / "out").symlink_to(tmp_path / "outside" / "deep")
    (proj / "sub" / "l").symlink_to(proj / "inner")
    return proj


@pytest.mark.parametrize(
    ("spelled", "landed"),
    [
        ("src/out/../pwned", "../outside/pwned"),
        ("src/out/new/../x", "../outside/deep/x"),
        ("sub/l/../.env", ".env"),
        ("src/../sub/./l/../a", "a"),
        ("inner/../../proj/x", "x"),
    ],
)
def test_dotdot_is_applied_after_the_links_before_it(
    linked: Path, spelled: str, landed: str
) -> None:
    """`absolute` and `resolve` land where the kernel's `open` would."""
    expected = os.path.normpath(linked / landed)
    assert resolve(spelled, str(linked)) == expected
    assert absolute(spelled, str(linked), "/h") == expected
    if os.path.exists(linked / spelled):
        assert os.path.realpath(linked / spelled) == expected


def test_a_path_without_dotdot_keeps_its_spelling(linked: Path) -> None:
    """Links not followed by `..` are not resolved by `absolute` (rules see the link's name)."""
    assert absolute("src/out/f", str(linked), "/h") == f"{linked}/src/out/f"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("~", "/home/u"),
        ("~/notes", "/home/u/notes"),
        ("~root/x", "/root/x"),
        ("~root", "/root"),
        ("~no-such-user-here/x", "~no-such-user-here/x"),
        ("a/~", "a/~"),
    ],
)
def test_tilde_and_tilde_user_expand_once_for_everyone(path: str, expected: str) -> None:
    assert expand_home(path, "/home/u") == expected


def test_a_rule_on_a_home_directory_covers_its_tilde_user_spelling(tmp_path: Path) -> None:
    rules = RuleSet.from_strings(deny=["Read(//root/**)"])
    found = rules.match(
        "deny", "Glob", {"pattern": "*", "path": "~root"}, cwd=str(tmp_path), home="/h"
    )
    assert str(found) == "Read(//root/**)"


def test_deny_through_dotdot_after_a_symlink(linked: Path) -> None:
    """deny Read(./.env) covers `sub/l/../.env`; allow Edit(./src/**) does not cover
    `src/out/../pwned`."""
    home = str(linked.parent / "home")
    deny = RuleSet.from_strings(deny=["Read(./.env)"])
    found = deny.match("deny", "Read", {"file_path": "sub/l/../.env"}, cwd=str(linked), home=home)
    assert str(found) == "Read(./.env)"
    allow = RuleSet.from_strings(allow=["Edit(./src/**)"])
    spelled = {"file_path": "src/out/../pwned"}
    assert allow.match("allow", "Write", spelled, cwd=str(linked), home=home) is None
    inside = {"file_path": "src/new.py"}
    assert str(allow.match("allow", "Write", inside, cwd=str(linked), home=home)) == (
        "Edit(./src/**)"
    )


# -- hard links ----------------------------------------------------------------------------


def test_only_an_allow_rule_naming_a_hard_linked_file_approves_writing_it(
    tree: tuple[Path, Path], tmp_path: Path
) -> None:
    cwd, _ = tree
    (tmp_path / "outside.txt").write_text("x")
    os.link(tmp_path / "outside.txt", cwd / "src" / "pkg" / "twin.txt")
    call = {"file_path": "src/pkg/twin.txt"}
    wide = RuleSet.from_strings(allow=["Edit(./src/**)", "Edit(src/pkg/*.txt)"])
    assert match(wide, "allow", "Write", call, tree) is None
    exact = RuleSet.from_strings(allow=["Edit(./src/**)", "Edit(./src/pkg/twin.txt)"])
    assert match(exact, "allow", "Write", call, tree) == "Edit(./src/pkg/twin.txt)"
    single = {"file_path": "src/pkg/m.py"}  # one link: the wide rule still approves
    assert match(wide, "allow", "Write", single, tree) == "Edit(./src/**)"


# -- the matcher search tools use ----------------------------------------------------------


def test_read_deny_matcher_judges_the_listed_name_and_the_real_path(
    tree: tuple[Path, Path],
) -> None:
    cwd, home = tree
    rules = RuleSet.from_strings(deny=["Read(./secrets/**)", "Read(*.pem)"])
    denied = rules.read_deny_matcher(str(cwd), str(home))
    assert denied is not None
    assert denied(f"{cwd}/secrets/k", f"{cwd}/secrets/k")
    assert denied(f"{cwd}/a/innocent", f"{cwd}/secrets/k")  # a link into secrets/
    assert denied(f"{cwd}/a/key.pem", f"{cwd}/src/pkg/m.py")  # a denied name
    assert not denied(f"{cwd}/src/pkg/m.py", f"{cwd}/src/pkg/m.py")
    assert RuleSet.from_strings(deny=["Bash(rm *)"]).read_deny_matcher(str(cwd), "/h") is None
