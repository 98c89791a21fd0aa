"""The gfx950 timing model's free figures, fitted once on aiter's own kernels against the public logs,
and the leave-one-file-out test of that fit.

A benchmark-mode figure (a row of data/mi355x_costs.json at one shape) is predicted as its host part
plus its stage-1 launch: the host part is what today's model prices from the facts (the Python call,
small torch launches, allocations, aiter's metadata / reduce / quant helpers at their fixed costs) and
the host syncs at the figures file's host_sync_us (sourced, not fitted); the launch is
gfx950_timeline.price_launch of the stage-1 kernel's trace (aiter_traces.py). Fitted: FREE_FIGURES
(achieved HBM bandwidth, memory latency, clock under load, launch gap), by least squares on relative
error inside BOUNDS. A shape on the torch GEMM path has no stage-1 launch: it is priced by today's
fitted GEMM curve (model.py), refitted without its file, and marked so. Everything here is an
estimate of MI355X time, a model.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.estimate import aiter_traces
from harness.estimate import calibration as calib
from harness.estimate import fit as curves
from harness.estimate.fit import LeftOut
from harness.estimate.gfx950_timeline import (FREE_FIGURES, compute_cycles, launch_bytes, load_figures, price_launch,
                                              rounds, start_values)
from harness.estimate.model import Model, estimate_shape, host_sync_us, price

# (low, high, start when the figures file gives none): each a range a fit may not leave
BOUNDS = {
    "hbm_bytes_per_second": (2.0e12, 8.0e12),  # up to the 8 TB/s peak (data/mi355x_costs.json hardware)
    "memory_latency_cycles": (300.0, 3000.0),  # LDS-like to several round trips of HBM
    "clock_hz": (1.2e9, 2.4e9),                # up to the 2.4 GHz peak clock
    "launch_gap_us": (0.5, 10.0),
}
SYNC_US = host_sync_us()  # sourced (KS-SYNC), not fitted: one file syncs
GEMM_NOTE = "GEMM path: today's fitted GEMM curve"
STEP = 1e-3  # finite-difference step, relative, in the fit's coordinates


@dataclass(frozen=True)
class Point:
    """One benchmark-mode figure and what its prediction is made of."""
    row: calib.Row
    shape: tuple
    actual_us: float
    launches: tuple
    host_us: float       # the facts' fixed costs, syncs left out
    syncs: int
    stage: aiter_traces.Stage1 | None  # None: the torch GEMM path

    @property
    def file(self) -> str:
        return self.row.file


def points(cal: calib.Calibration) -> list[Point]:
    """Every benchmark-mode figure of the data file, its host part priced from the facts."""
    facts = Model(calibration=cal, coefficients={}, fitted=frozenset())
    found = []
    for row in (r for r in cal.rows if r.mode == "benchmark"):
        for shape, us in sorted(row.times_us.items()):
            launches = calib.row_launches(row, shape)
            host = sum(price(l, facts).us for l in launches if l.kind not in ("asm", "sync", "gemm"))
            syncs = sum(l.count for l in launches if l.kind == "sync")
            found.append(Point(row, shape, us, tuple(launches), host, syncs, aiter_traces.stage1_of(row, shape)))
    return found


class Launches:
    """The stage-1 traces of the points, priced at many figure sets. A trace's compute cycles depend on
    the memory latency alone (clock, bandwidth and gap scale or add): the fit reads them off a grid of
    latencies, interpolated, so that a fit costs seconds; `exact` prices each trace in full."""

    LATENCIES = np.geomspace(BOUNDS["memory_latency_cycles"][0] * 0.9, BOUNDS["memory_latency_cycles"][1] * 1.1, 56)
    LOG_LATENCIES = np.log(LATENCIES)

    def __init__(self, traces: dict, shares: dict | None = None):
        """traces: (Stage1, shape) -> LaunchTrace; shares: what the traced bytes times the grid
        overstate (aiter_traces.busiest_share; 1 where not given)."""
        self.traces = traces
        self.keys = sorted(traces, key=lambda key: (key[1], key[0]))
        self.nbytes, self.given, self.cycles = {}, {}, {}
        for key in self.keys:  # a persistent launch's bytes: its busiest workgroup's, scaled by the schedule
            self.nbytes[key] = launch_bytes(traces[key])
            share = (shares or {}).get(key, 1.0)
            if share != 1.0:
                self.given[key] = self.nbytes[key] = self.nbytes[key] * share
            self.cycles[key] = np.array([
                compute_cycles(rounds(traces[key], load_figures({"memory_latency_cycles": latency}))[3])
                for latency in self.LATENCIES])

    @classmethod
    def of(cls, found: list[Point], get=None) -> "Launches":
        """get(stage, shape) -> LaunchTrace; default: the estimate cache's, emulated where missing."""
        get = get or (lambda stage, shape: aiter_traces.stage1_trace(stage, shape)[0])
        wanted = {(p.stage, p.shape) for p in found if p.stage is not None}
        return cls({key: get(*key) for key in wanted}, {key: aiter_traces.busiest_share(*key) for key in wanted})

    def times(self, vectors: list[dict]) -> list[dict]:
        """Per figure set ({free figure: value}), each launch's microseconds, off the latency grid."""
        found: list[dict] = []
        for vector in vectors:
            figures = load_figures({k: v for k, v in vector.items() if k in FREE_FIGURES})
            at = math.log(figures["memory_latency_cycles"])
            clock, bandwidth = figures["clock_hz"], figures["hbm_bytes_per_second"]
            found.append({key: figures["launch_gap_us"] + 1e6 * max(
                np.interp(at, self.LOG_LATENCIES, self.cycles[key]) / clock, self.nbytes[key] / bandwidth)
                for key in self.keys})
        return found

    def exact(self, values: dict) -> dict:
        """Each launch's microseconds priced in full at these figures."""
        figures = load_figures({k: v for k, v in values.items() if k in FREE_FIGURES})
        return {key: price_launch(self.traces[key], figures, self.given.get(key)).microseconds
                for key in self.keys}


def predict(point: Point, launch_us: dict) -> float:
    return point.host_us + point.syncs * SYNC_US + launch_us[(point.stage, point.shape)]


def start() -> dict:
    """The free figures' starting values (their sources', not a fit's, which may sit on a bound where
    the search would stay): where every fit starts."""
    return start_values()


def _to_vector(values: dict) -> np.ndarray:
    """The fit's coordinates: log of each figure (they span orders of magnitude)."""
    return np.array([math.log(values[name]) for name in FREE_FIGURES])


def _to_values(vector: np.ndarray) -> dict:
    return {name: math.exp(x) for name, x in zip(FREE_FIGURES, vector)}


def _limits() -> tuple[np.ndarray, np.ndarray]:
    return (np.array([math.log(BOUNDS[n][0]) for n in FREE_FIGURES]),
            np.array([math.log(BOUNDS[n][1]) for n in FREE_FIGURES]))


def _residuals(fitted: list[Point], launch_us: dict) -> np.ndarray:
    return np.array([predict(p, launch_us) / p.actual_us - 1 for p in fitted])


def fit(fitted: list[Point], launches: Launches, initial: dict | None = None) -> dict:
    """The parameters that minimise the squared relative errors of `fitted` (asm-path points), each kept
    inside BOUNDS: scipy's trust-region least squares in the fit's coordinates."""
    from scipy.optimize import least_squares

    fitted = [p for p in fitted if p.stage is not None]
    low, high = _limits()
    inside = 1e-9 * np.maximum(1.0, np.abs(high - low))  # a start on a bound is nudged inside it

    def residuals(x: np.ndarray) -> np.ndarray:
        return _residuals(fitted, launches.times([_to_values(x)])[0])

    start_at = np.clip(_to_vector(initial or start()), low + inside, high - inside)
    found = least_squares(residuals, start_at, bounds=(low, high), diff_step=STEP, x_scale="jac")
    return _to_values(found.x)


def _gemm_us(point: Point, model: Model) -> float:
    return estimate_shape(point.shape, list(point.launches), model).us


def leave_one_file_out(cal: calib.Calibration, found: list[Point], launches: Launches,
                       progress=None) -> list[LeftOut]:
    """Each timed file dropped with all its figures, the free figures refitted, its figures predicted."""
    left_out = []
    for name in sorted({p.file for p in found}):
        kept = [p for p in found if p.file != name]
        values = fit(kept, launches)
        mine = [p for p in found if p.file == name]
        launch_us = launches.exact(values) if any(p.stage for p in mine) else {}
        curve = curves.fit(cal, frozenset({name})) if any(p.stage is None for p in mine) else None
        for p in mine:
            us = predict(p, launch_us) if p.stage is not None else _gemm_us(p, curve)
            note = "" if p.stage is not None else GEMM_NOTE
            left_out.append(LeftOut(p.row.id, name, p.shape, p.actual_us, us, us, us, note))
        if progress:
            progress(name, values)
    return left_out


def described(values: dict) -> str:
    units = {"hbm_bytes_per_second": (1e12, "TB/s"), "memory_latency_cycles": (1, "cycles"),
             "clock_hz": (1e9, "GHz"), "launch_gap_us": (1, "us")}
    return ", ".join(f"{name} {values[name] / units[name][0]:.3g} {units[name][1]}" for name in FREE_FIGURES)
