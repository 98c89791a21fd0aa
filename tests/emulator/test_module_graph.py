"""The emulator's modules import one way: no circle, counting imports inside functions and relative
ones (`from . import executor`), which tests/test_architecture.py's package graph does not resolve."""
import ast
import graphlib
from pathlib import Path

import pytest

EMULATOR = Path(__file__).resolve().parents[2] / "harness" / "emulator"


def module_of(path: Path, root: Path) -> tuple[str, ...]:
    """('hip_runtime', 'bundle') for hip_runtime/bundle.py; a package's __init__ is the package."""
    parts = path.relative_to(root).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported(node, package: tuple[str, ...], known: set) -> set:
    """The emulator modules one import statement names (relative or through harness.emulator)."""
    if isinstance(node, ast.Import):
        heads = [alias.name.split(".") for alias in node.names]
        return {tuple(h[2:]) for h in heads if h[:2] == ["harness", "emulator"] and tuple(h[2:]) in known}
    if node.level:
        base = package[:len(package) - node.level + 1]
    elif (node.module or "").startswith("harness.emulator"):
        base = ()
        node = ast.ImportFrom(module=node.module.removeprefix("harness.emulator").lstrip(".") or None,
                              names=node.names, level=0)
    else:
        return set()
    target = base + tuple(node.module.split(".") if node.module else ())
    found = set()
    for alias in node.names:
        leaf = target + (alias.name,)
        found.add(leaf if leaf in known else target)
    return found & known


def import_graph(root: Path) -> dict[tuple, set]:
    files = {module_of(path, root): path for path in root.rglob("*.py")}
    graph = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module[:-1]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges = set()
        for node in ast.walk(tree):  # every depth: an import inside a function closes a circle too
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= imported(node, package, set(files))
        graph[module] = edges - {module}
    return graph


def circle(graph) -> list | None:
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as found:
        return found.args[1]
    return None


def test_a_function_level_relative_import_circle_is_found(tmp_path):
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "first.py").write_text("from .helpers import x\n")
    (tmp_path / "helpers.py").write_text("x = 1\n\ndef later():\n    from . import first\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("from .. import helpers\n")
    graph = import_graph(tmp_path)
    assert graph[("first",)] == {("helpers",)} and graph[("sub",)] == {("helpers",)}
    assert sorted(circle(graph)) == [("first",), ("first",), ("helpers",)]


def test_the_emulator_has_no_import_circle():
    graph = import_graph(EMULATOR)
    assert ("gpr_idx",) in graph[("executor",)]  # the graph sees the emulator's own imports
    assert ("hip_runtime", "bundle") in graph[("launch_hip",)]
    assert circle(graph) is None


@pytest.mark.parametrize("module", ["gpr_idx", "salu", "sopp", "valu_forms", "vcmp"])
def test_no_family_module_imports_the_executor(module):
    assert ("executor",) not in import_graph(EMULATOR)[(module,)]
