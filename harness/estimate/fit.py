"""The fit of the cost model to the calibration figures, and its leave-one-out test.

Known costs (the Python call, aiter helper kernels, small torch launches, allocations: fixed figures from the
facts) are taken off each figure; what is left is fitted, by least squares on relative error, as one host-sync
cost shared by every row plus, per asm variant, a fixed cost and a cost per GB. A coefficient the data would make
negative is held at zero. Leave-one-out drops each figure (and, separately, each whole row), refits and predicts
what was dropped; the band every estimate prints is the range of the figure-level errors.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from harness.estimate import calibration as calib
from harness.estimate.model import KernelFit, Model, estimate_shape, price


class FitError(ValueError):
    """The figures cannot be fitted (message is one line)."""


def _known_us(launches: list, cal: calib.Calibration) -> float:
    """The part of a figure the facts already price (everything but syncs and the asm kernel)."""
    probe = Model(calibration=cal, sync_us=0.0, sync_identified=False, kernels={})
    return sum(price(launch, probe).us for launch in launches if launch.kind not in ("sync", "asm"))


def _points(cal: calib.Calibration, skip: frozenset) -> list:
    """(row, shape, time, launches) of every benchmark-mode figure not in `skip` ((row id, shape) pairs)."""
    return [(row, shape, us, calib.row_launches(row, shape)) for row in cal.rows if row.mode == "benchmark"
            for shape, us in row.times_us.items() if (row.id, shape) not in skip and (row.id, None) not in skip]


def fit(cal: calib.Calibration, skip: frozenset = frozenset()) -> Model:
    points = _points(cal, skip)
    if not points:
        raise FitError("no calibration figures to fit")
    variants = sorted({next(l.variant for l in launches if l.kind == "asm") for _, _, _, launches in points})
    columns = ["sync"] + [f"{v}:fixed" for v in variants] + [f"{v}:per_gb" for v in variants]
    matrix, target, weight = [], [], []
    for _, _, us, launches in points:
        asm = next(l for l in launches if l.kind == "asm")
        syncs = sum(l.count for l in launches if l.kind == "sync")
        row = [float(syncs)] + [float(asm.variant == v) for v in variants] + \
              [asm.bytes / 1e9 if asm.variant == v else 0.0 for v in variants]
        matrix.append(row)
        target.append(us - _known_us(launches, cal))
        weight.append(1.0 / us)
    a, y, w = np.array(matrix), np.array(target), np.array(weight)
    active = [i for i in range(len(columns)) if np.any(a[:, i])]
    sync_identified = True
    while True:
        sub = a[:, active] * w[:, None]
        if np.linalg.matrix_rank(sub) < len(active) and 0 in active:
            active.remove(0)  # every remaining figure has the same syncs as a fixed cost: the sync is not separable
            sync_identified = False
            continue
        solution, *_ = np.linalg.lstsq(sub, y * w, rcond=None)
        negative = [col for col, value in zip(active, solution) if value < 0]
        if not negative:
            break
        active.remove(min(negative, key=lambda col: solution[active.index(col)]))
    values = dict.fromkeys(range(len(columns)), 0.0)
    values.update(zip(active, solution))
    kernels = {}
    for index, variant in enumerate(variants):
        used = sum(1 for _, _, _, launches in points if any(l.variant == variant for l in launches))
        kernels[variant] = KernelFit(fixed_us=float(values[1 + index]),
                                     us_per_gb=float(values[1 + len(variants) + index]), points=used)
    return Model(calibration=cal, sync_us=float(values[0]), sync_identified=sync_identified and 0 in active,
                 kernels=kernels, ranked_offset_us=ranked_offset(cal))


def ranked_offset(cal: calib.Calibration) -> tuple:
    """(low, high) us that ranked mode adds: the facts' range, widened to every paired public figure."""
    low, high = cal.ranked_offset_us
    benchmark = {row.id: row for row in cal.rows if row.mode == "benchmark"}
    for row in cal.rows:
        twin = benchmark.get(row.id.removesuffix("_ranked")) if row.mode == "leaderboard" else None
        for shape, us in (row.times_us.items() if twin else ()):
            if shape in twin.times_us:
                gap = us - twin.times_us[shape]
                low, high = min(low, gap), max(high, gap)
    return low, high


@dataclass(frozen=True)
class LeftOut:
    """One prediction of a figure the fit did not see."""
    row: str
    shape: tuple
    actual_us: float
    predicted_us: float
    low_us: float = 0.0
    high_us: float = 0.0
    level: str = "figure"       # "figure": that figure dropped; "row": its whole row dropped
    note: str = ""              # why a row-level prediction is not one the model can make

    @property
    def error(self) -> float:
        return self.predicted_us / self.actual_us - 1

    @property
    def covered(self) -> bool:
        return self.low_us <= self.actual_us <= self.high_us


def _predicted(model: Model, row: calib.Row, shape: tuple, actual: float, **extra) -> LeftOut:
    found = estimate_shape(shape, calib.row_launches(row, shape), model)
    return LeftOut(row.id, shape, actual, found.us, found.low_us, found.high_us, **extra)


def leave_one_out(cal: calib.Calibration, errors: tuple = (0.0, 0.0)) -> list[LeftOut]:
    """Figure level: drop each figure, refit, predict it. Row level: drop each row, refit, predict its figures.
    Each prediction's low/high is the band `errors` would print around it."""
    found = []
    for row, shape, us, _ in _points(cal, frozenset()):
        model = replace(fit(cal, frozenset({(row.id, shape)})), errors=errors)
        found.append(_predicted(model, row, shape, us))
    for row in (r for r in cal.rows if r.mode == "benchmark"):
        model = replace(fit(cal, frozenset({(row.id, None)})), errors=errors)
        variant = calib.variant_key(row.structure["variant"], row.structure["persistent"])
        note = "" if variant in model.kernels else f"the only figures of {variant}: bounded by the other variants"
        if not model.sync_identified and row.structure["syncs"] == 0:
            note = "the only figures without a host sync: the sync cost is not identified without them"
        found += [_predicted(model, row, shape, us, level="row", note=note) for shape, us in row.times_us.items()]
    return found


def _outward(value: float, step: float = 1e-3, up: bool = True) -> float:
    """Rounded away from the middle to 0.1%, so a figure at the edge of the band stays inside it."""
    return round((math.ceil if up else math.floor)(value / step) * step, 6)


def calibrated_model(cal: calib.Calibration | None = None) -> tuple[Model, list[LeftOut]]:
    """The model fitted to every figure, its band set to the range of the figure-level leave-one-out errors, and
    every leave-one-out prediction with the band that model prints around it."""
    cal = cal or calib.load()
    errors = [item.error for item in leave_one_out(cal) if item.level == "figure"]
    band = (_outward(min(errors), up=False), _outward(max(errors)))
    return replace(fit(cal), errors=band), leave_one_out(cal, band)


def geomean_error(items: list[LeftOut]) -> float:
    """Geometric mean of predicted over geometric mean of actual, minus one."""
    logs = [math.log(item.predicted_us / item.actual_us) for item in items]
    return math.exp(sum(logs) / len(logs)) - 1
