"""Survey which aiter names public amd-mixed-mla submissions use (facts only: names, counts, where).

Usage: python bench/tools/survey_aiter_calls.py OUT.json MIRROR_GIT_DIR... (each a bare git directory of a public
repository fetched at its newest snapshot). A submission is a .py file at HEAD that defines custom_kernel, uses
kv_indptr (the MLA task's input) and imports aiter. Names are read from the syntax tree: `from aiter[.x] import name`, `aiter.x.name` attribute
chains (through `import aiter[.x] as alias`). Counts are per file and per repository.
"""
import ast
import json
import subprocess
import sys
from pathlib import Path


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True).stdout


def aiter_names(source: str) -> set[str]:
    """Dotted aiter names a file uses ('aiter.mla.mla_decode_fwd', 'aiter.dtypes.fp8', ...)."""
    tree = ast.parse(source)
    aliases, found = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "aiter":
                    aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else "aiter"
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aiter":
            for alias in node.names:
                found.add(f"{node.module}.{alias.name}")
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in aliases:
                found.add(".".join([aliases[inner.id], *reversed(chain)]))
    return found


def survey(repos: list[str]) -> dict:
    names: dict[str, dict] = {}
    files = 0
    for repo in repos:
        slug = Path(repo).parent.name.replace("+", "/")
        commit = git(repo, "rev-parse", "HEAD").strip()
        for path in git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines():
            if not path.endswith(".py") or path.startswith("aiter/") or "/aiter/" in path:
                continue
            source = git(repo, "show", f"HEAD:{path}")
            if "def custom_kernel" not in source or "aiter" not in source or "kv_indptr" not in source:
                continue
            try:
                used = aiter_names(source)
            except SyntaxError:
                continue
            if not used:
                continue
            files += 1
            for name in used:
                entry = names.setdefault(name, {"files": 0, "repositories": {}})
                entry["files"] += 1
                entry["repositories"].setdefault(slug, {"commit": commit, "files": 0, "example": path})
                entry["repositories"][slug]["files"] += 1
    return {"submission_files": files, "names": dict(sorted(names.items(), key=lambda kv: -kv[1]["files"]))}


if __name__ == "__main__":
    result = survey(sys.argv[2:])
    Path(sys.argv[1]).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for name, entry in result["names"].items():
        print(f"{entry['files']:5d} {len(entry['repositories'])} {name}")
