"""The task's head and dimension constants, read from reference.py itself (their one home).

The parent process does not import reference.py (it pulls in torch and sits outside the package), so its
module-level integer constants are read from the file's syntax tree: plain numbers and sums/products of
constants defined above them.
"""
import ast
import functools
import operator

from harness.paths import REPO_ROOT

_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


def _value(node: ast.AST, known: dict):
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name) and node.id in known:
        return known[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _value(node.left, known), _value(node.right, known)
        if left is not None and right is not None:
            return _OPERATORS[type(node.op)](left, right)
    return None


@functools.cache
def constants(path=REPO_ROOT / "reference.py") -> dict:
    """NAME -> int for every upper-case module-level integer constant of reference.py."""
    known = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            value = _value(node.value, known)
            if name.isupper() and value is not None:
                known[name] = value
    return known


def dimension(name: str) -> int:
    """One constant, e.g. dimension("NUM_HEADS") == 16; KeyError naming it when reference.py lacks it."""
    found = constants()
    if name not in found:
        raise KeyError(f"reference.py defines no integer constant {name}")
    return found[name]
