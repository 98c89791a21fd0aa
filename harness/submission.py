"""Submissions: find the numbered files, resolve a user's argument, read what each one needs.

A submission is `submissions/NNN_slug.py`; NNN orders history. What a file needs is read from its
own text (DESIGN section 5), never from a setting the user must keep in sync:
  torch   always
  triton  it imports triton
  aiter   it imports AMD's aiter
  hip     it compiles HIP source (torch.utils.cpp_extension load_inline / load with HIP markers,
          or it sets PYTORCH_ROCM_ARCH)
A requirement is optional when every use of it is guarded, so the file has a fallback without it: inside
`try` with an `except` that catches ImportError (or ModuleNotFoundError, Exception, BaseException, bare),
or inside an `if` that tests importlib.util.find_spec(...), torch.version.hip (hasattr / getattr of it
too), or a name set from one of those or inside such a `try`. A guard outside a function body does not
cover code inside it. Only hard requirements stop a machine from running a file.
"""
import ast
import dataclasses
import hashlib
import re
from pathlib import Path

from harness.paths import SUBMISSIONS_DIR, in_repository

FILE_NAME = re.compile(r"^(\d+)_(\w+)\.py$")

_IMPORTS_AITER = re.compile(r"^\s*(?:from\s+aiter(?:\.\w+)*\s+import\b|import\s+aiter\b)", re.MULTILINE)
_IMPORTS_TRITON = re.compile(r"^\s*(?:from\s+triton(?:\.\w+)*\s+import\b|import\s+triton\b)", re.MULTILINE)
_COMPILES_EXTENSION = re.compile(r"\bload_inline\b|cpp_extension")
# Text that only HIP source (or a ROCm build setting) contains.
_HIP_MARKERS = re.compile(
    r"hip/hip_runtime|#\s*include\s*<hip/|__builtin_amdgcn_|__HIP_PLATFORM_AMD__|\bhipLaunchKernel|"
    r"--offload-arch|\bamdgcn\b"
)
_ROCM_ARCH_SETTING = re.compile(r"PYTORCH_ROCM_ARCH")
_GFX_TARGET = re.compile(r"\bgfx\d{3}[a-z0-9]*\b")


# Exceptions whose handler makes the code in a `try` body optional: a missing module lands in all of them.
_IMPORT_FAILURES = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


class SubmissionError(ValueError):
    """A submission argument that names no usable file (message is one line for the user)."""


@dataclasses.dataclass(frozen=True, order=True)
class Requirement:
    name: str  # "torch", "triton", "aiter" or "hip"
    optional: bool = False  # every use is guarded: the file falls back without it

    @property
    def label(self) -> str:
        """'aiter (optional)' or 'triton'."""
        return f"{self.name} (optional)" if self.optional else self.name


@dataclasses.dataclass(frozen=True)
class Submission:
    number: int | None
    slug: str
    path: Path
    requirements: frozenset  # hard: the names it cannot run without
    sha256: str
    hip_archs: frozenset = frozenset()  # gfx targets named by HIP source, e.g. {"gfx950"}; empty = unknown
    optional: frozenset = frozenset()  # names it uses only where present (guarded), falling back elsewhere

    @property
    def needs(self) -> tuple:
        """Every requirement, hard and optional, ordered by name."""
        both = [Requirement(n) for n in self.requirements] + [Requirement(n, True) for n in self.optional]
        return tuple(sorted(both))

    def needs_label(self) -> str:
        """'aiter (optional), torch, triton'."""
        return ", ".join(r.label for r in self.needs)

    @property
    def numbered(self) -> bool:
        """One of the repository's submissions/NNN_slug.py (an outside file keeps its own identity)."""
        return self.number is not None

    @property
    def label(self) -> str:
        """'120_hip_fp8_mfma' for a numbered file, else the file name."""
        return self.path.stem

    def display_path(self) -> str:
        """The path relative to the repository when the file is inside it."""
        return in_repository(self.path)


def _used_names(source_text: str) -> set:
    """The requirements a text uses at all, as before any guard is looked at."""
    used = {"torch"}
    if _IMPORTS_TRITON.search(source_text):
        used.add("triton")
    if _IMPORTS_AITER.search(source_text):
        used.add("aiter")
    compiles_hip = _COMPILES_EXTENSION.search(source_text) and _HIP_MARKERS.search(source_text)
    if compiles_hip or _ROCM_ARCH_SETTING.search(source_text):
        used.add("hip")
    return used


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _is_extension_build(call: ast.Call) -> bool:
    """load_inline(...), or load(...) bare or as cpp_extension.load (not torch.load, json.load, ...)."""
    name, func = _call_name(call), call.func
    if name == "load_inline":
        return True
    if name != "load":
        return False
    return isinstance(func, ast.Name) or (isinstance(func.value, ast.Name) and func.value.id == "cpp_extension") or (
        isinstance(func.value, ast.Attribute) and func.value.attr == "cpp_extension")


def _is_version_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "version"


def _is_platform_probe(node: ast.AST) -> bool:
    """find_spec(...), torch.version.hip, hasattr/getattr(torch.version, "hip")."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr == "hip" and _is_version_attribute(sub.value):
            return True
        if isinstance(sub, ast.Call):
            name = _call_name(sub)
            if name == "find_spec":
                return True
            if (name in ("hasattr", "getattr") and len(sub.args) >= 2 and _is_version_attribute(sub.args[0])
                    and isinstance(sub.args[1], ast.Constant) and sub.args[1].value == "hip"):
                return True
    return False


def _catches_import_failure(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = {c.id if isinstance(c, ast.Name) else c.attr if isinstance(c, ast.Attribute) else "" for c in caught}
    return bool(names & _IMPORT_FAILURES)


def _bound_names(nodes: list) -> set:
    """Names a block of statements assigns or imports (flags such as HAS_AITER = True)."""
    names = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                names.add(sub.id)
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in sub.names)
    return names


def _guard_flags(tree: ast.AST) -> set:
    """Names whose value tells whether an optional dependency is there: set from a platform probe, or
    bound inside a try that guards an import or HIP build (HAS_AITER = True / False, aiter = None)."""
    flags = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _is_platform_probe(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            flags |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif (isinstance(node, ast.Try) and any(_catches_import_failure(h) for h in node.handlers)
              and any(_uses(sub) for child in node.body for sub in ast.walk(child))):
            flags |= _bound_names(node.body) | _bound_names(node.handlers)
    return flags


def _uses(node: ast.AST) -> set:
    """Requirement names this one node uses: an import of triton or aiter, or a HIP build or setting."""
    if isinstance(node, ast.Import):
        return {a.name.split(".")[0] for a in node.names} & {"triton", "aiter"}
    if isinstance(node, ast.ImportFrom):
        return {(node.module or "").split(".")[0]} & {"triton", "aiter"} if node.level == 0 else set()
    if isinstance(node, ast.Call) and _is_extension_build(node):
        return {"hip"}
    if isinstance(node, ast.Constant) and node.value == "PYTORCH_ROCM_ARCH":
        return {"hip"}
    return set()


def _guarded_uses(tree: ast.AST) -> dict:
    """{name: [guarded?, ...]} for every use of triton, aiter or a HIP build in the tree."""
    flags = _guard_flags(tree)
    found: dict = {}

    def visit(node: ast.AST, guarded: bool) -> None:
        for name in _uses(node):
            found.setdefault(name, []).append(guarded)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            guarded = False  # a guard around a definition does not run with the body
        if isinstance(node, ast.Try):
            # The else block runs only when the body got through, so it is as guarded as the body.
            body_guarded = guarded or any(_catches_import_failure(h) for h in node.handlers)
            for child in node.body + node.orelse:
                visit(child, body_guarded)
            for child in node.handlers + node.finalbody:
                visit(child, guarded)
            return
        if isinstance(node, ast.If):
            test_names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            branch_guarded = guarded or _is_platform_probe(node.test) or bool(test_names & flags)
            visit(node.test, guarded)
            for child in node.body + node.orelse:
                visit(child, branch_guarded)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return found


def needs_of(source_text: str) -> frozenset:
    """Every Requirement of a submission, read from its text; optional when every use of it is guarded."""
    used = _used_names(source_text)
    try:
        uses = _guarded_uses(ast.parse(source_text))
    except (SyntaxError, ValueError, RecursionError):
        uses = {}  # unparsable: it fails anyway, call everything it mentions hard
    return frozenset(Requirement(name, bool(uses.get(name)) and all(uses[name])) for name in used)


def requirements_of(source_text: str) -> frozenset:
    """What a submission cannot run without: a subset of {"torch", "triton", "hip", "aiter"}."""
    return frozenset(r.name for r in needs_of(source_text) if not r.optional)


def optional_requirements_of(source_text: str) -> frozenset:
    """What a submission uses only where it is present (its guarded imports and builds)."""
    return frozenset(r.name for r in needs_of(source_text) if r.optional)


def hip_archs_of(source_text: str) -> frozenset:
    """The gfx targets HIP source is built for (from --offload-arch / PYTORCH_ROCM_ARCH text); empty if unnamed."""
    if "hip" not in _used_names(source_text):
        return frozenset()
    return frozenset(_GFX_TARGET.findall(source_text))


def from_path(path: str | Path, submissions_dir: str | Path = SUBMISSIONS_DIR) -> Submission:
    """A Submission for any readable .py file; an NNN_slug.py inside submissions/ gets its number, any other
    file none (a leading number elsewhere means nothing: it must not take over a numbered submission's results)."""
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise SubmissionError(f"no such submission file: {path}")
    if path.suffix != ".py":
        raise SubmissionError(f"not a Python file: {path}")
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"cannot read {path}: {exc}") from None
    match = FILE_NAME.match(path.name)
    inside = path.parent == Path(submissions_dir).resolve()
    number, slug = (int(match[1]), match[2]) if match and inside else (None, path.stem)
    needs = needs_of(text)
    return Submission(
        number=number,
        slug=slug,
        path=path,
        requirements=frozenset(r.name for r in needs if not r.optional),
        sha256=hashlib.sha256(raw).hexdigest(),
        hip_archs=hip_archs_of(text),
        optional=frozenset(r.name for r in needs if r.optional),
    )


def discover(root: str | Path = SUBMISSIONS_DIR) -> list[Submission]:
    """Every NNN_slug.py under root, ordered by number."""
    root = Path(root)
    if not root.is_dir():
        return []
    files = [p for p in root.iterdir() if p.is_file() and FILE_NAME.match(p.name)]
    found = [from_path(p, root) for p in files]
    return sorted(found, key=lambda s: (s.number, s.slug))


def resolve(arg: str, root: str | Path = SUBMISSIONS_DIR) -> Submission:
    """A number ("120" -> submissions/120_*.py) or a path to any submission file."""
    text = str(arg).strip()
    if text.isdigit():
        number = int(text)
        matches = [s for s in discover(root) if s.number == number]
        if not matches:
            raise SubmissionError(f"no submission numbered {number} in {root}")
        if len(matches) > 1:
            names = ", ".join(s.path.name for s in matches)
            raise SubmissionError(f"submission number {number} is ambiguous: {names}")
        return matches[0]
    return from_path(text)
