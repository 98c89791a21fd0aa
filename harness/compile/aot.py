"""Ahead-of-time compilation of a submission's Triton kernels for gfx950, gfx942 or sm90, on any machine.

Triton compiles for a GPUTarget without the GPU being present (a CPU-only machine included), so this
module imports the submission file, finds its @triton.jit kernels, compiles each for the target and
reads the resources off the result: registers, spills, shared memory / LDS, occupancy where known,
and which matrix instructions the assembly holds (v_mfma... on AMD; mma / wgmma on NVIDIA).

A kernel's argument types and constexpr values exist only at a launch, so the submission describes
representative launches in a module-level list named AOT_SPECS (the convention this module defines):

    AOT_SPECS = [
        {
            "kernel": "mla_decode_split_kernel",        # name of a @triton.jit function in the file
            "label": "mxfp4, 32-token tiles",            # optional, shown in the report
            "signature": {                               # every argument that is not tl.constexpr
                "q_ptr": "*bf16:16",                     # Triton type; ":16" = a multiple of 16, as the
                "q_stride_t": "i32:16",                  #   JIT specializes aligned pointers and ints
                "sm_scale": "fp32",
            },
            "constexprs": {"BLOCK_N": 32, "DOT_DTYPE": tl.bfloat16},  # every tl.constexpr argument
            "num_warps": 8,                              # optional (default 4)
            "num_stages": 2,                             # optional (backend default)
            "targets": ["gfx950"],                       # optional: the targets this variant is built for
        },
    ]

Type strings are Triton's: "*bf16", "*fp16", "*fp32", "*u8", "*i32", "*fp8e4nv", "i32", "i64", "fp32".
A kernel with no entry is reported as skipped, so every kernel of the file shows up in the report; so is a
variant whose "targets" leave the target out. Importing a submission runs its code: the harness's commands do
it only inside the submission's sandboxed worker (harness/run/compiling.py), never in the parent.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from harness.compile import loops

TARGETS = {
    # name: (backend, arch, warp size)
    "gfx950": ("hip", "gfx950", 64),
    "gfx942": ("hip", "gfx942", 64),
    "sm90": ("cuda", 90, 32),
}

# Per-SM / per-CU limits used to estimate occupancy on NVIDIA (Hopper): registers, shared memory, warps.
_SM90_REGISTERS = 65536
_SM90_SHARED_BYTES = 228 * 1024
_SM90_MAX_WARPS = 64


class AotError(ValueError):
    """A problem with the submission or its AOT_SPECS (message is one line for the user)."""


@dataclasses.dataclass
class KernelReport:
    kernel: str
    label: str
    target: str
    registers: int | None = None  # VGPRs (AMD, arch VGPRs) or registers per thread (NVIDIA)
    agprs: int | None = None  # AMD accumulation VGPRs
    sgprs: int | None = None  # AMD scalar registers
    spills: int | None = None  # AMD: VGPR+SGPR spill count; NVIDIA: local-memory spill instructions (STL+LDL)
    stack_bytes: int | None = None  # private / local memory per thread
    shared_bytes: int | None = None  # LDS (AMD) or shared memory (NVIDIA) per program
    occupancy: str | None = None  # waves per SIMD (AMD, from the compiler) or an estimate of CTAs per SM (NVIDIA)
    matrix_instructions: tuple[str, ...] = ()
    num_warps: int | None = None
    loop: loops.LoopFigures | None = None  # AMD: what one iteration of the main loop issues per wave
    error: str | None = None  # compile failure, or why the kernel was skipped
    skipped: bool = False


def load_module(path: str | Path):
    """Import a submission file as a module (its folder's parent goes on sys.path for `task`)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise AotError(f"no such file: {path}")
    for folder in (path.parent.parent, path.parent):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    name = "_aot_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's file: report, never crash
        raise AotError(f"cannot import {path.name}: {type(error).__name__}: {error}") from error
    return module


def find_kernels(module) -> dict:
    """name -> JITFunction for every @triton.jit function defined at the module's top level."""
    from triton.runtime.jit import JITFunction

    return {name: obj for name, obj in vars(module).items() if isinstance(obj, JITFunction)}


def _is_launchable(kernel) -> bool:
    """Helper @triton.jit functions (called from kernels) are not compiled on their own: heuristically, those whose name starts with '_'."""
    return not kernel.__name__.startswith("_")


def _split_signature(kernel, spec: dict):
    """(signature with constexprs marked, constexprs, divisibility attrs) in triton.compile's form."""
    signature_in = spec.get("signature", {})
    constexprs = dict(spec.get("constexprs", {}))
    signature, attrs = {}, {}
    for index, arg in enumerate(kernel.arg_names):
        param = kernel.params[index]
        if arg not in constexprs and arg not in signature_in and param.is_constexpr and param.has_default:
            constexprs[arg] = param.default  # a constexpr with a default needs no entry
        if arg in constexprs:
            signature[arg] = "constexpr"
            continue
        if arg not in signature_in:
            raise AotError(f"AOT_SPECS entry for {kernel.__name__} gives no type or constexpr for argument {arg!r}")
        type_name, _, hint = str(signature_in[arg]).partition(":")
        signature[arg] = type_name
        if hint == "16":
            attrs[(index,)] = [["tt.divisibility", 16]]
        elif hint:
            raise AotError(f"AOT_SPECS: only the ':16' hint is supported, got {signature_in[arg]!r} for {arg!r}")
    unknown = set(signature_in) | set(constexprs)
    unknown -= set(kernel.arg_names)
    if unknown:
        raise AotError(f"AOT_SPECS entry for {kernel.__name__} names unknown arguments: {sorted(unknown)}")
    return signature, constexprs, attrs


def _nvidia_tool(name: str) -> Path | None:
    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    return tool if tool.is_file() else None


def _amd_report(report: KernelReport, asm: str) -> None:
    def field(pattern):
        match = re.search(pattern, asm)
        return int(match.group(1)) if match else None

    report.registers = field(r"\.vgpr_count:\s+(\d+)") or field(r";\s*NumVgprs:\s+(\d+)")
    report.agprs = field(r";\s*NumAgprs:\s+(\d+)")
    report.sgprs = field(r"\.sgpr_count:\s+(\d+)") or field(r";\s*NumSgprs:\s+(\d+)")
    vgpr_spills = field(r"\.vgpr_spill_count:\s+(\d+)") or 0
    sgpr_spills = field(r"\.sgpr_spill_count:\s+(\d+)") or 0
    report.spills = vgpr_spills + sgpr_spills
    report.stack_bytes = field(r";\s*ScratchSize:\s+(\d+)")
    waves = field(r";\s*Occupancy:\s+(\d+)")
    report.occupancy = f"{waves} waves/SIMD" if waves is not None else None
    report.matrix_instructions = tuple(sorted(set(re.findall(r"\b(v_mfma\w+|v_smfmac\w+|v_wmma\w+)", asm))))
    report.loop = loops.main_loop(loops.from_assembly(asm))


def _nvidia_report(report: KernelReport, compiled) -> None:
    ptx = compiled.asm.get("ptx", "")
    found = set(re.findall(r"\b(wgmma\.mma_async[\w.]*|mma\.sync[\w.]*)", ptx))
    cubin = compiled.asm.get("cubin")
    dump, sass = _nvidia_tool("cuobjdump"), ""
    if cubin and dump:
        with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
            handle.write(cubin)
            handle.flush()
            usage = subprocess.run([str(dump), "--dump-resource-usage", handle.name],
                                   capture_output=True, text=True, timeout=120).stdout
            sass = subprocess.run([str(dump), "--dump-sass", handle.name],
                                  capture_output=True, text=True, timeout=120).stdout
        match = re.search(r"REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", usage)
        if match:
            report.registers = int(match.group(1))
            report.stack_bytes = int(match.group(2)) + int(match.group(3))
        ops = collections.Counter(re.findall(r"\b(STL|LDL)\b", sass))
        report.spills = ops["STL"] + ops["LDL"]
        found |= set(re.findall(r"\b([HQ]GMMA\.\w+|HMMA\.\w+|IMMA\.\w+)", sass))
    report.matrix_instructions = tuple(sorted(found))
    if report.registers:
        threads = 32 * (report.num_warps or 4)
        regs = -(-report.registers // 8) * 8  # allocation granularity
        by_regs = _SM90_REGISTERS // (regs * threads)
        by_shared = _SM90_SHARED_BYTES // report.shared_bytes if report.shared_bytes else 32
        by_warps = _SM90_MAX_WARPS // (threads // 32)
        ctas = min(by_regs, by_shared, by_warps, 32)
        report.occupancy = f"~{ctas} CTA/SM ({ctas * threads // 32} warps)"


def report_from_dict(raw: dict) -> KernelReport:
    """A KernelReport back from the JSON the worker sent (dataclasses.asdict of one)."""
    raw = dict(raw, matrix_instructions=tuple(raw.get("matrix_instructions") or ()))
    if raw.get("loop"):
        loop = dict(raw["loop"])
        loop["loads"] = {int(width): count for width, count in loop["loads"].items()}
        raw["loop"] = loops.LoopFigures(**loop)
    return KernelReport(**raw)


@contextlib.contextmanager
def compiler_errors():
    """The error lines LLVM writes straight to fd 2 while Triton compiles (it raises for none of them)."""
    found: list[str] = []
    with tempfile.TemporaryFile() as caught:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(caught.fileno(), 2)
        try:
            yield found
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            text = caught.read().decode("utf-8", "replace")
            found += [line.strip() for line in text.splitlines() if "error" in line.lower()]


def _wrong_target(spec: dict, target: str) -> str:
    """Why an AOT_SPECS entry is not for `target` ('' when it is): its optional "targets" list leaves it out."""
    wanted = spec.get("targets")
    if wanted and target not in wanted:
        return f"AOT_SPECS builds this variant for {', '.join(wanted)} only"
    return ""


def compile_kernel(kernel, spec: dict, target: str) -> KernelReport:
    """Compile one kernel for one AOT_SPECS entry; failures come back in report.error, compiler error lines
    included (a variant that cannot be built for this target never reads as compiled)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    report = KernelReport(kernel=kernel.__name__, label=spec.get("label", ""), target=target,
                          num_warps=spec.get("num_warps", 4))
    try:
        signature, constexprs, attrs = _split_signature(kernel, spec)
    except AotError as error:
        report.error = str(error)
        return report
    gpu_target = GPUTarget(*TARGETS[target])
    backend = triton.compiler.make_backend(gpu_target)
    options = {"num_warps": report.num_warps}
    if "num_stages" in spec:
        options["num_stages"] = spec["num_stages"]
    try:
        with warnings.catch_warnings(), compiler_errors() as errors:
            warnings.simplefilter("ignore")  # Triton's notices about its own future defaults are noise here
            compiled = triton.compile(ASTSource(kernel, signature, constexprs, attrs), target=gpu_target,
                                      options=backend.parse_options(options).__dict__)
    except Exception as error:  # a compile error in the user's kernel is a result, not a crash
        first = str(error).strip().splitlines()
        report.error = f"{type(error).__name__}: {first[-1] if first else ''}"[:300]
        return report
    if errors:
        more = f" ({len(errors)} compiler error lines)" if len(errors) > 1 else ""
        report.error = f"cannot be built for {target}: {errors[0][:200]}{more}"
        return report
    report.shared_bytes = getattr(compiled.metadata, "shared", None)
    if TARGETS[target][0] == "hip":
        _amd_report(report, compiled.asm.get("amdgcn", ""))
    else:
        _nvidia_report(report, compiled)
    return report


def compile_submission(path: str | Path, target: str) -> list[KernelReport]:
    """Compile every @triton.jit kernel of a trusted file in this process (tests; the harness's commands import a
    submission only in its worker: harness/run/compiling.py)."""
    return compile_module(load_module(path), target)


def preferred_spec(specs: list, kernel: str, target: str) -> dict | None:
    """The AOT_SPECS entry that describes `kernel`'s launch on `target`: the first labelled with the target's
    name, else the first (the kernel model compiles only that one)."""
    own = [spec for spec in specs if spec.get("kernel") == kernel]
    labelled = [spec for spec in own if target in str(spec.get("label", "")).lower()]
    return (labelled or own or [None])[0]


COMPILING_MARK = "aot: compiling AOT_SPECS entry"  # then its index: names the variant a dying compiler was building


def compile_module(module, target: str, only: list | None = None, preferred: bool = False,
                   died: dict | None = None) -> list[KernelReport]:
    """Compile every @triton.jit kernel of an imported submission for target ('gfx950', 'gfx942' or 'sm90');
    `only`: just the kernels of these names; `preferred`: only each kernel's preferred_spec; `died`: AOT_SPECS
    index -> why, for the variants whose compile killed an earlier worker (reported as failed, not compiled
    again). Each compile is announced on stdout first, so the worker's log names the one that dies."""
    if target not in TARGETS:
        raise AotError(f"unknown target {target!r}: use one of {', '.join(TARGETS)}")
    path = Path(getattr(module, "__file__", "") or "submission.py")
    kernels = find_kernels(module)
    specs = getattr(module, "AOT_SPECS", [])
    if not isinstance(specs, (list, tuple)) or not all(isinstance(s, dict) for s in specs):
        raise AotError("AOT_SPECS must be a list of dicts (see harness/compile/aot.py)")
    for spec in specs:
        if spec.get("kernel") not in kernels:
            raise AotError(f"AOT_SPECS names kernel {spec.get('kernel')!r}, which is not a @triton.jit "
                           f"function of {Path(path).name}")
    died = died or {}
    reports = []
    for name, kernel in kernels.items():
        if only is not None and name not in only:
            continue
        own = [s for s in specs if s["kernel"] == name]
        if preferred and own:
            own = [preferred_spec(own, name, target)]
        for spec in own:
            index = next(i for i, entry in enumerate(specs) if entry is spec)
            report = KernelReport(kernel=name, label=spec.get("label", ""), target=target)
            elsewhere = _wrong_target(spec, target)
            if elsewhere:
                report.skipped, report.error = True, elsewhere
            elif str(index) in died:
                report.error = died[str(index)]
            else:
                print(f"{COMPILING_MARK} {index}", flush=True)
                report = compile_kernel(kernel, spec, target)
            reports.append(report)
        if not own and _is_launchable(kernel):
            reports.append(KernelReport(kernel=name, label="", target=target, skipped=True,
                                        error="no AOT_SPECS entry: argument types unknown"))
    return reports
