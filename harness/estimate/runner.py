"""One `harness estimate N`: the submission run once per official benchmark shape under the recorder
(harness/run/recording.py, in its own worker), each call priced by the cost model, and the refusals.

On a GPU the official shapes run as they are; on a CPU each is recorded at shorter KV lengths and scaled
(harness/estimate/launches.py). A submission that fails the check, or that the aiter stand-in refuses (partial
work such as page size > 1), gets no estimate, only the reason. A HIP file is recorded in a worker that runs its
kernels on the gfx950 emulator (hip_launches.py), the path it takes on MI355X; where the emulator cannot run,
_refusal_before_running says why. HIP kernels, and Triton kernels the estimate runs on the emulator (executed.py),
are priced by the gfx950 timing model over their launches' traces (the emulated worker traces them); other Triton
launches with a gfx950 compile in the file's AOT_SPECS by the kernel model (kernel_model.py). Calls already made by
an earlier run of the same file are replayed from the shared recordings (recordings.py), traces and all.
The result is a ledger record of mode "estimate": never a measured time.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from harness import platform as platforms
from harness.aiter_gfx950 import routing as aiter_routing
from harness.estimate import executed, fit, hip_launches, launches as launch_lists, mi355x_path
from harness.estimate import recordings as shared
from harness.estimate import workers as recording_workers
from harness.estimate.calibration import CUS
from harness.estimate.gfx950_kernels import Gfx950Kernels
from harness.estimate.model import Model, ShapeEstimate, estimate_shape
from harness.platform import Platform, interprets_triton
from harness.results import ledger, records
from harness.results.figures import geomean
from harness.checks import lint
from harness.emulator import launch_hip
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
# A file whose MI355X kernels are worked out from its plan (mi355x_path) takes them at the official shape;
# its recording only counts the rest (torch ops, allocations), linear in KV: fewer rows give the same price
# (201: the same price at 4,096, 8,192 and 16,384 rows, recorded in 44, 49 and 69 s cold on 2 cores).
PLAN_ROW_BUDGET = 8192  # at batch 256, 32 rows a sequence: one whole 32-row tile
CALL_LIMIT_S = 600.0
TRACE_LIMIT_S = 300.0  # a HIP file's traced call at the official shape: its input made, a few workgroups run
AITER_IN_TORCH = "torch"  # harness/aiter_gfx950/routing.py's mode for the recording worker


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
    replayed: str = ""    # which calls the shared recordings answered (recordings.py), "" when none

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


def plan_budget(path: mi355x_path.PathPlan, budget: int) -> int:
    """The KV rows a recorded call uses for this file: fewer where its plan gives its kernels."""
    return min(budget, PLAN_ROW_BUDGET) if path.worked_out() else budget


def row_budget() -> int:
    """$HARNESS_ESTIMATE_ROWS or ROW_BUDGET; CaseError (one line, exit 2) when it is not a positive integer."""
    text = os.environ.get(ROW_BUDGET_ENV) or str(ROW_BUDGET)
    if not text.strip().isdigit() or int(text) < 1:
        raise cases.CaseError(f"{ROW_BUDGET_ENV} must be a positive number of KV rows, got {text!r}")
    return int(text)


def prices_hip(submission: Submission) -> bool:
    """Its HIP path (hard or guarded) is the one it takes on MI355X: recorded on the gfx950 emulator."""
    return "hip" in submission.requirements | submission.optional


def _refusal_before_running(submission: Submission) -> str:
    missing = platforms.emulator_missing() if prices_hip(submission) else None
    if missing:
        return (f"builds HIP kernels, which it runs on MI355X and which run here only on the gfx950 emulator: "
                f"{missing} (make setup installs clang-22 and lld-22); a price of another path is not its "
                "MI355X one, so no estimate")
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


def _record_shape(worker: Worker, spec: dict, lengths: list, device: str,
                  kept: shared.Recordings | None = None) -> tuple[list, list, int, str]:
    """([recording per length], [the emulator's summary of each], calls replayed, "") or ([], [], 0, why it
    failed)."""
    recorded, emulated, replayed = [], [], 0
    for kv in lengths:
        reply = shared.call(worker, kept, "estimate", CALL_LIMIT_S, args=dict(spec, kvseqlen=kv), device=device)
        if not reply["ok"]:
            return [], [], 0, reply["message"]
        outcome = reply["result"]
        if not outcome["good"]:
            return [], [], 0, f"fails the check: {(outcome['message'].splitlines() or [''])[0]}"
        recorded.append(outcome["recording"])
        emulated.append(reply.get("emulated") or {})
        replayed += bool(reply.get(shared.CACHED))
    return recorded, emulated, replayed, ""


def run(submission: Submission, platform: Platform, target: str = "mi355x", *, budget: int | None = None,
        specs: list | None = None, progress=None,
        protection: guard.Protection | None = None) -> EstimateRun:
    """Record and price every shape, the submission's workers (its recording and its gfx950 compiles) under
    `protection`, as `harness run` gives it; what it changed on disk or left running fails the estimate.
    progress(done, total, label): what is being recorded ("recording 4×1024 and 4×8192"), or a line to say."""
    started = records.now_iso()
    budget = budget or row_budget()
    model, _ = fit.calibrated_model()
    specs = specs or cases.official("benchmark")
    warnings = lint.server_rejections(submission.path)
    refusal = _refusal_before_running(submission)
    shapes = [ShapeRun(spec=dict(spec)) for spec in specs]
    status = "skip" if refusal else "pass"
    shelf = _shelf(submission, platform)
    if not refusal:
        protection = protection or guard.choose("auto")
        if prices_hip(submission):  # once, before the watch: else each recording worker builds it in its scratch
            session.prebuild_hip(submission, lambda line: progress and progress(None, None, line))
        with session.guarded(submission, platform, protection) as held:
            refusal, status, on_path, risks = _record_shapes(held, shapes, model, budget, progress, shelf)
        if held.problems:
            refusal, status = held.problems[0], "fail"
            warnings += held.problems[1:]
        else:  # only what a clean run replied is shared
            for kept in shelf.values():
                kept.commit()
        warnings += (on_path or _kernel_model_warnings(shapes, platform)) + risks
    recorded_on = dataclasses.replace(platforms.emulated(platform), backend="cpu") if prices_hip(submission) \
        else platform
    return EstimateRun(submission=submission, platform=recorded_on, target=target, model=model, shapes=shapes,
                       refusal=refusal, status=status, warnings=warnings, started=started, finished=records.now_iso(),
                       replayed=_replayed(shelf))


def _shelf(submission: Submission, platform: Platform) -> dict:
    """The shared recordings of this file's calls, by worker: "record" (plain, interpreted or emulated for
    HIP) and "emulate" (executed counts); empty when $HARNESS_ESTIMATE_CACHE is off."""
    if shared.folder() is None:
        return {}
    plain = ("emulated gfx950" if prices_hip(submission)
             else f"{platform.torch_device}{' interpreted' if interprets_triton(submission, platform) else ''}"
             f", aiter {AITER_IN_TORCH}")
    return {"record": shared.Recordings(submission.path, plain),
            "emulate": shared.Recordings(submission.path, "emulated gfx950 test, traced")}


def _replayed(shelf: dict) -> str:
    """The note of the calls the shared recordings answered ("" when none)."""
    hits = sum(kept.hits for kept in shelf.values())
    if not hits:
        return ""
    where = next(iter(shelf.values())).where
    calls = "call" if hits == 1 else "calls"
    traces = sum(kept.traces for kept in shelf.values())
    timed = f", with the {traces} launch traces the gfx950 timing model prices" if traces else ""
    return (f"{hits} recorded or emulated {calls} replayed from the shared recordings ({where}){timed}: an "
            f"earlier run of this file under this harness made them (${shared.ENV}=off runs everything again)")


def _record_shapes(held: session.Guarded, shapes: list, model: Model, budget: int, progress, shelf: dict) -> tuple:
    """Each shape recorded in one worker and priced on the file's MI355X path; (refusal, status, the path's
    warnings, the stand-in's risks): ("", "pass", ...) or (why, "fail", ...) at the first shape that fails."""
    platform = held.platform
    # Compiled in a worker of their own (no interpreter), once per kernel for the whole run: the plan's
    # kernels together up front, a recorded one on first use.
    kernels = Gfx950Kernels(lambda names: compiling.triton_reports(held, "gfx950", names, preferred=True))
    sizes = [[int(shape.spec["batchsize"]), int(shape.spec["kvseqlen"])] for shape in shapes]
    hip = prices_hip(held.submission)  # recorded on the emulator, whose torch reports ROCm gfx950: its MI355X path
    path = mi355x_path.read(held.submission.path, platform.arch == "gfx950" or hip, lambda: _rocm_plan(held, sizes))
    kernels.prefetch(launch.kernel for batch, kv in sizes for launch in path.launches([], batch, kv))
    kernels.executed = _executed_counts(held, path, progress, shelf.get("emulate"))
    budget = plan_budget(path, budget)
    risks: set = set()
    found, at_shape = _record_each(held, shapes, hip, budget, progress, shelf.get("record"))
    failed = next(((shape, item[-1]) for shape, item in zip(shapes, found) if item and item[-1]), None)
    if failed:  # the first in shape order of those that ran (after a failure no other starts)
        return f"{_label(failed[0])}: {failed[1]}", "fail", [], []
    for k, (shape, (lengths, recorded, emulated, replayed, _)) in enumerate(zip(shapes, found)):
        batch, kv = int(shape.spec["batchsize"]), int(shape.spec["kvseqlen"])
        one, shape.note = launch_lists.scale(recorded[0] if len(recorded) > 1 else None, recorded[-1],
                                             lengths[0] if len(recorded) > 1 else None, lengths[-1], kv)
        shape.recorded_kv = lengths
        emulated_launches, failure = _hip_launches(hip, lengths, emulated, batch, kv, replayed, at_shape.get(k))
        if failure:
            return f"{batch}×{kv}: {failure}", "fail", [], []
        if kv not in lengths and hip_launches.traced_at(emulated_launches, kv):
            shape.note = f"HIP launches traced at kv {kv} itself; the rest checked at kv {lengths[-1]}, scaled to {kv}"
        priced = path.launches(launch_lists.from_recording(one, path.effects), batch, kv) + emulated_launches
        risks |= launch_lists.recorded_warnings(one)
        shape.estimate = estimate_shape((batch, kv), priced, model, kernels)
    return "", "pass", path.warnings(platform.describe()), sorted(risks)


def _label(shape: ShapeRun) -> str:
    return f"{int(shape.spec['batchsize'])}×{int(shape.spec['kvseqlen'])}"


def _record_each(held: session.Guarded, shapes: list, hip: bool, budget: int, progress,
                 kept: shared.Recordings | None) -> tuple[list, dict]:
    """([each shape's (KV lengths, recordings, emulated summaries, calls replayed, failure) in shape order,
    None for one not run after a failure], {shape index: traced at the shape itself}), recorded by
    estimate/workers.py's workers at once. Shapes recorded at the same batch and KV lengths (on a CPU, 1k
    and 8k alike once the row budget caps them) make the same calls: recorded once, with the first's seed.
    A HIP file's shapes checked shorter are also traced at the shape itself (_traced_at_shape), each a
    task of its own; with several workers the largest traces, then the costliest recordings, go first."""
    platform = held.platform

    def lengths_of(shape: ShapeRun) -> tuple:
        batch, kv = int(shape.spec["batchsize"]), int(shape.spec["kvseqlen"])
        if hip:  # checked at the longest length that fits: the traces at the shape itself price it
            return tuple(hip_launches.lengths(batch, kv, min(budget, hip_launches.EMULATED_ROWS))[-1:])
        return tuple(recording_lengths(batch, kv, platform.is_gpu, budget))

    keys = [(int(shape.spec["batchsize"]), lengths_of(shape)) for shape in shapes]
    traced = [k for k, key in enumerate(keys) if hip and int(shapes[k].spec["kvseqlen"]) not in key[1]]
    count = recording_workers.how_many(len(set(keys)) + len(traced), platform.is_gpu and not hip)
    groups = recording_workers.same_calls(keys, count)
    if count > 1:  # each makes its input at the shape itself: the largest first
        traced.sort(key=lambda k: -keys[k][0] * int(shapes[k].spec["kvseqlen"]))
    tasks = [("trace", k) for k in traced] + [("record", group) for group in groups]
    labels = [f"tracing {_label(shapes[which])} at its own length" if kind == "trace" else
              "recording " + _label(shapes[which[0]]) + (f" (and {', '.join(_label(shapes[k]) for k in which[1:])}:"
                                                     " the same calls)" if len(which) > 1 else "")
              for kind, which in tasks]

    def start(slot: int) -> Worker:
        purpose = "estimate" + (f"-{slot + 1}" if slot else "")
        worker = held.start_emulated_worker(purpose) if hip else _recording_worker(held, purpose)
        recording_workers.share_cores(worker.env, count)
        if progress:  # the emulator's lines (a long launch, a kernel without its C fast path), as harness run
            worker.on_progress = lambda line: progress(None, None, line)
        return worker

    def run_task(worker: Worker, index: int) -> tuple:
        kind, which = tasks[index]
        if kind == "trace":
            return (*_traced_at_shape(worker, shapes[which].spec, kept), "")
        lengths, device = list(keys[which[0]][1]), "cpu" if hip else platform.torch_device
        return (lengths, *_record_shape(worker, shapes[which[0]].spec, lengths, device, kept))

    found, at_shape = [None] * len(shapes), {}
    for (kind, which), item in zip(tasks, recording_workers.each_shape(labels, count, start, run_task, progress)):
        if kind == "trace" and item is not None:
            at_shape[which] = item[:-1]
        for k in (which if kind == "record" else ()):
            found[k] = item
    return found, at_shape


def _traced_at_shape(worker: Worker, spec: dict, kept: shared.Recordings | None) -> tuple:
    """A HIP file checked shorter than `spec`: (the emulator's summary of its launches at the shape itself,
    traced workgroups alone, "", replayed) or (None, why not, False)."""
    reply = shared.call(worker, kept, "trace", TRACE_LIMIT_S, args=dict(spec), device="cpu")
    outcome = reply.get("result") or {}
    if not reply["ok"] or not outcome.get("good"):
        return None, (reply.get("message") or outcome.get("message") or "no reply").splitlines()[0], False
    return reply.get("emulated") or {}, "", bool(reply.get(shared.CACHED))


def _recording_worker(held: session.Guarded, purpose: str = "estimate") -> Worker:
    """The plain worker a non-HIP file is recorded in: aiter calls are priced from their journal entries, so
    its kernels run as the stand-in's torch model, not on the gfx950 emulator (minutes a call)."""
    worker = held.start_worker(purpose, interprets_triton(held.submission, held.platform))
    worker.env[aiter_routing.ENV] = AITER_IN_TORCH
    return worker


def _hip_launches(hip: bool, lengths: list, emulated: list, batch: int, kv: int,
                  replayed: int = 0, at_shape: tuple | None = None) -> tuple[list, str]:
    """A HIP file's emulated kernels at one shape as launches to price ([], "" for other files)."""
    if not hip:
        return [], ""
    calls = [(length, hip_launches.one_call(summary)[0]) for length, summary in zip(lengths, emulated)]
    return hip_launches.launches(calls, batch, kv, replayed, at_shape)


def _executed_counts(held: session.Guarded, path: mi355x_path.PathPlan, progress,
                     kept: shared.Recordings | None = None) -> executed.Executed:
    """The file's kernels' executed counts from a few calls on the gfx950 emulator, in a worker of their own (the same
    jail), or why there are none."""
    why = executed.why_not_emulated(held.submission, held.platform)
    if why:
        return executed.Executed(why=why)
    if progress:
        progress(0, 1, "recording executed counts on the gfx950 emulator")
    block = int((path.options or {}).get("block_n") or executed.TILE)
    return executed.sample(lambda: _traced_worker(held), path.worked_out() and path.merges, block, recordings=kept)


def _traced_worker(held: session.Guarded) -> Worker:
    """The emulated calls' worker: every launch traced, for the gfx950 timing model."""
    worker = held.start_emulated_worker("estimate-emulated")
    worker.env[launch_hip.TRACE_ENV] = "1"
    return worker


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
                  "us": p.us, "low_us": p.low_us, "high_us": p.high_us, "basis": p.full,
                  "method": p.basis} for p in e.priced]
    return {"shape": list(e.shape), "us": e.us, "low_us": e.low_us, "high_us": e.high_us, "ranked_us": e.ranked_us,
            "ranked_low_us": e.ranked_low_us, "ranked_high_us": e.ranked_high_us, "recorded_kv": shape.recorded_kv,
            "note": shape.note, "uncalibrated": e.uncalibrated, "breakdown": breakdown}


def record(result: EstimateRun, checkout: dict | None = None) -> records.Record:
    """The ledger record (mode "estimate", device "MI355X estimate (model)"): figures under `estimate`, no stats."""
    lowest, highest = result.model.errors
    payload = {"target": result.target, "recorded_on": result.platform.record_device()["name"],
               "scaled": not result.platform.is_gpu, "band_errors": [lowest, highest],
               "geomean": result.geomeans(), "refusal": result.refusal, "replayed": result.replayed,
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
