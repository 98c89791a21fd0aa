"""A code object's instructions as one C function, compiled by clang-22 and cached by the code
object's sha256 (and the translator's own sources). Each instruction is a label: translated ones
run there and fall or jump to the next; the rest stop with NEED_NUMPY at their index, so the
numpy executor runs that one and C resumes after it. $HARNESS_EMULATOR_NATIVE=0 turns it off."""
import ctypes
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from ..executor import split_mnemonic
from . import memory_ops, scalar, vector

HERE = Path(__file__).resolve().parent
ENV = "HARNESS_EMULATOR_NATIVE"
FLAGS = ["-O2", "-shared", "-fPIC", "-ffp-contract=off", "-fno-math-errno", "-w"]


class State(ctypes.Structure):
    _fields_ = [("v", ctypes.c_void_p), ("s", ctypes.c_void_p), ("scc", ctypes.c_int64),
                ("status", ctypes.c_int64), ("executed", ctypes.c_int64),
                ("progress", ctypes.c_int64), ("lds", ctypes.c_void_p),
                ("lds_size", ctypes.c_int64), ("checked", ctypes.c_int64),
                ("mine", ctypes.c_int64), ("current", ctypes.c_int64),
                ("written", ctypes.c_void_p), ("read_by", ctypes.c_void_p),
                ("starts", ctypes.c_void_p), ("ends", ctypes.c_void_p),
                ("regions", ctypes.c_int64), ("bytes", ctypes.c_void_p)]


BYTE_KINDS = ("scalar_load", "global_load", "global_store", "lds_read", "lds_write")
BUDGET_STOP, NEED_NUMPY, BARRIER_STOP, END_STOP = range(4)


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


def translate(ins, program):
    """(C body, jump target or None), or None for the numpy executor."""
    encoding, name = split_mnemonic(ins.mnemonic)
    try:
        if encoding == "v":
            return vector.valu(ins), None
        if encoding == "s":
            if name.startswith(("load_dword",)):
                return scalar.s_load(ins, name), None
            if scalar.sopp.knows(name):
                return scalar.control(ins, name, program)
            return scalar.salu(ins, name), None
        if encoding == "global":
            return memory_ops.global_op(ins, name), None
        if encoding == "ds":
            return memory_ops.ds(ins, name), None
    except Exception:  # noqa: BLE001 - any form the translators do not take runs in numpy
        return None
    return None


def instruction_c(k: int, body: str | None, count: int) -> str:
    label = f"L{k}: at = {k}; if (n >= budget) goto out;"
    if body is None:
        return f"{label} status = NEED_NUMPY; goto out;"
    done = f"hits[{k}]++; n++;"
    body = body.replace("FALLBACK", "{ status = NEED_NUMPY; goto out; }")
    body = body.replace("STOP_AFTER(BARRIER_STOP);",
                        f"{{ {done} at = {k + 1}; status = BARRIER_STOP; goto out; }}")
    body = body.replace("STOP_AFTER(END_STOP);", f"{{ {done} status = END_STOP; goto out; }}")
    if "NEXT(" in body:
        start = body.index("NEXT(")
        target = body[start + 5:body.index(")", start)]
        body = body.replace(f"NEXT({target});", f"{{ {done} goto L{target}; }}")
    return f"{label} {body} {done}"


def source(program) -> tuple[str, list[bool]]:
    """The C text of a program and which instructions it runs itself."""
    count = len(program.instructions)
    bodies = [translate(ins, program) for ins in program.instructions]
    translated = [b is not None for b in bodies]
    cases = " ".join(f"case {k}: goto L{k};" for k in range(count))
    lines = [(HERE / "prelude.c").read_text(), "int64_t run(State *st, int64_t start, int64_t budget, int64_t *hits) {",
             "  uint32_t *S = st->s, *Vb = st->v; int64_t scc = st->scc, n = 0, at = start;",
             "  int64_t status = BUDGET_STOP;",
             f"  switch (start) {{ {cases} default: status = NEED_NUMPY; goto out; }}"]
    lines += [instruction_c(k, b[0] if b else None, count) for k, b in enumerate(bodies)]
    lines += [f"  at = {count}; status = NEED_NUMPY;",
              "out:", "  st->scc = scc; st->status = status; st->executed = n; return at;", "}"]
    return "\n".join(lines), translated


def translator_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(HERE.glob("*.py")) + [HERE / "prelude.c"]:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_folder() -> Path:
    """The parent's HIP cache when writable, else the child's scratch (the sandbox), else /tmp."""
    from harness.compile.hip import toolchain
    candidates = [toolchain.cache_root() / "emulated" / "native"]
    if os.environ.get("TORCH_EXTENSIONS_DIR"):
        candidates.insert(0, Path(os.environ["TORCH_EXTENSIONS_DIR"]) / "emulator-native")
    candidates.append(Path(tempfile.gettempdir()) / "harness-emulator-native")
    for folder in candidates:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return folder
    raise OSError("no writable folder for the emulator's native builds")


def compiler() -> str:
    from harness.compile.hip import toolchain
    found = toolchain.llvm_tool("clang")
    if found is None:
        raise FileNotFoundError("clang-22 is not installed (make setup installs it)")
    return str(found)


class NativeProgram:
    """The compiled function and, per instruction, whether C runs it."""

    def __init__(self, program, blob: bytes):
        key = hashlib.sha256(blob).hexdigest()[:24] + "-" + translator_hash()
        folder = cache_folder()
        library = folder / f"{key}.so"
        text, self.translated = source(program)
        if not library.exists():
            unit = folder / f"{key}.c"
            unit.write_text(text)
            partial = folder / f"{key}.{os.getpid()}.so"
            subprocess.run([compiler(), *FLAGS, str(unit), "-o", str(partial)], check=True,
                           capture_output=True, timeout=600)
            os.replace(partial, library)
        self.library = ctypes.CDLL(str(library))
        self.run = self.library.run
        self.run.restype = ctypes.c_int64
        self.run.argtypes = [ctypes.POINTER(State), ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]


def native_program(code):
    """The code object's NativeProgram (built once, kept on it), or None when off or unbuildable."""
    if not enabled():
        return None
    cached = code.__dict__.get("_native", False)
    if cached is False:
        try:
            cached = NativeProgram(code.program, code.blob)
        except (OSError, subprocess.SubprocessError) as error:
            cached = None
            code.__dict__["_native_error"] = str(error)[:300]
        code.__dict__["_native"] = cached
    return cached
