"""The executed counts the kernel model prices a Triton kernel from: the file's own custom_kernel run a few times on the
gfx950 emulator (harness/emulator/launch_triton.py: Triton's AMD backend compiles for gfx950, the emulator runs the
code object with the file's grid and arguments, torch reports ROCm), each kernel's counts fitted per wave as a fixed
part per program plus a part per unit of work, by least squares over the calls.

The unit is a 32-token KV tile of a program's slice (the plan's block_n where the file states it), except for the merge
kernel of 201's plan, whose programs read one partial per split: its unit is a split. The calls run in their own worker,
in the same sandbox as `harness run`, on small inputs (SAMPLES, a few seconds of emulation). Where the emulator cannot
run the file, or the calls do not separate the two parts, the kernel keeps its static one-iteration count
(gfx950_kernels.py) and the breakdown says why.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

from harness import platform as platforms
from harness.emulator import trace as tracing
from harness.estimate import recordings as shared
from harness.estimate.mi355x_path import MERGE_KERNEL, SPLIT_KERNEL

SWITCH_ENV = "HARNESS_ESTIMATE_EMULATE"  # "0": no emulated calls, every Triton kernel keeps its static count
# (batch, kv): 1 split with 2 and 4 tiles, then 2, 4 and 8 splits of 4 tiles (201's choice on 256 CUs): ~6 s emulated
SAMPLES = ((1, 64), (1, 128), (1, 256), (1, 512), (2, 1024))
SEED = 4217
CALL_LIMIT_S = 300.0
TILE = 32
# what the fit keeps per wave: the classes and bytes the model prices or names
PRICED = ("by_class.VALU", "by_class.MFMA", "by_class.LDS", "by_class.SALU", "bytes.lds_read", "bytes.lds_write")


@dataclass(frozen=True)
class ExecutedFit:
    """One kernel's executed counts per wave: fixed (per program) + per_unit x units of work per program."""
    kernel: str
    unit: str              # "KV tile" or "split"
    waves: int             # waves per program (workgroup)
    fixed: dict            # count key -> per wave
    per_unit: dict         # count key -> per wave per unit
    calls: int             # emulated calls that launched it
    misfit: float          # the largest relative miss of the fit on VALU, MFMA or LDS over those calls
    replayed: int = 0      # of those, calls answered by the shared recordings (recordings.py): not run now
    untraced: str = ""     # a HIP kernel without launch traces: why the timing model does not price it
    sampled: tuple = ()    # ((units per program, (LaunchTrace of each launch, ...)), ...) per emulated call

    def per_wave(self, units: float) -> dict:
        return {key: self.fixed.get(key, 0.0) + self.per_unit.get(key, 0.0) * units
                for key in set(self.fixed) | set(self.per_unit)}


@dataclass
class Executed:
    """The fits of one estimate run, and why a kernel (or every kernel: `why`) has none."""
    fits: dict = field(default_factory=dict)
    why: str = ""
    why_kernel: dict = field(default_factory=dict)
    block: int = TILE

    def why_not(self, kernel: str) -> str:
        if kernel in self.fits:
            return "the launch gives no grid or split count to set its executed counts against"
        return self.why_kernel.get(kernel) or self.why or f"the emulated calls launched no {kernel}"

    def units(self, fit: ExecutedFit, batch: int, kv: int, programs: int | None, splits: int) -> float | None:
        """Units of work per program of a launch at (batch, kv): its splits, or its KV tiles over its programs."""
        if fit.unit == "split":
            return float(splits) if splits else None
        return batch * -(-kv // self.block) / programs if programs else None


def fit_line(xs: list, ys: list) -> tuple[float, float] | None:
    """(intercept, slope) of the least-squares line through (xs, ys); None when the xs do not vary."""
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    spread = sum((x - mean_x) ** 2 for x in xs)
    if n < 2 or spread <= 1e-12:
        return None
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / spread
    return mean_y - slope * mean_x, slope


def fit_kernel(kernel: str, unit: str, points: list) -> tuple[ExecutedFit | None, str]:
    """points: (units per program, programs, waves per program, {count key: total over the call}) per call."""
    if not points:
        return None, f"the emulated calls launched no {kernel}"
    waves = points[0][2]
    xs = [p[0] for p in points]
    keys = sorted({k for p in points for k in p[3] if k in PRICED or k.startswith("mfma_by_name.")})
    fixed, per_unit, misfit = {}, {}, 0.0
    for key in keys:
        ys = [p[3].get(key, 0) / (p[1] * p[2]) for p in points]  # per wave
        line = fit_line(xs, ys)
        if line is None:
            return None, (f"the emulated calls gave {kernel} {xs[0]:g} {unit}s per program each time: fixed and "
                          f"per-{unit} parts not separable")
        fixed[key], per_unit[key] = line
        if key in ("by_class.VALU", "by_class.MFMA", "by_class.LDS"):
            misfit = max([misfit] + [abs(line[0] + line[1] * x - y) / y for x, y in zip(xs, ys) if y > 0])
    return ExecutedFit(kernel, unit, waves, fixed, per_unit, len(points), misfit), ""


def fit_calls(calls: list, merge_by_split: bool, block: int = TILE, replayed: int = 0) -> Executed:
    """calls: ((batch, kv), the reply's "emulated" {kernel: {launches, counts}}) per emulated call. The merge kernel
    of 201's plan is fitted per split (its splits: the split kernel's programs over the batch), the rest per KV tile."""
    found = Executed(block=block)
    points: dict = {}
    sampled: dict = {}  # (kernel, unit) -> [(units per program, its launches' trace files)]
    for (batch, kv), emulated in calls:
        splits = (emulated.get(SPLIT_KERNEL, {}).get("counts", {}).get("workgroups", 0) // max(batch, 1))
        for kernel, entry in emulated.items():
            counts, launches = entry.get("counts", {}), max(1, entry.get("launches", 1))
            programs, waves = counts.get("workgroups", 0), counts.get("waves_per_workgroup", 0) // launches
            if not programs or not waves:
                continue
            by_split = merge_by_split and kernel == MERGE_KERNEL
            units = splits if by_split else batch * -(-kv // block) / programs
            points.setdefault((kernel, "split" if by_split else "KV tile"), []).append((units, programs, waves,
                                                                                        counts))
            traces = entry.get(shared.TRACES) or []
            sampled.setdefault((kernel, "split" if by_split else "KV tile"), []).append(
                (units, traces if len(traces) == launches else []))
    for (kernel, unit), found_points in points.items():
        fit, why = fit_kernel(kernel, unit, found_points)
        if fit is not None:
            traced = _loaded(sampled[kernel, unit])
            found.fits[kernel] = dataclasses.replace(
                fit, replayed=min(replayed, fit.calls), sampled=traced,
                untraced="" if traced else "not timed by the gfx950 timing model: an emulated call's launches "
                "were not all traced")
        else:
            found.why_kernel[kernel] = why
    return found


def _loaded(sampled: list) -> tuple:
    """((units, (LaunchTrace, ...)), ...) where every call traced each launch and its files are there;
    else () (the kernel keeps the counts' price)."""
    if not all(paths and all(Path(p).is_file() for p in paths) for _, paths in sampled):
        return ()
    return tuple((units, tuple(tracing.load(Path(p)) for p in paths)) for units, paths in sampled)


def why_not_emulated(submission, platform) -> str:
    """Why the file's Triton kernels cannot run on the gfx950 emulator here ("" when they can)."""
    if os.environ.get(SWITCH_ENV) == "0":
        return f"emulated calls turned off ({SWITCH_ENV}=0)"
    if "triton" not in submission.requirements | submission.optional:
        return "no Triton kernels"
    missing = platforms.emulator_missing()
    return f"the gfx950 emulator cannot run here: {missing}" if missing else ""


def sample(start_worker, merge_by_split: bool, block: int = TILE, samples=SAMPLES,
           recordings: shared.Recordings | None = None) -> Executed:
    """The file's custom_kernel once per sample on the emulator, in `start_worker()`'s worker (started only
    for a call `recordings` cannot answer), and the fits; on the first call that fails (NotEmulated, a fault,
    a failed check), no fits and why."""
    calls, replayed = [], 0
    with start_worker() as worker:
        for batch, kv in samples:
            spec = {"batchsize": batch, "qseqlen": 1, "kvseqlen": kv, "seed": SEED}
            reply = shared.call(worker, recordings, "test", CALL_LIMIT_S, args=spec, device="cpu")
            if not reply["ok"]:
                return Executed(why=f"the gfx950 emulator could not run it at {batch}×{kv}: {reply['message']}")
            if not reply["result"]["good"]:
                return Executed(why=f"on the gfx950 emulator it fails the check at {batch}×{kv}")
            replayed += bool(reply.get(shared.CACHED))
            calls.append(((batch, kv), reply.get("emulated") or {}))
    return fit_calls(calls, merge_by_split, block, replayed)
