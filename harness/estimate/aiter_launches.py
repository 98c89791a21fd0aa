"""An aiter stage-1 (asm) launch of `harness estimate`, priced by the
gfx950 timing model over the wheel's code object emulated at the
official shape (or, past the row budget, at the recorded lengths).

The recording (the stand-in's journal entry) tells the code object,
persistent or not, the split count and the KV length it was recorded
at. On a CPU that length may be shorter than the official one: then
the official shape's launch is derived (a non-persistent split count
that is aiter's own get_meta_param choice where it was recorded is
chosen again at the official KV; a persistent launch gets aiter's
metadata schedule rebuilt there) and the row says what was assumed.
aiter_traces.stage1_trace emulates that launch (its traced workgroups
only; kept as .npz in the estimate cache) and
gfx950_timeline.price_launch prices it, launch gap included, as the
timing model's fit does (timeline_fit.py). The emulator reads at most
as many KV rows as the recorded call did (the row budget's bound):
where the official launch's traced workgroups would read more, the
launch is traced at the recorded lengths with the official split
count and extrapolated in the KV length (kernel_model.along_kv). A code object the wheel
lacks, or a trace that cannot be made, leaves the per-variant curve
(model.py) to price it, with the reason. `found` below is the
recording's launches.RecordedStage1.
"""
from __future__ import annotations

from harness.aiter_gfx950 import package
from harness.estimate import aiter_traces, kernel_model
from harness.estimate import calibration as calib
from harness.estimate import gfx950_timeline as timeline
from harness.estimate.aiter_traces import Stage1

SCHEDULE = ("aiter's metadata schedule rebuilt at {shape}, at most "
            "{splits} splits a sequence{whose} (intra-batch, "
            "KV granularity 16, as the public files build it)")


def official_stage(found, shape: tuple) -> tuple[Stage1, str]:
    """(the launch at `shape`, what was assumed to get it)."""
    batch, kv = shape
    at = f"{batch}x{kv}"
    if found.persistent:
        most = found.splits or calib.DEFAULT_PS_SPLITS
        whose = (" (the call's num_kv_splits)" if found.splits
                 else " (none recorded: the reference's)")
        words = SCHEDULE.format(shape=at, splits=most, whose=whose)
        return Stage1(found.variant, True, most), words
    fp8_q = str(found.variant).startswith("a8")
    splits = found.splits or 1
    recorded_kv = found.lengths[-1]
    if recorded_kv == kv:
        return Stage1(found.variant, False, splits), \
            f"{splits} splits as recorded at {at}"
    chosen = calib.aiter_splits(batch, recorded_kv, fp8_q)
    if chosen != splits:  # not aiter's choice: the file's own count
        return Stage1(found.variant, False, splits), (
            f"{splits} splits as recorded at kv {recorded_kv}"
            f" (the file's own: aiter would pick {chosen}), kept"
            f" at kv {kv}")
    again = calib.aiter_splits(batch, kv, fp8_q)
    return Stage1(found.variant, False, again), (
        f"{splits} splits at kv {recorded_kv} taken as aiter's"
        f" get_meta_param choice: at kv {kv} it picks {again}")


def why_not_traced(found, stage: Stage1) -> str:
    """Why this launch cannot be traced here ("" when it can)."""
    if stage.variant not in aiter_traces.DTYPES:
        return f"no stage-1 trace for variant {stage.variant}"
    if found.kernel not in package.pinned()["code_objects"]:
        return f"the pinned aiter wheel has no code object {found.kernel}"
    if stage.kernel != found.kernel:
        return (f"recorded {found.kernel}, but the traced launch "
                f"would run {stage.kernel}")
    return package.missing() or ""


def traced_rows(stage: Stage1, shape: tuple) -> int:
    """KV rows the launch's traced workgroups read: the busiest CU's
    of a persistent launch, up to three representative workgroups'."""
    batch, kv = shape
    if stage.persistent:
        return int(calib.schedule(batch, kv, stage.splits, True)[1])
    grid = aiter_traces.grid_of(stage, shape)
    return min(3, grid[0] * grid[1] * grid[2]) * -(-kv // stage.splits)


def trace_lengths(found, stage: Stage1, shape: tuple) -> tuple:
    """(KV lengths to trace at, what that assumes): the official one
    unless its traced rows pass the recorded call's."""
    batch, kv = shape
    budget = batch * found.lengths[-1]
    rows = traced_rows(stage, shape)
    if found.lengths[-1] == kv or rows <= budget:
        return (kv,), ""
    said = " and ".join(map(str, found.lengths))
    return found.lengths, (
        f"traced at kv {said} (at {kv} its traced workgroups would "
        f"read {rows:,} KV rows, the recorded call {budget:,}), "
        f"extrapolated linearly to kv {kv}")


def launch_bytes(stage: Stage1, shape: tuple, trace) -> float | None:
    """A persistent launch's bytes: its busiest workgroup's times the
    grid, scaled by the schedule (as timeline_fit.Launches does);
    None (the traced ones scaled) for alike workgroups."""
    share = aiter_traces.busiest_share(stage, shape)
    if share == 1.0:
        return None
    return timeline.launch_bytes(trace) * share


def price(found, shape: tuple, peak: float, slowest: float) -> tuple:
    """(KernelPrice | None, what was assumed, why not traced): the
    launch at `shape` by the timing model, band at the peak and the
    slowest fitted bandwidth."""
    stage, assumed = official_stage(found, shape)
    why = why_not_traced(found, stage)
    if why:
        return None, assumed, why
    lengths, scaled = trace_lengths(found, stage, shape)
    try:
        traced = []
        for length in lengths:
            at = (shape[0], length)
            trace, _ = aiter_traces.stage1_trace(stage, at)
            traced.append((length, trace, launch_bytes(stage, at, trace)))
    except Exception as error:  # the emulator's or the wheel's refusal
        said = (str(error).splitlines() or [""])[0]
        return None, assumed, f"{type(error).__name__}: {said}"

    def at(figures) -> tuple:
        priced = [(length, [timeline.price_launch(trace, figures, nbytes)])
                  for length, trace, nbytes in traced]
        return (figures["launch_gap_us"] + kernel_model.along_kv(priced, shape[1]),
                priced[-1][1])

    label = stage.label(shape)
    timed = kernel_model.timeline_price(
        stage.kernel, at, peak, slowest,
        lambda bound: f"{bound}-bound; {label}")
    return timed, "; ".join(filter(None, (assumed, scaled))), ""
