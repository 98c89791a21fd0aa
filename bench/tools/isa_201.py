"""Ahead-of-time ISA figures of submission 201's kernels on a CPU: resources and the main loop's length.

    python bench/tools/isa_201.py [--target sm90|gfx950] [--kernel NAME] [--dump DIR] [name=KEY:VALUE,...]
    python bench/tools/isa_201.py --taken [--target sm90|gfx950] [--dump DIR]

(--kernel mla_fp8_gluon_kernel: the Gluon sm90 kernel; a KEY ending in _ptr sets that argument's type, e.g.
part_o_ptr:*bf16.) --taken: every launch the target's path makes (TAKEN), e.g. to compare two versions' code.

For each variant (constexprs and launch options of the kernel), compiles for the target and prints
registers, spills, shared memory / LDS, and the instructions of the longest loop of the kernel (the
per-tile body), with the instruction mix that matters for an issue-rate estimate. Lane-ops per KV token =
loop instructions x warps x lanes / BLOCK_N (NOTES.md, issue 12, uses it against the byte rate).
Self-contained: imports triton and the submission file, not the harness.
"""
from __future__ import annotations

import argparse
import collections
import importlib.util
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

SIGNATURE = {
    "q_ptr": "*bf16", "q_stride_t": "i32", "q_stride_h": "i32", "kv_ptr": "*fp8e4nv", "kv_scale_ptr": "*fp32",
    "kv_indptr_ptr": "*i32", "out_ptr": "*bf16", "part_o_ptr": "*fp32", "part_lse_ptr": "*fp32",
    "counter_ptr": "*i32", "sm_scale": "fp32", "num_splits": "i32",
    "kv_desc_n": "set in compile_variant", "kv_desc_r": "set in compile_variant",
}
ALIGNED = {"q_ptr", "q_stride_t", "q_stride_h", "kv_ptr", "kv_scale_ptr", "kv_indptr_ptr", "out_ptr",
           "part_o_ptr", "part_lse_ptr", "counter_ptr"}
DEFAULTS = {"WRITE_FINAL": False, "BLOCK_N": 32}  # mla_fp8_kernel as gfx950 launches it, several splits
# the Gluon kernel's fused merge of 4 splits with the L2 hint (32 x 8k on the H200)
GLUON_DEFAULTS = {"WRITE_FINAL": False, "FUSED_MERGE": True, "MERGE_ELEMS": 2048, "L2_EVICT_FIRST": True,
                  "part_o_ptr": "*bf16"}
LAUNCH = {"num_warps": 4, "num_stages": 1}  # the Triton path's split kernels
WARPS = {"num_warps": 4}  # the Gluon and merge kernels' launches (no num_stages given)
# every launch a target's default path makes (gfx950: and the MXFP4 option's split kernel): (name, kernel,
# constexprs and argument types, launch options)
TAKEN = {
    "gfx950": [
        ("split", "mla_fp8_kernel", {"WRITE_FINAL": False, "BLOCK_N": 32}, LAUNCH),
        ("final", "mla_fp8_kernel", {"WRITE_FINAL": True, "BLOCK_N": 32}, LAUNCH),
        ("merge", "mla_merge_kernel", {"SPLITS_CHUNK": 16}, WARPS),
        ("mxfp4_split", "mla_mxfp4_kernel", {"WRITE_FINAL": False, "BLOCK_N": 32, "SCALE_STRIDE": 24,
                                             "HW_CVT": True, "kv_ptr": "*u8", "kv_scale_ptr": "*u8"}, LAUNCH),
    ],
    "sm90": [
        ("final", "mla_fp8_gluon_kernel", dict(GLUON_DEFAULTS, WRITE_FINAL=True, FUSED_MERGE=False), WARPS),
        ("fused4", "mla_fp8_gluon_kernel", GLUON_DEFAULTS, WARPS),
        ("partials", "mla_fp8_gluon_kernel", dict(GLUON_DEFAULTS, FUSED_MERGE=False, part_o_ptr="*fp32"), WARPS),
        ("merge_pdl", "mla_merge_kernel", {"SPLITS_CHUNK": 16, "PDL": True}, WARPS),
        ("merge_slices_pdl", "mla_merge_kernel", {"SPLITS_CHUNK": 32, "DIMS": 128, "PDL": True}, WARPS),
    ],
}


def load_201():
    path = next((REPO / "submissions").glob("201_*.py"))
    spec = importlib.util.spec_from_file_location("isa201", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_variant(kernel, constexprs: dict, options: dict, target: str):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if type(kernel).__module__.startswith("triton.experimental.gluon"):  # a @gluon.jit kernel
        from triton.experimental.gluon._runtime import GluonASTSource as ASTSource
    types = dict(SIGNATURE, **{k: constexprs.pop(k) for k in list(constexprs) if k.endswith("_ptr")})
    constexprs = {k: v for k, v in constexprs.items() if k in kernel.arg_names}
    if "kv_desc_n" in kernel.arg_names:  # the Gluon kernel's TMA descriptors of the KV (nope box, rope box)
        from triton.experimental.gluon.language._layouts import NVMMASharedLayout
        block = 64
        sw128 = NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
        sw64 = NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=8, rank=2)
        types.update(kv_desc_n=f"tensordesc<fp8e4nv[{block}, 512],{sw128!r}>",
                     kv_desc_r=f"tensordesc<fp8e4nv[{block}, 64],{sw64!r}>")
    signature, attrs = {}, {}
    for index, name in enumerate(kernel.arg_names):
        if name in constexprs:
            signature[name] = "constexpr"
        elif name in types:
            signature[name] = types[name]
            if name in ALIGNED:
                attrs[(index,)] = [["tt.divisibility", 16]]
        else:
            param = kernel.params[index]
            signature[name] = "constexpr"
            constexprs[name] = param.default
    gpu = GPUTarget("cuda", 90, 32) if target == "sm90" else GPUTarget("hip", target, 64)
    backend = triton.compiler.make_backend(gpu)
    return triton.compile(ASTSource(kernel, signature, constexprs, attrs), target=gpu,
                          options=backend.parse_options(options).__dict__)


def sass_of(compiled) -> tuple[str, str]:
    """(SASS, registers per thread) of a compiled sm90 kernel, through the cuobjdump in Triton's package."""
    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
        handle.write(compiled.asm["cubin"])
        handle.flush()
        sass = subprocess.run([str(tool), "--dump-sass", handle.name], capture_output=True, text=True).stdout
        usage = subprocess.run([str(tool), "--dump-resource-usage", handle.name], capture_output=True,
                               text=True).stdout
    match = re.search(r"REG:(\d+)", usage)
    return sass, match.group(1) if match else "?"


def longest_loop_sass(sass: str) -> list[str]:
    """Instructions between a backward branch's target and the branch itself (the longest such range)."""
    lines = []
    for line in sass.splitlines():
        match = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if match:
            lines.append((int(match.group(1), 16), match.group(2)))
    best = []
    for index, (addr, text) in enumerate(lines):
        branch = re.search(r"\bBRA\b.*?0x([0-9a-f]+)", text)
        if branch and int(branch.group(1), 16) < addr:
            target = int(branch.group(1), 16)
            body = [t for a, t in lines if target <= a <= addr]
            if len(body) > len(best):
                best = body
    return best


def longest_loop_amdgcn(asm: str) -> list[str]:
    lines = [l.strip() for l in asm.splitlines()]
    labels = {}
    instructions = []
    for l in lines:
        if re.match(r"^\.?L\w+:", l):
            labels[l.rstrip(":").split(":")[0]] = len(instructions)
        elif l and not l.startswith((";", ".", "//")):
            instructions.append(l)
    best = []
    for index, text in enumerate(instructions):
        match = re.match(r"s_cbranch_\w+\s+(\.?L\w+)|s_branch\s+(\.?L\w+)", text)
        if match:
            label = match.group(1) or match.group(2)
            start = labels.get(label)
            if start is not None and start <= index and index - start > len(best):
                best = instructions[start:index + 1]
    return best


def opcode(text: str) -> str:
    text = re.sub(r"^@!?U?P\w+\s+", "", text.strip())
    return text.split()[0] if text else ""


def report(name: str, constexprs: dict, options: dict, target: str, kernel, dump: Path | None) -> None:
    try:
        compiled = compile_variant(kernel, dict(constexprs), options, target)
    except Exception as error:  # a failed variant is a result
        print(f"{name}: compile error: {type(error).__name__}: {str(error).strip().splitlines()[-1][:300]}")
        return
    warps = options.get("num_warps", 4)
    block_n = constexprs.get("BLOCK_N", 64)
    shared = getattr(compiled.metadata, "shared", None)
    if target == "sm90":
        sass, regs = sass_of(compiled)
        body = longest_loop_sass(sass)
        ops = collections.Counter(re.sub(r"\..*", "", opcode(t)) for t in body)
        spills = len(re.findall(r"\b(STL|LDL)\b", sass))
        lanes = 32
        text = sass
    else:
        asm = compiled.asm["amdgcn"]
        body = longest_loop_amdgcn(asm)
        ops = collections.Counter(opcode(t) for t in body)
        field = lambda p: (re.search(p, asm) or [None, "?"])[1]
        vgpr_spills, sgpr_spills = field(r"vgpr_spill_count:\s+(\d+)"), field(r"sgpr_spill_count:\s+(\d+)")
        spills = f"{vgpr_spills}/{sgpr_spills}"
        vgprs, agprs = field(r"NumVgprs:\s+(\d+)"), field(r"NumAgprs:\s+(\d+)")
        regs = f"{vgprs}v+{agprs}a"
        lanes = 64
        text = asm
        warps = options.get("num_warps", 4)
    per_token = len(body) * warps * lanes / block_n
    top = ", ".join(f"{k} {v}" for k, v in ops.most_common(12))
    print(f"{name}: regs {regs} spills {spills} smem {shared} loop {len(body)} instr/warp/tile -> "
          f"{per_token:.0f} lane-ops/token ({warps} warps, BLOCK_N {block_n}); top: {top}")
    if dump:
        dump.mkdir(parents=True, exist_ok=True)
        (dump / f"{name}.{target}.s").write_text(text)
        for stage in ("ttgir", "ptx"):  # the stages above the ISA, to find which source op an instruction came from
            if stage in compiled.asm:
                (dump / f"{name}.{target}.{stage}").write_text(compiled.asm[stage])


def parse(text: str):
    name, _, rest = text.partition("=")
    constexprs, options = dict(DEFAULTS), dict(LAUNCH)
    for pair in filter(None, rest.split(",")):
        key, _, value = pair.partition(":")
        value = {"true": True, "false": False}.get(value.lower(), value)
        value = int(value) if isinstance(value, str) and value.lstrip("-").isdigit() else value
        if key in ("num_warps", "num_stages", "maxnreg", "num_ctas"):
            options[key] = value
        else:
            constexprs[key] = value
    return name, constexprs, options


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="sm90")
    parser.add_argument("--dump", default=None)
    parser.add_argument("--kernel", default="mla_fp8_kernel")
    parser.add_argument("--taken", action="store_true", help="every launch of the target's default path")
    parser.add_argument("variants", nargs="*", default=["default="])
    args = parser.parse_args()
    module = load_201()
    if hasattr(module, "_install_l2_hint_stage"):  # as the sm90 plan does: marked kernels' copies get the hint
        module._install_l2_hint_stage()
    dump = Path(args.dump) if args.dump else None
    if args.taken:
        for name, kernel_name, constexprs, options in TAKEN[args.target]:
            report(name, dict(constexprs), dict(options), args.target, getattr(module, kernel_name), dump)
        return 0
    kernel = getattr(module, args.kernel)
    for text in args.variants:
        name, constexprs, options = parse(text)
        if args.kernel == "mla_fp8_gluon_kernel":  # its own constexprs (no Triton-path defaults)
            constexprs = dict(GLUON_DEFAULTS, **{k: v for k, v in constexprs.items()
                                                 if k not in DEFAULTS or f"{k}:" in text})
        report(name, constexprs, options, args.target, kernel, dump)
    return 0


if __name__ == "__main__":
    sys.exit(main())
