"""Issue 29 / 38: one of aiter's MLA stage-1 kernels on the gfx950 emulator (CPU), against the torch stand-in.

Usage:
  python bench/tools/aiter_a8w8_race.py [--kernel a8w8|a8w8_ps|a16w16|a16w8_ps] [--batch 1] [--kv 512]
                                        [--splits N] [--seed 1] [--mode first|all] [--quantum 1]

The product does the work (harness/aiter_gfx950/): the pinned amd-aiter wheel's code object, the argument block,
grid and block that its asm_mla.cu builds, run_kernel, and the LDS race checker with both instructions named
(races.py). This tool only builds one MLA decode input from reference.generate_input (16 heads, page size 1, one
query token), runs the stand-in's mla_decode_fwd once emulated and once in torch, and compares them under the
official tolerance (rtol = atol = 0.1, at most 5% of elements off).

--mode first: the first race stops the run (the product's behaviour for a kernel whose races fail).
--mode all: every race is let through and its instruction pair listed, and the output is still compared.
--quantum: wave instructions before the next wave of a workgroup runs (the product runs 1: lockstep).

Everything here is "gfx950 emulated (CPU): correctness only", never measured on an MI355X. The wheel's _ps a8w8
code object differs from the runner's pin (docs/AITER_STANDIN.md, "aiter's own kernels, emulated").
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.aiter_gfx950 import package, routing, stage1  # noqa: E402
from harness.aiter_standin import decode  # noqa: E402
from harness.aiter_standin import metadata as standin_metadata  # noqa: E402
from harness.emulator.errors import EmulationFault  # noqa: E402
import reference  # noqa: E402

KERNELS = {"a8w8": ("a8w8", False), "a8w8_ps": ("a8w8", True), "a16w16": ("a16w16", False),
           "a16w8_ps": ("a16w8", True)}


def decode_arguments(batch: int, kv: int, seed: int, variant: str, persistent: bool, splits: int | None) -> dict:
    """mla_decode_fwd's arguments for the chosen kernel."""
    q, kv_data, qo_indptr, kv_indptr, _ = reference.generate_input(batch, 1, kv, seed, device="cpu")
    kv8, kv_scale = kv_data["fp8"]
    q_scale = None
    if variant == "a8w8":
        q, q_scale = reference.quantize_fp8(q, dtype=kv8.dtype)
    rows = kv_data["bf16"] if variant == "a16w16" else kv8
    args = dict(q=q, kv_buffer=rows.reshape(-1, 1, 1, rows.shape[-1]), qo_indptr=qo_indptr.int(),
                kv_indptr=kv_indptr.int(), kv_indices=torch.arange(rows.shape[0], dtype=torch.int32),
                kv_last_page_lens=torch.ones(batch, dtype=torch.int32), max_seqlen_q=1, sm_scale=reference.SM_SCALE,
                q_scale=q_scale, kv_scale=None if variant == "a16w16" else kv_scale)
    if persistent:
        shapes = standin_metadata.get_mla_metadata_info_v1(batch, 1, 16, q.dtype, rows.dtype, False)
        buffers = [torch.empty(s, dtype=t) for s, t in shapes]
        standin_metadata.get_mla_metadata_v1(args["qo_indptr"], args["kv_indptr"], args["kv_last_page_lens"], 16, 1,
                                             True, buffers[0], buffers[2], buffers[1], *buffers[3:],
                                             max_split_per_batch=splits or -1, dtype_q=q.dtype, dtype_kv=rows.dtype)
        names = ("work_meta_data", "work_indptr", "work_info_set", "reduce_indptr", "reduce_final_map",
                 "reduce_partial_map")
        args.update(dict(zip(names, buffers)))
    elif splits:
        args.update(num_kv_splits=splits,
                    num_kv_splits_indptr=torch.arange(0, (batch + 1) * splits, splits, dtype=torch.int32))
    return args


def run(args: dict, how: str) -> tuple[torch.Tensor, list[str]]:
    os.environ["HARNESS_AITER"] = how
    routing.take_lines()
    out = torch.zeros(args["q"].shape[0], 16, 512, dtype=torch.bfloat16)
    decode.mla_decode_fwd(o=out, **args)
    return out, routing.take_lines()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", choices=sorted(KERNELS), default="a8w8")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--kv", type=int, default=512)
    p.add_argument("--splits", type=int, default=None, help="num_kv_splits (or splits per sequence for _ps)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mode", choices=("first", "all"), default="first")
    p.add_argument("--quantum", type=int, default=stage1.QUANTUM)
    options = p.parse_args(argv)
    variant, persistent = KERNELS[options.kernel]
    args = decode_arguments(options.batch, options.kv, options.seed, variant, persistent, options.splits)
    stage1.QUANTUM = options.quantum
    if options.mode == "all":  # every code object lets its races through, named
        objects = package.pinned()["code_objects"]
        for entry in objects.values():
            entry.setdefault("lds_races_let_through", "--mode all")
        package.pinned = lambda: objects
    print(f"gfx950 emulated (CPU): correctness only. amd-aiter {package.version()}; {options.kernel}, batch "
          f"{options.batch}, kv {options.kv}, seed {options.seed}, mode {options.mode}, quantum {options.quantum}")
    started = time.perf_counter()
    try:
        emulated, said = run(args, "emulate")
    except EmulationFault as fault:
        print(f"STOPPED after {time.perf_counter() - started:.1f} s: {fault}")
        return 2
    print(f"ran in {time.perf_counter() - started:.1f} s")
    for line in said:
        print("  " + line)
    modelled, _ = run(args, "torch")
    diff = (emulated.float() - modelled.float()).abs()
    close = torch.isclose(emulated.float(), modelled.float(), rtol=reference.RTOL, atol=reference.ATOL)
    ratio = 1 - float(close.float().mean())
    verdict = "PASS" if ratio <= reference.MISMATCH_RATIO_LIMIT else "FAIL"
    print(f"against the torch stand-in: max |diff| {float(diff.max()):.4g}, elements not close "
          f"{int((~close).sum())} of {close.numel()} ({100 * ratio:.2f}%): {verdict} under the 5% rule")
    return 0 if verdict == "PASS" and not any("let through" in line for line in said) else 1


if __name__ == "__main__":
    sys.exit(main())
