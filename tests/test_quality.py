"""The code stays typed, linted and layered: mypy --strict, ruff, runtime ↛ agents, the layers
of the agent loop, and private names kept private."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_mypy_strict_is_clean() -> None:
    """mypy --strict (configured in pyproject) finds nothing in runtime/ and agents/."""
    done = _run("mypy")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_is_clean() -> None:
    """ruff check finds nothing in the code, tests and benchmarks."""
    done = _run("ruff", "check", "runtime", "agents", "tests", "benchmarks")
    assert done.returncode == 0, done.stdout + done.stderr


def test_runtime_never_imports_agents() -> None:
    """The kernel stays independent of the SDK built on it."""
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "runtime").rglob("*.py")
        if "import agents" in path.read_text() or "from agents" in path.read_text()
    ]
    assert offenders == []


def test_import_agents_does_not_import_anthropic() -> None:
    """import agents stays cheap: the anthropic client loads only when its backend is used."""
    code = "import sys, agents, agents.backends; print('anthropic' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# -- the layers of agents/ -------------------------------------------------------------------------

#: Packages of the agent loop, lowest first. A module may import from its own layer and those
#: below it: ``_assembly → _tree → _features → _loop → the base modules`` (messages, options,
#: tools, backends, sessions, hooks, permissions, runtime), which import none of the four.
LAYERS = ("agents._loop", "agents._features", "agents._tree", "agents._assembly")
#: Above every layer: the public facade and the programs built on it.
TOP = (
    "agents",
    "agents.cli",
    "agents.cli_run",
    "agents._demo",
    "agents.testing",
    "agents.bench",
    "agents.bench_cli",
    "agents.scaleout",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[str]:
    """Every module ``path`` imports (relative imports resolved; ``from p import m`` counts as
    importing ``p.m`` when that is a module), inside functions and ``TYPE_CHECKING`` too."""
    import ast

    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                as_path = ROOT.joinpath(*sub.split("."))
                is_module = as_path.with_suffix(".py").exists() or as_path.is_dir()
                found.append(sub if is_module else module)
    return found


def _layer(module: str) -> int | None:
    """The layer index of ``module``; -1 for the base modules; None for the top."""
    for index, layer in enumerate(LAYERS):
        if module == layer or module.startswith(layer + "."):
            return index
    if module in TOP[:1] or any(module == t or module.startswith(t + ".") for t in TOP[1:]):
        return None
    return -1


def test_agent_modules_import_only_downwards() -> None:
    """_assembly → _tree → _features → _loop → base: never up, and the base never into them."""
    wrong = []
    for path in sorted((ROOT / "agents").rglob("*.py")):
        importer = _module_name(path)
        own = _layer(importer)
        if own is None:
            continue
        for imported in _imports(path):
            if not imported.startswith("agents"):
                continue
            theirs = _layer(imported)
            if theirs is None or theirs > own:
                wrong.append(f"{importer} imports {imported}")
    assert wrong == []


#: Private modules imported from outside their package, each with its reason (none today).
PRIVATE_IMPORTS_ALLOWED: frozenset[tuple[str, str]] = frozenset()


def test_no_private_name_is_imported_from_another_module() -> None:
    """A name starting with ``_`` stays in its module, and a private module in its package."""
    import ast

    wrong = []
    for path in sorted((ROOT / "agents").rglob("*.py")):
        importer = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
                continue
            wrong.extend(
                f"{importer} imports {alias.name}"
                for alias in node.names
                if alias.name.startswith("_")
            )
        for imported in _imports(path):
            parts = imported.split(".")
            if parts[0] not in ("agents", "runtime"):
                continue
            for depth, part in enumerate(parts):
                owner = ".".join(parts[:depth])
                private = part.startswith("_") and not part.startswith("__")
                allowed = (importer, ".".join(parts[: depth + 1])) in PRIVATE_IMPORTS_ALLOWED
                if private and not allowed and not (importer + ".").startswith(owner + "."):
                    wrong.append(f"{importer} imports {imported} (private to {owner})")
                    break
    assert wrong == []


def _attribute_writes(path: Path) -> list[tuple[str, str, int]]:
    """``(object, attribute, line)`` for every ``obj.attr = ...`` / ``obj.attr += ...`` in the
    file, ``object`` spelled as in the source (``loop``, ``self.loop``, ``child.links``)."""
    import ast

    writes = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute):
                writes.append((ast.unparse(target.value), target.attr, node.lineno))
    return writes


#: What an agent's loop is called where other modules hold one.
_LOOP_NAMES = frozenset({"loop", "main", "child", "parent", "self.loop", "handle.main"})


def test_an_agent_loops_fields_are_written_by_the_loop_and_its_links_by_the_tree() -> None:
    """No module but ``agents._loop.agent`` assigns an AgentLoop field, and none outside
    ``agents._tree`` assigns its tree links (``links.actor`` ...). The history is written
    through its own methods (no ``history[...] =``)."""
    import attrs

    from agents._loop.agent import AgentLoop

    fields = {f.name for f in attrs.fields(AgentLoop)} | {"_tool_calls", "_turn_scope"}
    wrong = []
    for path in sorted((ROOT / "agents").rglob("*.py")):
        module = _module_name(path)
        for obj, attr, line in _attribute_writes(path):
            where = f"{module}:{line}: {obj}.{attr}"
            if obj in _LOOP_NAMES and attr in fields and module != "agents._loop.agent":
                wrong.append(where)
            if obj.endswith("links") and not module.startswith("agents._tree"):
                wrong.append(where)
        for number, text in enumerate(path.read_text().splitlines(), 1):
            if "history[" in text and "] =" in text:  # a slice or item of a history replaced
                wrong.append(f"{module}:{number}: {text.strip()}")
    assert wrong == []
