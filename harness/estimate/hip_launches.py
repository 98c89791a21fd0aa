"""A HIP file's launches as the kernel model prices them: its recorded calls run in an emulated worker
(harness/emulator: its HIP kernels on the gfx950 emulator, torch reporting ROCm, so the file takes the
path it takes on MI355X), each kernel's executed counts per wave priced as Triton's are (kernel_model.py,
uncalibrated).

Each shape is checked at its own batch and a KV length of whole 32-token tiles (the emulator runs a few
thousand KV rows a second, not the official shapes); given two lengths, each kernel's counts are fitted
per wave as a fixed part per workgroup plus a part per KV tile (executed.py), its grid kept as the longer
recording launched it, and its memory bytes extrapolated linearly in the KV length. The child's
"estimate" request runs the call twice (checked, then recorded) on one input: the counts are the
checked call's, the recorded call running only each launch's traced workgroups (one_call: a recorded
call run whole is halved in).

Where the summary names a kernel's traces (TRACES: the .npz files harness/emulator/trace.py saves, one a
launch; the child traces the recorded call's launches, recordings.py keeps them as files), the kernel is
priced by the gfx950 timing model (gfx950_timeline.py) instead: its launches' timelines at each recorded
length, extrapolated linearly in the KV length to the shape's. A kernel without them keeps the counts'
price, and its row says why.

A shape checked shorter than itself is traced at the shape too (the child's "trace" request: a warm-up
call running no workgroup, then one running each launch's traced workgroups alone, unchecked): a file
picks its launches and grids by the KV length (120 splits a long sequence, not a short one), so those
traces, not the shorter ones extrapolated, price the shape (at_shape). Where that call stopped or
raised, the shorter ones do, and the row says why.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from harness.emulator import trace as tracing
from harness.estimate import executed
from harness.estimate.calibration import Launch

EMULATED_ROWS = 4096  # KV rows one emulated call reads at most (two tiles per sequence at least)
NOT_MEMORY = ("bytes.lds_read", "bytes.lds_write", "bytes.lds_dma")  # LDS, and LDS-DMA's bytes counted as loads
MARK = "[gfx950 emulated]"
TRACES = "traces"  # a summary entry's trace files, one a launch in order (the request's calls one after the other)


@dataclass(frozen=True)
class TracedFit(executed.ExecutedFit):
    """A kernel's executed counts, and the traces of its launches the timing model prices."""
    traced: tuple = ()   # ((kv length, (LaunchTrace of each launch of one call, ...)), ...), shortest first
    kv: int = 0          # the KV length of the shape it prices
    note: str = ""       # how its traces were taken, where the price's words should say


def lengths(batch: int, kv: int, budget: int = EMULATED_ROWS) -> list[int]:
    """The KV lengths one shape is emulated at: the official one when it fits the budget, else two whole-tile
    lengths, the longer at least two tiles."""
    tile = executed.TILE
    if batch * kv <= budget:
        return [kv]
    longest = min(kv, max(2 * tile, budget // batch // tile * tile))
    return [longest] if longest >= kv else [longest // 2 // tile * tile or tile, longest]


def one_call(emulated: dict) -> tuple[dict, list]:
    """The emulator's summary of one call, and the kernels whose launches do not halve (the two calls
    launched them differently). The request's two calls: the checked one's counts, and the recorded one's
    where its launches ran whole ("counted" of them; its traced workgroups alone ran otherwise)."""
    found, uneven = {}, []
    for kernel, entry in emulated.items():
        launches = int(entry.get("launches", 0))
        if launches % 2:
            uneven.append(kernel)
        counted = int(entry.get("counted", launches))
        share = 0.5 if counted == launches else max(1, launches // 2) / max(1, counted)
        counts = {key: value * share for key, value in (entry.get("counts") or {}).items()}
        counts["waves_per_workgroup"] = (entry.get("counts") or {}).get("waves_per_workgroup", 0)
        traces = list(entry.get(TRACES) or [])  # the recorded (second) call's: the last half or all
        found[kernel] = {"launches": max(1, launches // 2), "counts": counts,
                         TRACES: traces[len(traces) - launches // 2:] if launches > 1 else traces}
    return found, uneven


def readable(symbol: str) -> str:
    """A kernel's name from its symbol: '_Z19mla_fp8_mfma_kernelPKt...' -> 'mla_fp8_mfma_kernel' (C++ mangling
    of a function at namespace scope; any other symbol as it is)."""
    digits = symbol[2:len(symbol) - len(symbol[2:].lstrip("0123456789"))]
    if not symbol.startswith("_Z") or not digits:
        return symbol
    return symbol[2 + len(digits):2 + len(digits) + int(digits)]


def memory_bytes(counts: dict) -> float:
    return float(sum(v for k, v in counts.items() if k.startswith("bytes.") and k not in NOT_MEMORY))


def launches(calls: list, batch: int, kv: int, replayed: int = 0,
             at_shape: tuple | None = None) -> tuple[list, str]:
    """([Launch per HIP kernel], "") from [(kv length, one call's summary)] (shortest first), or ([], why):
    why names a call that launched no HIP kernel (the file took another path than its MI355X one).
    replayed: how many of the calls the shared recordings answered (their traces kept there).
    at_shape: (the "trace" request's summary or None, why not, replayed) where the calls were shorter."""
    summary, why_not, cached = at_shape or (None, "", False)
    if summary:
        found, why_not = traced_at_shape(summary, calls, kv, cached)
        if found:
            return found, ""
    for length, summary in calls:
        if not summary:
            return [], (f"its HIP kernels did not run at kv {length} on the gfx950 emulator (the file took "
                        "another path, e.g. a fallback after a failed build): a price of that path is not "
                        "its MI355X path")
    calls = [(length, {readable(kernel): entry for kernel, entry in summary.items()})
             for length, summary in calls]  # every line names a kernel as its source does
    longest = calls[-1][1]
    fits = (executed.fit_calls([((batch, length), summary) for length, summary in calls], False)
            if len(calls) > 1 else None)
    found = []
    for kernel, entry in longest.items():
        counts, count = entry["counts"], entry["launches"]
        programs = int(counts.get("workgroups", 0) // count)
        nbytes = _extrapolated(calls, kernel, kv)
        fit, why = _fit(kernel, entry, programs, fits)
        fit, why = _traced(kernel, calls, kv, fit, why, replayed)
        if why_not and isinstance(fit, TracedFit):
            fit = dataclasses.replace(fit, note=f"not traced at kv {kv} itself: {why_not}")
        found.append(Launch("hip", f"{kernel} ({programs} workgroups) {MARK}", count=count, bytes=nbytes,
                            programs=programs, kernel=kernel, fit=fit, unpriced=why))
    return found, ""


def _extrapolated(calls: list, kernel: str, kv: int) -> float:
    """The kernel's memory bytes at `kv`: linear through the two recordings, else scaled from one."""
    points = [(length, memory_bytes(summary[kernel]["counts"])) for length, summary in calls if kernel in summary]
    (kv_long, long), (kv_short, short) = points[-1], points[0]
    if kv_long == kv_short:
        return long * kv / kv_long
    return max(0.0, short + (long - short) * (kv - kv_short) / (kv_long - kv_short))


def _fit(kernel: str, entry: dict, programs: int, fits) -> tuple:
    """(ExecutedFit, "") of one kernel, or (None, why): from the fit over two lengths, or the one call's
    counts per wave as they are (the official shape itself)."""
    if fits is not None:
        return fits.fits.get(kernel), fits.why_kernel.get(kernel, "")
    waves = int(entry["counts"].get("waves_per_workgroup", 0))
    if not programs or not waves:
        return None, "the emulator gave no workgroups or waves for it"
    per_wave = {key: value / (programs * waves * entry["launches"]) for key, value in entry["counts"].items()
                if key in executed.PRICED or key.startswith("mfma_by_name.")}
    return executed.ExecutedFit(kernel, "KV tile", waves, per_wave, {}, 1, 0.0), ""


def _traced(kernel: str, calls: list, kv: int, fit, why: str, replayed: int = 0) -> tuple:
    """The kernel's fit with its launches' traces at every recorded length (TracedFit), where the
    summaries name them (at the lengths that launched it); else the fit as it was, with why it has no
    traces."""
    traced = []
    for length, summary in calls:
        entry = summary.get(kernel)
        if entry is None:
            continue  # not launched at this length: priced from the others
        paths = entry.get(TRACES) or []
        missing = (f"{len(paths)} traces for {entry.get('launches')} launches" if len(paths) != entry.get("launches")
                   else next((f"trace {p} is gone" for p in paths if not Path(p).is_file()), ""))
        if missing:
            untraced = f"not timed by the gfx950 timing model: at kv {length}, {missing}"
            return (dataclasses.replace(fit, untraced=untraced), why) if fit else (None, why or untraced)
        traced.append((length, tuple(tracing.load(Path(p)) for p in paths)))
    base = fit or executed.ExecutedFit(kernel, "KV tile", traced[-1][1][0].resources.waves_per_workgroup,
                                       {}, {}, len(traced), 0.0)
    return TracedFit(**dict(vars(base), replayed=replayed), traced=tuple(traced), kv=kv), ""


def traced_at_shape(summary: dict, calls: list, kv: int, replayed: bool) -> tuple[list, str]:
    """([Launch per HIP kernel the file launched at the shape itself], "") from the "trace" request's
    summary, each priced from its traces there; or ([], why) where a kernel has no trace of each launch."""
    from harness.estimate.gfx950_timeline import launch_bytes

    checked = " and ".join(str(length) for length, _ in calls)
    found = []
    for symbol, entry in one_call(summary)[0].items():
        kernel, paths = readable(symbol), entry.get(TRACES) or []
        if not paths or len(paths) != entry["launches"] or not all(Path(p).is_file() for p in paths):
            return [], f"{kernel}: {len(paths)} traces for {entry['launches']} launches"
        traces = tuple(tracing.load(Path(p)) for p in paths)
        programs = traces[0].workgroup_count
        fit = TracedFit(kernel, "KV tile", traces[0].resources.waves_per_workgroup, {}, {}, 1, 0.0,
                        replayed=int(replayed), traced=((kv, traces),), kv=kv,
                        note=f"traced at kv {kv} itself, its traced workgroups alone (checked at kv {checked})")
        found.append(Launch("hip", f"{kernel} ({programs} workgroups) {MARK}", count=entry["launches"],
                            bytes=sum(launch_bytes(t) for t in traces), programs=programs, kernel=kernel,
                            fit=fit))
    return found, ""


def traced_at(found: list, kv: int) -> bool:
    """Whether these launches were priced from traces taken at kv itself."""
    return any(isinstance(launch.fit, TracedFit) and launch.fit.traced and launch.fit.traced[-1][0] == kv
               for launch in found)
