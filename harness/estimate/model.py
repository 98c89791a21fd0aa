"""The MI355X cost model: a price for every launch a call makes, and the estimate of one shape with its band.

A call costs the Python call itself, each asm MLA kernel (a recorded one: the gfx950 timing model over the wheel's
code object traced at the shape, aiter_launches.py, with the curve below as its labelled cross-check; the curve,
per variant: a fixed cost, a cost per workgroup per CU - the batch and split count - and a cost per 1,000 KV
tokens the busiest CU reads in turn, prices calibration rows and what cannot be traced), each torch GEMM
(a launch and a cost per GB, fitted to the public GEMM-path figures), each aiter helper kernel and small torch
launch (fixed costs from the facts), each allocation, and each host sync (sourced: host_sync_us in
data/gfx950_figures.json). Nothing is invented: a
variant with no calibration figure is bounded by the calibrated variants at the same schedule, torch.compile
and TunableOp scale the GEMM path by their one public pair each (band: no effect to that effect), and bytes of
other torch ops and of Triton kernels are priced between the 8 TB/s peak and the slowest effective bandwidth
the fit found ("kernel model, uncalibrated"); all of these widen the band. A Triton kernel with a gfx950
compile is priced by the kernel model instead (harness/estimate/kernel_model.py).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

from harness.estimate import executed, kernel_model
from harness.estimate.calibration import Calibration, Launch
from harness.estimate.kernel_model import UNCALIBRATED

SYNC_SOURCE = "KS-SYNC, data/gfx950_figures.json"


@functools.cache
def host_sync_us() -> float:
    """What one host sync in the call costs on MI355X: a sourced figure, not fitted (one public file syncs)."""
    from harness.estimate.gfx950_timeline import load_figures
    return load_figures()["host_sync_us"]


ASM_TERMS = ("fixed", "per_cu", "per_ktoken")  # what an asm variant's price is made of
GEMM_TERMS = ("gemm:launch", "gemm:per_gb")


def asm_features(launch: Launch) -> dict:
    """The fit's columns of one asm launch (all `count` of them)."""
    n = launch.count
    values = (1.0, launch.per_cu, launch.serial_tokens / 1e3)
    return {f"{launch.variant}:{term}": n * v for term, v in zip(ASM_TERMS, values)}


def gemm_features(launch: Launch) -> dict:
    return {"gemm:launch": float(launch.count), "gemm:per_gb": launch.bytes / 1e9}


@dataclass(frozen=True)
class Model:
    calibration: Calibration
    coefficients: dict             # column ("a8w8_ps:fixed", "gemm:launch") -> us per unit
    fitted: frozenset              # the columns some figure constrained (a variant is calibrated when its fixed is)
    points: dict = field(default_factory=dict)  # variant key or "gemm" -> figures that used it
    ranges: dict = field(default_factory=dict)  # variant key -> (fewest, most) workgroups per CU of its figures
    errors: tuple = (0.0, 0.0)     # (lowest, highest) leave-one-file-out error, predicted / actual - 1
    ranked_offset_us: tuple = (0.0, 5.0)

    @property
    def sync_us(self) -> float:
        return host_sync_us()

    def fixed_us(self, column: str) -> float:
        """A fixed cost the fit may have updated from the facts' value (its prior): "torch:launch", "alloc",
        "aiter:metadata", "aiter:reduce", "aiter:quant"."""
        if column in self.coefficients:
            return self.coefficients[column]
        cal = self.calibration
        if column == "torch:launch":
            return cal.torch_launch_us
        if column == "alloc":
            return cal.allocation_us
        return cal.aiter_kernel_us[column.split(":", 1)[1]]

    def variants(self) -> list[str]:
        return sorted(key.split(":")[0] for key in self.fitted if key.endswith(":fixed"))

    def asm_us(self, launch: Launch, variant: str | None = None) -> float:
        probe = launch if variant is None else Launch("asm", launch.name, launch.count, launch.bytes,
                                                      variant, per_cu=launch.per_cu,
                                                      serial_tokens=launch.serial_tokens)
        return sum(self.coefficients.get(k, 0.0) * v for k, v in asm_features(probe).items())

    def gemm_calibrated(self) -> bool:
        return "gemm:launch" in self.fitted or "gemm:per_gb" in self.fitted

    def slowest_bandwidth(self) -> float:
        """The lowest effective bandwidth of a calibrated asm variant at 256 x 8k (bytes over its price)."""
        found = []
        for variant in self.variants():
            kv_bytes = 1 if variant.split("_")[0].endswith("w8") else 2
            probe = Launch("asm", "probe", variant=variant, per_cu=1.0, serial_tokens=8192.0)
            us = self.asm_us(probe)
            if us > 0:
                found.append(256 * 8192 * 576 * kv_bytes / us * 1e6)
        return min([f for f in found if f < self.calibration.peak_bandwidth] or
                   [self.calibration.peak_bandwidth / 2])


@dataclass(frozen=True)
class Priced:
    launch: Launch
    us: float
    low_us: float
    high_us: float
    basis: str
    calibrated: bool
    kernel_model: bool = False  # priced from the kernel's gfx950 compile (kernel_model.py), not by bytes alone
    detail: str = ""       # what holds for every launch of its kernel (its compile, its fit, why not)
    figures: str = ""      # this launch's own figures (a few words)

    @property
    def full(self) -> str:
        """The basis, the kernel's part and the launch's figures in one sentence (the record's `basis`)."""
        return "; ".join(part for part in (self.basis, self.detail, self.figures) if part)


def _fixed_basis(model: Model, column: str) -> str:
    return "fitted (prior: facts)" if column in model.coefficients else "fixed (facts)"


def _helper_kind(name: str) -> str | None:
    text = name.lower()
    for kind in ("metadata", "reduce", "quant"):
        if kind in text:
            return kind
    return None


def _bytes_range(nbytes: float, model: Model, share: float = 1.0) -> tuple:
    """(point, low, high) us for bytes outside a calibrated kernel: peak bandwidth to the slowest fitted one, each
    times `share`, the part of the chip a launch can keep busy."""
    low = nbytes / (model.calibration.peak_bandwidth * share) * 1e6
    return low, low, nbytes / (model.slowest_bandwidth() * share) * 1e6


def _with_effects(priced: Priced, model: Model, fixed_us: float) -> Priced:
    """torch.compile / TunableOp: the launch part (`fixed_us`) of the point and low end scaled by their public factor,
    the bytes left alone (fusing launches and picking GEMM kernels do not make HBM faster); the high end unscaled."""
    factor, names = 1.0, []
    for name in priced.launch.effects:
        value = (model.calibration.effects or {}).get(name)
        if value:
            factor *= value[0]
            names.append(f"{name} x{value[0]:.2f}")
    if not names:
        return priced
    saved = fixed_us * (1 - factor)
    return Priced(priced.launch, priced.us - saved, priced.low_us - saved, priced.high_us,
                  f"{priced.basis}; {', '.join(names)} on its launches (one public pair each)", False)


def _inside(per_cu: float, span: tuple) -> bool:
    return span[0] - 1e-9 <= per_cu <= span[1] + 1e-9


def _asm_price(launch: Launch, model: Model) -> Priced:
    variant = launch.variant
    fewest, most = model.ranges.get(variant, (0.0, math.inf))
    if variant in model.variants() and _inside(launch.per_cu, (fewest, most)):
        us = model.asm_us(launch)
        return Priced(launch, us, us, us, f"fitted to {model.points.get(variant, 0)} figures", True)
    others = [model.asm_us(launch, other) for other in model.variants()] or [0.0]
    low, high = min(others), max(others)
    why = (f"no figure for {variant}" if variant not in model.variants() else
           f"{launch.per_cu:.3g} workgroups per CU, outside its figures' {fewest:.3g}-{most:.3g}")
    return Priced(launch, math.sqrt(max(low, 1e-9) * max(high, 1e-9)), low, high,
                  f"{why}: bounded by the calibrated variants", False)


def _asm_timed(launch: Launch, model: Model, shape: tuple | None) -> Priced:
    """A recorded stage-1 launch by the gfx950 timing model over its trace at `shape` (aiter_launches.py),
    the per-variant curve kept as its cross-check; where it cannot be traced, the curve with the reason.
    A calibration row's launch (no recording) keeps the curve: it is the curve's own figure."""
    curve = _asm_price(launch, model)
    recorded = launch.fit
    if recorded is None or shape is None:
        return curve
    from harness.estimate import aiter_launches  # the emulator and torch: only when an estimate needs them

    timed, assumed, why = aiter_launches.price(recorded, shape, model.calibration.peak_bandwidth,
                                                  model.slowest_bandwidth())
    if timed is None:
        return replace(curve, detail=f"{recorded.kernel}: not traced: {why}")
    cross = f"per-variant curve: {curve.us:.3g} us ({curve.basis})"
    return Priced(launch, timed.us, timed.low_us, timed.high_us, timed.method, False, kernel_model=True,
                  detail=timed.detail, figures=f"{timed.figures}; {assumed}; {cross}")


def _gemm_price(launch: Launch, model: Model) -> Priced:
    c = model.coefficients
    if model.gemm_calibrated():
        fixed = c.get("gemm:launch", 0.0) * launch.count
        us = fixed + c.get("gemm:per_gb", 0.0) * launch.bytes / 1e9
        return _with_effects(Priced(launch, us, us, us, f"fitted to {model.points.get('gemm', 0)} figures",
                                    True), model, fixed)
    base = model.fixed_us("torch:launch") * launch.count
    point, low, high = _bytes_range(launch.bytes, model)
    return _with_effects(Priced(launch, base + point, base + low, base + high,
                                f"no GEMM figure: launch (facts) + bytes: {UNCALIBRATED}", False), model, base)


def price(launch: Launch, model: Model, kernels=None, shape: tuple | None = None) -> Priced:
    """One launch's price; `kernels` (estimate/gfx950_kernels.py's Gfx950Kernels) gives Triton kernels their executed
    counts on the gfx950 emulator, else their gfx950 compile, for the kernel model; `shape` is the call's (batch, kv)."""
    cal = model.calibration
    n = launch.count
    if launch.kind == "python":
        us = cal.python_call_us * n
        return Priced(launch, us, us, us, "fixed (facts)", True)
    if launch.kind == "alloc":
        us = model.fixed_us("alloc") * n
        return Priced(launch, us, us, us, _fixed_basis(model, "alloc"), True)
    if launch.kind == "sync":
        us = model.sync_us * n
        return Priced(launch, us, us, us, f"sourced ({SYNC_SOURCE})", True)
    if launch.kind == "asm":
        return _asm_timed(launch, model, shape)
    if launch.kind == "gemm":
        return _gemm_price(launch, model)
    if launch.kind == "aiter":
        kind = _helper_kind(launch.name)
        if kind in cal.aiter_kernel_us:  # the facts time one call of each; a call's further launches are small ones
            us = model.fixed_us(f"aiter:{kind}") + model.fixed_us("torch:launch") * (n - 1)
            return Priced(launch, us, us, us, _fixed_basis(model, f"aiter:{kind}"), True)
        helpers = list(cal.aiter_kernel_us.values()) + [cal.torch_launch_us]
        low, high = min(helpers) * n, max(helpers) * n
        return Priced(launch, math.sqrt(low * high), low, high, f"no figure for {launch.name}: bounded by the "
                      "aiter helpers' figures", False)
    found = _launch_and_bytes(launch, model, kernels, shape)
    return _with_effects(found, model, model.fixed_us("torch:launch") * launch.count) if launch.kind == "torch" \
        else found


def _executed_price(launch: Launch, model: Model, kernels, shape: tuple | None, base: float) -> Priced | None:
    """A Triton launch priced from its kernel's executed counts on the gfx950 emulator, or None (no fit, no shape)."""
    triton = kernels is not None and launch.kind == "triton"
    fit = launch.fit or (kernels.executed.fits.get(launch.kernel) if triton else None)
    if fit is None or shape is None or not launch.programs:
        return None
    counted = kernels.executed if triton else executed.Executed()
    units = counted.units(fit, shape[0], shape[1], launch.programs, launch.splits)
    if units is None:
        return None
    cal = model.calibration
    compiled = kernels.get(launch.kernel) if triton else None
    costs = kernels.costs if kernels is not None else kernel_model.load_costs()
    found = kernel_model.price_executed(launch.bytes, launch.programs, launch.count, units, fit, costs,
                                        cal.peak_bandwidth, model.slowest_bandwidth(), cal.compute_units,
                                        compiled.waves_per_simd if compiled is not None else None)
    replaced = "" if compiled is None else (
        f"; replaces the static count ({UNCALIBRATED}: gfx950 compile of AOT_SPECS '{compiled.label}', "
        f"{compiled.loop.valu} VALU + {sum(compiled.loop.matrix.values())} MFMA per wave per loop iteration)")
    return Priced(launch, base + found.us, base + found.low_us, base + found.high_us,
                  f"launch (facts) + {found.method}", False, kernel_model=True,
                  detail=found.detail + replaced, figures=found.figures)


def _launch_and_bytes(launch: Launch, model: Model, kernels, shape: tuple | None = None) -> Priced:
    """torch ops and Triton kernels: a launch from the facts, their bytes by the roofline; a Triton grid of fewer
    programs than compute units keeps only that share of the chip (and of its bandwidth) busy. A Triton kernel with
    executed counts (executed.py) is priced from them, else one with a gfx950 compile from its static loop count."""
    cal = model.calibration
    base = model.fixed_us("torch:launch") * launch.count
    share = min(1.0, launch.programs / cal.compute_units) if launch.programs else 1.0
    point, low, high = _bytes_range(launch.bytes, model, share)
    if launch.bytes <= 0:
        return Priced(launch, base, base, base, _fixed_basis(model, "torch:launch"), True)
    from_counts = _executed_price(launch, model, kernels, shape, base)
    if from_counts is not None:
        return from_counts
    compiled = kernels.get(launch.kernel) if kernels is not None and launch.kind == "triton" else None
    if compiled is not None:
        found = kernel_model.price(launch.bytes, launch.programs, compiled, kernels.costs, cal.peak_bandwidth,
                                   model.slowest_bandwidth(), cal.compute_units)
        static_why = f" (not from executed counts: {kernels.executed.why_not(launch.kernel)})"
        return Priced(launch, base + found.us, base + found.low_us, base + found.high_us,
                      f"launch (facts) + {found.method}", False, kernel_model=True,
                      detail=found.detail + static_why, figures=found.figures)
    grid = f"on {launch.programs} of {cal.compute_units} CUs" if share < 1 else ""
    why = (f"{launch.kernel}: {kernels.why_not(launch.kernel)}; not from executed counts: "
           f"{kernels.executed.why_not(launch.kernel)}" if kernels is not None and launch.kind == "triton"
           and launch.kernel else f"{launch.kernel}: {launch.unpriced}" if launch.unpriced else "")
    return Priced(launch, base + point, base + low, base + high,
                  f"launch (facts) + bytes at the peak to the slowest fitted bandwidth: {UNCALIBRATED}", False,
                  detail=why, figures=grid)


@dataclass
class ShapeEstimate:
    shape: tuple
    us: float
    low_us: float
    high_us: float
    ranked_us: float
    ranked_low_us: float
    ranked_high_us: float
    priced: list = field(default_factory=list)
    uncalibrated: list = field(default_factory=list)  # what widened the band, one line each


def estimate_shape(shape: tuple, launches: list, model: Model, kernels=None) -> ShapeEstimate:
    """The benchmark-mode and ranked-mode estimate of one shape, with bands that cover the leave-one-file-out
    errors."""
    priced = [price(launch, model, kernels, shape) for launch in launches]
    calibrated = sum(p.us for p in priced if p.calibrated)
    loose = [p for p in priced if not p.calibrated]
    point = calibrated + sum(p.us for p in loose)
    lowest_error, highest_error = model.errors
    low = (calibrated + sum(p.low_us for p in loose)) / (1 + highest_error)
    high = (calibrated + sum(p.high_us for p in loose)) / (1 + lowest_error)
    offset_low, offset_high = model.ranked_offset_us
    return ShapeEstimate(shape=shape, us=point, low_us=low, high_us=high,
                         ranked_us=point + (offset_low + offset_high) / 2, ranked_low_us=low + offset_low,
                         ranked_high_us=high + offset_high, priced=priced,
                         uncalibrated=sorted({f"{p.launch.name}: {p.full}" for p in loose}))
