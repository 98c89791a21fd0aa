"""What any fp8-KV decode must spend under the harness's timer: launch, KV read and a cross-SM merge (issue 31).

    python bench/tools/floor_probe.py --out $OUT [--reps 20] [--no-201]     # needs a GPU

Per official benchmark shape, each probe is timed like the harness times a submission: the fast flush (a
dirty L2, then the 3 ms GPU sleep), CUDA events around one call, the median of --reps calls. The probes do
no attention at all, so each time is a floor for 201, not an estimate of it:

- launch: one empty program.
- read, read_ef, read_el, read_cg: the fp8 KV's bytes read once with 16-byte loads and folded into one
  word per program, under one cache policy each (`READS`), the fastest of a few grid sizes (`read_grids`);
  best_read the fastest of them. read_clean: the fastest read after a clean flush (the same buffer read, not
  written): not the protocol, it says what the dirty lines' write-back costs a read.
- read_seq: one program per sequence (no split, so no merge): what one SM per sequence can read.
- read_split: 201's grid (its split count per shape), each program reading its split's tokens.
- split_merge: read_split, then 201's handoff: a 16 KB partial stored per program, a release ticket on a
  per-sequence counter that only grows, acquire polls until every split is in, and each split reading its
  slice of all the partials and storing its slice of the output.
- merge_only: split_merge without the KV read.
- 201: the submission's default, in the same process.

Writes OUT/floor_probe.json and prints the table last.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "tools"))

from bench_decode import load_submission  # noqa: E402
from flush_probe_201 import flush_state, official_inputs, timed  # noqa: E402

WORDS_PER_TOKEN = tl.constexpr(576 // 8)  # the fp8 KV row, as int64 words
TILE_TOKENS = tl.constexpr(64)  # 201's tile: its splits are whole tiles
PARTIAL_WORDS = 16 * 512 * 2 // 8  # one split's bf16 partial (16 heads x 512 dims), as int64 words


@triton.jit
def empty_kernel(out_ptr):
    pass


@triton.jit
def _load_words(src_ptr, index, valid, LOAD: tl.constexpr):
    """16-byte loads of src's int64 words under one of the cache policies READS names (0 where not valid)."""
    if LOAD == ".cg":
        return tl.load(src_ptr + index, mask=valid, other=0, cache_modifier=LOAD)
    else:
        return tl.load(src_ptr + index, mask=valid, other=0, eviction_policy=LOAD)


@triton.jit
def _fold_words(src_ptr, start, end, BLOCK: tl.constexpr, LOAD: tl.constexpr):
    """src's int64 words [start, end) folded into one word by xor (so no load is dead), BLOCK words per step."""
    acc = tl.zeros([BLOCK], tl.int64)
    for offset in range(start, end, BLOCK):
        index = offset + tl.arange(0, BLOCK)
        acc ^= _load_words(src_ptr, index, index < end, LOAD)
    return tl.xor_sum(acc, 0)


@triton.jit
def read_kernel(src_ptr, out_ptr, n_words, words_per_program, BLOCK: tl.constexpr, LOAD: tl.constexpr = ""):
    """Program p folds words [p * words_per_program, ...) of src into one word, with the loads' cache policy LOAD
    (READS)."""
    start = tl.program_id(0) * words_per_program
    end = tl.minimum(start + words_per_program, n_words)
    tl.store(out_ptr + tl.program_id(0), _fold_words(src_ptr, start, end, BLOCK, LOAD))


# The reads' cache policies: what each does to the L2 the flush left full of dirty lines.
READS = {
    "read": "",  # plain loads
    "read_ef": "evict_first",  # L2 evict-first policy: the KV's lines are the victims, not the dirty ones
    "read_el": "evict_last",  # L2 evict-last policy (the opposite, for contrast)
    "read_cg": ".cg",  # cached at L2 only
}  # (.cs, streaming, is evict-first at L1 and L2; Triton's loads do not take it)


@triton.jit
def split_kernel(src_ptr, kv_indptr_ptr, part_ptr, counter_ptr, out_ptr, num_splits,
                 READ: tl.constexpr, MERGE: tl.constexpr, BLOCK: tl.constexpr, PARTIAL: tl.constexpr,
                 SLICE: tl.constexpr):
    """201's grid (split, sequence): read the split's tokens; with MERGE, 201's handoff and slice merge."""
    split = tl.program_id(0)
    seq = tl.program_id(1)
    kv_start = tl.load(kv_indptr_ptr + seq)
    kv_end = tl.load(kv_indptr_ptr + seq + 1)
    per_split = tl.cdiv(tl.cdiv(kv_end - kv_start, num_splits), TILE_TOKENS) * TILE_TOKENS
    lo = (kv_start + split * per_split) * WORDS_PER_TOKEN
    hi = tl.minimum(kv_start + (split + 1) * per_split, kv_end) * WORDS_PER_TOKEN
    folded = _fold_words(src_ptr, lo, hi if READ else lo, BLOCK, "")
    if MERGE:
        words = tl.arange(0, PARTIAL)
        tl.store(part_ptr + (seq * num_splits + split) * PARTIAL + words, words ^ folded)
        ticket = tl.atomic_add(counter_ptr + seq, 1, sem="acq_rel", scope="gpu")  # releases the partial
        target = (ticket // num_splits + 1) * num_splits  # the counter only grows: this call's last ticket
        seen = tl.atomic_add(counter_ptr + seq, 0, sem="acquire", scope="gpu")
        while seen < target:
            seen = tl.atomic_add(counter_ptr + seq, 0, sem="acquire", scope="gpu")
        mine = split * SLICE + tl.arange(0, SLICE)
        merged = tl.zeros([SLICE], tl.int64)
        for other in range(0, num_splits):
            merged ^= tl.load(part_ptr + (seq * num_splits + other) * PARTIAL + mine)
        tl.store(out_ptr + seq * PARTIAL + mine, merged)
    else:
        tl.store(out_ptr + seq * num_splits + split, folded)


def read_grids(n_sms: int) -> list[int]:
    """Program counts tried for each read (8 KB per step each); the fastest per shape is the floor. 16 per SM
    is full occupancy (4 warps each); the 2026-12-04 calls found it fastest on 7 shapes, 4 per SM on 4 x 1k."""
    return [n_sms * k for k in (4, 16)]


def split_count(module, data) -> int:
    """201's split count for this input (its plan, after one call)."""
    module.mla_decode(data)
    batch, total_kv = data[4]["batch_size"], data[1]["fp8"][0].shape[0]
    plan = next(p for k, p in module._PLAN_CACHE.items() if k[3] == batch and k[2] == total_kv and not k[4])
    return plan["splits"]


def probes(data, splits: int, n_sms: int, module) -> dict:
    """name -> a callable timed as one call; each runs once here (compiles, and checks it launches)."""
    kv8 = data[1]["fp8"][0]
    words = kv8.view(torch.uint8).reshape(-1).view(torch.int64)
    kv_indptr, batch = data[3], data[4]["batch_size"]
    device = words.device
    scratch = torch.zeros(8192, dtype=torch.int64, device=device)
    part = torch.empty(batch * splits * PARTIAL_WORDS, dtype=torch.int64, device=device)
    out = torch.empty(max(batch * PARTIAL_WORDS, batch * splits), dtype=torch.int64, device=device)
    counter = torch.zeros(batch, dtype=torch.int32, device=device)
    block = 1024
    found = {"launch": lambda: empty_kernel[(1,)](scratch)}
    for programs in read_grids(n_sms):
        per_program = triton.cdiv(triton.cdiv(words.numel(), programs), block) * block
        for prefix, load in READS.items():
            found[f"{prefix}/{programs}"] = (
                lambda p=programs, w=per_program, x=load:
                read_kernel[(p,)](words, scratch, words.numel(), w, BLOCK=block, LOAD=x))
    seq_words = triton.cdiv(triton.cdiv(words.numel(), batch), block) * block
    found["read_seq"] = lambda: read_kernel[(batch,)](words, scratch, words.numel(), seq_words, BLOCK=block)
    slice_words = PARTIAL_WORDS // splits if splits > 1 else PARTIAL_WORDS
    for name, read, merge in (("read_split", True, False), ("split_merge", True, splits > 1),
                              ("merge_only", False, splits > 1)):
        found[name] = (lambda r=read, m=merge: split_kernel[(splits, batch)](
            words, kv_indptr, part, counter, out, splits, READ=r, MERGE=m, BLOCK=block,
            PARTIAL=PARTIAL_WORDS, SLICE=slice_words, launch_cooperative_grid=m))
    if module is not None:
        found["201"] = lambda: module.mla_decode(data)
    for fn in found.values():
        fn()
    torch.cuda.synchronize()
    return found


def print_table(rows: list, columns: list) -> None:
    """Medians after the dirty flush; a read column is its fastest grid, best_read the fastest read of all
    policies, read_clean the fastest after the clean flush."""
    print(f"\n{'us, dirty':>11} " + " ".join(f"{c:>11}" for c in columns))
    table = {c: [] for c in columns}
    for row in rows:
        best = row["best_read_us"]
        named = {name: best[f"{name} dirty"] for name in READS}
        named["best_read"] = min(named.values())
        named["read_clean"] = min(best[f"{name} clean"] for name in READS)
        for c in columns:
            table[c].append(named[c] if c in named else row["medians_us"][f"{c} dirty"])
        print(f"{row['shape']:>11} " + " ".join(f"{table[c][-1]:11.1f}" for c in columns))
    print(f"{'geomean':>11} " + " ".join(f"{statistics.geometric_mean(table[c]):11.1f}" for c in columns))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--no-201", dest="with_201", action="store_false")
    args = parser.parse_args()
    module = load_submission("201")
    device = torch.cuda.current_device()
    n_sms = torch.cuda.get_device_properties(device).multi_processor_count
    buffer, sleep_cycles = flush_state(device)
    rows = []
    for batch, kv_len, _, data in official_inputs():
        splits = split_count(module, data)
        found = probes(data, splits, n_sms, module if args.with_201 else None)
        # the reads also after a clean flush (L2 full of clean lines): what the dirty lines' write-back costs them
        timings = [(name, "dirty") for name in found] + [(name, "clean") for name in found if "/" in name]
        times = {key: [] for key in timings}
        for _ in range(args.reps):
            for name, kind in timings:
                times[(name, kind)].append(timed(found[name], kind, buffer, sleep_cycles))
        medians = {f"{name} {kind}": statistics.median(values) for (name, kind), values in times.items()}
        best = {f"{prefix} {kind}": min(v for k, v in medians.items() if k.startswith(prefix + "/") and k.endswith(kind))
                for prefix in READS for kind in ("dirty", "clean")}
        row = {"shape": f"{batch}x{kv_len}", "splits": splits, "kv_mb": data[1]["fp8"][0].numel() / 1e6,
               "medians_us": medians, "best_read_us": best}
        rows.append(row)
        print(f"{row['shape']:>9} splits {splits:2d} " + " ".join(f"{k} {v:.1f}" for k, v in best.items()) + " "
              + " ".join(f"{k} {v:.1f}" for k, v in medians.items() if "/" not in k), flush=True)
    Path(args.out, "floor_probe.json").write_text(json.dumps(rows, indent=1))
    print_table(rows, ["launch", *READS, "best_read", "read_clean", "merge_only"] + (["201"] if args.with_201 else []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
