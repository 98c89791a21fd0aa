"""The kernel model: what a Triton kernel's launch would take on an MI355X, from its gfx950 compile. Uncalibrated.

For one recorded launch (its programs and bytes) and the main loop of the kernel's gfx950 assembly
(harness/compile/loops.py):
- bytes: at the 8 TB/s peak over the share of CUs the grid keeps busy (high end: the slowest bandwidth the fit found);
- instructions: iterations = launch bytes / bytes one program loads per iteration (bytes per lane x 64 lanes x waves);
  a wave's iteration costs 4 cycles per VALU instruction plus each MFMA's cycles, spread over the SIMDs the grid
  keeps busy, at the 2.4 GHz peak clock;
- the price: the larger of the two when a SIMD holds 2 or more waves (one wave's memory wait hides under another's
  instructions), their sum with 1 wave per SIMD. Band: low = VALU and MFMA overlapped (they co-execute) and the
  larger of bytes and instructions; high = the slowest bandwidth plus VALU and MFMA one after the other, nothing
  overlapped. Every figure is in data/mi355x_costs.json ("kernel_model") with its source; what is not found there
  is named in the basis and taken at the end of the band that covers it.
A loop that loads the same bytes twice per iteration (an L2 hit) gets half the iterations: the model cannot tell.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from harness.compile.loops import LoopFigures
from harness.estimate.calibration import DATA_FILE

UNCALIBRATED = "kernel model, uncalibrated"  # on every price that no calibration figure backs


@dataclass(frozen=True)
class Costs:
    clock_hz: float
    simds_per_cu: int
    wave_size: int
    valu_cycles: float
    mfma_cycles: dict      # MFMA name as harness/compile/loops.py writes it -> cycles
    lds_bytes_per_clock: float = 128.0  # per CU (data file: kernel_model_executed.lds_bytes_per_clock_per_cu)


@dataclass(frozen=True)
class CompiledKernel:
    """What the model needs of one gfx950 compile of a kernel: its main loop and launch shape."""
    name: str
    label: str             # the AOT_SPECS label that was compiled
    loop: LoopFigures
    waves: int             # waves per program (num_warps)
    waves_per_simd: int | None  # the compiler's occupancy


@dataclass(frozen=True)
class KernelPrice:
    us: float
    low_us: float
    high_us: float
    bytes_us: float        # bytes at the peak over the busy CUs
    instructions_us: float  # the point's instruction time
    method: str            # how every launch priced this way is priced: printed once
    detail: str = ""       # what holds for every launch of this kernel (its compile, its fit)
    figures: str = ""      # this launch's own figures, a few words

    @property
    def basis(self) -> str:
        """The whole sentence: method, kernel, launch."""
        return "; ".join(part for part in (self.method, self.detail, self.figures) if part)


# The shared methods: one paragraph each, the same for every launch they price.
STATIC_METHOD = (f"{UNCALIBRATED}: gfx950 compile of the kernel's AOT_SPECS entry, its main loop per wave "
                 "per iteration: 4 cycles per VALU and each MFMA's cycles on the SIMDs the grid keeps busy, "
                 "iterations = bytes / bytes a program loads per iteration, against the bytes at the 8 TB/s "
                 "peak over the busy CUs; with 2 or more waves per SIMD the larger of the two, else their sum; "
                 "not priced: LDS, scalar, transcendentals; clock under load not public")


def load_costs(path: Path = DATA_FILE) -> Costs:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    figures, executed = data["kernel_model"], data["kernel_model_executed"]
    return Costs(clock_hz=float(figures["clock_hz"]["value"]), simds_per_cu=int(figures["simds_per_cu"]["value"]),
                 wave_size=int(figures["wave_size"]["value"]), valu_cycles=float(figures["valu_cycles"]["value"]),
                 mfma_cycles={k: float(v) for k, v in figures["mfma_cycles"]["values"].items()},
                 lds_bytes_per_clock=float(executed["lds_bytes_per_clock_per_cu"]["value"]))


def bytes_per_iteration(kernel: CompiledKernel, costs: Costs) -> int:
    """What one program loads from memory in one iteration of its main loop."""
    return kernel.loop.load_bytes_per_lane * costs.wave_size * kernel.waves


def wave_cycles(loop: LoopFigures, costs: Costs) -> tuple[float, float, list]:
    """Cycles of one wave's iteration: (VALU then MFMA, one after the other: the point and the high end; VALU and MFMA
    co-executed: the low end), and the MFMAs with no cycle figure (taken at the most known cycles when serial, the
    fewest when co-executed)."""
    return instruction_cycles(loop.valu, loop.matrix, costs)


def instruction_cycles(valu: float, matrix: dict, costs: Costs) -> tuple[float, float, list]:
    """wave_cycles of `valu` VALU instructions and the MFMAs `matrix` (name -> count)."""
    known = costs.mfma_cycles.values()
    missing = sorted(name for name in matrix if name not in costs.mfma_cycles)
    fewest = sum(n * costs.mfma_cycles.get(name, min(known)) for name, n in matrix.items())
    most = sum(n * costs.mfma_cycles.get(name, max(known)) for name, n in matrix.items())
    valu = valu * costs.valu_cycles
    return valu + most, max(valu, fewest), missing


def price(nbytes: float, programs: int | None, kernel: CompiledKernel, costs: Costs, peak_bandwidth: float,
          slowest_bandwidth: float, compute_units: int) -> KernelPrice:
    """The time of `nbytes` moved by launches of `programs` programs each, in microseconds (all launches together)."""
    cus = min(compute_units, programs) if programs else compute_units
    share = cus / compute_units
    bytes_low = nbytes / (peak_bandwidth * share) * 1e6
    bytes_high = nbytes / (slowest_bandwidth * share) * 1e6
    iterations = nbytes / bytes_per_iteration(kernel, costs)
    simds = min(costs.simds_per_cu * compute_units, (programs or compute_units) * min(kernel.waves, costs.simds_per_cu))
    serial, overlapped, missing = wave_cycles(kernel.loop, costs)

    def instruction_us(cycles: float) -> float:
        return iterations * kernel.waves * cycles / simds / costs.clock_hz * 1e6

    hides = (kernel.waves_per_simd or 1) >= 2  # another wave's instructions cover one wave's memory wait
    compute = instruction_us(serial)
    point = max(bytes_low, compute) if hides else bytes_low + compute
    low = max(bytes_low, instruction_us(overlapped))
    high = bytes_high + compute
    loop = kernel.loop
    detail = (f"{kernel.name}: AOT_SPECS '{kernel.label}', {loop.valu} VALU + {sum(loop.matrix.values())} MFMA "
              f"per wave per iteration, {bytes_per_iteration(kernel, costs)} B per program; "
              + overlap_words(kernel.waves_per_simd, hides) + missing_words(missing))
    figures = f"{iterations:.3g} iterations, instructions {compute:.2f} us, bytes {bytes_low:.2f} us"
    return KernelPrice(us=point, low_us=min(low, point), high_us=max(high, point), bytes_us=bytes_low,
                       instructions_us=compute, method=STATIC_METHOD, detail=detail, figures=figures)


def overlap_words(waves_per_simd: int | None, hides: bool) -> str:
    return f"{waves_per_simd or '?'} waves/SIMD: " + ("overlap" if hides else "added (one wave per SIMD hides nothing)")


def missing_words(missing: list) -> str:
    return f"; no cycle figure for {', '.join(missing)}" if missing else ""


EXECUTED = "kernel model from executed counts (gfx950 emulator), uncalibrated"
EXECUTED_METHOD = (f"{EXECUTED}: the kernel's counts per wave (fixed per program + per unit of work, fitted "
                   "over emulated calls): VALU at 4 cycles and each MFMA's cycles on the SIMDs the grid keeps "
                   "busy, LDS bytes at the LDS rate per busy CU, the larger of the two (their sum at the high "
                   "end), against the bytes at the peak over the busy CUs; with 2 or more waves per SIMD the "
                   "larger of bytes and instructions, else their sum; not priced: scalar, transcendentals "
                   "beyond full rate, LDS bank conflicts; clock under load not public")


def price_executed(nbytes: float, programs: int, count: int, units: float, fit, costs: Costs, peak_bandwidth: float,
                   slowest_bandwidth: float, compute_units: int, waves_per_simd: int | None) -> KernelPrice:
    """The time of `count` launches of `programs` programs, each doing `units` units of work (KV tiles or splits), from
    the kernel's executed counts per wave (executed.ExecutedFit): VALU at 4 cycles and each MFMA's cycles on the SIMDs
    the grid keeps busy, LDS bytes at the LDS rate on its busy CUs, against its bytes at the peak. Instructions: the
    larger of SIMD time and LDS time (their sum at the high end; VALU and MFMA co-executed at the low end); with 2 or
    more waves per SIMD the larger of bytes and instructions, else their sum, as price() does."""
    if getattr(fit, "traced", None):  # hip_launches.TracedFit: the timing model prices its traces
        return price_traced(fit, peak_bandwidth, slowest_bandwidth)
    if getattr(fit, "sampled", None):  # a Triton kernel traced in the emulated calls (executed.py)
        return price_sampled(fit, nbytes, programs, count, units, peak_bandwidth, slowest_bandwidth)
    per_wave = fit.per_wave(units)
    waves = count * programs * fit.waves
    cus = min(compute_units, programs)
    simds = min(costs.simds_per_cu * compute_units, programs * min(fit.waves, costs.simds_per_cu))
    matrix = {key.split(".", 1)[1]: n for key, n in per_wave.items() if key.startswith("mfma_by_name.") and n > 0}
    valu, lds = max(0.0, per_wave.get("by_class.VALU", 0.0)), max(0.0, per_wave.get("by_class.LDS", 0.0))
    lds_bytes = max(0.0, per_wave.get("bytes.lds_read", 0.0) + per_wave.get("bytes.lds_write", 0.0))
    serial, overlapped, missing = instruction_cycles(valu, matrix, costs)
    simd_us = waves * serial / simds / costs.clock_hz * 1e6
    simd_low_us = waves * overlapped / simds / costs.clock_hz * 1e6
    lds_us = waves * lds_bytes / (costs.lds_bytes_per_clock * cus) / costs.clock_hz * 1e6
    compute, compute_low, compute_high = max(simd_us, lds_us), max(simd_low_us, lds_us), simd_us + lds_us
    bytes_low = nbytes / (peak_bandwidth * cus / compute_units) * 1e6
    bytes_high = nbytes / (slowest_bandwidth * cus / compute_units) * 1e6
    hides = (waves_per_simd or 1) >= 2
    point = max(bytes_low, compute) if hides else bytes_low + compute
    low, high = max(bytes_low, compute_low), bytes_high + compute_high
    mfma = sum(matrix.values())
    detail = (fit_words(fit, costs) + "; " + overlap_words(waves_per_simd, hides) + missing_words(missing)
              + (f"; {fit.untraced}" if getattr(fit, "untraced", "") else ""))
    at = f"at {units:.3g} {fit.unit}s per program: " if fit.per_unit else ""  # one call: its own shape
    figures = (f"{at}{valu:.0f} VALU + {mfma:.0f} MFMA + {lds:.0f} LDS "
               f"({lds_bytes / 1e3:.1f} kB), {per_wave.get('by_class.SALU', 0):.0f} SALU per wave, {programs} "
               f"programs; SIMD {simd_us:.2f}, LDS {lds_us:.2f}, bytes {bytes_low:.2f} us")
    return KernelPrice(us=point, low_us=min(low, point), high_us=max(high, point), bytes_us=bytes_low,
                       instructions_us=compute, method=EXECUTED_METHOD, detail=detail, figures=figures)


def fit_words(fit, costs: Costs) -> str:
    """What one kernel's executed counts are: its fit over the emulated calls, or one call's counts."""
    if not fit.per_unit:  # a HIP kernel emulated at the official shape itself
        return f"{fit.kernel}: as emulated at this shape itself (one call), {fit.waves} waves/program"
    replayed = f" ({fit.replayed} replayed from the shared recordings)" if fit.replayed else ""
    return (f"{fit.kernel}: fixed {fit.fixed.get('by_class.VALU', 0):.0f} VALU + "
            f"{fit.fixed.get('by_class.LDS', 0):.0f} LDS, per {fit.unit} "
            f"{fit.per_unit.get('by_class.VALU', 0):.0f} VALU + {fit.per_unit.get('by_class.MFMA', 0):.0f} MFMA + "
            f"{fit.per_unit.get('by_class.LDS', 0):.0f} LDS per wave; fitted to {fit.calls} emulated "
            f"calls{replayed}, misfit {fit.misfit:.1%}; {fit.waves} waves/program; "
            f"LDS {costs.lds_bytes_per_clock:g} B/clock/CU")


TIMELINE = "gfx950 timing model over the emulator's traces"


def price_traced(fit, peak_bandwidth: float, slowest_bandwidth: float) -> KernelPrice:
    """A kernel's launches priced by the gfx950 timing model (gfx950_timeline.py) from their traces at
    each recorded KV length: compute and bytes each extrapolated linearly to the shape's (fit.kv), never
    falling, the larger taken; the launch gap left to the caller. The band: the bytes at the peak and at the slowest fitted bandwidth."""
    from harness.estimate import gfx950_timeline as timeline

    def at(figures) -> tuple[float, list]:
        points = [(length, [timeline.price_launch(trace, figures) for trace in traces])
                  for length, traces in fit.traced]
        return along_kv(points, fit.kv), points[-1][1]

    lengths = " and ".join(str(length) for length, _ in fit.traced)
    scaled = ("" if lengths == str(fit.kv) else f", extrapolated to kv {fit.kv}" if len(fit.traced) > 1
              else f", scaled in proportion to kv {fit.kv}")
    replayed = min(fit.replayed, len(fit.traced))
    said = f"; traces of {replayed} of {len(fit.traced)} calls replayed from the shared recordings" if replayed else ""
    said += f"; {fit.note}" if getattr(fit, "note", "") else ""
    return timeline_price(fit.kernel, at, peak_bandwidth, slowest_bandwidth,
                           lambda bound: f"{bound}-bound at kv {lengths}{scaled}{said}")


def along_kv(points: list, kv: int) -> float:
    """[(KV length, [LaunchTime of each launch])] read at `kv`, the launch gap left out: compute (each
    launch's larger of issue and latency) and bytes each along the line through the first and last
    lengths (in proportion from one length), never falling with more KV (a falling slope is noise), then
    the larger of the two, as price_launch takes it."""
    def line(part) -> float:
        (short, short_us), (long, long_us) = ((length, sum(map(part, priced))) for length, priced in
                                              (points[0], points[-1]))
        slope = (long_us - short_us) / (long - short) if long != short else long_us / long
        return long_us + max(0.0, slope) * (kv - long)

    return max(line(lambda p: max(p.parts["issue"], p.parts["latency"])), line(lambda p: p.parts["bandwidth"]))


def price_sampled(fit, nbytes: float, programs: int, count: int, units: float, peak_bandwidth: float,
                  slowest_bandwidth: float) -> KernelPrice:
    """`count` launches of `programs` programs doing `units` units of work each, by the gfx950 timing
    model over the kernel's traces from the emulated calls (fit.sampled): each traced launch priced as
    if its grid were this launch's, with this launch's bytes; a line in the units per program through
    the calls, read at `units`. The launch gap left to the caller; band as price_traced's."""
    from harness.estimate import executed, gfx950_timeline as timeline

    def at(figures) -> tuple[float, list]:
        points = []
        for sample_units, traces in fit.sampled:
            priced = [timeline.price_launch(dataclasses.replace(trace, grid=(programs, 1, 1)), figures,
                                            nbytes / count) for trace in traces]
            points.append((sample_units, sum(p.microseconds - p.parts["launch"] for p in priced) / len(priced),
                           priced[0]))
        line = executed.fit_line([u for u, _, _ in points], [t for _, t, _ in points])
        nearest = min(points, key=lambda point: abs(point[0] - units))
        one = line[0] + line[1] * units if line else nearest[1] * units / nearest[0]
        return max(0.0, one) * count, [nearest[2]] * count

    spread = sorted(u for u, _ in fit.sampled)
    return timeline_price(fit.kernel, at, peak_bandwidth, slowest_bandwidth,
                           lambda bound: f"{bound}-bound near {units:.3g} {fit.unit}s per program: a line through "
                           f"{len(spread)} emulated calls at {spread[0]:.3g}-{spread[-1]:.3g}, each traced "
                           f"launch priced on {programs} programs"
                           + (f"; {fit.replayed} of the calls replayed from the shared recordings" if fit.replayed
                              else ""))


def timeline_price(kernel: str, at, peak_bandwidth: float, slowest_bandwidth: float, words) -> KernelPrice:
    """The KernelPrice of at(figures) -> (us, [LaunchTime of each launch]): the point at the figures,
    the band at the peak and the slowest bandwidth; words(bound) -> the launch's figures."""
    from harness.estimate import gfx950_timeline as timeline

    def bandwidth(value: float | None):
        return timeline.load_figures({"hbm_bytes_per_second": value} if value else None)

    point, priced = at(bandwidth(None))
    low, high = at(bandwidth(peak_bandwidth))[0], at(bandwidth(slowest_bandwidth))[0]
    first = priced[0]
    unfitted = "" if timeline.load_figures().fitted else ", figures not yet fitted"
    return KernelPrice(us=point, low_us=min(low, point), high_us=max(high, point),
                       bytes_us=sum(p.parts["bandwidth"] for p in priced),
                       instructions_us=sum(max(p.parts["issue"], p.parts["latency"]) for p in priced),
                       method=TIMELINE + unfitted,
                       detail=f"{kernel}: " + "; ".join(first.lines[:-1] if unfitted else first.lines),
                       figures=words(first.bound))
