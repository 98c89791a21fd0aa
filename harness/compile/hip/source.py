"""A submission's load_inline HIP sources, read statically (the file is never imported or run).

For every `load_inline(...)` call the sources and flags are resolved from the file's own text: string
literals, names bound to them anywhere in the file, `+` concatenation, lists and tuples, and a few pure
string methods (textwrap.dedent, str.replace / strip / join / format with literal arguments). Each piece
keeps the .py line its text starts on, so the translation unit can carry `#line` directives and the
compiler's errors point into the .py file. Sources built at run time any other way are reported as such.
"""
from __future__ import annotations

import ast
import dataclasses
import textwrap
import threading

LINE_FILE_PLACEHOLDER = "__harness_submission_file__"  # replaced by the .py path after hipify (which rewrites text)
# What load_inline prepends to the CUDA sources (torch/utils/cpp_extension.py); hipify maps the CUDA headers.
LOAD_INLINE_PREFIX = ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
POSITIONAL = ("name", "cpp_sources", "cuda_sources")  # later positional slots moved between torch versions


class Unresolvable(ValueError):
    """A value the file computes at run time; `line` is where."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


@dataclasses.dataclass(frozen=True)
class Piece:
    text: str
    line: int | None  # .py line of the text's first character; None where it cannot be mapped


@dataclasses.dataclass
class InlineBuild:
    name: str
    line: int  # the load_inline call
    cuda_sources: list[list[Piece]]  # one entry per source string, each a run of pieces
    cpp_sources: list[list[Piece]]
    functions: list[str]
    cuda_flags: list[str]
    problems: list[tuple[int, str]]  # (line, why) for what could not be read statically

    def translation_unit(self) -> str:
        """The CUDA translation unit as load_inline writes it (before hipify), with #line directives."""
        lines = list(LOAD_INLINE_PREFIX)
        for source in self.cuda_sources:
            text, at_line_start = "", True
            for piece in source:
                if piece.line is not None and at_line_start:
                    text += f'#line {piece.line} "{LINE_FILE_PLACEHOLDER}"\n'
                text += piece.text
                at_line_start = piece.text.endswith("\n")
            lines.append(text)
        return "\n".join(lines)

    def cpp_text(self) -> str:
        return "\n".join("".join(p.text for p in source) for source in self.cpp_sources)


@dataclasses.dataclass
class _Text:
    """A resolved string: its pieces, each with the .py line it starts on."""
    pieces: list[Piece]

    def value(self) -> str:
        return "".join(piece.text for piece in self.pieces)

    def first_line(self) -> int | None:
        return self.pieces[0].line if self.pieces else None


def _assignments(tree: ast.Module) -> dict[str, list[ast.Assign]]:
    found: dict[str, list] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found.setdefault(node.target.id, []).append(node)
    return found


class _Resolver:
    def __init__(self, tree: ast.Module, text: str):
        self.assigned = _assignments(tree)
        self.text = text

    def _first_line(self, node: ast.Constant) -> int:
        """The line of the string's first character: after the quotes, and after a `\\` line continuation."""
        source = ast.get_source_segment(self.text, node) or ""
        literal = source.lstrip("rRbBuUfF")
        raw = "r" in source[: len(source) - len(literal)].lower()  # a raw string keeps the backslash and newline
        continued = not raw and literal[3:5] == "\\\n" and literal[:3] in ('"""', "'''")
        return node.lineno + (1 if continued else 0)

    def value(self, node: ast.AST, before: int, depth: int = 0):
        """str values come back as _Text; lists as lists; other literals as themselves."""
        line = getattr(node, "lineno", before)
        if depth > 40:
            raise Unresolvable("names refer to each other too deeply", line)
        if isinstance(node, ast.Constant):
            return _Text([Piece(node.value, self._first_line(node))]) if isinstance(node.value, str) else node.value
        if isinstance(node, ast.Name):
            return self.value(self._binding(node.id, before, line), node.lineno, depth + 1)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e, before, depth + 1) for e in node.elts]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, before, depth + 1), self.value(node.right, before, depth + 1)
            if isinstance(left, _Text) and isinstance(right, _Text):
                return _Text(left.pieces + right.pieces)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
        if isinstance(node, ast.JoinedStr):
            parts = [self.value(v.value if isinstance(v, ast.FormattedValue) else v, before, depth + 1)
                     for v in node.values]
            return _Text([Piece("".join(p.value() if isinstance(p, _Text) else str(p) for p in parts), node.lineno)])
        if isinstance(node, ast.Call):
            return self._call(node, before, depth)
        raise Unresolvable(f"`{ast.unparse(node)[:60]}` is computed at run time", line)

    def _binding(self, name: str, before: int, line: int) -> ast.AST:
        """The last assignment to `name` above the use, else the last one in the file."""
        nodes = self.assigned.get(name)
        if not nodes:
            raise Unresolvable(f"`{name}` is not assigned in this file", line)
        earlier = [n for n in nodes if n.lineno < before]
        return (earlier or nodes)[-1].value

    def _call(self, node: ast.Call, before: int, depth: int):
        func = node.func
        args = [self.value(a, before, depth + 1) for a in node.args]
        name = ast.unparse(func)
        if name in ("textwrap.dedent", "dedent") and len(args) == 1 and isinstance(args[0], _Text):
            return _Text([Piece(textwrap.dedent(args[0].value()), args[0].first_line())])
        if name == "str" and len(args) == 1:
            return _Text([Piece(args[0].value() if isinstance(args[0], _Text) else str(args[0]), node.lineno)])
        if isinstance(func, ast.Attribute) and not node.keywords:
            owner = self.value(func.value, before, depth + 1)
            plain = [a.value() if isinstance(a, _Text) else a for a in args]
            if isinstance(owner, _Text) and func.attr == "join" and len(args) == 1 and isinstance(args[0], list):
                pieces: list[Piece] = []
                for index, item in enumerate(args[0]):
                    if index:
                        pieces += owner.pieces
                    pieces += item.pieces if isinstance(item, _Text) else [Piece(str(item), None)]
                return _Text(pieces)
            if isinstance(owner, _Text) and func.attr in ("strip", "lstrip", "rstrip", "replace", "format"):
                original = owner.value()
                first = owner.first_line()
                if first is not None and func.attr in ("strip", "lstrip"):  # leading newlines removed: shift
                    first += original[: len(original) - len(original.lstrip(*plain))].count("\n")
                return _Text([Piece(getattr(original, func.attr)(*plain), first)])
        raise Unresolvable(f"`{ast.unparse(node)[:60]}` is computed at run time", node.lineno)


def _is_load_inline(call: ast.Call) -> bool:
    func = call.func
    return (isinstance(func, ast.Name) and func.id == "load_inline") or \
        (isinstance(func, ast.Attribute) and func.attr == "load_inline")


def _sources(value) -> list[list[Piece]]:
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(item, _Text) for item in items):
        raise Unresolvable("sources must be strings or lists of strings", 0)
    return [item.pieces for item in items]


# CPython 3.11's parser keeps its recursion depth per process: two threads parsing at once raise SystemError.
_PARSE_LOCK = threading.Lock()


def parse_python(text: str) -> ast.Module:
    """ast.parse, one thread at a time (compile_file runs in threads)."""
    with _PARSE_LOCK:
        return ast.parse(text)


def find_builds(text: str) -> list[InlineBuild]:
    """Every load_inline call of a submission's source text, in file order. SyntaxError propagates."""
    tree = parse_python(text)
    resolver = _Resolver(tree, text)
    builds = []
    for call in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_load_inline(n)),
                       key=lambda n: n.lineno):
        arguments = dict(zip(POSITIONAL, call.args))
        arguments.update({k.arg: k.value for k in call.keywords if k.arg})
        build = InlineBuild(name=f"load_inline@{call.lineno}", line=call.lineno, cuda_sources=[], cpp_sources=[],
                            functions=[], cuda_flags=[], problems=[])
        if len(call.args) > len(POSITIONAL):
            build.problems.append((call.lineno, "positional arguments after cuda_sources are not read"))
        for key, node in arguments.items():
            try:
                value = resolver.value(node, call.lineno)
                if key == "name" and isinstance(value, _Text):
                    build.name = value.value()
                elif key in ("cuda_sources", "cpp_sources"):
                    setattr(build, key, _sources(value))
                elif key == "functions":
                    names = value if isinstance(value, list) else [value]
                    build.functions = [n.value() if isinstance(n, _Text) else str(n) for n in names]
                elif key == "extra_cuda_cflags":
                    build.cuda_flags = [f.value() if isinstance(f, _Text) else str(f) for f in (value or [])]
            except Unresolvable as error:
                if key in ("cuda_sources", "extra_cuda_cflags", "cpp_sources"):
                    build.problems.append((error.line or node.lineno, f"{key}: {error}"))
        builds.append(build)
    return builds
