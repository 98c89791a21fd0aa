"""MI355X (gfx950) time of one emulated launch, from its trace (harness/emulator/trace.py).

Per wave, a timeline over the instructions it ran: each holds the wave's issue for its cycles
(VALU, MFMA on the VALU port then the XDL unit, LDS bytes through the port, 4 cycles at least:
the scheduler visits a SIMD once per 4), memory ops complete a latency after issue, s_waitcnt
waits for the oldest ops beyond its count, s_barrier joins the workgroup's waves.
Per CU, the workgroups that fit (VGPR+AGPR, SGPR, LDS, wave slots) run together: their time is
the larger of the busiest SIMD's summed issue (per pipe) and the longest wave timeline, an
interval bound (other waves fill one wave's waits as long as the SIMD has issue to spare).
Per launch, the busiest CU's workgroups run in rounds of that set; bytes (width x active lanes
of each vector memory op, a scalar load's dwords) at the achieved HBM bandwidth bound it; the
launch gap is added. Traced workgroups stand for the untraced ones; the breakdown says so.
Every figure is in data/gfx950_figures.json with its source; FREE_FIGURES are fitted."""
from __future__ import annotations

import json
import math
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.emulator.memory import LINE_BYTES
from harness.emulator.trace import LaunchTrace
from harness.estimate.gfx950_instructions import (CATEGORY_NAMES, EXP, LDS, LGKM, NO_WAIT, VM, InstructionTable,
                                                  classify, reads_previous)

FIGURES_FILE = Path(__file__).resolve().parent / "data" / "gfx950_figures.json"
FREE_FIGURES = ("hbm_bytes_per_second", "memory_latency_cycles", "clock_hz", "launch_gap_us")
TABLES = ("mfma_passes", "mfma_passes_by_shape")  # figures that are tables, not one value



@dataclass(frozen=True)
class Figures:
    values: dict          # name -> number
    tables: dict          # "mfma_passes", "mfma_passes_by_shape" -> {key: passes}
    fitted: bool          # every free figure came from a fit (or was given)

    def __getitem__(self, name: str) -> float:
        return self.values[name]

    def structural(self) -> tuple:
        """What the per-trace preparation depends on: every figure but the free ones."""
        fixed = tuple(sorted((k, v) for k, v in self.values.items() if k not in FREE_FIGURES))
        return fixed + tuple((k, tuple(sorted(t.items()))) for k, t in sorted(self.tables.items()))


def load_figures(overrides: dict | None = None, path: Path = FIGURES_FILE) -> Figures:
    """The figures file, with `overrides` ({name: value}, e.g. the fit's free figures)."""
    entries = json.loads(Path(path).read_text(encoding="utf-8"))["figures"]
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(entries))
    if unknown:
        raise KeyError(f"no such gfx950 figure: {', '.join(unknown)}")
    values = {name: float(overrides.get(name, entry["value"]))
              for name, entry in entries.items() if name not in TABLES}
    tables = {name: dict(entries[name]["values"]) for name in TABLES}
    fitted = all(name in overrides or entries[name].get("fitted") for name in FREE_FIGURES)
    return Figures(values, tables, fitted)


def start_values(path: Path = FIGURES_FILE) -> dict:
    """The free figures' starting values: their sources', before any fit moved them."""
    entries = json.loads(Path(path).read_text(encoding="utf-8"))["figures"]
    return {name: float(entries[name].get("start_value", entries[name]["value"])) for name in FREE_FIGURES}


@dataclass
class LaunchTime:
    microseconds: float
    bound: str            # "issue" | "latency" | "bandwidth"
    parts: dict           # us: issue, latency, bandwidth, launch
    lines: list
    workgroups_traced: int
    workgroups_total: int



@dataclass
class PreparedWave:
    """What a wave's timeline needs that no free figure changes."""
    total: float                 # its cycles with no wait
    event_start: np.ndarray      # issue cycle of each wait / barrier with no earlier wait
    event_barrier: list
    ops: dict                    # counter -> (start cycles, latency kind, segment, ops before each event,
                                 # cycles of LDS transfer before the latency)
    event_waits: np.ndarray      # (events, 3)
    issue: np.ndarray            # cycles per category (VALU..branch), then XDL
    lds_bytes: float
    vector_bytes: float          # through the vector L1
    hbm_bytes: float


def prepare_wave(wave, t: InstructionTable, figures: Figures) -> PreparedWave:
    steps, lanes = wave.steps.astype(np.int64), wave.lanes.astype(np.float64)
    category, simd = t.category[steps], t.simd[steps].copy()
    moved = t.width[steps] * np.where(t.per_lane[steps], lanes, 1.0)
    through_lds = category == LDS
    # an LDS op issues and the wave goes on: its bytes through the SIMD pair's port delay its data
    # (lgkmcnt waits for it) and load the port (the resident set's LDS issue), not the wave's issue
    transfer = np.where(through_lds, moved / figures["lds_port_bytes_per_clock"], 0.0)
    cost = np.maximum(simd, figures["issue_interval_cycles"])
    simd[through_lds] = np.maximum(simd[through_lds], transfer[through_lds])
    waited = np.flatnonzero(reads_previous(steps, t)) - 1  # a VALU op whose result the next one reads
    cost[waited] = np.maximum(cost[waited], figures["valu_dependent_cycles"])
    xdl = t.xdl[steps]
    matrix = np.flatnonzero(xdl)
    if matrix.size:  # the next MFMA waits for the XDL unit; VALU work between co-executes
        following = np.append(matrix[1:], len(steps))
        before = np.concatenate(([0.0], np.cumsum(cost)))
        cost[following - 1] += np.maximum(0.0, xdl[matrix] - (before[following] - before[matrix]))
    start = np.cumsum(cost) - cost
    waits = t.waits[steps]
    events = np.flatnonzero(t.barrier[steps] | (waits < NO_WAIT).any(axis=1))
    counter, ops = t.counter[steps], {}
    for c in (VM, LGKM, EXP):
        at = np.flatnonzero(counter == c)
        if at.size:
            ops[c] = (start[at], t.latency[steps[at]], np.searchsorted(events, at),
                      np.searchsorted(at, events), transfer[at])
    issue = np.append(np.bincount(category, weights=simd, minlength=5), xdl.sum())
    hbm, lds = t.hbm[steps], t.lds[steps]
    return PreparedWave(float(cost.sum()), start[events], t.barrier[steps[events]].tolist(), ops,
                        waits[events], issue, float(moved[lds].sum()),
                        float(moved[hbm & t.per_lane[steps]].sum()), float(moved[hbm].sum()))


@dataclass
class WaveTime:
    cycles: float
    stalls: list          # cycles waited per counter (vmcnt, lgkmcnt, expcnt)
    round_trips: list     # waits that stalled, per counter
    barrier: float        # cycles waited at barriers


def completion_tables(prepared: PreparedWave, latencies: tuple) -> dict:
    """Per counter: (segment's latest completion, and for each wait the segment and the latest
    completion within it of the oldest op it waits for, -1 where it waits for none), stalls left out."""
    n_events, tables = len(prepared.event_start), {}
    for c, (start, kind, segment, before, transfer) in prepared.ops.items():
        done = start + np.take(latencies, kind) + transfer
        span = float(done.max() - done.min()) + 1.0
        latest = np.maximum.accumulate(done + segment * span) - segment * span  # within a segment
        last = np.flatnonzero(np.append(segment[1:] != segment[:-1], True))
        by_segment = np.full(n_events + 1, -np.inf)
        by_segment[segment[last]] = latest[last]
        need = before - prepared.event_waits[:, c]
        waited = np.clip(need - 1, 0, None)
        tables[c] = (by_segment.tolist(), np.where(need > 0, segment[waited], -1).tolist(),
                     latest[waited].tolist())
    return tables


def wave_timeline(prepared: PreparedWave, latencies: tuple):
    """A generator: yields its arrival cycle at each s_barrier, is sent the release cycle;
    returns its WaveTime."""
    tables = completion_tables(prepared, latencies)
    stall, stalls, trips, barrier = 0.0, [0.0] * 3, [0] * 3, 0.0
    stall_of_segment, upto = [], {c: [] for c in tables}
    for e, start in enumerate(prepared.event_start.tolist()):
        stall_of_segment.append(stall)
        for c, (by_segment, _, _) in tables.items():  # segment e closes: its ops' completions
            seen = upto[c][-1] if upto[c] else -math.inf
            upto[c].append(max(seen, by_segment[e] + stall))
        arrival = start + stall
        if prepared.event_barrier[e]:
            release = yield arrival
            barrier += max(0.0, release - arrival)
            stall += max(0.0, release - arrival)
            continue
        ready, binding = arrival, None
        for c, (_, segments, latest) in tables.items():
            s = segments[e]
            if s >= 0:
                done = max(upto[c][s - 1] if s else -math.inf, latest[e] + stall_of_segment[s])
                if done > ready:
                    ready, binding = done, c
        if binding is not None:
            stalls[binding] += ready - arrival
            trips[binding] += 1
            stall += ready - arrival
    return WaveTime(prepared.total + stall, stalls, trips, barrier)


def workgroup_timeline(waves: list, latencies: tuple) -> list:
    """Each wave's WaveTime, its barriers joined: all waves still running reach one, then each
    resumes at the latest arrival."""
    runs, times, arrivals = [wave_timeline(w, latencies) for w in waves], [None] * len(waves), {}

    def advance(k: int, sent) -> None:
        try:
            arrivals[k] = runs[k].send(sent)
        except StopIteration as stop:
            times[k] = stop.value

    for k in range(len(runs)):
        advance(k, None)
    while arrivals:
        release, waiting = max(arrivals.values()), list(arrivals)
        arrivals.clear()
        for k in waiting:
            advance(k, release)
    return times


def residency(resources, figures: Figures) -> tuple[int, str]:
    """(workgroups a CU holds at once, what limits it)."""
    def granted(used: float, granule: float, total: float) -> int:
        return int(total // (math.ceil(max(used, 1) / granule) * granule))

    per_simd = {"waves/SIMD": figures["max_waves_per_simd"],
                "VGPRs": granted(resources.vgprs + resources.agprs, figures["vgpr_granule"],
                                 figures["vgprs_per_lane"]),
                "SGPRs": granted(resources.sgprs, figures["sgpr_granule"], figures["sgprs_per_simd"])}
    limit = min(per_simd, key=per_simd.get)
    waves = max(1, resources.waves_per_workgroup)
    by = {limit: int(min(per_simd.values()) * figures["simds_per_cu"] // waves)}
    if resources.lds_bytes:
        by["LDS"] = int(figures["lds_bytes_per_cu"] // resources.lds_bytes)
    limit = min(by, key=by.get)
    words = {"LDS": f"{resources.lds_bytes:,} B of LDS", "VGPRs": f"{resources.vgprs}+{resources.agprs} VGPRs",
             "SGPRs": f"{resources.sgprs} SGPRs", "waves/SIMD": "wave slots"}[limit]
    return max(1, by[limit]), f"{words}, {waves} waves a workgroup"


@dataclass
class SetTime:
    issue: float          # cycles: the busiest pipe of the busiest SIMD, or the CU's LDS / vector L1
    latency: float        # cycles: the longest wave timeline
    pipe: str             # which pipe bounds issue
    longest: WaveTime | None = None


def resident_set(groups: list, count: int, figures: Figures) -> SetTime:
    """`count` workgroups on one CU, drawn in turn from the traced ones ([(prepared, times)]):
    wave k of the set on SIMD k mod 4, each SIMD's pipes summed."""
    simds = int(figures["simds_per_cu"])
    load = np.zeros((simds, 6))
    lds, vector, longest, k = 0.0, 0.0, None, 0
    for g in range(count):
        prepared, times = groups[g % len(groups)]
        for wave, time in zip(prepared, times):
            load[k % simds] += wave.issue
            lds, vector = lds + wave.lds_bytes, vector + wave.vector_bytes
            longest = time if longest is None or time.cycles > longest.cycles else longest
            k += 1
    pipes = {f"{CATEGORY_NAMES[c]} issue": load[:, c].max() for c in range(5)}
    pipes["XDL (MFMA)"] = load[:, 5].max()
    pipes["CU LDS bandwidth"] = lds / figures["lds_bytes_per_clock_per_cu"]
    pipes["CU vector L1 bandwidth"] = vector / figures["vl1d_bytes_per_clock_per_cu"]
    pipe = max(pipes, key=pipes.get)
    return SetTime(float(pipes[pipe]), longest.cycles if longest else 0.0, pipe, longest)


_PREPARED: dict = {}  # id(trace) -> (weak reference, figures key, table, {group: [PreparedWave]})


def prepared(trace: LaunchTrace, figures: Figures):
    key = figures.structural()
    found = _PREPARED.get(id(trace))
    if found and found[0]() is trace and found[1] == key:
        return found[2], found[3]
    table = classify(trace.instructions, figures)
    groups = {group: [prepare_wave(w, table, figures) for w in waves]
              for group, waves in sorted(trace.workgroups.items())}
    if len(_PREPARED) > 64:  # an estimate's traces, or the fit's 39 aiter launches; drop older ones
        _PREPARED.clear()
    _PREPARED[id(trace)] = (weakref.ref(trace), key, table, groups)
    return table, groups


def rounds(trace: LaunchTrace, figures: Figures) -> tuple:
    """(workgroups, (held a CU at once, why), the busiest CU's workgroups, [(rounds, SetTime)]):
    the busiest CU runs full resident sets, then one of the rest."""
    _, groups = prepared(trace, figures)
    if not any(groups.values()):
        raise ValueError(f"{trace.kernel}: the trace holds no workgroup to price")
    latencies = (figures["memory_latency_cycles"], figures["lds_latency_cycles"])
    timed = [(waves, workgroup_timeline(waves, latencies)) for waves in groups.values()]
    total, held = trace.workgroup_count, residency(trace.resources, figures)
    busiest = math.ceil(total / figures["compute_units"])
    full, rest = divmod(busiest, held[0])
    sets = [(n, resident_set(timed, size, figures)) for n, size in ((full, held[0]), (1, rest)) if n and size]
    return total, held, busiest, sets


def compute_cycles(sets: list) -> float:
    """The busiest CU's cycles: each round the longer of its issue and its longest wave."""
    return sum(n * max(s.issue, s.latency) for n, s in sets)


def price_launch(trace: LaunchTrace, figures: Figures | None = None, nbytes: float | None = None) -> LaunchTime:
    """The launch's MI355X time from its traced workgroups (the rest taken to be like them).
    nbytes: the launch's memory bytes where the caller knows them (a persistent launch traces its
    busiest workgroup only: its bytes times the grid would overstate them); else scaled from the traced."""
    figures = figures or load_figures()
    table, groups = prepared(trace, figures)
    total, held, busiest, sets = rounds(trace, figures)
    clock, gap = figures["clock_hz"], figures["launch_gap_us"]
    cycles = {part: sum(n * getattr(s, part) for n, s in sets) for part in ("issue", "latency")}
    compute_us = compute_cycles(sets) / clock * 1e6
    given = nbytes is not None
    per_group, counted = workgroup_bytes(trace, groups)
    nbytes = nbytes if given else per_group * total
    parts = {"issue": cycles["issue"] / clock * 1e6, "latency": cycles["latency"] / clock * 1e6,
             "bandwidth": nbytes / figures["hbm_bytes_per_second"] * 1e6, "launch": gap}
    bound = max(("issue", "latency", "bandwidth"), key=parts.get)
    lines = [schedule_line(trace, len(groups), held, busiest, sum(n for n, _ in sets), figures),
             f"{bound}-bound: " + ", ".join(f"{k} {v:.2f} us" for k, v in parts.items()),
             latency_line(sets[0][1].longest, figures), issue_line(sets[0][1], groups),
             f"{nbytes / 1e6:.3g} MB ({'given' if given else counted + ', the traced workgroups scaled to the grid'})"
             f" to or from memory at {figures['hbm_bytes_per_second'] / 1e12:.2f} TB/s (HBM; reuse across "
             f"workgroups not told apart)"]
    if table.by_shape:
        lines.append("MFMA priced by its tile shape (no pass figure): " + ", ".join(sorted(set(table.by_shape))))
    if table.unknown:
        lines.append("priced as one issue slot (not classified): " + ", ".join(sorted(set(table.unknown))))
    if not figures.fitted:
        lines.append("figures not yet fitted: " + ", ".join(FREE_FIGURES) + " at their starting values")
    return LaunchTime(gap + max(compute_us, parts["bandwidth"]), bound, parts, lines, len(groups), total)


def workgroup_bytes(trace: LaunchTrace, groups: dict) -> tuple[float, str]:
    """A traced workgroup's memory traffic, mean over the traced: its distinct 128-byte lines (a line
    read again hits the cache), or where the trace predates them, every access's width x lanes."""
    if trace.unique_lines and set(trace.unique_lines) >= set(groups):
        lines = [trace.unique_lines[g] for g in groups]
        return sum(lines) / len(lines) * LINE_BYTES, "distinct 128-byte lines"
    moved = sum(w.hbm_bytes for ws in groups.values() for w in ws)
    return moved / len(groups), "every access counted (a trace without its lines)"


def launch_bytes(trace: LaunchTrace, figures: Figures | None = None) -> float:
    """The launch's memory bytes as price_launch counts them: the traced workgroups' scaled to the grid."""
    _, groups = prepared(trace, figures or load_figures())
    return workgroup_bytes(trace, groups)[0] * trace.workgroup_count


def schedule_line(trace: LaunchTrace, traced: int, held: tuple, busiest: int, rounds: int,
                  figures: Figures) -> str:
    rest = ("the rest did not run on the emulator and are" if trace.only_traced else "the rest")
    return (f"{traced} of {trace.workgroup_count:,} workgroups traced, {rest} priced like them: "
            f"{held[0]} a CU at once ({held[1]}); {int(figures['compute_units'])} CUs in "
            f"{int(figures['xcds'])} XCDs, the busiest CU runs {busiest} in {rounds} round(s)")


def latency_line(wave: WaveTime, figures: Figures) -> str:
    us = 1e6 / figures["clock_hz"]
    words = [f"longest wave {wave.cycles:,.0f} cycles ({wave.cycles * us:.2f} us)"]
    for c, name in ((VM, "memory round trips (vmcnt)"), (LGKM, "LDS/scalar waits (lgkmcnt)")):
        if wave.round_trips[c]:
            each = wave.stalls[c] / wave.round_trips[c] * us
            words.append(f"{wave.round_trips[c]} {name} x {each:.2f} us")
    if wave.barrier:
        words.append(f"barriers {wave.barrier * us:.2f} us")
    return words[0] + ": " + (", ".join(words[1:]) or "no waits")


def issue_line(resident: SetTime, groups: dict) -> str:
    issue = sum(w.issue for waves in groups.values() for w in waves)
    names = list(CATEGORY_NAMES) + ["MFMA"]
    shares = sorted(zip(issue / max(issue.sum(), 1.0), names), reverse=True)
    listed = ", ".join(f"{name} {share:.0%}" for share, name in shares if share >= 0.005)
    return f"busiest pipe {resident.pipe}, {resident.issue:,.0f} cycles a resident set; of issue: {listed}"
