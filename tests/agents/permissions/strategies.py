"""Hypothesis strategies for shell command lines with a known decomposition into parts."""

from __future__ import annotations

from hypothesis import strategies as st

#: Command names and whether the rules used with these strategies allow / deny them.
NAMES = ("npm", "git", "ls", "echo", "rm", "curl", "lsof", "cat")
OPERATORS = ("&&", "||", ";", "|", "|&", "&", "\n")
WRAPPERS = ("", "timeout 5 ", "time ", "nice -n 3 ", "nohup ", "stdbuf -oL ", "command ")

_args = st.lists(
    st.sampled_from(["-la", "test", "status", "x", "./build", "'a b'", '"c d"', "main", "-rf"]),
    max_size=3,
)


@st.composite
def simple_parts(draw: st.DrawFn) -> tuple[str, list[tuple[str, list[str]]]]:
    """A simple command (maybe wrapped) and the (name, args) parts it runs."""
    name = draw(st.sampled_from(NAMES))
    args = draw(_args)
    wrapper = draw(st.sampled_from(WRAPPERS))
    text = wrapper + " ".join([name, *args])
    return text, [(name, args)]


@st.composite
def parts(draw: st.DrawFn) -> tuple[str, list[tuple[str, list[str]]]]:
    """A simple command, or an ``echo`` whose argument substitutes another command."""
    text, runs = draw(simple_parts())
    style = draw(st.sampled_from(["plain", "dollar", "backtick", "quoted"]))
    if style == "dollar":
        return f"echo $({text})", [("echo", ["$(...)"]), *runs]
    if style == "backtick":
        return f"echo `{text}`", [("echo", ["`...`"]), *runs]
    if style == "quoted":
        return f'echo "x $({text})"', [("echo", ["..."]), *runs]
    return text, runs


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[str, list[tuple[str, list[str]]]]:
    """Several parts joined by random operators, with every part they run."""
    pieces = draw(st.lists(parts(), min_size=1, max_size=4))
    text = pieces[0][0]
    runs = list(pieces[0][1])
    for piece_text, piece_runs in pieces[1:]:
        operator = draw(st.sampled_from(OPERATORS))
        spacing = draw(st.sampled_from(["", " "]))
        text += f"{spacing}{operator}{spacing}{piece_text}"
        runs += piece_runs
    return text, runs


#: Names a random tree is built from.
TREE_NAMES = ("a", "b", "c")


@st.composite
def trees(draw: st.DrawFn) -> dict[str, list[tuple[str, ...]]]:
    """A small tree of directories, files and symlinks below a root holding ``proj`` (the
    working directory) and ``out`` (outside it): paths as component tuples, links with their
    target (a path from the root, made relative or absolute at build time)."""
    dirs: list[tuple[str, ...]] = [("proj",), ("out",)]
    for _ in range(draw(st.integers(0, 5))):
        parent = draw(st.sampled_from(dirs))
        if len(parent) < 4:
            child = (*parent, draw(st.sampled_from(TREE_NAMES)))
            if child not in dirs:
                dirs.append(child)
    files: list[tuple[str, ...]] = []
    for _ in range(draw(st.integers(1, 4))):
        name = (*draw(st.sampled_from(dirs)), "f" + draw(st.sampled_from(TREE_NAMES)))
        if name not in files and name not in dirs:
            files.append(name)
    links: list[tuple[str, ...]] = []
    placed: set[tuple[str, ...]] = set()
    for _ in range(draw(st.integers(1, 4))):
        at = (*draw(st.sampled_from(dirs)), "l" + draw(st.sampled_from(TREE_NAMES)))
        target = draw(st.sampled_from(dirs + files))
        relative = draw(st.booleans())
        if at not in placed:
            placed.add(at)
            links.append((*at, "->", "rel" if relative else "abs", *target))
    return {"dirs": dirs, "files": files, "links": links}


@st.composite
def spellings(draw: st.DrawFn) -> str:
    """A path spelled from the working directory with names, links, `.` and `..`."""
    words = st.sampled_from(
        [*TREE_NAMES, *(f"f{n}" for n in TREE_NAMES), *(f"l{n}" for n in TREE_NAMES)] * 2
        + ["..", "..", "..", "."]
    )
    parts = draw(st.lists(words, min_size=1, max_size=6))
    return "/".join(parts)
