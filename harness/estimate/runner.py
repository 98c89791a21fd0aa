"""One `harness estimate N`: the submission run once per official benchmark shape under the recorder
(harness/run/recording.py, in its own worker), each call priced by the cost model, and the refusals.

On a GPU the official shapes run as they are; on a CPU each is recorded at shorter KV lengths and scaled
(harness/estimate/launches.py). A submission that fails the check, or that the aiter stand-in refuses (partial
work such as page size > 1), gets no estimate, only the reason; so does one whose kernels cannot run here (HIP:
_refusal_before_running says why). Triton launches with a gfx950 compile in the file's AOT_SPECS are priced by the
kernel model (kernel_model.py).
The result is a ledger record of mode "estimate": never a measured time.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from harness.estimate import executed, fit, launches as launch_lists, mi355x_path
from harness.estimate.calibration import CUS
from harness.estimate.gfx950_kernels import Gfx950Kernels
from harness.estimate.model import Model, ShapeEstimate, estimate_shape
from harness.platform import Platform, interprets_triton
from harness.results import ledger, records
from harness.results.figures import geomean
from harness.checks import lint
from harness.run import cases, compiling, session
from harness.run.worker import Worker
from harness.sandbox import guard
from harness.submission import Submission

TARGETS = ("mi355x",)
DEVICE_NAME = "MI355X estimate (model)"
# On a CPU: the most KV rows one recorded call uses; longer shapes are recorded shorter, then scaled.
# $HARNESS_ESTIMATE_ROWS lowers it (the tests' quick runs); 131072 keeps 014's path choice at every official shape.
ROW_BUDGET_ENV = "HARNESS_ESTIMATE_ROWS"
ROW_BUDGET = 131072
CALL_LIMIT_S = 600.0


@dataclass
class ShapeRun:
    spec: dict
    estimate: ShapeEstimate | None = None
    recorded_kv: list = field(default_factory=list)
    note: str = ""


@dataclass
class EstimateRun:
    submission: Submission
    platform: Platform
    target: str
    model: Model
    shapes: list
    refusal: str          # why there is no estimate; "" when every shape has one
    status: str           # "pass" (estimated) | "fail" (fails the check or the stand-in refuses) | "skip"
    warnings: list
    started: str
    finished: str

    def geomeans(self) -> dict | None:
        """Geometric means over the shapes of each figure (benchmark, ranked, their bands), in us."""
        found = [shape.estimate for shape in self.shapes if shape.estimate is not None]
        if self.refusal or not found:
            return None
        keys = ("us", "low_us", "high_us", "ranked_us", "ranked_low_us", "ranked_high_us")
        return {key: geomean(getattr(e, key) for e in found) for key in keys}


def recording_lengths(batch: int, kv: int, on_gpu: bool, budget: int = ROW_BUDGET) -> list[int]:
    """The KV lengths one shape is recorded at: the official one on a GPU; on a CPU at most `budget` rows."""
    longest = kv if on_gpu else min(kv, max(2, budget // max(batch, 1)))  # two lengths at least: a line needs two
    return [longest] if longest >= kv else [min(longest - 1, max(1, longest * 3 // 4)), longest]


def row_budget() -> int:
    """$HARNESS_ESTIMATE_ROWS or ROW_BUDGET; CaseError (one line, exit 2) when it is not a positive integer."""
    text = os.environ.get(ROW_BUDGET_ENV) or str(ROW_BUDGET)
    if not text.strip().isdigit() or int(text) < 1:
        raise cases.CaseError(f"{ROW_BUDGET_ENV} must be a positive number of KV rows, got {text!r}")
    return int(text)


def _refusal_before_running(submission: Submission) -> str:
    if "hip" in submission.requirements:
        return ("builds HIP kernels, which cannot run on this machine: nothing to record, so no estimate. A "
                "compile-only price would have to invent the launches: the grid, waves per workgroup, split count and "
                "which kernels run per shape are chosen by host code that runs only beside a GPU, and the kernel "
                "model needs them (harness compile N --target gfx950 reports the kernels' registers, occupancy and "
                "main-loop instructions)")
    return ""


def _kernel_model_warnings(shapes: list, platform: Platform) -> list[str]:
    """Triton launches are recorded on this machine's path, which need not be gfx950's: say so, and which of them the
    kernel model priced from gfx950 compiles."""
    priced = [p for s in shapes if s.estimate for p in s.estimate.priced if p.launch.kind == "triton"]
    if not priced:
        return []
    modelled = sorted({p.launch.kernel for p in priced if p.kernel_model})
    recorded = sorted({p.launch.kernel or p.launch.name for p in priced})
    return [f"the Triton launches ({', '.join(recorded)}) were recorded on this machine ({platform.describe()}): their "
            "kernels, grids and bytes are the path the file takes here, not necessarily on gfx950 (201, for one, runs "
            "its sm90 Gluon kernel on an H200 and its Triton path on a CPU); "
            + (f"the kernel model prices {', '.join(modelled)} from gfx950 compiles on those grids" if modelled
               else "the kernel model prices none of them (the breakdown says why), so their bytes are priced")]


def _record_shape(worker: Worker, spec: dict, lengths: list, device: str) -> tuple[list, str]:
    """([recording per length], "") or ([], why it failed)."""
    recorded = []
    for kv in lengths:
        reply = worker.call("estimate", CALL_LIMIT_S, args=dict(spec, kvseqlen=kv), device=device)
        if not reply["ok"]:
            return [], reply["message"]
        outcome = reply["result"]
        if not outcome["good"]:
            return [], f"fails the check: {(outcome['message'].splitlines() or [''])[0]}"
        recorded.append(outcome["recording"])
    return recorded, ""


def run(submission: Submission, platform: Platform, target: str = "mi355x", *, budget: int | None = None,
        specs: list | None = None, progress=None,
        protection: guard.Protection | None = None) -> EstimateRun:
    """Record and price every shape, the submission's workers (its recording and its gfx950 compiles) under
    `protection`, as `harness run` gives it; what it changed on disk or left running fails the estimate."""
    started = records.now_iso()
    budget = budget or row_budget()
    model, _ = fit.calibrated_model()
    specs = specs or cases.official("benchmark")
    warnings = lint.server_rejections(submission.path)
    refusal = _refusal_before_running(submission)
    shapes = [ShapeRun(spec=dict(spec)) for spec in specs]
    status = "skip" if refusal else "pass"
    if not refusal:
        protection = protection or guard.choose("auto")
        with session.guarded(submission, platform, protection) as held:
            refusal, status, on_path, risks = _record_shapes(held, shapes, model, budget, progress)
        if held.problems:
            refusal, status = held.problems[0], "fail"
            warnings += held.problems[1:]
        warnings += (on_path or _kernel_model_warnings(shapes, platform)) + risks
    return EstimateRun(submission=submission, platform=platform, target=target, model=model, shapes=shapes,
                       refusal=refusal, status=status, warnings=warnings, started=started, finished=records.now_iso())


def _record_shapes(held: session.Guarded, shapes: list, model: Model, budget: int, progress) -> tuple:
    """Each shape recorded in one worker and priced on the file's MI355X path; (refusal, status, the path's
    warnings, the stand-in's risks): ("", "pass", ...) or (why, "fail", ...) at the first shape that fails."""
    platform = held.platform
    # Compiled in a worker of their own (no interpreter), once per kernel for the whole run: the plan's
    # kernels together up front, a recorded one on first use.
    kernels = Gfx950Kernels(lambda names: compiling.triton_reports(held, "gfx950", names, preferred=True))
    sizes = [[int(shape.spec["batchsize"]), int(shape.spec["kvseqlen"])] for shape in shapes]
    path = mi355x_path.read(held.submission.path, platform.arch == "gfx950", lambda: _rocm_plan(held, sizes))
    kernels.prefetch(launch.kernel for batch, kv in sizes for launch in path.launches([], batch, kv))
    kernels.executed = _executed_counts(held, path, progress)
    risks: set = set()
    with held.start_worker("estimate", interprets_triton(held.submission, platform)) as worker:
        for index, shape in enumerate(shapes):
            batch, kv = int(shape.spec["batchsize"]), int(shape.spec["kvseqlen"])
            if progress:
                progress(index, len(shapes), f"{batch}×{kv}")
            lengths = recording_lengths(batch, kv, platform.is_gpu, budget)
            recorded, failure = _record_shape(worker, shape.spec, lengths, platform.torch_device)
            if failure:
                return f"{batch}×{kv}: {failure}", "fail", [], []
            one, shape.note = launch_lists.scale(recorded[0] if len(recorded) > 1 else None, recorded[-1],
                                                 lengths[0] if len(recorded) > 1 else None, lengths[-1], kv)
            shape.recorded_kv = lengths
            priced = path.launches(launch_lists.from_recording(one, path.effects), batch, kv)
            risks |= launch_lists.recorded_warnings(one)
            shape.estimate = estimate_shape((batch, kv), priced, model, kernels)
    return "", "pass", path.warnings(platform.describe()), sorted(risks)


def _executed_counts(held: session.Guarded, path: mi355x_path.PathPlan, progress) -> executed.Executed:
    """The file's kernels' executed counts from a few calls on the gfx950 emulator, in a worker of their own (the same
    jail), or why there are none."""
    why = executed.why_not_emulated(held.submission, held.platform)
    if why:
        return executed.Executed(why=why)
    if progress:
        progress(0, 1, "executed counts on the gfx950 emulator")
    block = int((path.options or {}).get("block_n") or executed.TILE)
    return executed.sample(lambda: held.start_emulated_worker("estimate-emulated"), path.worked_out() and path.merges,
                           block)


def _rocm_plan(held: session.Guarded, sizes: list) -> dict:
    """harness/run/persona.py's answer from the submission's worker (its import failing is said as the reason)."""
    reply = held.ask("rocm_plan", CALL_LIMIT_S, shapes=sizes, cus=CUS)
    if reply["ok"]:
        return reply["result"]
    return {"options": None, "has_merge": False, "splits": {},
            "why_not": f"the file cannot be imported to read its launch options: {reply['message']}"}


def _shape_payload(shape: ShapeRun) -> dict:
    e = shape.estimate
    breakdown = [{"kind": p.launch.kind, "what": p.launch.name, "count": p.launch.count, "bytes": p.launch.bytes,
                  "us": p.us, "low_us": p.low_us, "high_us": p.high_us, "basis": p.basis} for p in e.priced]
    return {"shape": list(e.shape), "us": e.us, "low_us": e.low_us, "high_us": e.high_us, "ranked_us": e.ranked_us,
            "ranked_low_us": e.ranked_low_us, "ranked_high_us": e.ranked_high_us, "recorded_kv": shape.recorded_kv,
            "note": shape.note, "uncalibrated": e.uncalibrated, "breakdown": breakdown}


def record(result: EstimateRun, checkout: dict | None = None) -> records.Record:
    """The ledger record (mode "estimate", device "MI355X estimate (model)"): figures under `estimate`, no stats."""
    lowest, highest = result.model.errors
    payload = {"target": result.target, "recorded_on": result.platform.record_device()["name"],
               "scaled": not result.platform.is_gpu, "band_errors": [lowest, highest],
               "geomean": result.geomeans(), "refusal": result.refusal,
               "shapes": [_shape_payload(shape) for shape in result.shapes if shape.estimate is not None]}
    results = [{"spec": shape.spec, "status": "pass" if shape.estimate else ("skip" if result.refusal else "pass"),
                "message": shape.note, "stats": None, "notes": {}, "accuracy": None} for shape in result.shapes]
    return records.new_record(
        source="local", submission=records.submission_info(result.submission), mode="estimate", cases="official",
        flush="none", device=records.Device(name=DEVICE_NAME, arch="gfx950 (model)", backend="estimate"),
        versions=result.platform.versions, status=result.status, reason=result.refusal, results=results,
        warnings=result.warnings, started=result.started, finished=result.finished, git=checkout, estimate=payload)


def save(result: EstimateRun, checkout: dict | None = None) -> records.Record:
    """The run's record, appended to the ledger (OSError when it cannot be written)."""
    found = record(result, checkout)
    ledger.append(found)
    return found
