"""Traces of aiter's stage-1 MLA kernels at the benchmark shapes, for the gfx950 timing model's fit.

For each stage-1 launch the public full-work rows make (variant, persistent or not, split count;
harness/estimate/data/mi355x_costs.json's structures) at each benchmark shape, the wheel's code
object runs on the gfx950 emulator (harness/aiter_gfx950/stage1.run) on random inputs of the
right dtypes and lengths, only its traced workgroups (the rest are alike, or for a persistent
launch lighter: the busiest is traced). Each LaunchTrace is kept as .npz under the estimate
cache, named by the code object, shape, grid, splits and the sources that make it.
`python -m harness.estimate.aiter_traces` fills the cache, a line per launch.
"""
from __future__ import annotations

import functools
import hashlib
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from harness.aiter_gfx950 import package, stage1
from harness.aiter_standin import metadata
from harness.aiter_standin.dtypes import bf16, fp8
from harness.aiter_standin.kernels import pick
from harness.emulator import trace as tracing
from harness.estimate import calibration as calib
from harness.estimate import recordings
from harness.paths import REPO_ROOT

HEADS, QK_DIM, V_DIM = 16, 576, 512
DTYPES = {"a8w8": (fp8, fp8), "a16w8": (bf16, fp8), "a16w16": (bf16, bf16)}
TYPE_NAMES = {fp8: "fp8", bf16: "bf16"}  # as the stand-in's pick() names them
# what decides a trace: the emulator's numpy executors and launch, aiter's code objects and their
# argument block, the stand-in's schedule and pick, this module. Not: the C fast path, progress lines,
# HIP/Triton launchers (stage 1 uses none of them), stage1.py's and races.py's choices of wave turns,
# C path and race checks (a wave's steps are its own whatever the turns): others change those often.
SOURCES = ("harness/emulator", "harness/aiter_gfx950/kernargs.py", "harness/aiter_gfx950/package.py",
           "harness/aiter_gfx950/code_objects.json", "harness/aiter_standin/metadata.py",
           "harness/aiter_standin/kernels.py", "harness/estimate/aiter_traces.py")
NOT_SOURCES = ("native", "hip_runtime", "progress.py", "launch_hip.py", "launch_triton.py", "cuda_on_cpu.py")
FOLDER = "stage1-traces"  # under the estimate cache
LET_THROUGH = "a timing trace: the launch's outputs are not read, so an LDS race the checker names is kept, not failed"


@dataclass(frozen=True, order=True)
class Stage1:
    """One stage-1 launch kind: the variant's dtypes, persistent or not, its split count."""
    variant: str       # a8w8 | a16w8 | a16w16
    persistent: bool
    splits: int

    @property
    def kernel(self) -> str:
        q, kv = DTYPES[self.variant]
        return pick(TYPE_NAMES[q], TYPE_NAMES[kv], HEADS, self.persistent, 1)

    def label(self, shape: tuple) -> str:
        mode = "persistent" if self.persistent else "non-persistent"
        return f"{self.kernel} ({mode}, {self.splits} splits) at {shape[0]}x{shape[1]}"


def stage1_of(row: calib.Row, shape: tuple) -> Stage1 | None:
    """The stage-1 launch of a row at a shape as calibration.row_launches counts it; None off the asm path."""
    s = calib.shape_structure(row, shape)
    if s.get("path", "asm") != "asm":
        return None
    splits = s.get("splits")
    if splits == "aiter":
        splits = calib.aiter_splits(*shape, fp8_q=s["variant"].startswith("a8"))
    # one split: non-persistent; more: persistent (persistent_above_one files)
    persistent = splits > 1 if s.get("persistent_above_one") else bool(s.get("persistent"))
    return Stage1(s["variant"], persistent, int(splits or calib.DEFAULT_PS_SPLITS))


def needed(cal: calib.Calibration | None = None) -> list[tuple[Stage1, tuple]]:
    """Every (launch, shape) the data file's rows make, in a stable order."""
    cal = cal or calib.load()
    found = {(stage, shape) for row in cal.rows for shape in row.times_us
             if (stage := stage1_of(row, shape)) is not None}
    return sorted(found, key=lambda item: (item[1], item[0]))


@functools.lru_cache(maxsize=1)
def sources_digest() -> str:
    digest = hashlib.sha256()
    for name in SOURCES:
        root = REPO_ROOT / name
        files = [root] if root.is_file() else sorted(
            p for p in root.rglob("*") if p.suffix in (".py", ".c", ".json")
            and not {"__pycache__", *NOT_SOURCES} & set(p.relative_to(root).parts))
        for path in files:
            digest.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def grid_of(stage: Stage1, shape: tuple) -> tuple:
    """The launch's grid as kernargs.grid makes it: a workgroup per CU slot, or (q tiles, batch, splits)."""
    if stage.persistent:
        return (metadata.RUNNER_CU_COUNT, 1, 1)
    sub_q = package.pinned()["code_objects"][stage.kernel]["sub_q"]
    return (-(-HEADS // sub_q), shape[0], stage.splits)


def key(stage: Stage1, shape: tuple) -> str:
    sha = package.pinned()["code_objects"][stage.kernel]["package"]["sha256"]
    text = f"{sha}|{shape}|{grid_of(stage, shape)}|{stage.splits}|{sources_digest()}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cache_folder() -> Path | None:
    base = recordings.folder()
    return None if base is None else base / FOLDER


def _indptrs(batch: int, kv: int) -> tuple:
    qo = torch.arange(batch + 1, dtype=torch.int32)
    return qo, qo * kv, torch.arange(batch * kv, dtype=torch.int32), torch.ones(batch, dtype=torch.int32)


RANDOM_BLOCK = 1 << 20  # random elements drawn; a larger tensor repeats them (a trace reads no values)


def _random(shape: tuple, dtype, generator) -> torch.Tensor:
    """Random values of `dtype`, a block of them repeated: 256 x 8k of KV drawn whole in fp32 was 4.8 GB."""
    count = math.prod(shape)
    block = torch.randn(min(count, RANDOM_BLOCK), generator=generator, dtype=torch.float32).to(dtype)
    found = torch.empty(count, dtype=dtype)
    raw, pattern = found.view(torch.uint8), block.view(torch.uint8)
    for start in range(0, raw.numel(), pattern.numel()):
        end = min(start + pattern.numel(), raw.numel())
        raw[start:end] = pattern[:end - start]
    return found.view(shape)


def pieces(stage: Stage1, batch: int) -> int:
    """Pieces a sequence is cut into on the runner: at most `splits`, no more than fill the 256 CUs
    (calibration.schedule's rule). The logs ask for it: at 256 x 1k the 32-split and 8-split files take
    110 and 112 us, which 32 pieces a sequence (the stand-in's intra-batch model, 4x the works and
    partials) cannot give."""
    return min(stage.splits, max(1, math.ceil(calib.CUS / batch)))


def _schedule(stage: Stage1, qo_indptr, kv_indptr) -> dict:
    """The persistent launch's buffers, as the public files build them (intra-batch), each sequence cut
    into pieces(stage, batch)."""
    batch = qo_indptr.shape[0] - 1
    q_type, kv_type = DTYPES[stage.variant]
    cut = pieces(stage, batch)
    info = metadata.get_mla_metadata_info_v1(batch, 1, HEADS, q_type, kv_type, is_sparse=False,
                                             fast_mode=False, num_kv_splits=cut, intra_batch_mode=True)
    meta, work_indptr, work_info, reduce_indptr, final_map, partial_map = (
        torch.empty(shape, dtype=dtype) for shape, dtype in info)
    lens = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    metadata.get_mla_metadata_v1(qo_indptr, kv_indptr, lens, HEADS, 1, True, meta, work_info, work_indptr,
                                 reduce_indptr, final_map, partial_map, page_size=1, kv_granularity=16,
                                 max_seqlen_qo=1, uni_seqlen_qo=1, fast_mode=False,
                                 max_split_per_batch=cut, intra_batch_mode=True,
                                 dtype_q=q_type, dtype_kv=kv_type)
    rows = partial_map.size(0)
    return {"work_meta_data": meta, "work_indptr": work_indptr, "work_info_set": work_info,
            "splitData": torch.empty((rows, 1, HEADS, V_DIM), dtype=torch.float32),
            "splitLse": torch.empty((rows, 1, HEADS, 1), dtype=torch.float32)}


def _loads(work_indptr: torch.Tensor, work_info_set: torch.Tensor) -> list[int]:
    """KV rows of each persistent workgroup's works."""
    cuts = work_indptr.tolist()
    spans = (work_info_set[:, 5] - work_info_set[:, 4]).tolist()
    return [sum(spans[cuts[k]:cuts[k + 1]]) for k in range(len(cuts) - 1)]


def busiest_workgroup(work_indptr: torch.Tensor, work_info_set: torch.Tensor) -> int:
    """The persistent workgroup with the most KV rows: the launch's critical path."""
    loads = _loads(work_indptr, work_info_set)
    return max(range(len(loads)), key=lambda k: (loads[k], -k))


def busiest_share(stage: Stage1, shape: tuple) -> float:
    """The launch's KV rows over the busiest workgroup's times the grid: what its traced bytes times the
    grid overstate (1 for a launch whose workgroups are alike)."""
    if not stage.persistent:
        return 1.0
    found = _schedule(stage, *_indptrs(*shape)[:2])
    loads = _loads(found["work_indptr"], found["work_info_set"])
    return sum(loads) / (max(loads) * len(loads))


def arguments(stage: Stage1, shape: tuple, seed: int = 0) -> tuple[dict, tracing.TraceRequest]:
    """stage1.run's keyword arguments at this shape (random Q and KV), and which workgroups to trace."""
    batch, kv_len = shape
    generator = torch.Generator().manual_seed(seed)
    q_type, kv_type = DTYPES[stage.variant]
    q = _random((batch, HEADS, QK_DIM), q_type, generator)
    kv = _random((batch * kv_len, 1, 1, QK_DIM), kv_type, generator)
    qo_indptr, kv_indptr, pages, last = _indptrs(batch, kv_len)
    output = torch.empty((batch, HEADS, V_DIM), dtype=bf16)
    scale = torch.ones(1, dtype=torch.float32)
    args = {"Q": q, "KV": kv, "qo_indptr": qo_indptr, "kv_indptr": kv_indptr, "kv_page_indices": pages,
            "kv_last_page_lens": last, "num_kv_splits_indptr": None, "work_meta_data": None,
            "work_indptr": None, "work_info_set": None, "max_seqlen_q": 1,
            "softmax_scale": 1.0 / math.sqrt(QK_DIM), "output": output,
            "q_scale": scale if q_type == fp8 else None, "kv_scale": scale if kv_type == fp8 else None}
    if stage.persistent:
        args.update(_schedule(stage, qo_indptr, kv_indptr))
        chosen = [(busiest_workgroup(args["work_indptr"], args["work_info_set"]), 0, 0)]
        return args, tracing.TraceRequest(chosen, only_traced=True)
    args["num_kv_splits_indptr"] = torch.arange(0, (batch + 1) * stage.splits, stage.splits, dtype=torch.int32)
    straight = stage.splits == 1 and q_type == fp8  # stage 1 writes the output itself
    args["splitData"] = (output.view(batch, 1, HEADS, V_DIM) if straight else
                         torch.empty((batch, stage.splits, HEADS, V_DIM), dtype=torch.float32))
    args["splitLse"] = torch.empty((batch, stage.splits, HEADS, 1), dtype=torch.float32)
    return args, tracing.TraceRequest("representative", only_traced=True)


def run(stage: Stage1, shape: tuple) -> tracing.LaunchTrace:
    """The launch emulated now (only its traced workgroups), its trace."""
    args, request = arguments(stage, shape)
    launch = stage1.run(stage.kernel, let_through=LET_THROUGH, trace=request, **args)
    return launch.counts.trace


def stage1_trace(stage: Stage1, shape: tuple, folder: Path | None = None) -> tuple[tracing.LaunchTrace, bool]:
    """(the trace, whether it came from the cache): kept under `folder` (default: the estimate cache's)."""
    folder = folder if folder is not None else cache_folder()
    path = None if folder is None else folder / f"{stage.kernel}-{shape[0]}x{shape[1]}-{key(stage, shape)}.npz"
    if path is not None and path.is_file():
        return tracing.load(path), True
    found = run(stage, shape)
    if path is not None:
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial.npz")
        found.save(partial)
        partial.replace(path)  # whole or absent, never half
    return found, False


def main() -> None:  # pragma: no cover - fills the cache, a line per launch
    started = time.perf_counter()
    wanted = needed()
    print(f"aiter stage-1 traces (gfx950 emulated, CPU): {len(wanted)} launches -> {cache_folder()}")
    for n, (stage, shape) in enumerate(wanted, 1):
        begun = time.perf_counter()
        found, cached = stage1_trace(stage, shape)
        steps = sum(len(w.steps) for waves in found.workgroups.values() for w in waves)
        print(f"[{n}/{len(wanted)}] {stage.label(shape)}: grid {found.grid}, {len(found.workgroups)} traced, "
              f"{steps:,} wave steps, {'cached' if cached else f'{time.perf_counter() - begun:.1f} s'}",
              flush=True)
    print(f"done in {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    main()
