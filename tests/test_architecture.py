"""The package's shape: groups in folders, imports run one way between modules and between groups (no cycle),
no module grows past ~450 lines, the child stays apart."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "harness"
MAX_LINES = 450
GROUPS = ("run", "results", "compile", "remote", "checks", "aiter_standin", "aiter_gfx950", "estimate", "sandbox",
          "emulator")
# The modules that run inside the submission's process (harness.run.child and what it may import).
CHILD_SIDE = {"run.child", "run.interpreter", "run.faults", "run.timing", "run.stats", "run.limits", "run.poison", "run.accuracy", "run.recording", "run.replies", "paths", "aiter_standin",
              "compile", "compile.aot", "compile.loops", "run.persona",
              "aiter_standin.loader", "aiter_standin.errors", "aiter_standin.journal", "aiter_standin.dtypes",
              "aiter_standin.quant", "aiter_standin.fp4_utils", "aiter_standin.kernels", "aiter_standin.metadata",
              "aiter_standin.attention", "aiter_standin.mla", "aiter_standin.risks", "aiter_standin.decode",
              "sandbox.procs", "sandbox.inside",
              "compile.hip.toolchain", "compile.hip.build",  # load_inline's build on the emulator (issue 27)
              "compile.hip.source"}  # build parses under its lock (stdlib only)
CHILD_SIDE_GROUPS = ("emulator", "aiter_gfx950")  # every module of these runs in the child (the gfx950 emulator)
# sandbox/ keeps the child from changing the disk; it needs only the top and where the HIP toolchain cache lies.
SANDBOX_MAY_IMPORT = {"top", "sandbox", "compile"}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """'run.child' for harness/run/child.py, 'cli' for harness/cli.py ('run' for a group's __init__)."""
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1] or ["__init__"]
    return ".".join(parts)


def harness_imports(path: Path, known: set[str]) -> set[str]:
    """The harness modules a file imports, at any depth (function-level imports count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "harness":
            base = node.module.removeprefix("harness").lstrip(".")
            for alias in node.names:
                leaf = f"{base}.{alias.name}" if base else alias.name
                found.add(leaf if leaf in known else base)
        elif isinstance(node, ast.Import):
            found |= {alias.name.removeprefix("harness.") for alias in node.names if alias.name.startswith("harness.")}
    return {name for name in found if name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    files = {module_name(path, package): path for path in package.rglob("*.py")}
    return {name: harness_imports(path, set(files)) - {name} for name, path in files.items()}


def group_of(module: str) -> str:
    """The folder a module lives in ('top' for harness/*.py)."""
    head = module.split(".")[0]
    return head if head in GROUPS else "top"


def group_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    groups: dict[str, set[str]] = {}
    for module, imported in graph.items():
        groups.setdefault(group_of(module), set()).update(group_of(target) for target in imported)
    for group, targets in groups.items():
        targets.discard(group)
    groups.pop("top", None)  # the shared top (cli, display, ...) may reach every group; groups reach it
    for targets in groups.values():
        targets.discard("top")
    return groups


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


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def group_rule_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every broken rule between groups, as one line each (empty when the package keeps them)."""
    broken = []
    for module, imported in sorted(graph.items()):
        if group_of(module) == "results":
            for target in sorted(imported):
                if group_of(target) in {"run", "compile", "remote"}:
                    broken.append(f"results/ must not import {group_of(target)}/: {module} imports {target}")
        if group_of(module) == "sandbox":
            for target in sorted(imported):
                if group_of(target) not in SANDBOX_MAY_IMPORT:
                    broken.append(f"sandbox/ must not import {group_of(target)}/: {module} imports {target}")
        if module != "cli" and not module.startswith("display."):  # display's own modules share its helpers
            for target in sorted(imported & {"display", "exits"} | {m for m in imported if m.startswith("display.")}):
                broken.append(f"only cli imports display or exits: {module} imports {target}")
    outside = {m for m in reachable(graph, "run.child") - CHILD_SIDE if group_of(m) not in CHILD_SIDE_GROUPS}
    if outside:
        broken.append(f"the child reaches parent modules: {sorted(outside)}")
    cycle = find_cycle(group_graph(graph))
    if cycle:
        broken.append(f"groups import in a cycle: {' -> '.join(cycle)}")
    return broken


def test_the_cycle_finder_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_harness_folder_shows_its_groups():
    top_files = sorted(path.name for path in PACKAGE.glob("*.py"))
    folders = sorted(path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists())
    assert len(top_files) <= 10, top_files
    assert set(folders) - {"display"} == set(GROUPS), folders  # display/ is the top's (only cli imports it)


NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve").split()


def test_the_architecture_page_counts_and_maps_every_group():
    """docs/ARCHITECTURE.md says how many groups there are, and its map gives each group a line of its own."""
    import re

    text = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    said = re.search(r"is (\w+) groups", text)
    assert said and said.group(1) == NUMBER_WORDS[len(GROUPS)], said and said.group(0)
    package_map = text.split("```")[1]
    unmapped = [g for g in GROUPS if not re.search(rf"^  {g}/ ", package_map, re.M)]
    assert not unmapped, unmapped


def test_no_import_cycle_in_the_package():
    graph = import_graph()
    assert {"cli", "run.protocol", "run.worker", "run.child", "results.records"} <= set(graph)
    assert find_cycle(graph) is None


def test_arrows_run_one_way():
    graph = import_graph()
    assert "run.protocol" in graph["run.session"] and "run.worker" in graph["run.protocol"]
    assert graph["run.worker"].isdisjoint({"run.protocol", "run.child", "cli", "run.session"})
    # Views read records; they never reach into how submissions are read or run.
    for view in ("results.scoreboard", "results.diff", "results.chart"):
        assert graph[view].isdisjoint({"submission", "run.protocol", "run.worker", "run.child", "cli",
                                       "run.session"}), view
    for module, imported in graph.items():
        assert "cli" not in imported, f"{module} imports the CLI"


def test_the_rules_between_groups_hold():
    assert group_rule_violations(import_graph()) == []


def violations_with(tmp_path, module_file: str, planted: str) -> list[str]:
    """The broken rules of a copy of the package where `module_file` gains the import line `planted`."""
    import shutil
    copy = tmp_path / "harness"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    target = copy / module_file
    target.write_text(target.read_text(encoding="utf-8") + f"\n{planted}\n", encoding="utf-8")
    return group_rule_violations(import_graph(copy))


def test_the_group_rules_catch_a_results_module_importing_run(tmp_path):
    """A copy of the package where results/records.py imports run/protocol.py breaks the rule, by name."""
    broken = violations_with(tmp_path, "results/records.py", "from harness.run import protocol")
    assert "results/ must not import run/: results.records imports run.protocol" in broken
    assert any(line.startswith("groups import in a cycle") for line in broken)


def test_the_group_rules_catch_the_child_reaching_the_parent(tmp_path):
    broken = violations_with(tmp_path, "run/child.py", "from harness.results import ledger")
    assert any("the child reaches parent modules" in line for line in broken)


def test_the_group_rules_catch_the_sandbox_reaching_the_run(tmp_path):
    """The sandbox is used by run/ (the worker, the session); a planted import the other way is named."""
    broken = violations_with(tmp_path, "sandbox/guard.py", "from harness.run import worker")
    assert "sandbox/ must not import run/: sandbox.guard imports run.worker" in broken


def test_no_module_is_too_long():
    lengths = {str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
               for path in PACKAGE.rglob("*.py")}
    assert lengths and all(n <= MAX_LINES for n in lengths.values()), {k: n for k, n in lengths.items()
                                                                      if n > MAX_LINES}
