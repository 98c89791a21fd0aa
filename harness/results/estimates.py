"""MI355X estimates in the views: the scoreboard's "MI355X estimate" column and section, and `harness diff
--estimate A B`. Estimates are records of mode "estimate" (harness/estimate/runner.py writes them); they are a
model's figures, never measured times, so they are read only here and never mixed with timings.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.results import records
from harness.results.diff import NothingComparable, parse_ref
from harness.results.figures import format_model_band, format_model_us
from harness.results.records import label, shape_label

MODE = "estimate"
COLUMN = "MI355X estimate (µs, model)"


def is_estimate(record: dict) -> bool:
    return record["mode"] == MODE


def latest(everything: list[dict]) -> dict:
    """identity -> the newest estimate record of each submission (refusals included)."""
    return records.latest_by([r for r in everything if is_estimate(r)], records.identity)


def cell(record: dict | None) -> str:
    """'62.1 (49.3–88.0)': the benchmark-mode geomean and its band; the refusal's first words when there is none."""
    if record is None:
        return "–"
    figures = (record["estimate"] or {}).get("geomean")
    if not figures:
        return f"none: {record['reason'][:60]}" if record["reason"] else "none"
    return f"{format_model_us(figures['us'])} ({format_model_band(figures['low_us'], figures['high_us'])})"


def render_section(everything: list[dict]) -> list[str]:
    """The scoreboard's section listing every submission's newest estimate (markdown lines; none when no estimate)."""
    found = latest(everything)
    if not found:
        return []
    lines = ["## MI355X estimates (a cost model, not measurements)", "",
             "`harness estimate N`: what the submission launches, priced by the MI355X cost model fitted to public "
             "leaderboard figures (harness/estimate/data/mi355x_costs.json); the band covers the model's "
             "leave-one-out errors. Never a verified time.", "",
             "| submission | benchmark geomean (µs) | band | ranked geomean (µs) | band | recorded on | recorded (UTC) |",
             "|---|---:|---|---:|---|---|---|"]
    for record in sorted(found.values(), key=lambda r: label(r)):
        figures = (record["estimate"] or {}).get("geomean")
        where = (record["estimate"] or {}).get("recorded_on", "?")
        if (record["estimate"] or {}).get("scaled"):
            where += " (scaled)"
        when = (record["finished"] or "?")[:16].replace("T", " ")
        if figures:
            lines.append(f"| {label(record)} | {format_model_us(figures['us'])} | "
                         f"{format_model_band(figures['low_us'], figures['high_us'])} | "
                         f"{format_model_us(figures['ranked_us'])} | "
                         f"{format_model_band(figures['ranked_low_us'], figures['ranked_high_us'])} | {where} | {when} |")
        else:
            reason = (record["reason"] or "no estimate").replace("|", "\\|")
            lines.append(f"| {label(record)} | none: {reason} | | | | {where} | {when} |")
    return lines + [""]


@dataclass
class EstimateComparison:
    a_record: dict
    b_record: dict
    shapes: list    # (shape label, a figures, b figures): each {"us", "low_us", "high_us"}
    a_geomean: dict
    b_geomean: dict

    @property
    def faster(self) -> str:
        return label(self.b_record) if self.b_geomean["us"] < self.a_geomean["us"] else label(self.a_record)

    @property
    def speedup(self) -> float:
        """A's estimate over B's (above 1: the model expects B to be faster)."""
        return self.a_geomean["us"] / self.b_geomean["us"]

    @property
    def beyond_band(self) -> bool:
        """The two bands do not overlap: the gap is larger than the model's error."""
        a, b = self.a_geomean, self.b_geomean
        return a["high_us"] < b["low_us"] or b["high_us"] < a["low_us"]


def compare(everything: list[dict], a: str, b: str) -> EstimateComparison:
    """The newest estimates of A and B; NothingComparable (one line) when either has none."""
    chosen = []
    for text in (a, b):
        ref = parse_ref(text)
        found = [r for r in everything if is_estimate(r) and ref.matches(r)]
        if not found:
            raise NothingComparable(f"no MI355X estimate of submission '{text}' in the ledger; "
                                    f"run harness estimate {text} first")
        newest = max(found, key=lambda r: r["finished"])
        if not (newest["estimate"] or {}).get("geomean"):
            raise NothingComparable(f"the newest estimate of '{text}' has none: {newest['reason']}")
        chosen.append(newest)
    shapes_a, shapes_b = ({tuple(s["shape"]): s for s in r["estimate"]["shapes"]} for r in chosen)
    shapes = [(shape_label((s[0], 1, s[1])), shapes_a[s], shapes_b[s]) for s in sorted(set(shapes_a) & set(shapes_b))]
    return EstimateComparison(chosen[0], chosen[1], shapes, chosen[0]["estimate"]["geomean"],
                              chosen[1]["estimate"]["geomean"])


def verdict(comparison: EstimateComparison) -> str:
    a, b = label(comparison.a_record), label(comparison.b_record)
    ratio = comparison.speedup if comparison.speedup >= 1 else 1 / comparison.speedup
    gap = ("larger than the band: the model expects this order" if comparison.beyond_band else
           "within the band: the model cannot tell them apart")
    return f"the model expects {comparison.faster} to be faster on MI355X ({ratio:.2f}× by geomean, {a} vs {b}); the gap is {gap}"
