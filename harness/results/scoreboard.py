"""The scoreboard: scoreboard.md and results/scoreboard.png, regenerated from the ledger.

Reading order: `build_tables` turns ledger records into one `Table` per (device, mode, cases,
remote run) holding the latest record of each submission; `render_markdown` writes the page;
harness/results/chart.py draws the chart from the same tables; `regenerate` does all three.
Everything here only reads the ledger.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from harness import paths
from harness.results import estimates, records
from harness.results.chart import draw_chart
from harness.results.floors import KV_BYTES_PER_TOKEN, copy_bandwidth, floor_ns
from harness.results.figures import format_us, geomean
from harness.results.records import case_means, case_verdicts, label, shape_label
from harness.results.verification import needs_mi355x, verified_on_mi355x

TIMED_MODES = ("benchmark", "leaderboard")
MODE_ORDER = ("test", "benchmark", "leaderboard", "profile")
REMOTE_NOTE = ("Remote numbers are parsed from popcorn's report, which rounds them to about three "
               "significant digits, so the geomean score here is approximate.")

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
    estimate: str | None = None  # "MI355X estimate" column: the newest `harness estimate` of this submission


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
    interpreted: list = field(default_factory=list)  # passed, but timed through the Triton interpreter: left out
    standin: list = field(default_factory=list)  # passed on the aiter stand-in (correctness only): left out
    emulated: list = field(default_factory=list)  # passed on the gfx950 emulator (correctness only): left out

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

def reported_score_ns(record: dict) -> float | None:
    """The score a remote report printed (seconds in the record), when it came without per-shape times."""
    score = (record["remote"] or {}).get("score") if record["source"] == "remote" else None
    return float(score) * 1e9 if score else None


def one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failure_reason(record: dict) -> str:
    """The record's reason, else the first case that did not pass."""
    reason = one_line(record["reason"])
    if reason:
        return reason
    for result in record["results"]:
        if result["status"] != "pass":
            spec_text = shape_label(records.shape_of(result["spec"]))
            return one_line(f"{spec_text}: {result['status']}: {result['message']}")
    return record["status"]


# ---------------------------------------------------------------- tables

def _sort_key(key: tuple, remote: bool) -> tuple:
    device, mode, cases, run = key
    mode_rank = MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)
    return (remote, device, mode_rank, mode, cases != "official", cases, run or "")


def _row_order(row) -> tuple:
    return (row.number is None, row.number if row.number is not None else 0, row.label)


class BaselineError(ValueError):
    """--baseline names a submission the ledger has no result of (message is one line)."""


def build_tables(everything: list[dict], *, baseline: int | None = None,
                 include_interpreter: bool = False) -> list[Table]:
    """One table per (device, mode, cases, remote run) with the latest record of each submission.

    Times taken through the Triton interpreter are left out of timed tables (and so of the chart) unless
    include_interpreter: the table says so instead.
    """
    if baseline is not None and not any(r["submission"]["numbered"] and r["submission"]["number"] == baseline
                                        for r in everything):
        raise BaselineError(f"--baseline {baseline}: the ledger has no result of submission {baseline}")
    runs = [r for r in everything if r["mode"] not in ("compile", estimates.MODE)]  # those feed their own sections
    runs = records.without_outranked_skips(runs)
    estimated = estimates.latest(everything)
    latest = records.latest_by(runs, lambda r: (records.group_key(r), records.identity(r)))
    tables: dict[tuple, Table] = {}
    for (key, identity), record in latest.items():
        table = tables.get(key)
        if table is None:
            table = tables[key] = Table(device=key[0], arch=record["device"]["arch"], mode=key[1], cases=key[2],
                                        run=key[3], remote=record["source"] == "remote")
        needs = record["submission"]["requirements"] + record["submission"]["optional"]  # on MI355X a guarded path runs
        unverified = needs_mi355x(needs) and not verified_on_mi355x(record, everything)
        name = label(record)
        status = record["status"]
        if status == "pass" and record.get("standin") and record["mode"] in TIMED_MODES:
            table.standin.append(name)  # stand-in times: never in a timed table, whatever the options
        elif status == "pass" and records.emulated(record) and record["mode"] in TIMED_MODES:
            table.emulated.append(name)  # emulator times: never in a timed table either
        elif status == "pass" and record["interpreter"] and record["mode"] in TIMED_MODES and not include_interpreter:
            table.interpreted.append(name)
        elif status == "pass":
            table.rows.append(Row(label=name, number=record["submission"]["number"],
                                  record=record, means=case_means(record), verdicts=case_verdicts(record),
                                  reported_score_ns=reported_score_ns(record), unverified=unverified,
                                  estimate=estimates.cell(estimated[identity]) if identity in estimated else None))
        elif status == "skip":
            table.skipped.append(Listed(name, status, failure_reason(record), unverified))
        else:
            table.failing.append(Listed(name, status, failure_reason(record), unverified))

    _merge_secret_runs(tables)
    ordered = [tables[k] for k in sorted(tables, key=lambda k: _sort_key(k, tables[k].remote))]
    for table in ordered:
        if table.interpreted:
            table.notes.append(f"Left out: {', '.join(sorted(table.interpreted))} passed, but their times ran through "
                               "the Triton interpreter (TRITON_INTERPRET=1) and say nothing about a GPU "
                               "(harness scoreboard --include-interpreter shows them).")
        if table.standin:
            table.notes.append(f"Left out: {', '.join(sorted(table.standin))} passed on the aiter stand-in "
                               "(correctness only): their times say nothing about MI355X.")
        if table.emulated:
            table.notes.append(f"Left out: {', '.join(sorted(table.emulated))} passed on the {records.EMULATOR_MARK}: "
                               "their times say nothing about MI355X.")
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
    flushes = {row.label: row.record["flush"] for row in table.rows if not table.remote}
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
    return (record["finished"] or record["started"] or "?")[:16].replace("T", " ")


def render_table(table: Table) -> str:
    lines = [f"### {table.title}", ""]
    if not table.rows:  # a heading over notes alone would read as a lost table
        lines += ["No table: nothing here is tabled; the lines below say what ran and why.", ""]
    if table.remote and table.timed:
        lines += [f"> {REMOTE_NOTE}", ""]
    if table.rows:
        heads = ["submission", *(shape_label(s) for s in table.shapes)]
        if table.timed:
            score = "score ≈ geomean (µs)" if table.remote else "geomean (µs)"
            heads += [score, f"speedup vs {table.baseline}"]
            if not table.remote and any(row.estimate for row in table.rows):
                heads.append(estimates.COLUMN)
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
                if estimates.COLUMN in heads:
                    cells.append(_cell(row.estimate or "–"))
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
    for name in sorted(set(table.secret) - listed):
        lines += [f"Secret run only: {_cell(name)}: {_cell(table.secret[name])}", ""]
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


VERIFIED_COLUMNS = ("CPU", "GPU here", "aiter stand-in", "gfx950 emulated (CPU)", "compiled for gfx950", "MI355X")


def where_verified(everything: list[dict]) -> dict:
    """Numbered submission label -> {column: "✓ ..." / "✗ ..."}: the newest evidence of each kind in the ledger.

    CPU / GPU here: a passing test, benchmark or leaderboard run on such a device; compiled for gfx950: the
    newest `harness compile --target gfx950`; MI355X: a passing run there (remote, or a local gfx950)."""
    found: dict = {}
    for record in sorted(everything, key=lambda r: r["finished"]):
        if not record["submission"]["numbered"]:
            continue
        found.setdefault(label(record), {})  # listed even when every run of it was skipped
        if record["status"] == "skip" or estimates.is_estimate(record):  # an estimate verifies nothing
            continue
        backend, arch = record["device"]["backend"], record["device"]["arch"]
        if record["mode"] == "compile":
            column = "compiled for gfx950" if arch == "gfx950" else None
        elif record.get("standin"):  # correctness on the harness's torch aiter, never MI355X evidence
            column = "aiter stand-in"
        elif records.emulated(record):  # HIP on the harness's gfx950 emulator: correctness only
            column = "gfx950 emulated (CPU)"
        elif record["source"] == "remote" or arch == "gfx950":
            column = "MI355X"
        else:
            column = "CPU" if backend == "cpu" else "GPU here"
        if column is None or record["mode"] == "profile":
            continue
        where = "" if column not in ("GPU here", "aiter stand-in") else f" {record['device']['name']}"
        mark = {"pass": "✓", "rejected": "✗ the server would reject it,"}.get(record["status"], "✗")
        found.setdefault(label(record), {})[column] = f"{mark}{where} ({record['finished'][:10]})"
    return found


def render_verified(everything: list[dict]) -> list[str]:
    found = where_verified(everything)
    if not found:
        return []
    lines = ["## Where each submission was verified", "",
             "The newest evidence of each kind in the ledger (✓ passed, ✗ failed, – none). \"Compiled for gfx950\" is "
             "upstream LLVM 22 on this repository's machines (HIP or Triton), not the runner's compiler; \"gfx950 "
             f"emulated (CPU)\" is the harness's emulator ({records.EMULATOR_MARK}): a kernel is "
             "verified only once it ran on an MI355X.", "",
             "| submission | " + " | ".join(VERIFIED_COLUMNS) + " |", "|---|" + "---|" * len(VERIFIED_COLUMNS)]
    for name in sorted(found):
        lines.append(f"| {_cell(name)} | " + " | ".join(_cell(found[name].get(c, "–")) for c in VERIFIED_COLUMNS) + " |")
    return lines + [""]


def render_markdown(tables: list[Table], *, ledger_file: str, record_count: int, generated: datetime,
                    chart: str | None, verified: list[str] | None = None, sections: list[str] | None = None) -> str:
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
    lines += verified or []
    lines += sections or []
    local = [t for t in tables if not t.remote]
    remote = [t for t in tables if t.remote]
    if local:
        lines += ["## Local runs", ""] + [render_table(t) for t in local]
    if remote:
        lines += ["## Remote runs (MI355X via popcorn)", ""] + [render_table(t) for t in remote]
    return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------- all of it

@dataclass
class Summary:
    output: Path
    chart: Path | None
    tables: int
    records: int


class EmptyScoreboard(ValueError):
    """The ledger gives no table and a page is already there; the message says how to replace it anyway."""


def regenerate(*, ledger_file=None, output=None, chart=None, baseline: int | None = None,
               include_interpreter: bool = False, now: datetime | None = None,
               root: Path = paths.REPO_ROOT, allow_empty: bool = False) -> Summary:
    """Read the ledger, write the markdown page and the chart, and say what was written."""
    source = paths.ledger_file(ledger_file)
    everything = records.load(source, root)
    tables = build_tables(everything, baseline=baseline, include_interpreter=include_interpreter)
    output = Path(output or paths.scoreboard_page())
    if not tables and output.exists() and not allow_empty:  # a wrong ledger must not wipe the standings
        raise EmptyScoreboard(f"{paths.shown(source, root)} gives no table ({len(everything)} records): "
                              f"{paths.shown(output, root)} is kept; pass --allow-empty to replace it anyway")
    drawn = draw_chart(tables, Path(chart or paths.scoreboard_chart()))
    page = render_markdown(tables, ledger_file=paths.shown(source, root), record_count=len(everything),
                           generated=now or datetime.now(timezone.utc),
                           chart=paths.shown(drawn, output.parent) if drawn else None,
                           verified=render_verified(everything), sections=estimates.render_section(everything))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(page, encoding="utf-8")
    return Summary(output=output, chart=drawn, tables=len(tables), records=len(everything))
