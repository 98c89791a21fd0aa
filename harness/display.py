"""What the CLI prints with rich: run tables, the submissions list, the machine, compile reports, send outcomes.

Pure functions from results to rich renderables or lines; harness/cli.py decides when to print them.
"""
import os
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness import paths
from harness.run import protocol
from harness.results.figures import format_us, geomean

STATUS_COLOUR = {"pass": "green", "fail": "red", "error": "red", "timeout": "red", "skip": "yellow"}
PIPED_WIDTH = 200  # piped, rich assumes 80 columns and cuts table cells; a wide page keeps every column whole


def console(stderr: bool = False) -> Console:
    """A rich console (NO_COLOR honoured by rich); piped without $COLUMNS, wide enough that no column is cut."""
    probe = Console(stderr=stderr)
    if probe.is_terminal or os.environ.get("COLUMNS"):
        return probe
    return Console(stderr=stderr, width=PIPED_WIDTH)


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


def run_table(run) -> Table:
    """One table per submission: per case status and timings in µs; test mode adds each case's note."""
    timed = run.mode in ("benchmark", "leaderboard")
    title = f"{run.submission.label} · {run.mode} · {run.platform.describe()}"
    if timed:
        title += f" · flush {run.flush}"
    if getattr(run, "standin", None):
        title += " · aiter stand-in: correctness only"
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("case (bs×kv seed)", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("rel err (× ref noise)", justify="right", no_wrap=True)
    if timed:
        for name in ("mean ± err µs", "best µs", "worst µs", "runs"):
            table.add_column(name, justify="right", no_wrap=True)
    else:
        table.add_column("note", overflow="fold")
    for index, result in enumerate(run.results, start=1):
        row = [str(index), short_spec(result.spec), f"[{STATUS_COLOUR.get(result.status, 'white')}]{result.status}[/]",
               error_cell(result.accuracy)]
        if timed:
            stats = result.stats
            row += ([f"{format_us(stats.mean)} ± {format_us(stats.err)}", format_us(stats.best),
                     format_us(stats.worst), str(stats.runs)] if stats else ["", "", "", ""])
        else:
            row.append(escape(case_note(result)))
        table.add_row(*row)
    mean = protocol.geomean_ns(run)
    if mean is not None:
        table.caption = f"geometric mean of the means: {format_us(mean)} µs"
        if getattr(run, "standin", None):
            table.caption += " (aiter stand-in: says nothing about MI355X)"
        table.caption_justify = "left"
    return table


def print_run(console, run) -> None:
    if run.status == "skip":
        console.print(f"[yellow]skip[/] {escape(run.submission.label)}: {escape(run.reason)}")
        return
    console.print(run_table(run))
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


def submissions_table(found: list, here, can_run) -> Table:
    table = Table(title=f"submissions · this machine: {here.describe()}", title_justify="left")
    for name in ("#", "file", "needs", "runs here"):
        table.add_column(name, no_wrap=True)
    table.add_column("why / how", overflow="fold")
    for sub in found:
        ok, reason = can_run(sub, here)
        table.add_row(str(sub.number) if sub.numbered else "-", sub.path.name, needs_here(sub, here),
                      "[green]yes[/]" if ok else "[yellow]no[/]", escape(reason))
    return table


def machine_table(here) -> Table:
    facts = Table(show_header=False, title="this machine", title_justify="left")
    facts.add_column(style="bold")
    facts.add_column()
    facts.add_row("device", here.device_name)
    facts.add_row("arch", here.arch)
    facts.add_row("backend", here.backend)
    for name, version in here.versions.items():
        facts.add_row(name, version or "[dim]not installed[/]")
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


def compile_table(name: str, target: str, reports: list, amd: bool) -> Table:
    table = Table(title=f"{name} for {target}", title_justify="left")
    for column in ("kernel", "variant", "VGPR" if amd else "regs", "AGPR/SGPR" if amd else "", "spills",
                   "stack B", "LDS B" if amd else "smem B", "occupancy", "matrix instructions"):
        if column:
            table.add_column(column, overflow="fold")

    def num(value):
        return "-" if value is None else str(value)

    for r in reports:
        if r.error:
            style = "yellow" if r.skipped else "red"
            row = [r.kernel, escape(r.label), f"[{style}]{escape(r.error)}[/]"] + [""] * (5 if amd else 4)
        else:
            spills = f"[red]{r.spills}[/]" if r.spills else num(r.spills)
            row = [r.kernel, escape(r.label), num(r.registers)]
            if amd:
                row.append(f"{num(r.agprs)}/{num(r.sgprs)}")
            row += [spills, num(r.stack_bytes), num(r.shared_bytes), r.occupancy or "-",
                    ", ".join(r.matrix_instructions) or "[yellow]none[/]"]
        table.add_row(*row)
    return table


def outcome_rows(records: list[dict]) -> list[tuple[str, str, str, str, str, str]]:
    """(run, mode, status, shapes passed, geomean of the means in µs, reason) per record of a send."""
    rows = []
    for record in records:
        remote = record.get("remote") or {}
        results = record["results"]
        passed = sum(r["status"] == "pass" for r in results)
        means = [r["stats"]["mean"] for r in results if r.get("stats") and r["stats"].get("mean")]
        mean = geomean(means) if means and len(means) == len(results) else None
        rows.append((remote.get("run") or "-", record["mode"], record["status"],
                     f"{passed}/{len(results)}" if results else "-", format_us(mean) if mean else "-",
                     record["reason"]))
    return rows


def score_lines(records: list[dict]) -> list[str]:
    """The leaderboard score of each run that has one, marked approximate when recomputed from printed means."""
    lines = []
    for record in records:
        remote = record.get("remote") or {}
        if remote.get("score") is None:
            continue
        score_us = remote["score"] * 1e6
        how = ("≈ geomean of the ranked means as printed (approximate)" if remote.get("score_approximate")
               else "as reported by the server")
        lines.append(f"score ({remote.get('run')}): {score_us:.2f} µs = {remote['score']:.4g} s, {how}")
    return lines


def hip_table(report) -> Table:
    """One row per HIP kernel: registers, spills, LDS, occupancy, MFMA count and the fewest wait states after one."""
    table = Table(title=f"{Path(report.path).name} for {report.target} (HIP, compiled, not run)", title_justify="left")
    for column in ("kernel", "VGPR", "AGPR/SGPR", "spills", "scratch B", "LDS B", "occupancy", "MFMA",
                   "fewest wait states after an MFMA", "matrix instructions"):
        table.add_column(column, overflow="fold")
    for k in report.kernels:
        spills = f"[red]{k.spills}[/]" if k.spills else str(k.spills)
        table.add_row(escape(k.label), str(k.registers), f"{k.agprs}/{k.sgprs}", spills, str(k.stack_bytes),
                      str(k.shared_bytes), k.occupancy or "-", str(k.mfma_count),
                      "-" if k.min_mfma_wait is None else str(k.min_mfma_wait),
                      ", ".join(k.matrix_instructions) or "none")
    return table


def print_hip_report(console, report) -> None:
    """A HIP compile (harness/compile/hip/compile.py): verdict line, per-kernel table, findings, diagnostics, notes."""
    colour = "green" if report.verdict == "ok" else "red" if report.blocking else "yellow"
    console.print(f"[bold]{escape(Path(report.path).name)} for {report.target}:[/] [{colour}]{report.verdict}[/] "
                  f"{escape(report.summary)} [dim]({report.seconds:.1f} s, precompiled header {report.pch or 'none'})[/]")
    if report.kernels:
        console.print(hip_table(report))
    for finding in report.findings:
        console.print(f"[yellow]{escape(finding.format(Path(report.path).name))}[/]")
    if report.blocking and report.diagnostics:
        console.print(report.diagnostics[:3000], markup=False, highlight=False, soft_wrap=True)
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/]")
