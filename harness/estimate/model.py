"""The MI355X cost model: a price for every launch a call makes, and the estimate of one shape with its band.

A call costs the Python call itself, each asm MLA kernel (a fixed cost plus bytes at the variant's fitted cost per
byte), each aiter helper kernel and small torch launch (fixed costs from the facts), each allocation, and each host
sync (fitted). Nothing is invented: a variant with no calibration figure is bounded by the calibrated variants at
the same bytes, and bytes of torch ops and Triton kernels are priced between the 8 TB/s peak and the slowest
bandwidth the fit found ("kernel model, uncalibrated"); both widen the band. A Triton kernel with a gfx950 compile
is priced by the kernel model instead (harness/estimate/kernel_model.py: its loop's instructions against its bytes).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from harness.estimate import kernel_model
from harness.estimate.calibration import Calibration, Launch
from harness.estimate.kernel_model import UNCALIBRATED


@dataclass(frozen=True)
class KernelFit:
    """One asm variant: time = fixed_us + us_per_gb * GB moved, fitted to `points` figures."""
    fixed_us: float
    us_per_gb: float
    points: int

    def us(self, nbytes: float) -> float:
        return self.fixed_us + self.us_per_gb * nbytes / 1e9

    @property
    def bandwidth(self) -> float | None:
        """Effective bytes/s of the per-byte part (None when the fit found no per-byte cost)."""
        return 1e15 / self.us_per_gb if self.us_per_gb > 0 else None


@dataclass(frozen=True)
class Model:
    calibration: Calibration
    sync_us: float
    sync_identified: bool
    kernels: dict                  # variant key ("a8w8_ps") -> KernelFit
    errors: tuple = (0.0, 0.0)     # (lowest, highest) leave-one-out error, predicted / actual - 1
    ranked_offset_us: tuple = (0.0, 5.0)

    def slowest_bandwidth(self) -> float:
        found = [fit.bandwidth for fit in self.kernels.values() if fit.bandwidth]
        return min(found) if found else self.calibration.peak_bandwidth


@dataclass(frozen=True)
class Priced:
    launch: Launch
    us: float
    low_us: float
    high_us: float
    basis: str
    calibrated: bool
    kernel_model: bool = False  # priced from the kernel's gfx950 compile (kernel_model.py), not by bytes alone


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


def price(launch: Launch, model: Model, kernels=None) -> Priced:
    """One launch's price; `kernels` (estimate/gfx950_kernels.py's Gfx950Kernels) gives Triton kernels their gfx950
    compile for the kernel model."""
    cal = model.calibration
    n = launch.count
    if launch.kind == "python":
        return Priced(launch, cal.python_call_us * n, cal.python_call_us * n, cal.python_call_us * n, "fixed (facts)", True)
    if launch.kind == "alloc":
        us = cal.allocation_us * n
        return Priced(launch, us, us, us, "fixed (facts)", True)
    if launch.kind == "sync":
        us = model.sync_us * n
        basis = "fitted" if model.sync_identified else "fitted (sync not identified in this fit)"
        return Priced(launch, us, us, us, basis, True)
    if launch.kind == "asm":
        fit = model.kernels.get(launch.variant)
        if fit is not None:
            us = fit.us(launch.bytes) * n
            return Priced(launch, us, us, us, f"fitted to {fit.points} figures", True)
        others = [other.us(launch.bytes) * n for other in model.kernels.values()]
        low, high = min(others), max(others)
        return Priced(launch, math.sqrt(low * high), low, high,
                      f"no figure for {launch.variant}: bounded by the calibrated variants", False)
    if launch.kind == "aiter":
        kind = _helper_kind(launch.name)
        if kind in cal.aiter_kernel_us:  # the facts time one call of each; a call's further launches are small ones
            us = cal.aiter_kernel_us[kind] + cal.torch_launch_us * (n - 1)
            return Priced(launch, us, us, us, "fixed (facts)", True)
        helpers = list(cal.aiter_kernel_us.values()) + [cal.torch_launch_us]
        low, high = min(helpers) * n, max(helpers) * n
        return Priced(launch, math.sqrt(low * high), low, high, f"no figure for {launch.name}: bounded by the "
                      "aiter helpers' figures", False)
    # torch ops and Triton kernels: a launch from the facts, their bytes by the roofline; a Triton grid of fewer
    # programs than compute units keeps only that share of the chip (and of its bandwidth) busy
    base = cal.torch_launch_us * n
    share = min(1.0, launch.programs / cal.compute_units) if launch.programs else 1.0
    point, low, high = _bytes_range(launch.bytes, model, share)
    if launch.bytes <= 0:
        return Priced(launch, base, base, base, "fixed (facts)", True)
    compiled = kernels.get(launch.kernel) if kernels is not None and launch.kind == "triton" else None
    if compiled is not None:
        found = kernel_model.price(launch.bytes, launch.programs, compiled, kernels.costs, cal.peak_bandwidth,
                                   model.slowest_bandwidth(), cal.compute_units)
        return Priced(launch, base + found.us, base + found.low_us, base + found.high_us,
                      f"launch (facts) + {found.basis}", False, kernel_model=True)
    grid = f" on {launch.programs} of {cal.compute_units} CUs" if share < 1 else ""
    why = f" ({kernels.why_not(launch.kernel)})" if kernels is not None and launch.kernel else ""
    return Priced(launch, base + point, base + low, base + high,
                  f"launch (facts) + bytes{grid}: {UNCALIBRATED}{why}", False)


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
    """The benchmark-mode and ranked-mode estimate of one shape, with bands that cover the leave-one-out errors."""
    priced = [price(launch, model, kernels) for launch in launches]
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
                         uncalibrated=sorted({f"{p.launch.name}: {p.basis}" for p in loose}))
