"""KernelGuard's rules that can be seen in a submission's syntax tree (harness/checks/lint.py runs them).

Hard rules: timer and evaluator monkeypatching, outputs replayed from a cache, obfuscated exec,
run-time package installs. Flag-only rules (CUDA graphs, torch.compile, plain exec/eval, threads, ...)
come out as warnings. The replay rules only look at what `custom_kernel` returns (following
module-level helpers it returns from), so a workspace or metadata cache keyed on shape is fine as long
as the cached value is not handed back as the output.
"""
import ast

from harness.checks.findings import FORBIDDEN_WORD, Finding

# Timing machinery the evaluator relies on; replacing any of it fakes the measurement.
_TIMER_ATTRS = {"Event", "elapsed_time", "record", "synchronize", "perf_counter", "perf_counter_ns",
                "time", "time_ns", "monotonic", "monotonic_ns", "_sleep"}
_TIMER_OWNERS = {"torch", "cuda", "time", "Event"}
# Modules of the official runner that sit beside the submission.
_EVALUATOR_MODULES = {"reference", "eval", "utils", "task", "main", "__main__", "harness"}
# torch functions a checker uses; replacing them fools the correctness check.
_VALIDATION_FUNCS = {"allclose", "isclose", "equal", "isnan", "isinf", "isfinite", "isposinf", "isneginf",
                     "logical_or", "logical_xor", "count_nonzero", "nonzero", "abs", "max", "all", "any",
                     "testing", "assert_close"}
_DECODERS = {"b64decode", "b32decode", "b16decode", "a85decode", "b85decode", "decodebytes", "decompress",
             "fromhex", "loads", "unhexlify", "a2b_base64", "decode"}
_DECODER_MODULES = {"base64", "zlib", "lzma", "bz2", "gzip", "marshal", "codecs", "binascii", "pickle"}
# Methods that return (a view of) the same cached value rather than computing a new one.
_SAME_VALUE_METHODS = {"clone", "detach", "view", "view_as", "reshape", "to", "contiguous", "type",
                       "bfloat16", "float", "cuda", "cpu", "get", "setdefault", "pop", "__getitem__"}
# Builtins that only look at a value, never write into it.
_READ_ONLY_CALLS = {"len", "isinstance", "id", "print", "type", "hasattr", "getattr", "bool", "repr", "str",
                    "hash", "callable", "tuple", "list"}
_MEMO_DECORATORS = {"lru_cache", "cache", "cached", "memoize"}


def _dotted(node: ast.AST) -> str:
    """'torch.cuda.Event' for the expression torch.cuda.Event; '' when it is not a plain dotted name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):  # e.g. importlib.import_module("reference").x
        inner = _dotted(node.func)
        if inner.endswith("import_module") and node.args and isinstance(node.args[0], ast.Constant):
            parts.append(str(node.args[0].value))
            return ".".join(reversed(parts))
    return ""


def _const_str(node: ast.AST) -> str | None:
    """The value of a string built only from literals ("ab" + "cd", "".join(["a", "b"])), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _const_str(node.left), _const_str(node.right)
        return left + right if left is not None and right is not None else None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
            and isinstance(node.func.value, ast.Constant) and len(node.args) == 1
            and isinstance(node.args[0], (ast.List, ast.Tuple))):
        parts = [_const_str(e) for e in node.args[0].elts]
        return node.func.value.value.join(parts) if all(p is not None for p in parts) else None
    return None


class AstRules:
    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.findings: list[Finding] = []
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        self.imported = self._imported_names()
        self.module_state = self._module_state()
        self.memoized = {name for name, fn in self.functions.items()
                         if any(_dotted(d.func if isinstance(d, ast.Call) else d).split(".")[-1] in _MEMO_DECORATORS
                                for d in fn.decorator_list)}

    def add(self, rule: str, node: ast.AST, message: str, blocking: bool):
        self.findings.append(Finding(rule, getattr(node, "lineno", 1), message, blocking))

    def run(self) -> list[Finding]:
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self._imports(node)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for target in targets:
                    for leaf in ast.walk(target):
                        if isinstance(leaf, (ast.Attribute, ast.Subscript)) and not isinstance(leaf.ctx, ast.Load):
                            self._store(leaf)
            elif isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Attribute):
                self._attribute(node)
            elif isinstance(node, ast.Global) and any(n in ("print", "__builtins__") for n in node.names):
                self.add("FAKE_BENCHMARK_EMIT", node, "rebinds print globally", True)
        for node in self.tree.body:  # `print = ...` at module level swaps print for every function here
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "print" for t in node.targets):
                self.add("FAKE_BENCHMARK_EMIT", node, "rebinds print for the whole module", True)
        self._replay_rules()
        if "custom_kernel" not in self.functions and "custom_kernel" not in self.imported and \
                "custom_kernel" not in self.module_state:
            self.add("NO_CUSTOM_KERNEL", self.tree.body[0] if self.tree.body else self.tree,
                     "defines no custom_kernel(data); the evaluator imports exactly that name", True)
        return self.findings

    # -- module facts -------------------------------------------------------

    def _imported_names(self) -> set[str]:
        names = set()
        for node in self.tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
        return names

    def _module_state(self) -> set[str]:
        """Names that keep a value across calls: module-level variables and names declared global."""
        names = set()
        for node in self.tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Global):
                names.update(node.names)
        return names

    # -- imports, stores, calls, attributes ---------------------------------

    def _imports(self, node):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        for module in modules:
            root = module.split(".")[0]
            if root == "reference":
                self.add("IMPORT_REFERENCE", node, "imports the reference module (flagged by KernelGuard; "
                         "fine for constants, never call ref_kernel from a submission)", False)
            elif root == "harness":
                self.add("IMPORTS_HARNESS", node, "imports this toolkit; the official runner has no `harness` module", True)
            elif root in ("eval", "utils"):
                self.add("IMPORT_EVALUATOR", node, f"imports the official runner's {root}.py", False)
            elif root in ("pip", "ensurepip"):
                self.add("RUNTIME_PACKAGE_INSTALL", node, f"imports {root}: installing packages at run time", True)
            elif root in ("threading", "concurrent", "multiprocessing"):
                self.add("THREADS", node, f"imports {root} (flagged by KernelGuard: work outside the timed call)", False)
            elif root == "subprocess":
                self.add("SUBPROCESS", node, "imports subprocess (fine for a build step; flagged for review)", False)
            elif root == "gc":
                self.add("GC_INTROSPECTION", node, "imports gc (can reach the evaluator's objects)", False)

    def _store(self, target: ast.AST):
        """An assignment to `X.attr` or `X[...]`: monkeypatching when X is the timer, torch or the evaluator."""
        if isinstance(target, ast.Subscript):
            owner = _dotted(target.value)
            if owner in ("sys.modules", "__builtins__", "builtins.__dict__") or owner.endswith(".__dict__") \
                    and owner.split(".")[0] in _EVALUATOR_MODULES | {"torch", "time", "builtins"}:
                self.add("MODULE_MUTATION", target, f"writes into {owner}[...], replacing a module's contents", True)
            elif owner.endswith("__globals__"):
                self.add("GLOBALS_MUTATION", target, "writes into a function's __globals__", True)
            elif owner.endswith(("f_locals", "f_globals")):
                self.add("FRAME_WALK_MUTATION", target, "writes into a caller frame's variables", True)
            return
        self._patched(target, _dotted(target), target.attr)

    def _patched(self, node: ast.AST, name: str, attr: str):
        """Report replacing `name` (whose last part is attr), from an assignment or setattr."""
        owner = name.rsplit(".", 1)[0] if "." in name else ""
        owner_parts = set(owner.split(".")) if owner else set()
        if attr == "__code__":
            self.add("CODE_REPLACEMENT", node, f"replaces {name or 'a function'}'s code object", True)
        elif attr in ("__globals__", "__builtins__"):
            self.add("GLOBALS_MUTATION", node, f"rebinds {name}", True)
        elif attr in ("f_locals", "f_globals", "f_back"):
            self.add("FRAME_WALK_MUTATION", node, f"rebinds a frame's {attr}", True)
        elif attr == "print" and owner in ("builtins", "__builtins__", "sys"):
            self.add("FAKE_BENCHMARK_EMIT", node, f"replaces {name}", True)
        elif attr in ("stdout", "stderr", "write") and owner in ("sys", "sys.stdout", "sys.stderr"):
            self.add("FAKE_BENCHMARK_EMIT", node, f"replaces {name}, where the evaluator's output goes", True)
        elif attr in _TIMER_ATTRS and owner_parts & _TIMER_OWNERS:
            self.add("TIMER_MONKEYPATCH", node, f"replaces {name}, which the evaluator times with", True)
        elif owner.split(".")[0] in _EVALUATOR_MODULES and owner.split(".")[0] not in self.classes:
            self.add("HARNESS_RUNTIME_PATCHING", node, f"replaces {name} in the evaluator's module {owner}", True)
        elif owner == "torch.Tensor" or (owner.startswith("torch") and attr in _VALIDATION_FUNCS):
            self.add("TORCH_VALIDATION_MONKEYPATCH", node, f"replaces {name}, which the correctness check relies on", True)

    def _call(self, node: ast.Call):
        func = _dotted(node.func)
        last = func.split(".")[-1]
        if func in ("setattr", "builtins.setattr", "object.__setattr__") and len(node.args) >= 2:
            owner = _dotted(node.args[0])
            attr = _const_str(node.args[1])
            if attr is not None:
                self._patched(node, f"{owner}.{attr}" if owner else attr, attr)
            elif owner.split(".")[0] in _EVALUATOR_MODULES | {"torch", "time", "builtins", "sys"}:
                self.add("HARNESS_RUNTIME_PATCHING", node, f"setattr on {owner} with a computed name", True)
        elif func in ("exec", "eval", "compile", "builtins.exec", "builtins.eval"):
            if self._obfuscated(node):
                self.add("OBFUSCATED_EXEC", node, f"{func}() of an encoded or compressed payload", True)
            else:
                self.add("PLAIN_EXEC", node, f"{func}() of generated code (flagged by KernelGuard)", False)
        elif last in ("_getframe", "currentframe", "stack", "getouterframes") and func.split(".")[0] in ("sys", "inspect"):
            self.add("FRAME_WALK_MUTATION", node, f"{func}() walks the caller's frames (the evaluator's)", True)
        elif func in ("torch.compile", "torch._dynamo.optimize"):
            self.add("TORCH_COMPILE", node, f"{func} (flagged by KernelGuard; compile time lands in the warm-up)", False)
        elif last in ("CUDAGraph", "graph", "make_graphed_callables") and "cuda" in func:
            self.add("CUDA_GRAPH", node, f"{func} (flagged by KernelGuard: graph replay must still compute every call)", False)
        elif last in ("get_objects", "get_referrers") and func.startswith("gc"):
            self.add("GC_INTROSPECTION", node, f"{func}() reaches objects the evaluator owns", True)
        elif func in ("os.system", "os.popen", "pip.main") or func.startswith(("subprocess.", "os.exec", "os.spawn")):
            words = " ".join(s for s in (_const_str(n) for n in ast.walk(node)) if s).lower()
            if "pip" in words.split() or "pip3" in words or "install" in words or func == "pip.main":
                self.add("RUNTIME_PACKAGE_INSTALL", node, f"{func}() installs packages at run time", True)
        elif func in ("os.fdopen", "os.write", "os.dup2"):
            self.add("RAW_FD_WRITE", node, f"{func}() writes to a raw file descriptor (the evaluator's result pipe is one)", False)
        for keyword in node.keywords:
            if keyword.arg == "enable_timing" and isinstance(keyword.value, ast.Constant) and keyword.value.value is False:
                self.add("DISABLE_TIMING_EVENT", node, "creates events with timing disabled (flagged by KernelGuard)", False)
        for argument in (*node.args, *(k.value for k in node.keywords)):
            built = _const_str(argument)
            if built is not None and not isinstance(argument, ast.Constant) and FORBIDDEN_WORD in built.lower():
                self.add("FORBIDDEN_WORD_EVASION", argument, "assembles the forbidden word from pieces to dodge the "
                         "server's filter; the rule it enforces still applies", True)

    def _attribute(self, node: ast.Attribute):
        if node.attr in ("f_back", "f_locals", "f_globals") and isinstance(node.ctx, ast.Load):
            self.add("FRAME_WALK_MUTATION", node, f"reads a frame's {node.attr} (reaching the evaluator's variables)", True)
        elif node.attr == "__globals__" and isinstance(node.ctx, ast.Load):
            self.add("GLOBALS_MUTATION", node, "reaches a function's __globals__", True)
        elif node.attr == "argv" and _dotted(node) == "sys.argv":
            self.add("EVALUATOR_MODE_BRANCH", node, "reads sys.argv (the evaluator's mode); behaviour must not depend on it", True)

    def _obfuscated(self, call: ast.Call) -> bool:
        """exec/eval whose argument is decoded/decompressed, directly or through a name bound to such a call."""
        def decodes(expr: ast.AST) -> bool:
            for sub in ast.walk(expr):
                if isinstance(sub, ast.Call):
                    name = _dotted(sub.func)
                    if name.split(".")[0] in _DECODER_MODULES or name.split(".")[-1] in _DECODERS:
                        return True
            return False
        if any(decodes(a) for a in call.args):
            return True
        names = {n.id for a in call.args for n in ast.walk(a) if isinstance(n, ast.Name)}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and decodes(node.value):
                if any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
                    return True
        return False

    # -- output replay ------------------------------------------------------

    def _replay_rules(self):
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("POPCORN_"):
                self.add("EVALUATOR_MODE_BRANCH", node, f"reads the evaluator's {node.value}", True)
        if "custom_kernel" not in self.functions:
            return
        seen, todo = set(), ["custom_kernel"]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo += _ReturnedValues(self, self.functions[name]).check()

    def key_kind(self, function: ast.AST) -> str:
        """How a function keys its cache, from what it looks at: pointers, ids, or shapes."""
        text = ast.dump(function)
        if "'data_ptr'" in text or "id='id'" in text or "'_cdata'" in text:
            return "POINTER_REPLAY"
        if "'shape'" in text or "'size'" in text or "'numel'" in text:
            return "SHAPE_OUTPUT_REPLAY"
        return "OUTPUT_REPLAY_CACHE"


class _ReturnedValues:
    """Walks one output function in source order, tracking names that hold a value cached across calls."""

    def __init__(self, rules: AstRules, function: ast.FunctionDef):
        self.rules = rules
        self.function = function
        params = function.args
        positional = params.posonlyargs + params.args
        mutable_defaults = {arg.arg for arg, default in
                            zip(positional[len(positional) - len(params.defaults):], params.defaults)
                            if isinstance(default, (ast.Dict, ast.List, ast.Set, ast.Call))}
        declared_global = {n for g in ast.walk(function) if isinstance(g, ast.Global) for n in g.names}
        local = {a.arg for a in positional + params.kwonlyargs} - mutable_defaults
        local |= {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        # What survives between calls: module state, mutable defaults; minus names this function rebinds locally.
        self.state = (set(rules.module_state) | mutable_defaults | set(rules.functions) | rules.classes) - rules.imported
        self.state -= local - declared_global - mutable_defaults
        self.cached: dict[str, bool] = {}  # name -> still exactly the cached value (not rewritten since)
        self.callees: list[str] = []
        # custom_kernel's own inputs (data, and names unpacked from it): returning one is a passthrough.
        self.inputs = {a.arg for a in positional} if function.name == "custom_kernel" else set()

    def check(self) -> list[str]:
        for statement in self.function.body:
            self._visit(statement)
        return self.callees

    def _visit(self, node: ast.AST):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return
        if isinstance(node, ast.Return) and node.value is not None:
            self._returned(node, node.value)
            return
        if isinstance(node, ast.Assign):
            self._visit(node.value)
            for target in node.targets:
                self._bind(target, node.value)
            return
        if isinstance(node, ast.Call):
            self._rewrites(node)
        for child in ast.iter_child_nodes(node):
            self._visit(child)

    def _bind(self, target: ast.AST, value: ast.AST):
        from_cache = self._is_cached(value)
        from_input = self._is_input(value)
        for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
            (self.inputs.add if from_input else self.inputs.discard)(name)
        for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
            self.cached[name] = from_cache
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            self.cached[target.value.id] = False  # out[...] = ... writes into the buffer

    def _rewrites(self, call: ast.Call):
        """A cached name passed to a call (a kernel writing into it) or mutated in place is a buffer, not a replay."""
        func = _dotted(call.func)
        if func in _READ_ONLY_CALLS:
            return
        if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
                and call.func.value.id in self.cached and call.func.attr.endswith("_"):
            self.cached[call.func.value.id] = False
        for argument in (*call.args, *(k.value for k in call.keywords)):
            for name in (n.id for n in ast.walk(argument) if isinstance(n, ast.Name)):
                if name in self.cached or name in self.state:
                    self.cached[name] = False

    def _is_cached(self, expr: ast.AST) -> bool:
        """Does this expression evaluate to a value kept from an earlier call?"""
        if isinstance(expr, ast.Name):
            if expr.id in self.cached:
                return self.cached[expr.id]
            return expr.id in self.state and expr.id not in self.rules.functions and expr.id not in self.rules.classes
        if isinstance(expr, ast.Subscript):
            return self._is_cached(expr.value) or self._is_state(expr.value)
        if isinstance(expr, ast.Attribute):
            return self._is_cached(expr.value) or self._is_state(expr.value)
        if isinstance(expr, ast.IfExp):
            return self._is_cached(expr.body) or self._is_cached(expr.orelse)
        if isinstance(expr, ast.BoolOp):
            return any(self._is_cached(v) for v in expr.values)
        if isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in _SAME_VALUE_METHODS:
                return self._is_cached(expr.func.value) or self._is_state(expr.func.value)
            if isinstance(expr.func, ast.Name) and expr.func.id in self.rules.memoized:
                return True
        return False

    def _is_input(self, expr: ast.AST) -> bool:
        """Is this custom_kernel's input itself (or a piece or view of it), not something computed from it?"""
        if isinstance(expr, ast.Name):
            return expr.id in self.inputs
        if isinstance(expr, (ast.Subscript, ast.Attribute)):
            return self._is_input(expr.value)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _SAME_VALUE_METHODS:
            return self._is_input(expr.func.value)
        return False

    def _is_state(self, expr: ast.AST) -> bool:
        """A name that outlives the call and has not been handed to a kernel to write since."""
        return isinstance(expr, ast.Name) and expr.id in self.state and self.cached.get(expr.id, True)

    def _returned(self, node: ast.Return, value: ast.AST):
        for branch in (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,):
            if isinstance(branch, ast.Call) and isinstance(branch.func, ast.Name) \
                    and branch.func.id in self.rules.functions and branch.func.id not in self.rules.memoized:
                self.callees.append(branch.func.id)  # the output comes from this helper: check its returns too
                self._rewrites(branch)
                continue
            if self._is_cached(branch):
                rule = self.rules.key_kind(self.function)
                if isinstance(branch, ast.Call) and isinstance(branch.func, ast.Name) and branch.func.id in self.rules.memoized:
                    rule = "RESULT_BANK_REPLAY"
                elif isinstance(branch, ast.Name) and branch.id in self.state:
                    rule = "LAST_CALL_REPLAY"
                self.rules.add(rule, node, f"{self.function.name} returns {ast.unparse(branch)}, a value kept from an "
                               "earlier call, as the output; the output must be computed on every call", True)
            elif self._is_input(branch):
                self.rules.add("INPUT_PASSTHROUGH_OUTPUT", node, f"custom_kernel returns {ast.unparse(branch)}, its own "
                               "input, as the output", True)
            elif isinstance(branch, ast.Call):
                self._rewrites(branch)
