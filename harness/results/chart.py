"""The scoreboard's chart (results/scoreboard.png): per-shape latency by submission, with the bandwidth floors.

One panel per device, for the mode that ranks (leaderboard, else benchmark). CPU times are not GPU times:
a CPU panel is drawn only when no GPU has times, and then says so in its title. Shapes sit on a categorical
axis in the task's order ((4,1k) (4,8k) (32,1k) ... (256,8k): batch, then kv length); each submission is a
row of markers, never a line across unrelated shapes; each floor is a short dash over its shape. The log
axis spans at least SPAN, so that it carries several ticks (1, 2, 5 per decade). Tables of interpreter times
never reach here (the scoreboard leaves them out unless asked).
"""
import math

from pathlib import Path

from harness.results.floors import copy_bandwidth, floor_ns
from harness.results.records import shape_label

RANKED_FIRST = ("leaderboard", "benchmark")
FLOOR_STYLES = {"bf16": ":", "fp8": "--", "mxfp4": "-."}
MARKERS = "osD^v<>PXh*"
SPAN = 12.5  # the narrowest y range (max / min): 1-2-5 ticks then number at least three
CPU_TITLE = "CPU times, not GPU times: they say nothing about how fast a kernel is on a GPU"


def ranked_panels(tables: list) -> list:
    """Per device (and remote run), the timed table of the mode that ranks: leaderboard, else benchmark;
    CPU tables only when no GPU table has times."""
    chosen = {}
    for table in tables:
        if not table.timed or table.mode not in RANKED_FIRST or not any(row.means for row in table.rows):
            continue
        key = (table.device, table.run)
        if key not in chosen or RANKED_FIRST.index(table.mode) < RANKED_FIRST.index(chosen[key].mode):
            chosen[key] = table
    gpu = [table for table in chosen.values() if not on_cpu(table)]
    return gpu or list(chosen.values())


def on_cpu(table) -> bool:
    return table.arch == "cpu"


def task_order(shape: tuple) -> tuple:
    """(batch, kv length, q length): task.yml's benchmark order for shapes (batch, q length, kv length)."""
    return shape[0], shape[2], shape[1]


def y_limits(values: list) -> tuple:
    """The data's range, widened about its middle to at least SPAN."""
    low, high = min(values), max(values)
    widen = math.sqrt(max(SPAN / (high / low), 1.0)) * 1.3  # and a margin for the markers
    return low / widen, high * widen


def plain_number(value: float, _position=None) -> str:
    """Tick labels as plain numbers (2, 50, 1,000, 100,000), never 1e+06 beside 100000."""
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def draw_chart(tables: list, path: Path) -> Path | None:
    """Draw the ranked panels; None (and no file) when nothing is timed."""
    fig = chart_figure(tables)
    if fig is None:
        return None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def chart_figure(tables: list):
    """The chart as a matplotlib Figure, one panel per ranked table; None when nothing is timed."""
    panels = ranked_panels(tables)
    if not panels:
        return None
    from matplotlib.figure import Figure  # a bare Figure renders with Agg and touches no global backend

    fig = Figure(figsize=(11, 4.4 * len(panels)), layout="constrained")
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, table in zip(axes, panels):
        draw_panel(ax, table)
    return fig


def draw_panel(ax, table) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    shapes = sorted(table.shapes, key=task_order)
    rows = [row for row in table.rows if row.means]
    width = 0.8 / max(len(rows), 1)
    drawn = []
    for number, row in enumerate(rows):
        offset = (number - (len(rows) - 1) / 2) * width
        points = [(i + offset, row.means[shape] / 1000) for i, shape in enumerate(shapes) if shape in row.means]
        drawn += [p[1] for p in points]
        ax.plot([p[0] for p in points], [p[1] for p in points], linestyle="none",
                marker=MARKERS[number % len(MARKERS)], markersize=7, label=row.label + (" ★" if row.best else ""))
    bandwidth = copy_bandwidth(table.device)
    if bandwidth:
        for kv_format, style in FLOOR_STYLES.items():
            for i, shape in enumerate(shapes):
                floor = floor_ns(shape, kv_format, bandwidth[0]) / 1000
                drawn.append(floor)
                ax.hlines(floor, i - 0.45, i + 0.45, colors="0.45", linestyles=style, linewidth=1.2,
                          label=f"floor {kv_format} KV @ {bandwidth[0] / 1e12:.2f} TB/s" if i == 0 else None)
    subtitle = (f"floors: KV + Q + output bytes / copy bandwidth ({bandwidth[1]})" if bandwidth
                else "no bandwidth figure for this device: no floors drawn")
    if on_cpu(table):
        subtitle = f"{CPU_TITLE}; {subtitle}"
    ax.set_title(f"{table.title}\n{subtitle}", fontsize=10, color="darkred" if on_cpu(table) else "black")
    ax.set_yscale("log")
    ax.set_ylim(*y_limits(drawn))
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(plain_number))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(range(len(shapes)), [shape_label(shape) for shape in shapes])
    ax.set_xlim(-0.6, len(shapes) - 0.4)
    ax.set_ylabel("time per call (µs)")
    ax.grid(True, which="major", axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
