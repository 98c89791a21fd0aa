"""Lint rules for the shortcuts found on the real amd-mixed-mla board (MI355X_FACTS.md), read from the file alone.

- MLA_PAGE_SIZE (error): page_size > 1 given to aiter's MLA calls, as a literal or through a name some assignment
  gives a literal > 1 (`pg = 1 if kv <= 1024 else 8`). The runner's asm kernels support page size 1 only.
- MLA_FIXED_Q_SCALE (warning): Q's amax or fp8 scale set from constants instead of measured from Q.
- MLA_DATA_PTR_CACHE (error): a cache looked up by data_ptr(): a new input at a reused address gets stale data.
- MLA_HARDCODED_SM_SCALE (warning): sm_scale given to an MLA call as a constant instead of config["sm_scale"].
- MLA_FNUZ_ON_GFX950 (error): FNUZ fp8 (bias 8) in a file built for gfx950, whose fp8 is OCP e4m3fn (bias 7).
An output returned from a cache across calls is KernelGuard's replay rules (kernelguard.py).
"""
import ast
import re

from harness.checks.findings import Finding

# aiter MLA functions and the position of page_size / sm_scale among their positional parameters (pinned commit)
PAGE_SIZE_AT = {"mla_decode_fwd": 8, "mla_decode_stage1_asm_fwd": 11, "get_mla_metadata_v1": 12}
SM_SCALE_AT = {"mla_decode_fwd": ("sm_scale", 10), "mla_decode_stage1_asm_fwd": ("softmax_scale", 13)}
_Q_SCALE_NAME = re.compile(r"(?i)^_*(q|query)_?(fp8_?)?(amax|absmax|max|scale|inv_scale|scale_inv)$")
_FNUZ = re.compile(r"__hip_fp8_e4m3_fnuz|__HIP_E4M3_FNUZ|float8_e4m3fnuz|e4m3_fnuz|fp8_fnuz", re.IGNORECASE)
_OCP = re.compile(r"__hip_fp8_e4m3\b|__HIP_E4M3\b|float8_e4m3fn\b|__gfx950__")
_GFX950 = re.compile(r"gfx950")


def check(tree: ast.Module, text: str) -> list[Finding]:
    assigned, pointer_names = _assignments(tree), _pointer_names(tree)  # once a file: the checks below ask per node
    found, pointer_cache = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found += _page_size(node, assigned) + _sm_scale(node, assigned) + _q_scale_argument(node, assigned)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            found += _fixed_q_scale(node)
        if isinstance(node, (ast.Subscript, ast.Compare, ast.Call)):
            pointer_cache += _data_ptr_key(node, pointer_names)
    return found + sorted(pointer_cache, key=lambda f: f.line)[:1] + _fnuz(text)  # one data_ptr finding is enough


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _argument(node: ast.Call, name: str, position: int):
    for keyword in node.keywords:
        if keyword.arg == name:
            return keyword.value
    return node.args[position] if len(node.args) > position else None


def _assignments(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """name -> every value assigned to it anywhere in the file."""
    found: dict[str, list] = {}
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None else []
        for target in targets:
            if isinstance(target, ast.Name):
                found.setdefault(target.id, []).append(node.value)
    return found


def _literal_ints(value: ast.expr) -> list[int]:
    """The integer literals an expression can evaluate to: both arms of `a if c else b`, max/min's arguments."""
    if isinstance(value, ast.Constant):
        return [value.value] if type(value.value) is int else []
    if isinstance(value, ast.IfExp):
        return _literal_ints(value.body) + _literal_ints(value.orelse)
    if isinstance(value, ast.Call) and _called(value) in ("max", "min", "int"):
        return [n for arg in value.args for n in _literal_ints(arg)]
    return []


def _page_size(node: ast.Call, assigned: dict) -> list[Finding]:
    called = _called(node)
    if called not in PAGE_SIZE_AT:
        return []
    value = _argument(node, "page_size", PAGE_SIZE_AT[called])
    if value is None:
        return []
    sources = [value] + (assigned.get(value.id, []) if isinstance(value, ast.Name) else [])
    big = [n for source in sources for n in _literal_ints(source) if n > 1]
    if isinstance(value, ast.Constant) and type(value.value) is int:
        big = [value.value] if value.value > 1 else []
    elif isinstance(value, ast.Name) and not big:
        return []
    if not big:
        return []
    return [Finding("MLA_PAGE_SIZE", node.lineno, f"page_size {max(big)} given to {called}: on MI355X the runner's "
                    "MLA asm kernels support page size 1 only and read part of the KV with a larger one; the output "
                    "passes the loose check by chance and fails secret seeds", True)]


def _constant(value: ast.expr) -> bool:
    """Numbers and arithmetic on them, or torch.tensor / torch.full / a list of such: known before any input."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, (int, float)) and not isinstance(value.value, bool)
    if isinstance(value, ast.BinOp):
        return _constant(value.left) and _constant(value.right)
    if isinstance(value, ast.UnaryOp):
        return _constant(value.operand)
    if isinstance(value, (ast.List, ast.Tuple)):
        return bool(value.elts) and all(_constant(e) for e in value.elts)
    if isinstance(value, ast.Call) and _called(value) in ("tensor", "full", "as_tensor", "float") and value.args:
        return _constant(value.args[-1] if _called(value) == "full" else value.args[0])
    return False


def _fixed_q_scale(node) -> list[Finding]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = [t.id for t in targets if isinstance(t, ast.Name) and _Q_SCALE_NAME.match(t.id)]
    if not names or node.value is None or not _constant(node.value):
        return []
    return [Finding("MLA_FIXED_Q_SCALE", node.lineno, f"{names[0]} is a constant: Q's amax / fp8 scale must be "
                    "measured from each call's Q (a Q of another scale saturates or loses precision; the stress "
                    "cases show it)", False)]


def _q_scale_argument(node: ast.Call, assigned: dict) -> list[Finding]:
    if _called(node) not in SM_SCALE_AT:
        return []
    value = _argument(node, "q_scale", 17 if _called(node) == "mla_decode_stage1_asm_fwd" else 20)
    if value is None or not (_constant(value) or (isinstance(value, ast.Name) and assigned.get(value.id) and all(
            _constant(v) for v in assigned[value.id]))):
        return []
    return [Finding("MLA_FIXED_Q_SCALE", node.lineno, "q_scale is a constant: Q's fp8 scale must be measured from "
                    "each call's Q", False)]


def _sm_scale(node: ast.Call, assigned: dict) -> list[Finding]:
    called = _called(node)
    if called not in SM_SCALE_AT:
        return []
    value = _argument(node, *SM_SCALE_AT[called])
    constant = value is not None and (_constant(value) or (isinstance(value, ast.Name) and assigned.get(value.id)
                                                           and all(_constant(v) for v in assigned[value.id])))
    if not constant:
        return []
    return [Finding("MLA_HARDCODED_SM_SCALE", node.lineno, f"{SM_SCALE_AT[called][0]} of {called} is a constant: read "
                    "config[\"sm_scale\"] so the kernel follows the task's scale", False)]


def _has_data_ptr(node: ast.AST) -> bool:
    """A .data_ptr() call inside node."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and _called(inner) == "data_ptr":
            return True
    return False


def _data_ptr_key(node: ast.AST, pointer_names: set[str]) -> list[Finding]:
    """x[key], key in x, x.get(key) / setdefault(key) where key holds a data_ptr(), directly or through a name
    assigned from one (pointer_names)."""
    if isinstance(node, ast.Subscript):
        keys = [node.slice]
    elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
        keys = [node.left]
    elif isinstance(node, ast.Call) and _called(node) in ("get", "setdefault", "pop") and node.args:
        keys = [node.args[0]]
    else:
        return []
    for key in keys:
        if _has_data_ptr(key) or any(isinstance(n, ast.Name) and n.id in pointer_names for n in ast.walk(key)):
            return [Finding("MLA_DATA_PTR_CACHE", node.lineno, "a cache looked up by data_ptr(): a new input at a "
                            "reused address gets the old entry (leaderboard mode's fresh inputs expose it); key "
                            "caches on shapes, and recompute what depends on the data", True)]
    return []


def _pointer_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _has_data_ptr(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _fnuz(text: str) -> list[Finding]:
    if not _GFX950.search(text) or _OCP.search(text):
        return []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FNUZ.search(line)
        if match:
            return [Finding("MLA_FNUZ_ON_GFX950", number, f"{match.group(0)} in a file built for gfx950: MI355X's "
                            "fp8 is OCP e4m3fn (exponent bias 7), FNUZ (bias 8) decodes every value at half its size",
                            True)]
    return []
