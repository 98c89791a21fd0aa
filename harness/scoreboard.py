"""The scoreboard: scoreboard.md and results/scoreboard.png, regenerated from the ledger.

Reading order: `build_tables` turns ledger records into one `Table` per (device, mode, cases,
remote run) holding the latest record of each submission; `render_markdown` writes the page;
`draw_chart` draws per-shape latency with the bandwidth floors; `regenerate` does all three.
Everything here only reads the ledger.
"""
from __future__ import annotations

import statistics
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from harness import ledger

REPO_ROOT = ledger.REPO_ROOT
DEFAULT_OUTPUT = REPO_ROOT / "scoreboard.md"
DEFAULT_CHART = REPO_ROOT / "results" / "scoreboard.png"

TIMED_MODES = ("benchmark", "leaderboard")
MODE_ORDER = ("test", "benchmark", "leaderboard", "profile")
REMOTE_NOTE = ("Remote numbers are parsed from popcorn's report, which rounds them to about three "
               "significant digits, so the geomean score here is approximate.")

# Bytes a kernel must move for one KV token, by the KV format it reads (576 dims per token).
KV_BYTES_PER_TOKEN = {"bf16": 1152, "fp8": 576, "mxfp4": 306}  # mxfp4: 288 data bytes + 18 e8m0 scales
# Per query token: Q read as bf16 (16 heads x 576) and the output written as bf16 (16 heads x 512).
Q_AND_OUTPUT_BYTES_PER_QUERY = 16 * 576 * 2 + 16 * 512 * 2

# Copy bandwidth per device (matched as a substring of the device name), bytes per second.
COPY_BANDWIDTH = {
    "H200": (4.27e12, "measured on the lent H200"),
    "MI355X": (8.0e12, "datasheet lead, not measured"),
}


@dataclass
class Row:
    """One submission's latest record in a table."""
    label: str
    number: int | None
    record: dict
    means: dict            # shape -> mean ns (timed tables)
    verdicts: dict         # shape -> case status
    reported_score_ns: float | None = None  # remote score without per-shape times (popcorn >= v1.3.16)
    geomean_ns: float | None = None
    speedup: float | None = None
    best: bool = False
    unverified: bool = False


@dataclass
class Listed:
    """A submission whose latest record in a table failed or was skipped."""
    label: str
    status: str
    reason: str
    unverified: bool = False


@dataclass
class Table:
    device: str
    arch: str
    mode: str
    cases: str
    run: str | None        # remote "public" / "secret", None for local runs
    remote: bool
    shapes: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    failing: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    baseline: str | None = None
    notes: list = field(default_factory=list)
    secret: dict = field(default_factory=dict)  # label -> verdict of the remote secret-seed run

    @property
    def timed(self) -> bool:
        return self.mode in TIMED_MODES and any(row.means or row.reported_score_ns for row in self.rows)

    @property
    def title(self) -> str:
        show_arch = self.arch and self.arch.lower() not in self.device.lower()
        parts = [self.device, self.arch] if show_arch else [self.device]
        parts += [self.mode, f"{self.cases} cases"]
        if self.remote:
            parts.append(f"{self.run} run" if self.run else "attempts with no report")
        return " · ".join(parts)


# ---------------------------------------------------------------- small helpers

def shape_of(spec: dict) -> tuple:
    return (int(spec.get("batchsize", 0)), int(spec.get("qseqlen", 1)), int(spec.get("kvseqlen", 0)))


def shape_label(shape: tuple) -> str:
    batch, qseq, kv = shape
    kv_text = f"{kv // 1024}k" if kv and kv % 1024 == 0 else str(kv)
    return f"b{batch} kv{kv_text}" if qseq == 1 else f"b{batch} q{qseq} kv{kv_text}"


def format_us(ns: float | None) -> str:
    """Nanoseconds as microseconds with about three significant digits."""
    if ns is None:
        return "–"
    us = ns / 1000.0
    if us >= 100:
        return f"{us:.0f}"
    if us >= 10:
        return f"{us:.1f}"
    return f"{us:.2f}"


def geomean(values) -> float | None:
    values = list(values)
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return statistics.geometric_mean(values)


def submission_key(record: dict):
    sub = record.get("submission") or {}
    return sub.get("number") if sub.get("number") is not None else sub.get("path", "?")


def submission_label(record: dict) -> str:
    sub = record.get("submission") or {}
    path = sub.get("path")
    if path:
        return Path(path).stem
    return str(sub.get("number", "?"))


class MalformedRecordWarning(UserWarning):
    """A ledger line that is valid JSON but not a record this harness can read."""


def finished_at(record: dict) -> str:
    return str(record.get("finished") or "")


def _well_formed(record: dict) -> bool:
    try:
        if not isinstance(record.get("submission"), dict) or not isinstance(record.get("device"), dict):
            return False
        for result in record.get("results") or []:
            shape_of(result.get("spec") or {})
            mean = (result.get("stats") or {}).get("mean")
            if mean is not None:
                float(mean)
        return True
    except (TypeError, ValueError, AttributeError):
        return False


def usable_records(records: list[dict]) -> list[dict]:
    """The records this module can read; any other is left out with a MalformedRecordWarning."""
    usable = [record for record in records if _well_formed(record)]
    if len(usable) < len(records):
        warnings.warn(f"left out {len(records) - len(usable)} malformed ledger record(s)", MalformedRecordWarning,
                      stacklevel=2)
    return usable


def case_means(record: dict) -> dict:
    """shape -> mean ns for every case that passed and was timed (the last one wins on repeats)."""
    means = {}
    for result in record.get("results") or []:
        stats = result.get("stats") or {}
        if result.get("status") == "pass" and stats.get("mean") is not None:
            means[shape_of(result.get("spec") or {})] = float(stats["mean"])
    return means


def reported_score_ns(record: dict) -> float | None:
    """The score a remote report printed (seconds in the record), when it came without per-shape times."""
    score = (record.get("remote") or {}).get("score") if record.get("source") == "remote" else None
    return float(score) * 1e9 if score else None


def case_verdicts(record: dict) -> dict:
    return {shape_of(r.get("spec") or {}): r.get("status", "?") for r in record.get("results") or []}


def one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failure_reason(record: dict) -> str:
    """The record's reason, else the first case that did not pass."""
    reason = one_line(record.get("reason", ""))
    if reason:
        return reason
    for result in record.get("results") or []:
        if result.get("status") != "pass":
            spec_text = shape_label(shape_of(result.get("spec") or {}))
            return one_line(f"{spec_text}: {result.get('status')}: {result.get('message', '')}")
    return record.get("status", "?")


def copy_bandwidth(device_name: str) -> tuple | None:
    for key, value in COPY_BANDWIDTH.items():
        if key.lower() in device_name.lower():
            return value
    return None


def floor_ns(shape: tuple, kv_format: str, bandwidth: float) -> float:
    """Time to move the KV cache in `kv_format` plus Q and the output once at `bandwidth` bytes/s."""
    batch, qseq, kv = shape
    moved = batch * kv * KV_BYTES_PER_TOKEN[kv_format] + batch * qseq * Q_AND_OUTPUT_BYTES_PER_QUERY
    return moved / bandwidth * 1e9


# ---------------------------------------------------------------- MI355X verification

def requirements_of_record(record: dict, root: Path = REPO_ROOT, _cache: dict | None = None) -> frozenset:
    """What a submission needs: from the record if it says, else inferred from its file."""
    sub = record.get("submission") or {}
    if sub.get("requirements") is not None:
        return frozenset(sub["requirements"])
    path = sub.get("path")
    if not path:
        return frozenset()
    file = Path(path) if Path(path).is_absolute() else Path(root) / path
    if _cache is not None and file in _cache:
        return _cache[file]
    try:
        from harness.submission import needs_of
        # Optional ones too: on MI355X the guarded aiter/HIP path is the one that runs.
        found = frozenset(r.name for r in needs_of(file.read_text(encoding="utf-8", errors="replace")))
    except (OSError, ImportError):
        found = frozenset()  # file gone (or the inference module missing): nothing to flag
    if _cache is not None:
        _cache[file] = found
    return found


def needs_mi355x(requirements: frozenset) -> bool:
    return bool({"hip", "aiter"} & set(requirements))


def verified_on_mi355x(record: dict, records: list[dict]) -> bool:
    """A passing test or leaderboard run on MI355X (remote, or a local gfx950) of the same file or number."""
    sub = record.get("submission") or {}
    for other in records:
        other_sub = other.get("submission") or {}
        on_mi355x = other.get("source") == "remote" or (other.get("device") or {}).get("arch") == "gfx950"
        if not on_mi355x or other.get("mode") not in ("test", "leaderboard") or other.get("status") != "pass":
            continue
        same_file = sub.get("sha256") and other_sub.get("sha256") == sub.get("sha256")
        same_number = sub.get("number") is not None and other_sub.get("number") == sub.get("number")
        if same_file or same_number:
            return True
    return False


# ---------------------------------------------------------------- tables

def group_key(record: dict) -> tuple:
    device = record.get("device") or {}
    run = (record.get("remote") or {}).get("run") if record.get("source") == "remote" else None
    return (device.get("name", "unknown device"), record.get("mode", "?"), str(record.get("cases", "?")), run)


def _sort_key(key: tuple, remote: bool) -> tuple:
    device, mode, cases, run = key
    mode_rank = MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)
    return (remote, device, mode_rank, mode, cases != "official", cases, run or "")


def _row_order(row) -> tuple:
    return (row.number is None, row.number if row.number is not None else 0, row.label)


def build_tables(records: list[dict], *, baseline: int | None = None, root: Path = REPO_ROOT) -> list[Table]:
    """One table per (device, mode, cases, remote run) with the latest record of each submission."""
    records = usable_records(records)
    latest: dict[tuple, dict] = {}
    for record in records:
        slot = (group_key(record), submission_key(record))
        held = latest.get(slot)
        if held is None or finished_at(record) >= finished_at(held):
            latest[slot] = record

    requirement_cache: dict = {}
    tables: dict[tuple, Table] = {}
    for (key, _), record in latest.items():
        device = record.get("device") or {}
        table = tables.get(key)
        if table is None:
            table = tables[key] = Table(device=key[0], arch=device.get("arch", ""), mode=key[1], cases=key[2],
                                        run=key[3], remote=record.get("source") == "remote")
        unverified = (needs_mi355x(requirements_of_record(record, root, requirement_cache))
                      and not verified_on_mi355x(record, records))
        label = submission_label(record)
        status = record.get("status", "?")
        if status == "pass":
            table.rows.append(Row(label=label, number=(record.get("submission") or {}).get("number"),
                                  record=record, means=case_means(record), verdicts=case_verdicts(record),
                                  reported_score_ns=reported_score_ns(record), unverified=unverified))
        elif status == "skip":
            table.skipped.append(Listed(label, status, failure_reason(record), unverified))
        else:
            table.failing.append(Listed(label, status, failure_reason(record), unverified))

    _merge_secret_runs(tables)
    ordered = [tables[k] for k in sorted(tables, key=lambda k: _sort_key(k, tables[k].remote))]
    for table in ordered:
        table.rows.sort(key=_row_order)
        table.failing.sort(key=lambda item: item.label)
        table.skipped.sort(key=lambda item: item.label)
        _fill_scores(table, baseline)
    return ordered


def _merge_secret_runs(tables: dict) -> None:
    """A remote secret-seed run becomes a column of its public run's table (it prints no timings)."""
    for key in [k for k in tables if k[3] == "secret"]:
        public = tables.get((*key[:3], "public"))
        if public is None:
            continue
        secret = tables.pop(key)
        for row in secret.rows:
            score = reported_score_ns(row.record)
            public.secret[row.label] = f"pass (score ≈ {format_us(score)} µs)" if score else "pass"
        for item in secret.failing + secret.skipped:
            public.secret[item.label] = f"{item.status}: {item.reason}"


def _fill_scores(table: Table, baseline: int | None) -> None:
    shapes = set()
    for row in table.rows:
        shapes |= set(row.means) if table.mode in TIMED_MODES else set(row.verdicts)
    table.shapes = sorted(shapes)
    if not table.timed:
        return
    for row in table.rows:
        # A geomean over fewer shapes than the others would not be comparable: leave it out.
        if row.means and all(shape in row.means for shape in table.shapes):
            row.geomean_ns = geomean(row.means[shape] for shape in table.shapes)
        elif not row.means and row.reported_score_ns:
            row.geomean_ns = row.reported_score_ns
    flushes = {row.label: row.record.get("flush") for row in table.rows if not table.remote}
    if len(set(flushes.values())) > 1:
        table.notes.append("Rows were timed with different cache flushes: "
                           + ", ".join(f"{label} ({flush})" for label, flush in flushes.items()) + ".")
    scored = [row for row in table.rows if row.geomean_ns is not None]
    if not scored:
        return
    base = None
    if baseline is not None:
        base = next((row for row in scored if row.number == baseline), None)
        if base is None:
            table.notes.append(f"Submission {baseline} has no complete result here; "
                               f"speedups are against the lowest-numbered one instead.")
    base = base or scored[0]
    table.baseline = base.label
    for row in scored:
        row.speedup = base.geomean_ns / row.geomean_ns
    min(scored, key=lambda row: row.geomean_ns).best = True


# ---------------------------------------------------------------- markdown

def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def _name_cell(label: str, best: bool = False, unverified: bool = False) -> str:
    text = f"**{label}** ★" if best else label
    if unverified:
        text += " ⚠ not verified on MI355X"
    return _cell(text)


def _recorded(record: dict) -> str:
    return (record.get("finished") or record.get("started") or "?")[:16].replace("T", " ")


def render_table(table: Table) -> str:
    lines = [f"### {table.title}", ""]
    if table.remote and table.timed:
        lines += [f"> {REMOTE_NOTE}", ""]
    if table.rows:
        heads = ["submission", *(shape_label(s) for s in table.shapes)]
        if table.timed:
            score = "score ≈ geomean (µs)" if table.remote else "geomean (µs)"
            heads += [score, f"speedup vs {table.baseline}"]
            aligns = ["---"] + ["---:"] * (len(heads) - 1)
        else:
            heads.append("status")
            aligns = ["---"] + [":---:"] * (len(heads) - 2) + ["---"]
        heads.append("recorded (UTC)")
        aligns.append("---")
        if table.secret:
            heads.append("secret run")
            aligns.append("---")
        lines.append("| " + " | ".join(_cell(h) for h in heads) + " |")
        lines.append("| " + " | ".join(aligns) + " |")
        for row in table.rows:
            cells = [_name_cell(row.label, row.best, row.unverified)]
            if table.timed:
                cells += [format_us(row.means.get(s)) for s in table.shapes]
                geo = format_us(row.geomean_ns)
                cells += [f"**{geo}**" if row.best else geo,
                          f"{row.speedup:.2f}×" if row.speedup is not None else "–"]
            else:
                cells += ["✓" if row.verdicts.get(s) == "pass" else _cell(row.verdicts.get(s, "–")) for s in table.shapes]
                cells.append("pass")
            cells.append(_recorded(row.record))
            if table.secret:
                cells.append(_cell(table.secret.get(row.label, "–")))
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        if table.timed:
            lines.append("Per-shape mean time in µs; geomean over every shape in the table; "
                         "speedup = baseline geomean / this geomean; ★ = best.")
            floors = floor_line(table)
            if floors:
                lines.append(floors)
            if any(row.reported_score_ns and not row.means for row in table.rows):
                lines.append("Rows without per-shape times show the score popcorn printed (popcorn >= v1.3.16 "
                             "reports no per-shape timings).")
            lines.append("")
    for note in table.notes:
        lines += [f"Note: {note}", ""]
    for heading, items in (("Failing", table.failing), ("Skipped", table.skipped)):
        if items:
            lines.append(f"{heading}:")
            for item in items:
                secret = f" (secret run: {_cell(table.secret[item.label])})" if item.label in table.secret else ""
                lines.append(f"- {_name_cell(item.label, unverified=item.unverified)}: {item.status} — "
                             f"{_cell(item.reason)}{secret}")
            lines.append("")
    listed = {row.label for row in table.rows} | {item.label for item in table.failing + table.skipped}
    for label in sorted(set(table.secret) - listed):
        lines += [f"Secret run only: {_cell(label)}: {_cell(table.secret[label])}", ""]
    return "\n".join(lines)


def floor_line(table: Table) -> str | None:
    """The bandwidth floors' geomeans over this table's shapes, when the device's bandwidth is known."""
    bandwidth = copy_bandwidth(table.device)
    if not bandwidth or not table.shapes:
        return None
    parts = [f"{kv_format} {format_us(geomean(floor_ns(s, kv_format, bandwidth[0]) for s in table.shapes))}"
             for kv_format in KV_BYTES_PER_TOKEN]
    return (f"Bandwidth floor geomeans (µs; KV + Q + output bytes at {bandwidth[0] / 1e12:.2f} TB/s, "
            f"{bandwidth[1]}): " + ", ".join(parts) + ".")


def unverified_submissions(tables: list[Table]) -> list[str]:
    labels = {row.label for t in tables for row in t.rows if row.unverified}
    labels |= {item.label for t in tables for item in t.failing + t.skipped if item.unverified}
    return sorted(labels)


def render_markdown(tables: list[Table], *, ledger_file: str, record_count: int, generated: datetime,
                    chart: str | None) -> str:
    lines = ["# Scoreboard", "",
             f"Generated {generated.strftime('%Y-%m-%d %H:%M UTC')} by `harness scoreboard` from "
             f"`{ledger_file}` ({record_count} records). Do not edit by hand: run `make scoreboard`.", ""]
    if not tables:
        lines += ["No results yet: run `harness run --all` (or `make run`) first.", ""]
        return "\n".join(lines)
    if chart:
        lines += [f"Chart: [{chart}]({chart}) (per-shape latency by submission, log scale, with bandwidth floors).",
                  "", f"![per-shape latency]({chart})", ""]
    else:
        lines += ["Chart: none (no timed results yet).", ""]
    unverified = unverified_submissions(tables)
    if unverified:
        lines += ["⚠ Needs HIP or aiter and has no passing test or leaderboard run on MI355X in the ledger: "
                  + ", ".join(unverified) + ".", ""]
    local = [t for t in tables if not t.remote]
    remote = [t for t in tables if t.remote]
    if local:
        lines += ["## Local runs", ""] + [render_table(t) for t in local]
    if remote:
        lines += ["## Remote runs (MI355X via popcorn)", ""] + [render_table(t) for t in remote]
    return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------- chart

def draw_chart(tables: list[Table], path: Path) -> Path | None:
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


# ---------------------------------------------------------------- all of it

@dataclass
class Summary:
    output: Path
    chart: Path | None
    tables: int
    records: int


def _display_path(path: Path, relative_to: Path) -> str:
    """Relative to `relative_to` when the path lies below it, else absolute."""
    absolute = Path(path).resolve()
    try:
        return str(absolute.relative_to(Path(relative_to).resolve()))
    except ValueError:
        return str(absolute)


def regenerate(*, ledger_file=None, output=DEFAULT_OUTPUT, chart=DEFAULT_CHART, baseline: int | None = None,
               now: datetime | None = None, root: Path = REPO_ROOT) -> Summary:
    """Read the ledger, write the markdown page and the chart, and say what was written."""
    source = ledger.ledger_path(ledger_file)
    records = ledger.read(source)
    tables = build_tables(records, baseline=baseline, root=root)
    output = Path(output)
    drawn = draw_chart(tables, Path(chart))
    page = render_markdown(tables, ledger_file=_display_path(source, root), record_count=len(records),
                           generated=now or datetime.now(timezone.utc),
                           chart=_display_path(drawn, output.parent) if drawn else None)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(page, encoding="utf-8")
    return Summary(output=output, chart=drawn, tables=len(tables), records=len(records))
