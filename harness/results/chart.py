"""The scoreboard's chart (results/scoreboard.png): per-shape latency by submission, with the bandwidth floors.

One panel per device, for the mode that ranks (leaderboard, else benchmark). Shapes sit on a categorical
axis ordered by (batch, kv length); each submission is a row of markers, never a line across unrelated
shapes; each floor is a short dash over its shape. Tables of interpreter times never reach here (the
scoreboard leaves them out unless asked).
"""
from pathlib import Path

from harness.results.floors import copy_bandwidth, floor_ns
from harness.results.records import shape_label

RANKED_FIRST = ("leaderboard", "benchmark")
FLOOR_STYLES = {"bf16": ":", "fp8": "--", "mxfp4": "-."}
MARKERS = "osD^v<>PXh*"


def ranked_panels(tables: list) -> list:
    """Per device (and remote run), the timed table of the mode that ranks: leaderboard, else benchmark."""
    chosen = {}
    for table in tables:
        if not table.timed or table.mode not in RANKED_FIRST or not any(row.means for row in table.rows):
            continue
        key = (table.device, table.run)
        if key not in chosen or RANKED_FIRST.index(table.mode) < RANKED_FIRST.index(chosen[key].mode):
            chosen[key] = table
    return list(chosen.values())


def plain_number(value: float, _position=None) -> str:
    """Tick labels as plain numbers (2, 50, 1,000, 100,000), never 1e+06 beside 100000."""
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def draw_chart(tables: list, path: Path) -> Path | None:
    """Draw the ranked panels; None (and no file) when nothing is timed."""
    panels = ranked_panels(tables)
    if not panels:
        return None
    from matplotlib.figure import Figure  # a bare Figure renders with Agg and touches no global backend
    from matplotlib.ticker import FuncFormatter

    fig = Figure(figsize=(11, 4.4 * len(panels)), layout="constrained")
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, table in zip(axes, panels):
        shapes = sorted(table.shapes, key=lambda shape: (shape[0], shape[2], shape[1]))
        rows = [row for row in table.rows if row.means]
        width = 0.8 / max(len(rows), 1)
        for number, row in enumerate(rows):
            offset = (number - (len(rows) - 1) / 2) * width
            points = [(i + offset, row.means[shape] / 1000) for i, shape in enumerate(shapes) if shape in row.means]
            ax.plot([p[0] for p in points], [p[1] for p in points], linestyle="none",
                    marker=MARKERS[number % len(MARKERS)], markersize=7, label=row.label + (" ★" if row.best else ""))
        bandwidth = copy_bandwidth(table.device)
        if bandwidth:
            for kv_format, style in FLOOR_STYLES.items():
                for i, shape in enumerate(shapes):
                    ax.hlines(floor_ns(shape, kv_format, bandwidth[0]) / 1000, i - 0.45, i + 0.45, colors="0.45",
                              linestyles=style, linewidth=1.2,
                              label=f"floor {kv_format} KV @ {bandwidth[0] / 1e12:.2f} TB/s" if i == 0 else None)
        subtitle = (f"floors: KV + Q + output bytes / copy bandwidth ({bandwidth[1]})" if bandwidth
                    else "no bandwidth figure for this device: no floors drawn")
        ax.set_title(f"{table.title}\n{subtitle}", fontsize=10)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(plain_number))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda value, position: ""))
        ax.set_xticks(range(len(shapes)), [shape_label(shape) for shape in shapes])
        ax.set_xlim(-0.6, len(shapes) - 0.4)
        ax.set_ylabel("time per call (µs)")
        ax.grid(True, which="major", axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path
