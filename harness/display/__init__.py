"""What the CLI prints with rich: run tables, the submissions list, the machine, compile reports, send outcomes.

Pure functions from results to rich renderables or lines; harness/cli.py decides when to print them.
"""
import re
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from harness import paths
from harness.heartbeat import HEARTBEAT_S, Heartbeat
from harness.fitted_table import FitColumn, Steps as PlainSteps, console, fit, print_fitted  # noqa: F401 (cli's)
from harness.platform import AITER_STANDIN_MARK, emulator_status
from harness.run import protocol
from harness.results.figures import format_us, geomean
from harness.results.records import shape_label

STATUS_COLOUR = {"pass": "green", "fail": "red", "error": "red", "timeout": "red", "rejected": "red",
                 "skip": "yellow", "not run": "yellow"}

# An official test line inside a progress label, to be shortened.
SPEC_LINE = re.compile(r"batchsize: \d+(?:; \w+: [^;]+)*")


def _short_spec_line(found) -> str:
    parts = (part.split(": ", 1) for part in found.group().split("; "))
    return short_spec({key: int(value) if value.isdigit() else value for key, value in parts})


class Steps(PlainSteps):
    """A run's steps (fitted_table.Steps) with its labels shortened and a line per finished case when piped, and
    piped, a heartbeat line while one step runs on (limit_s: the run's time limit, for that line)."""

    def __init__(self, console, name: str, bar: bool = True, limit_s: float | None = None,
                 heartbeat_s: float = HEARTBEAT_S):
        super().__init__(console, name, bar)
        self.heartbeat = None if console.is_terminal else Heartbeat(name, self.say, heartbeat_s, limit_s)

    def __enter__(self):
        if self.heartbeat:
            self.heartbeat.start()
        return super().__enter__()

    def __exit__(self, *exc) -> None:
        if self.heartbeat:
            self.heartbeat.stop()
        super().__exit__(*exc)

    def step(self, completed: int | None, total: int | None, label: str) -> None:
        super().step(completed, total, label)
        if self.heartbeat is None:
            return
        if label.endswith("done"):
            self.heartbeat.ended()
        else:
            case = self.is_case(label) and completed is not None and total
            self.heartbeat.began(f"case {completed + 1}/{total}" if case else self.describe(label))

    def describe(self, label: str) -> str:
        """'warm-up: 4×1024 s4217' for 'warm-up: batchsize: 4; ...'."""
        return SPEC_LINE.sub(_short_spec_line, label)

    def is_case(self, label: str) -> bool:  # a case's own line comes as it ends
        return bool(SPEC_LINE.match(label))

    cases_done = 0  # what Ctrl-C would leave unrecorded
    def finished(self, index: int, total: int, result) -> None:
        """The protocol's on_case callback: piped, one line per finished case."""
        self.cases_done += 1
        if self.heartbeat:
            self.heartbeat.ended()
        self.say(case_line(self.name, index, total, result))

    def interrupted(self) -> str:
        """What Ctrl-C costs: this submission's finished cases were shown, and are not recorded."""
        return (f"interrupted: {self.name}'s {self.cases_done} finished case(s) are not recorded in the ledger "
                "(a partial run is no verdict); each submission this run finished before it is recorded.")


def case_line(label: str, index: int, total: int, result) -> str:
    """'119_bmm_triton_hybrid: case 2/4 32×1024 s5412: pass, mean 41.2 µs': one finished case, for logs and pipes."""
    text = f"{label}: case {index + 1}/{total} {short_spec(result.spec)}: {result.status}"
    if result.stats is not None:
        text += f", mean {format_us(result.stats.mean)} µs"
    elif result.status != "pass" and result.message:
        text += f": {(result.message.splitlines() or [''])[0]}"
    return text


def short_spec(spec: dict) -> str:
    """'4×1024 s4217' (batch × kv length, seed; q length only when it is not 1) for table rows."""
    text = f"{spec['batchsize']}×{spec['kvseqlen']}"
    if spec.get("qseqlen", 1) != 1:
        text += f" q{spec['qseqlen']}"
    text += f" s{spec['seed']}"
    extras = [f"{k}={v}" for k, v in spec.items() if k not in ("batchsize", "kvseqlen", "qseqlen", "seed")]
    return " ".join([text] + extras)


def error_cell(figures: dict | None) -> str:
    """'0.031 (1.0×)': the norm-wise relative error and its multiple of the reference's own noise; red when warned."""
    if not figures:
        return ""
    text = f"{figures['relative_error']:.3g}"
    if figures.get("noise_multiple") is not None:
        text += f" ({figures['noise_multiple']:.1f}×)"
    return f"[red]{text}[/]" if figures.get("warnings") else text


def case_note(result) -> str:
    """The first line of a case's message, then the submission's own notes (which path it took...)."""
    parts = [(result.message.splitlines() or [""])[0]] + [f"{k}={v}" for k, v in result.notes.items()]
    return " ".join(part for part in parts if part)


def run_table(run, width: int) -> tuple[Table, list[str]]:
    """One table per submission: per case status and timings in µs; test mode adds each case's note. Narrow, the
    error column and the notes move below it (status and numbers are never cut)."""
    timed = run.mode in ("benchmark", "leaderboard")
    title = f"{run.submission.label} · {run.mode} · {run.platform.describe()}"
    if timed:
        title += f" · flush {run.flush}"
    if getattr(run, "standin", None):
        title += f" · {AITER_STANDIN_MARK}"
    columns = [FitColumn("#", figure=True, justify="right"), FitColumn("case\n(bs×kv seed)", room=10),
               FitColumn("status", figure=True), FitColumn("rel err\n(× ref noise)", figure=True, justify="right",
                                                           below=1)]
    if timed:
        columns += [FitColumn(name, figure=True, justify="right")
                    for name in ("mean ± err\nµs", "best\nµs", "worst\nµs", "runs")]
    else:
        columns.append(FitColumn("note", below=0))
    rows = []
    for index, result in enumerate(run.results, start=1):
        row = [str(index), short_spec(result.spec), f"[{STATUS_COLOUR.get(result.status, 'white')}]{result.status}[/]",
               error_cell(result.accuracy)]
        if timed:
            stats = result.stats
            row += ([f"{format_us(stats.mean)} ± {format_us(stats.err)}", format_us(stats.best),
                     format_us(stats.worst), str(stats.runs)] if stats else ["", "", "", ""])
        else:
            row.append(escape(case_note(result)))
        rows.append(row)
    table, below = fit(width, columns, rows, title=title, title_justify="left")
    mean = protocol.geomean_ns(run)
    if mean is not None:
        table.caption = f"geometric mean of the means: {format_us(mean)} µs"
        if getattr(run, "standin", None):
            table.caption += " (aiter stand-in: says nothing about MI355X)"
        table.caption_justify = "left"
    return table, below


def print_source_diff(console, text: str, warnings: list[str]) -> None:
    """`diff --source`: a highlighted unified diff on a terminal, the plain lines when piped."""
    from rich.syntax import Syntax

    for line in warnings:
        console.print(f"warning: {escape(line)}", highlight=False)
    if not text:
        console.print("the two files are identical")
    elif console.is_terminal:
        console.print(Syntax(text, "diff"))
    else:  # piped: the lines as they are, not padded to the console's width
        console.file.write(text)
        console.file.flush()


def print_run(console, run) -> None:
    if run.status == "skip":
        console.print(f"[yellow]skip[/] {escape(run.submission.label)}: {escape(run.reason)}")
        return
    print_fitted(console, *run_table(run, console.width), indent="  ")
    if run.mode in ("benchmark", "leaderboard"):  # timed tables have no room for notes: one line per case below
        for index, result in enumerate(run.results, start=1):
            if case_note(result):
                console.print(f"  {index}. {escape(case_note(result))}", highlight=False)
    for result in run.results:
        if result.report:
            console.print(f"[bold]profile: {escape(short_spec(result.spec))}[/]")
            console.print(result.report, markup=False, highlight=False, soft_wrap=True)
    # The worker's last words for the first case that crashed or raised; the rest are in the worker log.
    crashed = next((result for result in run.results if result.log_tail), None)
    if crashed:
        console.print(f"[dim]last output of the worker ({escape(short_spec(crashed.spec))}):[/]")
        console.print(crashed.log_tail, markup=False, highlight=False, style="dim", soft_wrap=True)
    for warning in run.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    if run.failed:
        console.print(f"[red]{run.status}:[/] {escape(run.reason)}")
        if run.log_path:
            console.print(f"[dim]worker log: {escape(paths.shown(run.log_path))}[/]")


def needs_here(sub, here) -> str:
    """'aiter (stand-in here), torch' where no real aiter is installed: what `harness list` shows as needs."""
    standin = here.versions.get("aiter") is None
    return ", ".join(("aiter (optional; stand-in here)" if r.optional else "aiter (stand-in here)")
                     if r.name == "aiter" and standin else r.label for r in sub.needs)


def submission_lines(found: list, here, can_run) -> list[str]:
    """The submissions list as plain lines (piped output: nothing cut, one line each)."""
    lines = [f"submissions · this machine: {here.describe()}"]
    for sub in found:
        ok, reason = can_run(sub, here)
        lines.append(f"{sub.number if sub.numbered else '-'} {sub.path.name}: needs {needs_here(sub, here)}; "
                     f"runs here: {'yes' if ok else 'no'}" + (f"; {reason}" if reason else ""))
    return lines


def print_submissions(console, found: list, here, can_run) -> None:
    """The submissions list: a table on a terminal (reasons below it when narrow), plain lines when piped."""
    if not console.is_terminal:
        for line in submission_lines(found, here, can_run):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        return
    columns = [FitColumn("#", figure=True, justify="right"), FitColumn("file", room=16), FitColumn("needs", room=12),
               FitColumn("runs\nhere", figure=True), FitColumn("why / how", below=0, room=30)]
    rows = []
    for sub in found:
        ok, reason = can_run(sub, here)
        rows.append([str(sub.number) if sub.numbered else "-", escape(sub.path.name), escape(needs_here(sub, here)),
                     "[green]yes[/]" if ok else "[yellow]no[/]", escape(reason)])
    print_fitted(console, *fit(console.width, columns, rows, title=f"submissions · this machine: {here.describe()}",
                               title_justify="left"))


def machine_table(here) -> Table:
    facts = Table(show_header=False, title="this machine", title_justify="left")
    facts.add_column(style="bold")
    facts.add_column()
    rows = [("device", here.device_name), ("arch", here.arch), ("backend", here.backend),
            ("gfx950 emulator", escape(emulator_status(here)))]
    for name, value in rows + [(n, v or "[dim]not installed[/]") for n, v in here.versions.items()]:
        facts.add_row(name, value)
    return facts


def reach_table(verdicts: dict) -> Table:
    """need -> (runs here, why / how)."""
    reach = Table(title="what it can run", title_justify="left")
    reach.add_column("a submission that needs")
    reach.add_column("runs here")
    reach.add_column("why / how", overflow="fold")
    for need, (ok, reason) in verdicts.items():
        reach.add_row(need, "[green]yes[/]" if ok else "[yellow]no[/]", escape(reason))
    return reach


def print_compile(console, name: str, target: str, reports: list, amd: bool) -> None:
    """Triton kernels compiled ahead of time: resources per kernel variant; narrow, long text moves below."""
    columns = [FitColumn("kernel", room=16), FitColumn("variant", below=1, room=16),
               FitColumn("VGPR" if amd else "regs", figure=True, justify="right")]
    if amd:
        columns.append(FitColumn("AGPR/\nSGPR", figure=True, justify="right"))
    columns += [FitColumn(header, figure=True, justify="right") for header in ("spills", "stack\nB",
                                                                               "LDS B" if amd else "smem\nB")]
    columns += [FitColumn("occupancy", below=2, room=14), FitColumn("matrix instructions", below=0)]

    def num(value):
        return "-" if value is None else str(value)

    rows = []
    for r in reports:
        if r.error:
            style = "yellow" if r.skipped else "red"
            rows.append([r.kernel, escape(r.label)] + [""] * (len(columns) - 3) + [f"[{style}]{escape(r.error)}[/]"])
            continue
        row = [r.kernel, escape(r.label), num(r.registers)]
        if amd:
            row.append(f"{num(r.agprs)}/{num(r.sgprs)}")
        row += [f"[red]{r.spills}[/]" if r.spills else num(r.spills), num(r.stack_bytes), num(r.shared_bytes),
                r.occupancy or "-", ", ".join(r.matrix_instructions) or "[yellow]none[/]"]
        rows.append(row)
    print_fitted(console, *fit(console.width, columns, rows, title=f"{name} for {target}", title_justify="left"))
    print_loops(console, reports)


def print_loops(console, reports: list) -> None:
    """The main loop's instruction counts of each AMD kernel (harness/compile/loops.py), one line each."""
    for r in reports:
        if getattr(r, "loop", None) is not None:
            name = r.label if r.label.startswith(r.kernel) else f"{r.kernel} ({r.label})"  # HIP labels name the kernel
            console.print(escape(f"{name}: {r.loop.summary()}"), highlight=False)


def print_gate(console, verdict, force: bool) -> None:
    """The local gate (make submit): each check with its details, then the verdict."""
    marks = {True: "[green]ok[/]", False: "[red]FAIL[/]", None: "[dim]skipped[/]"}
    for check in verdict.checks:
        console.print(f"gate {check.name}: {marks[check.ok]} {escape(check.details[0]) if check.details else ''}")
        for detail in check.details[1:]:
            console.print(f"    {escape(detail)}")
    said = "passed" if verdict.ok else ("failed (--force: sending anyway)" if force else "failed: refused")
    console.print(f"gate verdict: {said}")


def send_table(title: str, records: list[dict]) -> Table:
    """Per record of a send: run, mode, status, shapes passed, geomean of the means (µs), reason."""
    table = Table(title=escape(title))
    for column in ("run", "mode", "status", "shapes passed", "geomean µs", "reason"):
        table.add_column(column)
    for record in records:
        results = record["results"]
        means = [r["stats"]["mean"] for r in results if r.get("stats") and r["stats"].get("mean")]
        mean = geomean(means) if means and len(means) == len(results) else None
        passed = f"{sum(r['status'] == 'pass' for r in results)}/{len(results)}" if results else "-"
        cells = ((record.get("remote") or {}).get("run") or "-", record["mode"], record["status"], passed,
                 format_us(mean) if mean else "-", record["reason"])
        table.add_row(*(escape(cell) for cell in cells))
    return table


def score_lines(records: list[dict]) -> list[str]:
    """The leaderboard score of each run that has one, marked approximate when recomputed from printed means."""
    sent = [record.get("remote") or {} for record in records]
    return [f"score ({remote.get('run')}): {remote['score'] * 1e6:.2f} µs = {remote['score']:.4g} s, "
            + ("≈ geomean of the ranked means as printed (approximate)" if remote.get("score_approximate")
               else "as reported by the server") for remote in sent if remote.get("score") is not None]


def hip_table(report, width: int) -> tuple[Table, list[str]]:
    """One row per HIP kernel: registers, spills, LDS, occupancy, MFMA count and the fewest wait states after one."""
    columns = [FitColumn("kernel", room=16)]
    columns += [FitColumn(header, figure=True, justify="right")
                for header in ("VGPR", "AGPR/\nSGPR", "spills", "scratch\nB", "LDS B")]
    columns += [FitColumn("occupancy", below=2, room=14), FitColumn("MFMA", figure=True, justify="right"),
                FitColumn("fewest wait\nstates after\nan MFMA", figure=True, justify="right", below=1),
                FitColumn("matrix instructions", below=0)]
    rows = []
    for k in report.kernels:
        spills = f"[red]{k.spills}[/]" if k.spills else str(k.spills)
        rows.append([escape(k.label), str(k.registers), f"{k.agprs}/{k.sgprs}", spills, str(k.stack_bytes),
                     str(k.shared_bytes), k.occupancy or "-", str(k.mfma_count),
                     "-" if k.min_mfma_wait is None else str(k.min_mfma_wait),
                     ", ".join(k.matrix_instructions) or "none"])
    return fit(width, columns, rows, title=f"{Path(report.path).name} for {report.target} (HIP, compiled, not run)",
               title_justify="left")


def print_hip_report(console, report) -> None:
    """A HIP compile (harness/compile/hip/compile.py): verdict line, per-kernel table, findings, diagnostics, notes."""
    colour = "green" if report.verdict == "ok" else "red" if report.blocking else "yellow"
    console.print(f"[bold]{escape(Path(report.path).name)} for {report.target}:[/] [{colour}]{report.verdict}[/] "
                  f"{escape(report.summary)} [dim]({report.seconds:.1f} s, precompiled header {report.pch or 'none'})[/]")
    if report.kernels:
        print_fitted(console, *hip_table(report, console.width))
        print_loops(console, report.kernels)
    for finding in report.findings:
        console.print(f"[yellow]{escape(finding.format(Path(report.path).name))}[/]")
    if report.blocking and report.diagnostics:
        console.print(report.diagnostics[:3000], markup=False, highlight=False, soft_wrap=True)
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/]")


def _speedup_text(value: float) -> str:
    colour = "green" if value > 1.005 else "red" if value < 0.995 else "default"
    return f"[{colour}]{value:.2f}×[/{colour}]"


def diff_table(comparison) -> Table:
    """`harness diff`: per-shape times of A and B in µs and B's speedup over A, geomean last."""
    c = comparison
    table = Table(title=f"{c.b_label} over {c.a_label}\ncompared on {c.device} · {c.mode} · {c.cases} cases",
                  caption="speedup = A's time / B's time (> 1: B is faster)")
    table.add_column("shape")
    table.add_column(f"A {c.a_label} (µs)", justify="right")
    table.add_column(f"B {c.b_label} (µs)", justify="right")
    table.add_column("speedup", justify="right")
    for s in c.shapes:
        table.add_row(shape_label(s.shape), format_us(s.a_ns), format_us(s.b_ns), _speedup_text(s.speedup))
    table.add_section()
    table.add_row("geomean", format_us(geomean(s.a_ns for s in c.shapes)),
                  format_us(geomean(s.b_ns for s in c.shapes)), _speedup_text(c.geomean_speedup))
    return table


def print_diff(console, comparison, notes: list[str], slower: list[str], fail_above: float | None) -> None:
    """The table, its notes (one each), and the regressions --fail-above found."""
    console.print(diff_table(comparison))
    for line in notes:
        console.print(f"note: {escape(line)}", highlight=False)
    for line in slower:
        console.print(f"regression over {fail_above:g}%: {escape(line)}", highlight=False)
