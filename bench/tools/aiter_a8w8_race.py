"""Issue 29: run aiter's non-persistent MLA decode code objects on the gfx950 emulator (CPU) and report LDS races.

Usage:
  python bench/tools/aiter_a8w8_race.py [--kernel a8w8|a8w8_ps|a16w16] [--batch 1] [--kv 512] [--splits N]
                                        [--seed 1] [--mode first|all] [--quantum 4000]
                                        [--aiter-git /work/.mirror/ROCm+aiter/repo] [--commit f3be04a12a]

What it does: takes the code object out of a git mirror of ROCm/aiter, builds the 304-byte kernel argument block,
grid and block the way aiter's host code does for `mla_decode_fwd` without work metadata (the non-persistent path),
runs the kernel on the emulator over an MLA decode input from reference.generate_input (16 heads, 576 QK dims,
512 V dims, page size 1, one query token per sequence), combines the split outputs as aiter's stage-2 Triton kernel
does (written here in torch from its description, not its code) and compares the result with reference.py's torch
a8w8 math (or bf16 math for a16w16) under the official tolerance (rtol = atol = 0.1, at most 5% of elements off).

--mode first: the emulator's LDS race checker stops the run at the first race and prints its report
  (instruction, LDS byte, source pc). --mode all: every race is recorded (instruction, pc, byte, waves) and the run
  goes on, so the output can still be compared; the emulator's schedule runs each wave up to its next s_barrier (or
  --quantum instructions) before the next wave, so a read that races with another wave's later write sees that
  write: the worst interleaving, not what the hardware usually does. A small --quantum interleaves the waves
  more finely.

Everything here is "gfx950 emulated (CPU): correctness only", never measured on an MI355X.

Sources (facts only, no code copied; ROCm/aiter at f3be04a12a0cfd6b5e2c7a94edc774f1bc24460d, the runner's pin):
- hsa/gfx950/mla/mla_a8w8_qh16_qseqlen1_gqaratio16.co (kernel _ZN5aiter33mla_a8w8_qh16_qseqlen1_gqaratio16E) and
  hsa/gfx950/mla/mla_dec_stage1_bf16_a16w16_subQ16_mqa16.co (the a16w16 control); hsa/gfx950/mla/mla_asm.csv maps
  (q fp8, kv fp8, gqa 16, ps 0, qseqlen 1) to the first and (bf16, bf16, 16, 0, 1) to the second.
- csrc/py_itfs_cu/asm_mla.cu, mla_decode_stage1_asm_fwd: the packed KernelArgs struct (every pointer followed by
  8 pad bytes, every 32-bit scalar by 12, csrc/include/aiter_hip_common.h's p2/p3), so field k sits at 16 * k:
  R (split outputs), LSE, Q, KV, kv_indptr, kv_page_indices, kv_last_page_lens, softmax scale (f32), s_MQA =
  gqa_ratio * max_seqlen_q, s_kv_split = number of splits, s_Q_Bs = Q.stride(0) * itemsize * max_seqlen_q,
  s_Bs = KV.stride(0) * itemsize, s_log2_plen = log2(page_size), qo_indptr, STP (num_kv_splits_indptr when not
  persistent), RP (final output), q_scale, kv_scale, out_16_nosplit = number of splits. Launch: block 256
  (4 waves of 64), grid (ceil(max_seqlen_q * gqa / sub_Q), batch, splits) with sub_Q 128 for fp8 and 16 for the
  bf16 qseqlen-1 kernel.
- aiter/mla.py: get_meta_param (splits from the CU count, 256 on MI355X, overhead 84.1, i in 1..16; for fp8 Q
  capped at ceil(avg kv / 128) for 16 heads x 1 token; num_kv_splits_indptr = arange(0, (bs+1)*n, n));
  mla_decode_fwd's non-persistent branch (split outputs fp32 (tokens, n, heads, 512), LSE fp32 (tokens, n, heads, 1);
  with one split and fp8 Q the output tensor itself, viewed as (tokens, 1, heads, 512), is the split output and no
  reduce runs); _fwd_kernel_stage2_asm (for 16 heads and one token it combines min(n, ceil(kv_len / 64)) splits
  with a running max of the LSEs).
- The a8w8_ps control (hsa/gfx950/mla/mla_a8w8_qh16_qseqlen1_gqaratio16_ps.co): the same argument block with STP
  pointing at the host code's 10-entry uint64 block [work_indptr, work_info] (asm_mla.cu's path without
  work_meta_data), grid = number of work items; work_info rows of 8 int32 as csrc/include/mla.h's MlaWorkInfo
  (batch_idx, partial_qo_loc, qo_start, qo_end, kv_start, kv_end, kv_offset, pad), filled for page size 1 as
  csrc/kernels/mla/metadata/v1_2_device.cuh does (kv_offset = sequence end - kv_end; partial_qo_loc -1 when the item
  is the whole sequence). The work plan itself is ours (one item per sequence or per --splits piece), not
  get_mla_metadata_v1's.
"""
from __future__ import annotations

import argparse
import math
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.emulator import lds as lds_module  # noqa: E402
from harness.emulator import launch as launch_module  # noqa: E402
from harness.emulator.code_object import load_code_object  # noqa: E402
from harness.emulator.errors import EmulationFault  # noqa: E402
from harness.emulator.launch import HostMemory, run_kernel  # noqa: E402
import reference  # noqa: E402

DEFAULT_GIT = "/work/.mirror/ROCm+aiter/repo"
PIN = "f3be04a12a"
KERNELS = {
    # name: (code object, kernel symbol, q dtype, kv dtype, sub_Q)
    "a8w8": ("mla_a8w8_qh16_qseqlen1_gqaratio16.co", "_ZN5aiter33mla_a8w8_qh16_qseqlen1_gqaratio16E", "fp8", 128),
    "a8w8_ps": ("mla_a8w8_qh16_qseqlen1_gqaratio16_ps.co", "_ZN5aiter36mla_a8w8_qh16_qseqlen1_gqaratio16_psE", "fp8",
                128),
    "a16w16": ("mla_dec_stage1_bf16_a16w16_subQ16_mqa16.co", "_ZN5aiter39mla_dec_stage1_bf16_a16w16_subQ16_mqa16E",
               "bf16", 16),
}
HEADS, QK, VD = reference.NUM_HEADS, reference.QK_HEAD_DIM, reference.V_HEAD_DIM
CU_NUM = 256  # MI355X
KERNARG_FIELDS = ("R", "LSE", "Q", "KV", "LTP", "LTD", "LTL", "scalar", "s_MQA", "s_kv_split", "s_Q_Bs", "s_Bs",
                  "s_log2_plen", "QTP", "STP", "RP", "QSCALE", "KVSCALE", "out_16_nosplit")
POINTERS = {"R", "LSE", "Q", "KV", "LTP", "LTD", "LTL", "QTP", "STP", "RP", "QSCALE", "KVSCALE"}


def code_object_bytes(git_dir: str, commit: str, name: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:hsa/gfx950/mla/{name}"],
                          capture_output=True, check=True).stdout


def meta_splits(batch: int, total_kv: int, fp8: bool) -> int:
    """aiter.mla.get_meta_param's split count for 16 heads and one query token (MI355X: 256 CUs)."""
    avg = total_kv / batch
    best, splits = -1.0, 1
    for i in range(1, 17):  # the first of the largest wins, as a stable descending sort keeps it
        score = batch * i / (-(-batch * i // CU_NUM) * CU_NUM) * avg / (avg + 84.1 * i)
        if score > best:
            best, splits = score, i
    if fp8:
        splits = min(splits, int(total_kv / batch + 128 - 1) // 128)
    return splits


def kernarg(values: dict) -> bytes:
    """The packed KernelArgs block: field k at byte 16 * k (8-byte pointer + 8 pad, 4-byte scalar + 12 pad)."""
    out = bytearray(16 * len(KERNARG_FIELDS))
    for k, name in enumerate(KERNARG_FIELDS):
        value = values.get(name, 0)
        if name in POINTERS:
            struct.pack_into("<Q", out, 16 * k, value)
        elif name == "scalar":
            struct.pack_into("<f", out, 16 * k, value)
        else:
            struct.pack_into("<I", out, 16 * k, value)
    return bytes(out)


class RaceLog:
    """--mode all: the LDS checker's clashes, recorded with the instruction that made them, instead of a stop."""

    def __init__(self):
        self.events: dict[tuple, list] = {}
        self.code = None

    @staticmethod
    def instruction():
        """The instruction the running wave is at (run_wave's frame), for the records."""
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_name != "run_wave":
            frame = frame.f_back
        return frame.f_locals["launch"].instructions[frame.f_locals["i"]] if frame else None

    def install(self):
        log = self
        original_write = lds_module.LDS.write
        self.writer_pc: dict[int, np.ndarray] = {}

        def write(lds, wave, addresses, data, atomic=False):
            # the pc of each byte's last writer, kept beside the checker's own per-byte tags
            pcs = log.writer_pc.setdefault(id(lds), np.full(lds.size, -1, np.int64))
            ins = log.instruction()
            original_write(lds, wave, addresses, data, atomic)
            index = addresses.astype(np.int64)[:, None] + np.arange(data.shape[1])
            pcs[index.ravel()] = ins.pc if ins else -1

        def report(lds, wave, flat, clash, writing):
            current = (lds.epoch + 1) << 16
            ins = log.instruction()
            where = (ins.mnemonic, f"0x{ins.pc:x}") if ins else ("?", "?")
            hits = flat[np.flatnonzero(clash)]
            pcs = log.writer_pc.get(id(lds))
            others = []
            for b in hits[:4]:
                w = int(lds.written[b])
                tag = w if (w & ~0xFFFF) == current and (w & 0xFFFF) != wave + 1 else int(lds.read_by[b])
                others.append(tag & 0xFFFF)
            key = (where[0], where[1], "write" if writing else "read")
            entry = log.events.setdefault(key, [0, set(), None, set(), set(), set()])
            entry[0] += 1
            if pcs is not None:
                entry[5].update(f"0x{int(pc):x}" for pc in np.unique(pcs[hits]) if pc >= 0)
            entry[1].update(int(b) for b in hits)
            if entry[2] is None:
                other = others[0]
                other_text = "several waves" if other == lds_module.MANY & 0xFFFF else f"wave {other - 1}"
                entry[2] = (f"lds race: wave {wave} {key[2]}s LDS byte {int(hits[0])} that {other_text} touched "
                            f"since the last s_barrier - {where[0]} at {where[1]}")
            entry[3].add(wave)
            entry[4].update("several" if o == lds_module.MANY & 0xFFFF else str(o - 1) for o in others)

        lds_module.LDS.report = report
        lds_module.LDS.write = write

    def summary(self) -> list[str]:
        lines = []
        for (mnemonic, pc, kind), (count, bytes_, first, waves, others, writers) in sorted(
                self.events.items(), key=lambda e: int(e[0][1], 16)):
            lo, hi = min(bytes_), max(bytes_)
            lines.append(f"{mnemonic} at {pc} ({kind}): {count} clashing accesses, {len(bytes_)} distinct LDS bytes "
                         f"in [{lo}, {hi}], by waves {sorted(waves)} against waves {sorted(others)}; the bytes' last "
                         f"writes at pc {', '.join(sorted(writers)) or '-'}; first: {first}")
        return lines


def persistent_work(kv_indptr: torch.Tensor, splits: int, granularity: int = 16):
    """Work for the _ps kernel, one item per workgroup: (work_indptr, work_info) with get_mla_metadata_v1's fields
    per item (batch_idx, partial_qo_loc, qo_start, qo_end, kv_start, kv_end, kv_offset, pad) for one query token
    per sequence and page size 1; with `splits` > 1 each sequence's KV is cut into that many pieces (multiples of
    the 16-token granularity) written to partial rows b * splits + s, else partial_qo_loc = -1 (final output)."""
    starts = kv_indptr.tolist()
    items = []
    for b in range(len(starts) - 1):
        begin, end = starts[b], starts[b + 1]
        blocks = -(-(end - begin) // granularity)
        cuts = [begin + min(end - begin, granularity * (blocks * s // splits)) for s in range(splits)] + [end]
        for s in range(splits):
            lo, hi = cuts[s], cuts[s + 1]
            items.append([b, -1 if splits == 1 else b * splits + s, b, b + 1, lo, hi, end - hi, 0])
    work_info = torch.tensor(items, dtype=torch.int32)
    work_indptr = torch.arange(len(items) + 1, dtype=torch.int32)
    return work_indptr, work_info


def combine(logits: torch.Tensor, lse: torch.Tensor, kv_lens: list[int], splits: int, mgc: int) -> torch.Tensor:
    """Stage 2 for one query token per sequence: LSE-weighted sum of the first min(n, ceil(kv/mgc)) splits."""
    out = torch.empty((len(kv_lens), HEADS, VD), dtype=torch.float32)
    for b, kv_len in enumerate(kv_lens):
        valid = min(splits, -(-kv_len // mgc)) if mgc else splits
        l = lse[b, :valid, :, 0]                      # (valid, heads)
        m = l.max(dim=0).values
        w = torch.exp(l - m)                          # (valid, heads)
        out[b] = (w[:, :, None] * logits[b, :valid]).sum(0) / w.sum(0)[:, None]
    return out.to(torch.bfloat16)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", choices=sorted(KERNELS), default="a8w8")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--kv", type=int, default=512)
    p.add_argument("--splits", type=int, default=None,
                   help="num_kv_splits (default: get_meta_param's); for a8w8_ps, pieces per sequence (default 1)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mode", choices=("first", "all"), default="first")
    p.add_argument("--quantum", type=int, default=launch_module.WAVE_QUANTUM,
                   help="wave instructions before the next wave of a workgroup runs")
    p.add_argument("--aiter-git", default=DEFAULT_GIT)
    p.add_argument("--commit", default=PIN)
    args = p.parse_args(argv)

    co_name, symbol, qtype, sub_q = KERNELS[args.kernel]
    fp8 = qtype == "fp8"
    code = load_code_object(code_object_bytes(args.aiter_git, args.commit, co_name))
    torch.manual_seed(0)
    q, kv_data, qo_indptr, kv_indptr, config = reference.generate_input(args.batch, 1, args.kv, args.seed,
                                                                       device="cpu")
    kv8, kv_scale = kv_data["fp8"]
    if fp8:
        q_in, q_scale = reference.quantize_fp8(q, dtype=kv8.dtype)
        kv_in = kv8
    else:
        q_in, q_scale, kv_in = q, torch.ones(1), kv_data["bf16"]
    kv_scale = kv_scale.clone()
    total_s, total_kv = q_in.shape[0], kv_in.shape[0]
    kv_buffer = kv_in.reshape(total_kv, 1, 1, QK).contiguous()   # (pages, page_size 1, kv heads 1, 576)
    q_in = q_in.contiguous()
    persistent = args.kernel.endswith("_ps")
    splits = args.splits or (1 if persistent else meta_splits(args.batch, total_kv, fp8))
    splits_indptr = torch.arange(0, (args.batch + 1) * splits, splits, dtype=torch.int32)
    kv_indices = torch.arange(total_kv, dtype=torch.int32)
    last_page = torch.ones(args.batch, dtype=torch.int32)
    qo_indptr, kv_indptr = qo_indptr.to(torch.int32), kv_indptr.to(torch.int32)
    out = torch.zeros((total_s, HEADS, VD), dtype=torch.bfloat16)
    direct = splits == 1 and fp8 and not persistent  # mla_decode_fwd: the output itself is the split buffer
    logits = out.view(total_s, 1, HEADS, VD) if direct else torch.full((total_s, splits, HEADS, VD), float("nan"))
    lse = torch.full((total_s, splits, HEADS, 1), float("nan"))
    extra = {}
    if persistent:  # the host code's 10-entry uint64 block: work_indptr and work_info pointers
        work_indptr, work_info = persistent_work(kv_indptr, splits)
        meta = torch.zeros(10, dtype=torch.int64)
        meta[0], meta[1] = work_indptr.data_ptr(), work_info.data_ptr()
        extra = {"work_indptr": work_indptr, "work_info": work_info, "ps_meta": meta}

    memory = HostMemory()
    tensors = {"Q": q_in, "KV": kv_buffer, "qo_indptr": qo_indptr, "kv_indptr": kv_indptr, "kv_indices": kv_indices,
               "kv_last_page_lens": last_page, "num_kv_splits_indptr": splits_indptr, "logits": logits,
               "lse": lse, "out": out, "q_scale": q_scale, "kv_scale": kv_scale}
    tensors.update(extra)
    for name, t in tensors.items():
        memory.add_tensor(t, name)
    values = {"R": logits.data_ptr(), "LSE": lse.data_ptr(), "Q": q_in.data_ptr(), "KV": kv_buffer.data_ptr(),
              "LTP": kv_indptr.data_ptr(), "LTD": kv_indices.data_ptr(), "LTL": last_page.data_ptr(),
              "scalar": reference.SM_SCALE, "s_MQA": HEADS * 1, "s_kv_split": splits,
              "s_Q_Bs": q_in.stride(0) * q_in.element_size() * 1, "s_Bs": kv_buffer.stride(0) * kv_buffer.element_size(),
              "s_log2_plen": 0, "QTP": qo_indptr.data_ptr(), "STP": splits_indptr.data_ptr(), "RP": out.data_ptr(),
              "out_16_nosplit": splits}
    if fp8:
        values.update(QSCALE=q_scale.data_ptr(), KVSCALE=kv_scale.data_ptr())
    grid = (-(-HEADS // sub_q), args.batch, splits)
    if persistent:
        values["STP"] = extra["ps_meta"].data_ptr()
        grid = (len(extra["work_indptr"]) - 1, 1, 1)
    block = (256, 1, 1)
    launch_module.WAVE_QUANTUM = args.quantum
    log = RaceLog()
    if args.mode == "all":
        log.install()

    print(f"gfx950 emulated (CPU): correctness only. aiter {args.commit}:hsa/gfx950/mla/{co_name} ({symbol})")
    print(f"input: batch {args.batch}, kv {args.kv}, seed {args.seed}, q {q_in.dtype}, kv {kv_buffer.dtype}; "
          f"splits {splits}{' (output written directly)' if direct else ''}; grid {grid}, block {block}; "
          f"mode {args.mode}, quantum {args.quantum}")
    started = time.perf_counter()
    try:
        counts = run_kernel(code, symbol, grid, block, kernarg(values), memory=memory)
    except EmulationFault as fault:
        print(f"STOPPED after {time.perf_counter() - started:.1f} s: {fault}")
        return 2
    print(f"ran in {time.perf_counter() - started:.1f} s")
    print(counts.summary())
    if args.mode == "all":
        lines = log.summary()
        print(f"LDS races recorded: {len(lines)} instruction(s)" + ("" if lines else " (none)"))
        for line in lines:
            print("  " + line)

    if direct or (persistent and splits == 1):
        result = out
    else:
        mgc = 0 if persistent else 64
        kv_lens = (kv_indptr[1:] - kv_indptr[:-1]).tolist()
        nan_lse = int(torch.isnan(lse).sum())
        nan_logits = int(torch.isnan(logits).sum())
        print(f"split buffers: {nan_logits} of {logits.numel()} output values and {nan_lse} of {lse.numel()} LSEs "
              "never written (NaN fill)")
        result = combine(logits, lse, kv_lens, splits, mgc)
    if fp8:
        expected = reference.torch_a8w8_decode(q_in, q_scale, kv8.squeeze(1), kv_scale, qo_indptr, kv_indptr,
                                               reference.SM_SCALE)
    else:
        expected = reference.torch_a8w8_decode(q_in, torch.ones(1), kv_in.squeeze(1), torch.ones(1), qo_indptr,
                                               kv_indptr, reference.SM_SCALE)
    diff = (result.float() - expected.float()).abs()
    close = torch.isclose(result.float(), expected.float(), rtol=reference.RTOL, atol=reference.ATOL)
    ratio = 1 - float(close.float().mean())
    verdict = "PASS" if ratio <= reference.MISMATCH_RATIO_LIMIT else "FAIL"
    print(f"against reference.py's torch math: max |diff| {float(diff.max()):.4g}, mean |diff| "
          f"{float(diff.mean()):.4g}, elements not close {int((~close).sum())} of {close.numel()} "
          f"({100 * ratio:.2f}%): {verdict} under the 5% rule; NaN in output {int(torch.isnan(result).sum())}")
    rows = (~close).reshape(total_s, HEADS, VD)
    if int(rows.sum()):
        per_head = rows.sum(dim=2)
        print(f"mismatches per (token, head): {per_head.tolist()}")
    return 0 if verdict == "PASS" and not log.events else 1


if __name__ == "__main__":
    sys.exit(main())
