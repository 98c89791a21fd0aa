"""The leave-one-file-out summary that bench/NOTES.md and the issue-29 note report, against issue 29's goal table.

Everything here is the MI355X estimate, a model: each figure is a public MI355X time of a file the refit did not
see, and the error is the model's prediction of it. `python -m harness.estimate.validation` prints the per-file
table and the summary from harness/estimate/data/mi355x_costs.json; `... validation timeline` the same of
the gfx950 timing model over aiter's stage-1 traces (timeline_fit.py, issue 40).
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass

from harness.estimate import calibration as calib
from harness.estimate import fit as fitting
from harness.estimate import timeline_fit

GOALS = {"median": 0.10, "p90": 0.25, "worst": 0.40, "geomean_mean": 0.06, "geomean_worst": 0.12, "spearman": 0.9}


def _ranks(values: list) -> list:
    """Ranks from 1, ties given their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(xs: list, ys: list) -> float:
    """Rank correlation: Pearson's correlation of the ranks."""
    return pearson(_ranks(xs), _ranks(ys))


def pearson(xs: list, ys: list) -> float:
    n = len(xs)
    if n < 2:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def _quantile(values: list, q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def _geomean(values: list) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass(frozen=True)
class Summary:
    figures: int
    files: int
    median: float
    p90: float
    worst: float
    geomean_mean: float
    geomean_worst: float
    spearman: float
    pearson_log: float
    covered_files: int
    band: tuple
    per_file: dict            # file -> (logged geomean, predicted geomean, covered figures, figures)

    def met(self) -> dict:
        return {"median": self.median <= GOALS["median"], "p90": self.p90 <= GOALS["p90"],
                "worst": self.worst <= GOALS["worst"], "geomean_mean": self.geomean_mean <= GOALS["geomean_mean"],
                "geomean_worst": self.geomean_worst <= GOALS["geomean_worst"],
                "spearman": self.spearman >= GOALS["spearman"]}


def summarize(left_out: list, band: tuple) -> Summary:
    errors = [abs(item.error) for item in left_out]
    per_file: dict = {}
    for name in sorted({item.file for item in left_out}):
        items = [item for item in left_out if item.file == name]
        logged = _geomean([item.actual_us for item in items])
        predicted = _geomean([item.predicted_us for item in items])
        per_file[name] = (logged, predicted, sum(item.covered for item in items), len(items))
    file_errors = [abs(p / a - 1) for a, p, _, _ in per_file.values()]
    logged = [a for a, _, _, _ in per_file.values()]
    predicted = [p for _, p, _, _ in per_file.values()]
    return Summary(figures=len(left_out), files=len(per_file), median=_quantile(errors, 0.5),
                   p90=_quantile(errors, 0.9), worst=max(errors), geomean_mean=sum(file_errors) / len(file_errors),
                   geomean_worst=max(file_errors), spearman=spearman(logged, predicted),
                   pearson_log=pearson([math.log(v) for v in logged], [math.log(v) for v in predicted]),
                   covered_files=sum(band[0] <= p / a - 1 <= band[1] or _inside(name, left_out)
                                     for name, (a, p, _, _) in per_file.items()),
                   band=band, per_file=per_file)


def _inside(name: str, left_out: list) -> bool:
    """A file's logged geomean lies inside the geomean of the bands printed around its figures."""
    items = [item for item in left_out if item.file == name]
    actual = _geomean([item.actual_us for item in items])
    return _geomean([item.low_us for item in items]) <= actual <= _geomean([item.high_us for item in items])


def table(left_out: list, band: bool = True) -> list[str]:
    """The per-file markdown table: predicted / logged - 1 per shape, and of the geomeans; `band`: how many
    figures lie inside the band printed around them (a fit without a band leaves the column out)."""
    shapes = [(4, 1024), (4, 8192), (32, 1024), (32, 8192), (64, 1024), (64, 8192), (256, 1024), (256, 8192)]
    lines = ["| file (MI355X estimate, left out) | " + " | ".join(f"{b}x{k // 1024}k" for b, k in shapes)
             + " | geomean |" + " covered |" * band + " note |", "|---" * (len(shapes) + 3 + band) + "|"]
    for name in sorted({item.file for item in left_out}):
        items = {item.shape: item for item in left_out if item.file == name}
        cells = [f"{items[s].error:+.1%}" if s in items else "-" for s in shapes]
        values = list(items.values())
        ratio = _geomean([i.predicted_us for i in values]) / _geomean([i.actual_us for i in values]) - 1
        note = next((i.note for i in values if i.note), "-")
        covered = f"{sum(i.covered for i in values)}/{len(values)} | " if band else ""
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ratio:+.1%} | {covered}{note} |")
    return lines


def report(cal: calib.Calibration | None = None) -> tuple:
    """(model, left-out predictions, summary) of the data file."""
    model, left_out = fitting.calibrated_model(cal or calib.load())
    return model, left_out, summarize(left_out, model.errors)


def timeline_report(cal: calib.Calibration | None = None, get=None, progress=None) -> tuple:
    """(free figures fitted to every figure, left-out predictions, summary of all of them, summary of the
    shapes on aiter's asm path alone) of the gfx950 timing model (timeline_fit.py); get(stage, shape)
    gives a stage-1 trace (default: the estimate cache's, emulated where missing)."""
    cal = cal or calib.load()
    found = timeline_fit.points(cal)
    launches = timeline_fit.Launches.of(found, get)
    values = timeline_fit.fit(found, launches)
    left_out = timeline_fit.leave_one_file_out(cal, found, launches, progress)
    asm = [item for item in left_out if item.note != timeline_fit.GEMM_NOTE]
    return values, left_out, summarize(left_out, (0.0, 0.0)), summarize(asm, (0.0, 0.0))


def summary_line(s: Summary) -> str:
    return (f"figures {s.figures}, files {s.files}; per-shape |error| median {s.median:.1%}, p90 {s.p90:.1%}, "
            f"worst {s.worst:.1%}; geomean |error| mean {s.geomean_mean:.1%}, worst {s.geomean_worst:.1%}; "
            f"Spearman {s.spearman:.2f}, Pearson of log geomeans {s.pearson_log:.2f}")


def goals_line(s: Summary) -> str:
    met = {k: v for k, v in s.met().items() if k != "geomean_worst"}  # issue 40's five goals
    return "issue 40's goals met: " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in met.items())


def main(arguments: list[str]) -> None:  # pragma: no cover - a printout for the notes
    if arguments[:1] == ["timeline"]:
        return timeline_main()
    model, left_out, s = report()
    print("MI355X estimate (a model), leave one whole file out:")
    print("\n".join(table(left_out)))
    print(f"\n{summary_line(s)}; files in band {s.covered_files}/{s.files}; "
          f"band {s.band[0]:+.1%} to {s.band[1]:+.1%}")
    print("met:", s.met())
    print("coefficients:", {k: round(v, 3) for k, v in sorted(model.coefficients.items())})


def timeline_main() -> None:  # pragma: no cover - a printout for the notes
    started = time.perf_counter()
    values, left_out, everything, asm = timeline_report(
        progress=lambda name, fitted: print(f"  without {name}: {timeline_fit.described(fitted)}", flush=True))
    print("MI355X estimate (a model): the gfx950 timing model over aiter's stage-1 traces, free figures "
          "refitted with each whole file left out:")
    print("\n".join(table(left_out, band=False)))
    print(f"\nall figures: {summary_line(everything)}\n{goals_line(everything)}")
    print(f"asm-path figures only: {summary_line(asm)}\n{goals_line(asm)}")
    print(f"fitted to every figure: {timeline_fit.described(values)}")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
