"""Check a submission's use of AMD's aiter against aiter's real Python API at the runner's pinned commit.

harness/checks/data/aiter_api.json (written by bench/tools/extract_aiter_api.py from the aiter source) lists aiter's
modules and, for the namespaces submissions use, every name with its kind and parameter list. A name
imported from or looked up on those namespaces that does not exist is a finding, and so is a call to a known
function whose arguments do not bind to its signature (inspect.Signature.bind). The file is read with ast,
never imported; aiter itself is not needed.
"""
from __future__ import annotations

import ast
import functools
import inspect
import json
from pathlib import Path

from harness.checks.findings import Finding

DATA = Path(__file__).resolve().parent / "data" / "aiter_api.json"


@functools.lru_cache(maxsize=1)
def load_api() -> dict:
    return json.loads(DATA.read_text())


def commit() -> str:
    return load_api()["source"]["commit"][:10]


def signature(params: list[str]) -> inspect.Signature:
    """inspect.Signature from the data file's notation ("x", "x=", "*args", "**kw", "/", "*")."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    if "/" in params:
        kind = inspect.Parameter.POSITIONAL_ONLY
    built = []
    for param in params:
        if param == "/":
            kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        elif param == "*":
            kind = inspect.Parameter.KEYWORD_ONLY
        elif param.startswith("**"):
            built.append(inspect.Parameter(param[2:], inspect.Parameter.VAR_KEYWORD))
        elif param.startswith("*"):
            built.append(inspect.Parameter(param[1:], inspect.Parameter.VAR_POSITIONAL))
            kind = inspect.Parameter.KEYWORD_ONLY
        else:
            name, has_default = param.rstrip("="), param.endswith("=")
            built.append(inspect.Parameter(name, kind, default=None if has_default else inspect.Parameter.empty))
    return inspect.Signature(built)


class _Checker:
    def __init__(self, tree: ast.Module):
        api = load_api()
        self.modules, self.namespaces = set(api["modules"]), api["namespaces"]
        self.tree = tree
        self.findings: list[Finding] = []
        self.guarded = self._guarded_lines(tree)
        self.bound: dict[str, tuple[str, str | None]] = {}  # local name -> (module, name in it or None)

    @staticmethod
    def _guarded_lines(tree: ast.Module) -> set[int]:
        """Lines inside a try whose handler catches ImportError / AttributeError / Exception: failures there are expected."""
        lines = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Try):
                caught = [ast.unparse(h.type) if h.type else "Exception" for h in node.handlers]
                if any(word in c for c in caught for word in ("ImportError", "AttributeError", "Exception")):
                    for statement in node.body:
                        lines |= set(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
        return lines

    def add(self, rule: str, node: ast.AST, message: str):
        line = getattr(node, "lineno", 1)
        guarded = line in self.guarded
        suffix = " (inside try/except, so the file expects this may fail)" if guarded else ""
        self.findings.append(Finding(rule, line, f"{message}; ROCm/aiter {commit()}{suffix}", not guarded))

    def entry(self, module: str, name: str, node: ast.AST) -> tuple[str | None, dict | None]:
        """(module it names, or None; its entry, or None) for `module.name`; a finding when it does not exist."""
        namespace = self.namespaces.get(module)
        submodule = f"{module}.{name}"
        if namespace is not None and name in namespace:
            item = namespace[name]
            if item["kind"] == "module" and item.get("target", "").startswith("aiter"):
                return item["target"], None
            return None, item
        if submodule in self.modules:
            return submodule, None
        if namespace is not None:
            self.add("AITER_UNKNOWN_NAME", node, f"{module} has no name {name!r}")
        return None, None

    def run(self) -> list[Finding]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "aiter":
                        self._module_exists(alias.name, node)
                        target = alias.name if alias.asname else "aiter"
                        self.bound[alias.asname or "aiter"] = (target, None)
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "aiter":
                if not self._module_exists(node.module, node):
                    continue
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    module, _ = self.entry(node.module, alias.name, node)
                    self.bound[alias.asname or alias.name] = (module, None) if module else (node.module, alias.name)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                self._resolve(node)  # reports a name the module does not have
            elif isinstance(node, ast.Call):
                self._call(node)
        return sorted(set(self.findings), key=lambda f: f.line)

    def _module_exists(self, module: str, node: ast.AST) -> bool:
        if module in self.modules:
            return True
        self.add("AITER_UNKNOWN_MODULE", node, f"there is no module {module}")
        return False

    def _resolve(self, node: ast.AST) -> tuple[str | None, dict | None]:
        """What an expression names in aiter: (a module, None) or (None, an entry); (None, None) when not aiter."""
        if isinstance(node, ast.Name) and node.id in self.bound:
            module, name = self.bound[node.id]
            if name is None:
                return module, None
            return None, self.namespaces.get(module, {}).get(name)
        if isinstance(node, ast.Attribute):
            module, _ = self._resolve(node.value)
            if module is not None:
                return self.entry(module, node.attr, node)
        return None, None

    def _call(self, node: ast.Call):
        if isinstance(node.func, ast.Attribute):
            module, _ = self._resolve(node.func.value)
            item = self.namespaces.get(module, {}).get(node.func.attr) if module else None
            name = f"{module}.{node.func.attr}" if module else ""
        else:
            module, item = self._resolve(node.func)
            name = node.func.id if isinstance(node.func, ast.Name) else ""
        if not item or "params" not in item:
            return
        sig = signature(item["params"])
        where = f"{item.get('module', '')}.{name.split('.')[-1]}({', '.join(item['params'])})"
        spread = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
        keywords = [k.arg for k in node.keywords if k.arg]
        try:
            if spread:  # *args / **kwargs in the call: only the explicit keywords and positions can be checked
                accepts_any = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
                unknown = [k for k in keywords if k not in sig.parameters and not accepts_any]
                if unknown:
                    raise TypeError(f"got an unexpected keyword argument {unknown[0]!r}")
                positional = [a for a in node.args if not isinstance(a, ast.Starred)]
                sig.bind_partial(*[None] * len(positional), **{k: None for k in keywords})
            else:
                sig.bind(*[None] * len(node.args), **{k: None for k in keywords})
        except TypeError as error:
            self.add("AITER_BAD_CALL", node, f"{name or 'call'}(...) does not bind: {error}; aiter has {where}")


def check_source(text: str) -> list[Finding]:
    """Findings for every aiter name or call in a submission's text that aiter at the pinned commit rejects."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # lint reports the file that does not parse itself
    return _Checker(tree).run()


def check_file(path: str | Path) -> list[Finding]:
    return check_source(Path(path).read_text())
