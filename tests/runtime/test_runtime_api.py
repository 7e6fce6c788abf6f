from __future__ import annotations

import ast
import pathlib

import runtime


def test_every_public_name_is_exported_once_and_nothing_private_leaks() -> None:
    """__all__ lists each public name once, all of them exist, none is private."""
    assert len(runtime.__all__) == len(set(runtime.__all__))
    assert sorted(runtime.__all__) == runtime.__all__
    for name in runtime.__all__:
        assert not name.startswith("_")
        assert hasattr(runtime, name)
    public = {n for n in vars(runtime) if not n.startswith("_") and n != "annotations"}
    assert public == set(runtime.__all__)


def test_runtime_never_imports_agents() -> None:
    """The dependency points one way: agents -> runtime."""
    package = pathlib.Path(runtime.__file__).parent
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            assert not any(m == "agents" or m.startswith("agents.") for m in modules), path
