"""The scoreboard's chart: per-shape latency by submission, with the bandwidth floors (results/scoreboard.png)."""
from pathlib import Path

from harness.floors import copy_bandwidth, floor_ns
from harness.records import shape_label


def draw_chart(tables: list, path: Path) -> Path | None:
    """Per-shape latency (log y) by submission, one panel per timed table; None when nothing is timed."""
    timed = [t for t in tables if t.timed]
    if not timed:
        return None
    from matplotlib.figure import Figure  # a bare Figure renders with Agg and touches no global backend
    from matplotlib.ticker import FuncFormatter

    fig = Figure(figsize=(11, 4.2 * len(timed)), layout="constrained")
    axes = fig.subplots(len(timed), 1, squeeze=False)[:, 0]
    floor_styles = {"bf16": ":", "fp8": "--", "mxfp4": "-."}
    for ax, table in zip(axes, timed):
        x = list(range(len(table.shapes)))
        for row in table.rows:
            points = [(i, row.means[s] / 1000) for i, s in enumerate(table.shapes) if s in row.means]
            name = row.label + (" ★" if row.best else "")
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", linewidth=1.5, label=name)
        bandwidth = copy_bandwidth(table.device)
        if bandwidth:
            for kv_format, style in floor_styles.items():
                floors = [floor_ns(s, kv_format, bandwidth[0]) / 1000 for s in table.shapes]
                ax.plot(x, floors, linestyle=style, color="0.45", linewidth=1.2,
                        label=f"floor {kv_format} KV @ {bandwidth[0] / 1e12:.2f} TB/s")
        subtitle = (f"floors: KV + Q + output bytes / copy bandwidth ({bandwidth[1]})" if bandwidth
                    else "no bandwidth figure for this device: no floors drawn")
        ax.set_title(f"{table.title}\n{subtitle}", fontsize=10)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.set_xticks(x, [shape_label(s) for s in table.shapes])
        ax.set_ylabel("time per call (µs)")
        ax.grid(True, which="both", axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path
