"""Write harness/checks/data/aiter_api.json: the Python API of AMD's aiter at the runner's pinned commit, read with ast.

    python bench/tools/extract_aiter_api.py [--repo PATH_TO_AITER_GIT] [--commit f3be04a12a]

The source is read with `git show COMMIT:path` from a clone of ROCm/aiter (nothing is imported or run). For a few
namespaces submissions use (ROOTS) it records every public name with its kind, and for functions (and classes
with an __init__) the parameter list: name, kind, whether it has a default. Star imports, `from . import x`,
aliases and names bound in module-level if/try blocks are followed the way Python would bind them.
"""
from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path

COMMIT = "f3be04a12a"
# Namespaces a submission reaches: `aiter.X`, `from aiter.mla import X`, `aiter.dtypes.X`, quant helpers.
ROOTS = ["aiter", "aiter.mla", "aiter.utility.dtypes", "aiter.ops.quant", "aiter.ops.attention",
         "aiter.utility.fp4_utils", "aiter.ops.triton.quant"]
OUT = Path(__file__).resolve().parents[2] / "harness" / "checks" / "data" / "aiter_api.json"


class Source:
    """Module files of one commit of the aiter repository."""

    def __init__(self, repo: Path, commit: str):
        self.repo, self.commit = repo, commit
        listing = self._git("ls-tree", "-r", "--name-only", commit, "aiter").splitlines()
        self.files = {self.module_name(p): p for p in listing if p.endswith(".py")}

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.repo), *args], check=True, capture_output=True, text=True).stdout

    @staticmethod
    def module_name(path: str) -> str:
        parts = path[:-3].split("/")
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    def is_package(self, module: str) -> bool:
        return self.files.get(module, "").endswith("__init__.py")

    def tree(self, module: str) -> ast.Module:
        return ast.parse(self._git("show", f"{self.commit}:{self.files[module]}"))


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef, drop_first: bool = False) -> list[str]:
    """The parameter list in Python's own notation: "x", "x=" (has a default), "*args", "**kwargs",
    and the markers "/" (the names before it are positional-only) and "*" (the names after it are keyword-only)."""
    args = function.args
    positional = args.posonlyargs + args.args
    defaulted = {a.arg for a in positional[len(positional) - len(args.defaults):]}
    defaulted |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
    named = [a.arg + ("=" if a.arg in defaulted else "") for a in positional]
    if args.posonlyargs:
        named.insert(len(args.posonlyargs), "/")
    if args.vararg:
        named.append("*" + args.vararg.arg)
    elif args.kwonlyargs:
        named.append("*")
    named += [a.arg + ("=" if a.arg in defaulted else "") for a in args.kwonlyargs]
    if args.kwarg:
        named.append("**" + args.kwarg.arg)
    if drop_first and named and named[0] not in ("/", "*"):
        named = named[1:]
        if named and named[0] == "/":
            named = named[1:]
    return named


def _top_level(body: list[ast.stmt]):
    """Statements that run at import: the module body and the bodies of its if / try blocks."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])
        else:
            yield node


class Namespaces:
    def __init__(self, source: Source):
        self.source = source
        self.cache: dict[str, dict] = {}

    def absolute(self, module: str, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = module.split(".") if self.source.is_package(module) else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def of(self, module: str) -> dict:
        """name -> entry for everything `module` binds at import."""
        if module in self.cache:
            return self.cache[module]
        self.cache[module] = names = {}
        if module not in self.source.files:
            return names
        tree = self.source.tree(module)
        for node in _top_level(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names[node.name] = {"kind": "function", "params": parameters(node), "module": module}
            elif isinstance(node, ast.ClassDef):
                init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
                entry = {"kind": "class", "module": module}
                if init is not None:
                    entry["params"] = parameters(init, drop_first=True)
                names[node.name] = entry
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for leaf in ast.walk(target):
                        if isinstance(leaf, ast.Name):
                            names[leaf.id] = {"kind": "variable", "module": module}
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    target = alias.name if alias.asname else alias.name.split(".")[0]
                    names[bound] = {"kind": "module", "target": target}
            elif isinstance(node, ast.ImportFrom):
                self._import_from(module, node, names)
        return names

    def _import_from(self, module: str, node: ast.ImportFrom, names: dict) -> None:
        origin = self.absolute(module, node)
        for alias in node.names:
            if alias.name == "*":
                exported = self.of(origin)
                public = self._all(origin) or [n for n in exported if not n.startswith("_")]
                names.update({n: exported[n] for n in public if n in exported})
                continue
            bound = alias.asname or alias.name
            submodule = f"{origin}.{alias.name}"
            if submodule in self.source.files:
                names[bound] = {"kind": "module", "target": submodule}
            elif origin in self.source.files:
                names[bound] = self.of(origin).get(alias.name, {"kind": "unresolved", "module": origin})
            else:
                names[bound] = {"kind": "external", "target": f"{origin}.{alias.name}"}

    def _all(self, module: str) -> list[str] | None:
        if module not in self.source.files:
            return None
        for node in self.source.tree(module).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
                try:
                    return list(ast.literal_eval(node.value))
                except ValueError:
                    return None
        return None


def _compact(data: dict) -> str:
    """JSON with one line per name, so a diff of two commits reads as a list of changed names."""
    lines = ["{"]
    for key in ("format", "source", "modules"):
        lines.append(f"{json.dumps(key)}: {json.dumps(data[key])},")
    lines.append('"namespaces": {')
    for index, (root, names) in enumerate(data["namespaces"].items()):
        lines.append(f"{json.dumps(root)}: {{")
        lines += [f"{json.dumps(n)}: {json.dumps(e, separators=(',', ':'))}," for n, e in names.items()]
        lines[-1] = lines[-1].rstrip(",")
        lines.append("}," if index < len(data["namespaces"]) - 1 else "}")
    lines += ["}", "}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default="/work/.mirror/ROCm+aiter/repo", help="a git clone of ROCm/aiter")
    parser.add_argument("--commit", default=COMMIT)
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    source = Source(Path(args.repo), args.commit)
    full = subprocess.run(["git", "-C", args.repo, "rev-parse", args.commit], check=True, capture_output=True,
                          text=True).stdout.strip()
    namespaces = Namespaces(source)
    data = {
        "format": "namespaces[module][name] = {kind, params?, module?|target?}; params in Python notation: "
                  "'x=' has a default, '*args', '**kwargs', '/' and '*' are the positional-only / keyword-only markers",
        "source": {"repository": "ROCm/aiter", "commit": full,
                   "generated_by": "bench/tools/extract_aiter_api.py (ast over `git show COMMIT:path`)"},
        "modules": sorted(source.files),
        "namespaces": {root: dict(sorted(namespaces.of(root).items())) for root in ROOTS},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(_compact(data))
    sizes = {root: len(names) for root, names in data["namespaces"].items()}
    print(f"wrote {args.out}: {full[:10]}, {len(source.files)} modules, names per namespace {sizes}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
