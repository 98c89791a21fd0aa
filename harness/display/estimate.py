"""What `harness estimate` and `harness diff --estimate` print with rich: the MI355X estimate per shape, the
breakdown of what each call launches, and two estimates side by side.
"""
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from harness.display import short_spec
from harness.fitted_table import FitColumn, fit
from harness.results.figures import format_model_band, format_model_us


def estimate_table(result) -> Table:
    """One row per official shape: the MI355X estimate in benchmark and ranked mode, with bands (harness estimate)."""
    table = Table(title=escape(f"{result.submission.label}: MI355X estimate (cost model, not a measurement; "
                               f"recorded on {result.platform.describe()}"
                               + ("; official shapes scaled from shorter KV" if not result.platform.is_gpu else "")
                               + ")"))
    for column in ("shape", "benchmark µs", "band", "ranked µs", "band", "recorded at kv", "note"):
        table.add_column(column, justify="right" if "µs" in column else "left")
    for shape in result.shapes:
        e = shape.estimate
        if e is None:
            continue
        table.add_row(short_spec(shape.spec), format_model_us(e.us), format_model_band(e.low_us, e.high_us),
                      format_model_us(e.ranked_us), format_model_band(e.ranked_low_us, e.ranked_high_us),
                      ", ".join(map(str, shape.recorded_kv)),
                      escape(shape.note))
    return table


def priced_cell(priced) -> str:
    """'6 × 2.27 = 13.6': a launch's count, the price of each and their total (µs)."""
    count, total = priced.launch.count, format_model_us(priced.us)
    return f"{count} × {priced.us / count:.3g} = {total}" if count > 1 else total


BREAKDOWN_TITLE = ("breakdown: what each call launches, µs (count × each = total; each column adds up to the "
                   "benchmark estimate)")


def basis_markers(shapes: list) -> dict:
    """Each distinct basis (the method) of the breakdown -> its footnote marker ('[1]', '[2]', ...), in the
    order met: a row shows the marker, the method is printed once below the tables."""
    markers: dict = {}
    for shape in shapes:
        for priced in shape.estimate.priced:
            markers.setdefault(priced.basis, f"[{len(markers) + 1}]")
    return markers


def breakdown_rows(shapes: list) -> list[list[str]]:
    """[kind, what, one cell per shape, its bases' markers] per launch, then the total row (the benchmark
    estimate)."""
    markers = basis_markers(shapes)
    rows: dict = {}
    for index, shape in enumerate(shapes):
        for priced in shape.estimate.priced:
            key = (priced.launch.kind, priced.launch.name)
            row = rows.setdefault(key, [key[0], escape(key[1])] + [""] * len(shapes) + [[]])
            row[2 + index] = priced_cell(priced)
            if markers[priced.basis] not in row[-1]:  # a launch priced on other grounds at another shape
                row[-1].append(markers[priced.basis])
    total = ["total", "benchmark estimate"] + [format_model_us(shape.estimate.us) for shape in shapes] + [""]
    return [row[:-1] + [escape(" ".join(row[-1]))] for row in rows.values()] + [total]


def basis_lines(shapes: list) -> list[str]:
    """Each method once under its marker ('[3] kernel model ...'); below it, once each, what holds for one
    kernel, then each launch's own figures, a few words a line ('4×1024 mla_kernel grid (8, 4): ...')."""
    lines = []
    for basis, marker in basis_markers(shapes).items():
        lines.append(f"{marker} {basis}")
        found = [(shape, p) for shape in shapes for p in shape.estimate.priced if p.basis == basis]
        for detail in dict.fromkeys(p.detail for _, p in found if p.detail):
            lines.append(f"    {detail}")
        lines += [f"    {shape.spec['batchsize']}×{shape.spec['kvseqlen']} {p.launch.name}: {p.figures}"
                  for shape, p in found if p.figures]
    return lines


def shapes_per_table(room: list[int], width: int) -> int:
    """As many shape columns as fit beside kind and what (32 columns), shared evenly over the fewest tables."""
    for tables in range(1, len(room) + 1):
        per_table = -(-len(room) // tables)
        if max(sum(room[i:i + per_table]) for i in range(0, len(room), per_table)) + 32 <= width:
            return per_table
    return 1


def estimate_breakdown(result, width: int = 10_000) -> list[tuple[Table, list[str]]]:
    """Which launches each shape makes and what each costs, one column per shape; the last row, the sum of the
    column, is the shape's benchmark-mode estimate. Narrow screens get the shapes in several tables, the basis
    below them, so that no figure is cut."""
    shapes = [shape for shape in result.shapes if shape.estimate is not None]
    rows = breakdown_rows(shapes)
    headers = [f"{shape.spec['batchsize']}×{shape.spec['kvseqlen']}" for shape in shapes]
    room = [max(len(cell) for cell in [headers[i]] + [row[2 + i] for row in rows]) + 3 for i in range(len(shapes))]
    per_table = shapes_per_table(room, width - max(len(row[-1]) for row in rows) - 3)  # the markers' column
    tables = []
    for first in range(0, len(shapes), per_table):
        chosen = range(first, min(first + per_table, len(shapes)))
        columns = ([FitColumn("kind", room=6), FitColumn("what", room=20)]
                   + [FitColumn(headers[i], figure=True, justify="right") for i in chosen]
                   + [FitColumn("basis", figure=True)])
        cut = [row[:2] + [row[2 + i] for i in chosen] + row[-1:] for row in rows]
        tables.append(fit(width, columns, cut, key=1, title=BREAKDOWN_TITLE if first == 0 else None))
    return tables


def print_estimate(console, result) -> None:
    if result.refusal:
        console.print(escape(f"{result.submission.label}: no MI355X estimate: {result.refusal}"), highlight=False)
        return
    console.print(estimate_table(result))
    for table, _ in estimate_breakdown(result, console.width):
        console.print(table)
    for line in basis_lines([shape for shape in result.shapes if shape.estimate is not None]):
        console.print(escape(line), highlight=False)  # each basis once, under the marker its rows show
    figures = result.geomeans()
    lowest, highest = result.model.errors
    console.print(escape(
        f"{result.submission.label}: MI355X estimate, geomean {format_model_us(figures['us'])} µs in benchmark "
        f"mode (band {format_model_band(figures['low_us'], figures['high_us'])}), "
        f"{format_model_us(figures['ranked_us'])} µs in ranked mode "
        f"(band {format_model_band(figures['ranked_low_us'], figures['ranked_high_us'])}). A model's estimate, not a "
        f"measurement: the band covers the leave-one-out errors of its calibration figures ({lowest:+.1%} to "
        f"{highest:+.1%}), widened by what has no figure."), highlight=False)
    estimated = [s for s in result.shapes if s.estimate]
    markers = basis_markers(estimated)
    loose = {markers[p.basis] for shape in estimated for p in shape.estimate.priced if not p.calibrated}
    if loose:  # the rows name their launches: the markers say which
        console.print(escape("widened by the launches priced on bases " + ", ".join(
            sorted(loose, key=lambda marker: int(marker.strip("[]")))) + " (no calibration figure)"), highlight=False)
    if getattr(result, "replayed", ""):
        console.print(escape(f"note: {result.replayed}"), highlight=False)
    for warning in result.warnings:
        console.print(escape(f"warning: {warning}"), highlight=False)


def estimate_diff_table(comparison) -> Table:
    """`harness diff --estimate A B`: the two estimates per shape and their geomeans, with bands."""
    a, b = comparison.a_record["submission"]["path"], comparison.b_record["submission"]["path"]
    table = Table(title=escape(f"MI355X estimates (cost model, not measurements): {Path(a).stem} vs {Path(b).stem}"))
    for column in ("shape", "A µs", "A band", "B µs", "B band", "A / B"):
        table.add_column(column, justify="left" if column == "shape" else "right")
    rows = list(comparison.shapes) + [("geomean", comparison.a_geomean, comparison.b_geomean)]
    for name, fa, fb in rows:
        table.add_row(name, format_model_us(fa["us"]), format_model_band(fa["low_us"], fa["high_us"]), format_model_us(fb["us"]),
                      format_model_band(fb["low_us"], fb["high_us"]), f"{fa['us'] / fb['us']:.2f}×")
    return table


def print_estimate_diff(console, comparison, verdict: str) -> None:
    console.print(estimate_diff_table(comparison))
    console.print(escape(verdict), highlight=False)
