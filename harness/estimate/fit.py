"""The fit of the cost model to the calibration figures, and its leave-one-file-out test.

Known costs (the Python call, host syncs at their sourced price, and as priors the aiter helper kernels,
small torch launches and allocations: fixed figures from the facts) are taken off each benchmark-mode
figure; what is left is fitted, by least squares on relative error, as per asm variant a fixed cost, a
cost per workgroup per CU and a cost per 1,000 serial KV tokens, and for the torch GEMM path a launch
and a cost per GB. A coefficient the
data would make negative is held at zero. The leave-one-file-out drops every figure of one timed file
(benchmark and ranked rows alike), refits and predicts that file; the band every estimate prints is the
range of those errors, so it covers them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from harness.estimate import calibration as calib
from harness.estimate.model import Model, asm_features, estimate_shape, gemm_features, price


class FitError(ValueError):
    """The figures cannot be fitted (message is one line)."""


PRIOR_WEIGHT = 1.0  # a fixed cost's facts value counts like one figure: off by 100% costs what a figure off by 100% does


def _effect_factor(launch, cal: calib.Calibration) -> float:
    """torch.compile / TunableOp scale a GEMM-path launch the way the price does (model._with_effects)."""
    factor = 1.0
    for name in launch.effects:
        factor *= (cal.effects or {}).get(name, (1.0, ""))[0]
    return factor


def _split(launches: list, cal: calib.Calibration) -> tuple:
    """(known us, fit columns) of one figure. Known: the Python call, the bytes of torch and Triton launches, and
    whatever has no column. Columns: asm kernels and GEMMs as before, and the fixed costs that have a prior
    in the facts (a small torch launch, an allocation, each aiter helper's first launch), which the fit updates."""
    probe = Model(calibration=cal, coefficients={}, fitted=frozenset())
    known, found = 0.0, {}

    def add(key: str, value: float) -> None:
        found[key] = found.get(key, 0.0) + value

    for launch in launches:
        factor = _effect_factor(launch, cal) if launch.kind in ("gemm", "torch") else 1.0
        if launch.kind == "asm":
            for key, value in asm_features(launch).items():
                add(key, value)
        elif launch.kind == "gemm":
            for key, value in gemm_features(launch).items():
                add(key, value * (factor if key == "gemm:launch" else 1.0))
        elif launch.kind == "alloc":
            add("alloc", float(launch.count))
        elif launch.kind == "aiter" and launch.name in cal.aiter_kernel_us:
            add(f"aiter:{launch.name}", 1.0)
            add("torch:launch", float(launch.count - 1))
        elif launch.kind in ("torch", "triton"):
            known += price(launch, probe).us - cal.torch_launch_us * launch.count * factor
            add("torch:launch", launch.count * factor)
        else:
            known += price(launch, probe).us
    return known, found


def _priors(cal: calib.Calibration) -> dict:
    found = {"torch:launch": cal.torch_launch_us, "alloc": cal.allocation_us}
    found.update({f"aiter:{name}": us for name, us in cal.aiter_kernel_us.items()})
    return found


def points(cal: calib.Calibration, skip_files: frozenset = frozenset()) -> list:
    """(row, shape, time, launches) of every benchmark-mode figure of a file not in `skip_files`."""
    return [(row, shape, us, calib.row_launches(row, shape)) for row in cal.rows
            if row.mode == "benchmark" and row.file not in skip_files for shape, us in row.times_us.items()]


def _solve(matrix: np.ndarray, target: np.ndarray, columns: list) -> dict:
    """Non-negative least squares by dropping the most negative column until none is left."""
    active = [i for i in range(len(columns)) if np.any(matrix[:, i])]
    while True:
        solution, *_ = np.linalg.lstsq(matrix[:, active], target, rcond=None)
        negative = [col for col, value in zip(active, solution) if value < -1e-12]
        if not negative:
            return {columns[col]: max(0.0, float(v)) for col, v in zip(active, solution)}
        active.remove(min(negative, key=lambda col: solution[active.index(col)]))


def fit(cal: calib.Calibration, skip_files: frozenset = frozenset()) -> Model:
    found = points(cal, skip_files)
    if not found:
        raise FitError("no calibration figures to fit")
    split = [_split(launches, cal) for _, _, _, launches in found]
    rows = [columns for _, columns in split]
    columns = sorted({key for row in rows for key in row})
    ranges = _per_cu_ranges(found)
    for variant, (low, high) in ranges.items():
        if high - low < 1e-9 and f"{variant}:per_cu" in columns:  # one value: it merges with the fixed cost
            columns.remove(f"{variant}:per_cu")
    weight = np.array([1.0 / us for _, _, us, _ in found])
    matrix = np.array([[row.get(c, 0.0) for c in columns] for row in rows]) * weight[:, None]
    target = np.array([us - known for (_, _, us, _), (known, _) in zip(found, split)]) * weight
    priors = {c: v for c, v in _priors(cal).items() if c in columns and v > 0}
    for column, value in priors.items():  # pseudo-figures: (coefficient - prior) / prior, weighted
        extra = np.zeros(len(columns))
        extra[columns.index(column)] = PRIOR_WEIGHT / value
        matrix, target = np.vstack([matrix, extra]), np.append(target, PRIOR_WEIGHT)
    coefficients = _solve(matrix, target, columns)
    counts: dict = {}
    for _, _, _, launches in found:
        for key in {l.variant for l in launches if l.kind == "asm"} | {"gemm" for l in launches if l.kind == "gemm"}:
            counts[key] = counts.get(key, 0) + 1
    return Model(calibration=cal, coefficients=coefficients, fitted=frozenset(columns), points=counts,
                 ranges=ranges, ranked_offset_us=ranked_offset(cal))


def _per_cu_ranges(found: list) -> dict:
    """variant -> (fewest, most) workgroups per CU among its figures: where its fit holds."""
    seen: dict = {}
    for _, _, _, launches in found:
        for launch in (l for l in launches if l.kind == "asm"):
            low, high = seen.get(launch.variant, (launch.per_cu, launch.per_cu))
            seen[launch.variant] = (min(low, launch.per_cu), max(high, launch.per_cu))
    return seen


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
    """One prediction of a figure whose whole file the fit did not see."""
    row: str
    file: str
    shape: tuple
    actual_us: float
    predicted_us: float
    low_us: float = 0.0
    high_us: float = 0.0
    note: str = ""              # what the model could not fit without that file

    @property
    def error(self) -> float:
        return self.predicted_us / self.actual_us - 1

    @property
    def covered(self) -> bool:
        return self.low_us <= self.actual_us <= self.high_us


def _note(model: Model, launches: list) -> str:
    missing = sorted({l.variant for l in launches if l.kind == "asm" and l.variant not in model.variants()})
    gemm = any(l.kind == "gemm" for l in launches) and not model.gemm_calibrated()
    parts = [f"the only figures of {v}: bounded by the other variants" for v in missing]
    parts += ["the only GEMM-path figures: bytes and a launch from the facts"] * gemm
    return "; ".join(parts)


def leave_one_file_out(cal: calib.Calibration, errors: tuple = (0.0, 0.0)) -> list[LeftOut]:
    """Each timed file dropped with all its figures, the model refitted, that file's figures predicted; each
    prediction's low/high is the band `errors` would print around it."""
    found = []
    for name in sorted({row.file for row in cal.rows if row.mode == "benchmark"}):
        model = replace(fit(cal, frozenset({name})), errors=errors)
        for row, shape, us, launches in points(cal):
            if row.file != name:
                continue
            shaped = estimate_shape(shape, launches, model)
            found.append(LeftOut(row.id, name, shape, us, shaped.us, shaped.low_us, shaped.high_us,
                                 _note(model, launches)))
    return found


def _outward(value: float, step: float = 1e-3, up: bool = True) -> float:
    """Rounded away from the middle to 0.1%, so a figure at the edge of the band stays inside it."""
    return round((math.ceil if up else math.floor)(value / step) * step, 6)


def band_errors(left_out: list) -> tuple:
    """(lowest, highest) error the band must allow so that every left-out figure lies inside the range its
    prediction prints: a figure's low end is (its calibrated part + its loose parts' lows) / (1 + highest)."""
    lowest = min([0.0] + [item.high_us / item.actual_us - 1 for item in left_out])
    highest = max([0.0] + [item.low_us / item.actual_us - 1 for item in left_out])
    return _outward(lowest, up=False), _outward(highest)


def calibrated_model(cal: calib.Calibration | None = None) -> tuple[Model, list[LeftOut]]:
    """The model fitted to every figure, its band set to cover every leave-one-file-out prediction, and those
    predictions with the band that model prints around them."""
    cal = cal or calib.load()
    band = band_errors(leave_one_file_out(cal))
    return replace(fit(cal), errors=band), leave_one_file_out(cal, band)


def geomean_error(items: list[LeftOut]) -> float:
    """Geometric mean of predicted over geometric mean of actual, minus one."""
    logs = [math.log(item.predicted_us / item.actual_us) for item in items]
    return math.exp(sum(logs) / len(logs)) - 1
