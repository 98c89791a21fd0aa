"""A kernel's instructions in C, compiled by clang-22: the instructions reachable from the
kernel's entry, in functions of up to CHUNK consecutive ones (each behind a label, so C enters
anywhere and branches inside by goto), cached under the code object's sha256 and the C text's
own (a change to a translator, or to a table it reads, builds anew). An instruction C does not
translate stops it with NEED_NUMPY at its index: the numpy executor runs that one and C resumes
after it. $HARNESS_EMULATOR_NATIVE=0 turns it off."""
import ctypes
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from .. import progress, sopp
from ..errors import NotEmulated
from ..executor import split_mnemonic
from ..valu import base_name
from . import matrix_ops, memory_ops, packed_ops, scalar, vector

HERE = Path(__file__).resolve().parent
ENV = "HARNESS_EMULATOR_NATIVE"
FLAGS = ["-shared", "-fPIC", "-ffp-contract=off", "-fno-math-errno", "-w"]
RUNTIME_LEVEL, PROGRAM_LEVEL = "-O2", "-O0"  # the loops, once; each program's calls, quickly


class State(ctypes.Structure):
    _fields_ = [("v", ctypes.c_void_p), ("s", ctypes.c_void_p), ("scc", ctypes.c_int64),
                ("status", ctypes.c_int64), ("executed", ctypes.c_int64),
                ("progress", ctypes.c_int64), ("lds", ctypes.c_void_p),
                ("lds_size", ctypes.c_int64), ("checked", ctypes.c_int64),
                ("mine", ctypes.c_int64), ("current", ctypes.c_int64),
                ("written", ctypes.c_void_p), ("read_by", ctypes.c_void_p),
                ("starts", ctypes.c_void_p), ("ends", ctypes.c_void_p),
                ("regions", ctypes.c_int64), ("bytes", ctypes.c_void_p),
                ("load_base", ctypes.c_uint64),
                ("steps", ctypes.c_void_p), ("step_lanes", ctypes.c_void_p), ("nsteps", ctypes.c_int64),
                ("lines", ctypes.c_void_p), ("nlines", ctypes.c_int64)]


BYTE_KINDS = ("scalar_load", "global_load", "global_store", "lds_read", "lds_write", "buffer_load",
              "lds_dma", "buffer_store")
BUDGET_STOP, NEED_NUMPY, BARRIER_STOP, END_STOP = range(4)


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


def translate(ins, program, defs: dict):
    """(C body, jump target or None), or None for the numpy executor; `defs` collects the
    tables some bodies refer to."""
    encoding, name = split_mnemonic(ins.mnemonic)
    try:
        if encoding == "v" and name.startswith("mfma_"):
            return matrix_ops.mfma(ins, name, defs), None
        if encoding == "v" and base_name(ins.mnemonic) in ("cvt_f32_fp8", "cvt_f32_bf8", "cvt_pk_f32_fp8",
                                                           "cvt_pk_f32_bf8"):
            return matrix_ops.cvt_from_fp8(ins, base_name(ins.mnemonic), defs), None
        if encoding == "v" and name.startswith("accvgpr_"):
            return matrix_ops.accvgpr(ins, name), None
        if encoding == "v" and name in ("cvt_pk_fp8_f32", "cvt_pk_bf8_f32", "cvt_scalef32_pk_fp8_f32",
                                        "cvt_scalef32_pk_bf8_f32"):
            return matrix_ops.cvt_pk_fp8(ins, name, defs), None
        if encoding == "v" and packed_ops.knows(base_name(ins.mnemonic)):
            return packed_ops.translate(ins), None
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
        if encoding == "buffer":
            return memory_ops.buffer_op(ins, name), None
        if encoding == "ds":
            return memory_ops.ds(ins, name), None
    except Exception:  # noqa: BLE001 - any form the translators do not take runs in numpy
        return None
    return None


CHUNK = 128  # instructions per C function: few indirect calls, each function quick to compile
DISPATCH = """
int64_t run(State *st, int64_t start, int64_t budget, int64_t *hits) {
  int64_t at = start, n = 0;
  st->status = CONTINUE;
  while (st->status == CONTINUE) {
    if (at < 0 || at >= COUNT || !chunks[at]) { st->status = NEED_NUMPY; break; }
    at = chunks[at](st, at, &n, budget, hits);
  }
  st->executed = n; return at;
}
"""


def chunks(bodies: list) -> list[range]:
    """Runs of consecutive translated instructions, at most CHUNK long."""
    found, start = [], None
    for k, body in enumerate(bodies + [None]):
        if start is not None and (body is None or k - start == CHUNK):
            found.append(range(start, k))
            start = None
        if body is not None and start is None:
            start = k
    return found


def chunk_c(span: range, bodies: list) -> str:
    """One C function for a run of instructions, each behind its label: it enters at any of
    them (a switch), counts each one's hit, stops at the budget, jumps by goto inside itself
    and returns the next index (with the status set) to leave."""
    lines = [f"static int64_t c{span.start}(State *st, int64_t pc_, int64_t *count_, int64_t budget_,"
             " int64_t *hits_) {",
             "  uint32_t *S = st->s, *Vb = st->v; int64_t scc = st->scc, n_ = *count_; (void)S; (void)Vb;",
             "  switch (pc_) {" + " ".join(f"case {k}: goto L{k};" for k in span) + " default: goto out_; }"]
    for k in span:
        done = f"hits_[{k}]++; n_++;"
        body = bodies[k][0].replace("FALLBACK", f"{{ UNTRACE_STEP st->status = NEED_NUMPY; pc_ = {k}; goto out_; }}")
        body = body.replace("STOP_AFTER(BARRIER_STOP);",
                            f"{{ {done} st->status = BARRIER_STOP; pc_ = {k + 1}; goto out_; }}")
        body = body.replace("STOP_AFTER(END_STOP);", f"{{ {done} st->status = END_STOP; pc_ = {k}; goto out_; }}")
        if "NEXT(" in body:
            at = body.index("NEXT(")
            target = int(body[at + 5:body.index(")", at)])
            leave = f"goto L{target};" if target in span else f"{{ pc_ = {target}; goto out_; }}"
            body = body.replace(f"NEXT({target});", f"{{ {done} {leave} }}")
        lines.append(f"  L{k}: if (n_ >= budget_) {{ st->status = BUDGET_STOP; pc_ = {k}; goto out_; }}"
                     f"\n  TRACE_STEP({k}) {{ {body} }} {done}")
    lines.append(f"  pc_ = {span.stop};")
    lines.append("  out_: st->scc = scc; *count_ = n_; return pc_; }")
    return "\n".join(lines)


def reachable(program, entry: int | None) -> list[bool]:
    """The instructions a kernel starting at `entry` can reach by falling through and by
    its branches' static targets (None: all). s_setpc's and s_swappc's targets are not
    known here: what they reach alone runs in numpy."""
    count = len(program.instructions)
    if entry is None:
        return [True] * count
    seen, pending = [False] * count, [entry]
    while pending:
        k = pending.pop()
        if not 0 <= k < count or seen[k]:
            continue
        seen[k] = True
        pending.extend(successors(program, k))
    return seen


def successors(program, k: int) -> list[int]:
    encoding, name = split_mnemonic(program.instructions[k].mnemonic)
    if encoding != "s":
        return [k + 1]
    if name in sopp.ENDS or name == "setpc_b64":
        return []
    if name in ("branch", "call_b64") or name.startswith("cbranch_"):
        try:
            target = [sopp.target_index(program, program.instructions[k])]
        except NotEmulated:  # a branch into no instruction: its numpy executor says so
            target = []
        return target if name == "branch" else target + [k + 1]
    return [k + 1]


def source(program, entry: int | None = None) -> tuple[str, list[bool]]:
    """The C text of a program (the instructions reachable from `entry`) and which
    instructions it runs itself."""
    count = len(program.instructions)
    defs: dict = {}
    wanted = reachable(program, entry)
    bodies = [translate(ins, program, defs) if wanted[k] else None
              for k, ins in enumerate(program.instructions)]
    translated = [b is not None for b in bodies]
    lines = [(HERE / "prelude.c").read_text(), vector.helpers(declarations=True), f"#define COUNT {count}",
             "typedef int64_t (*Chunk)(State *, int64_t, int64_t *, int64_t, int64_t *);", *defs.values()]
    spans = chunks(bodies)
    lines += [chunk_c(span, bodies) for span in spans]
    owner = ["0"] * count
    for span in spans:
        owner[span.start:span.stop] = [f"c{span.start}"] * len(span)
    lines += [f"static const Chunk chunks[COUNT + 1] = {{ {', '.join(owner)}, 0 }};", DISPATCH]
    return "\n".join(lines), translated


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def cache_folders() -> list[Path]:
    """Where the HIP runtime's builds go (hip_runtime.library), a `native` folder in each: the
    HIP cache (read-only in the sandbox) and the child's scratch extensions folder."""
    from ..hip_runtime import library
    return [folder / "native" for folder in library.build_folders()]


def writable_folder() -> Path:
    """The child's scratch first (a write to the HIP cache would fail the file checks)."""
    from ..hip_runtime import library
    folder = library.writable_folder() / "native"
    folder.mkdir(exist_ok=True)
    return folder


def compiler() -> str:
    from harness.compile.hip import toolchain
    found = toolchain.llvm_tool("clang")
    if found is None:
        raise FileNotFoundError("clang-22 is not installed (make setup installs it)")
    return str(found)


def built(name: str, text: str, level: str) -> Path:
    """The shared library of `text`, compiled once into the cache (another process may race:
    each writes its own file, then renames it in place; not named by pid: sandboxed children
    share a scratch folder and each is pid 2 in its own namespace)."""
    for folder in cache_folders():
        if (folder / f"{name}.so").exists():
            return folder / f"{name}.so"
    folder = writable_folder()
    library = folder / f"{name}.so"
    if not library.exists():
        with tempfile.TemporaryDirectory(dir=folder, prefix=f".{name}.") as work:
            unit, partial = Path(work) / "unit.c", Path(work) / "unit.so"
            unit.write_text(text)
            subprocess.run([compiler(), level, *FLAGS, str(unit), "-o", str(partial)], check=True,
                           capture_output=True, timeout=600)
            os.replace(partial, library)
    return library


def runtime_library():
    """The per-lane loops every program calls, loaded globally so programs link to it."""
    text = "\n".join([(HERE / "prelude.c").read_text(), (HERE / "runtime.c").read_text(),
                      vector.helpers()])
    path = built(f"runtime-{text_key(text)}", text, RUNTIME_LEVEL)
    return ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)


class NativeProgram:
    """The compiled function of one kernel (the instructions reachable from its entry; None:
    the whole code object) and, per instruction, whether C runs it."""

    def __init__(self, program, blob: bytes, entry: int | None = None):
        self.runtime = runtime_library()
        text, self.translated = source(program, entry)
        # named by what it compiles: a change to any translator or table it reads is a new build
        key = hashlib.sha256(blob).hexdigest()[:16] + "-" + text_key(text)
        self.library = ctypes.CDLL(str(built(key, text, PROGRAM_LEVEL)))
        self.run = self.library.run
        self.run.restype = ctypes.c_int64
        self.run.argtypes = [ctypes.POINTER(State), ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]


def native_program(code, entry: int | None = None):
    """The kernel's NativeProgram (built once per entry, kept on the code object), or None when
    off or unbuildable. entry: index of the launched kernel's first instruction."""
    if not enabled():
        return None
    kept = code.__dict__.setdefault("_native", {})
    if entry not in kept:
        try:
            kept[entry] = NativeProgram(code.program, code.blob, entry)
        except (OSError, RuntimeError, subprocess.SubprocessError) as error:  # the numpy path runs
            kept[entry] = None
            detail = getattr(error, "stderr", b"") or b""
            code.__dict__["_native_error"] = (str(error) + " " + detail.decode(errors="replace")[-300:])[:600]
            progress.say(f"gfx950 emulator: no C fast path ({code.__dict__['_native_error']}); the numpy "
                         "executors run this kernel, many times slower")
    return kept[entry]
