"""The package's shape: imports run one way (no cycle), no module grows past ~450 lines, the child stays apart."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "harness"
MAX_LINES = 450


def harness_imports(path: Path) -> set[str]:
    """The harness modules a file imports, at any depth (function-level imports count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "harness":
            if node.module == "harness":
                found |= {alias.name for alias in node.names if (PACKAGE / f"{alias.name}.py").exists()}
            else:
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[1] for alias in node.names
                      if alias.name.startswith("harness.") and alias.name.count(".") >= 1}
    return found


def import_graph() -> dict[str, set[str]]:
    return {path.stem: harness_imports(path) - {path.stem} for path in PACKAGE.glob("*.py")}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of module names, or None."""
    state: dict[str, str] = {}

    def visit(module, trail):
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                return trail[trail.index(target):] + [target] if target in trail else [module, target]
            if target not in state:
                cycle = visit(target, trail + [target])
                if cycle:
                    return cycle
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module, [module])
            if cycle:
                return cycle
    return None


def test_the_cycle_finder_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_the_package():
    graph = import_graph()
    assert {"cli", "protocol", "worker", "child", "records"} <= set(graph)
    assert find_cycle(graph) is None


def test_arrows_run_one_way():
    graph = import_graph()
    assert "protocol" in graph["session"] and "worker" in graph["protocol"]
    assert graph["worker"].isdisjoint({"protocol", "child", "cli", "session"})
    # The child process imports only what runs beside the submission.
    assert graph["child"] <= {"timing", "limits", "paths", "accuracy", "poison"}
    # Views read records; they never reach into how submissions are read or run.
    for view in ("scoreboard", "diff", "chart"):
        assert graph[view].isdisjoint({"submission", "protocol", "worker", "child", "cli", "session"}), view
    for module, imported in graph.items():
        assert "cli" not in imported, f"{module} imports the CLI"


def test_no_module_is_too_long():
    lengths = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in PACKAGE.glob("*.py")}
    assert lengths and all(n <= MAX_LINES for n in lengths.values()), {k: n for k, n in lengths.items() if n > MAX_LINES}
