"""The `harness` command: parses arguments and prints; the work lives in the other modules."""
import click

from harness import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
def main():
    """Validate, time, rank and submit amd-mixed-mla submissions."""


@main.command()
@click.option("--baseline", type=int, default=None, metavar="N",
              help="Submission number to compute speedups against (default: the lowest-numbered one in each table).")
@click.option("--ledger", "ledger_file", type=click.Path(dir_okay=False), default=None,
              help="Ledger to read (default: $HARNESS_LEDGER or results/ledger.jsonl).")
@click.option("--output", type=click.Path(dir_okay=False), default=None, help="Page to write (default: scoreboard.md).")
@click.option("--chart", type=click.Path(dir_okay=False), default=None,
              help="Chart to write (default: results/scoreboard.png).")
def scoreboard(baseline, ledger_file, output, chart):
    """Regenerate scoreboard.md and its chart from the ledger."""
    import warnings
    from pathlib import Path

    from harness import scoreboard as board

    if ledger_file and not Path(ledger_file).is_file():
        raise click.UsageError(f"no ledger at {ledger_file}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            summary = board.regenerate(ledger_file=ledger_file, output=output or board.DEFAULT_OUTPUT,
                                       chart=chart or board.DEFAULT_CHART, baseline=baseline)
        except OSError as error:
            click.echo(f"error: cannot write the scoreboard: {error}", err=True)
            raise SystemExit(2)
    for warning in caught:
        click.echo(f"warning: {warning.message}", err=True)
    tables = f"{summary.tables} table" + ("" if summary.tables == 1 else "s")
    click.echo(f"wrote {summary.output} ({tables} from {summary.records} records)")
    click.echo(f"wrote {summary.chart}" if summary.chart else "no chart: nothing timed in the ledger yet")


@main.command()
@click.argument("a")
@click.argument("b")
@click.option("--source", is_flag=True, help="Also show a unified diff of the two files.")
@click.option("--device", default=None, metavar="NAME", help="Only records from a device whose name contains NAME.")
@click.option("--mode", type=click.Choice(["test", "benchmark", "leaderboard", "profile"]), default=None,
              help="Only records of this mode.")
@click.option("--ledger", "ledger_file", type=click.Path(dir_okay=False), default=None,
              help="Ledger to read (default: $HARNESS_LEDGER or results/ledger.jsonl).")
def diff(a, b, source, device, mode, ledger_file):
    """Per-shape speedup of submission B over A (numbers like 119 or file paths)."""
    import warnings
    from pathlib import Path

    from rich.console import Console
    from rich.syntax import Syntax

    from harness import diff as differ
    from harness import ledger

    if ledger_file and not Path(ledger_file).is_file():
        raise click.UsageError(f"no ledger at {ledger_file}")
    console = Console()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            comparison = differ.compare(ledger.read(ledger_file), a, b, device=device, mode=mode)
        for warning in caught:
            click.echo(f"warning: {warning.message}", err=True)
        console.print(differ.render_table(comparison))
        for line in differ.notes(comparison):
            console.print(f"note: {line}", highlight=False)
        if source:
            text, file_warnings = differ.source_diff(comparison)
            for line in file_warnings:
                console.print(f"warning: {line}", highlight=False)
            console.print(Syntax(text, "diff") if text else "the two files are identical")
    except differ.NothingComparable as error:
        click.echo(f"error: {error}", err=True)
        raise SystemExit(2)


@main.command()
@click.argument("submissions", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON instead of lines.")
def lint(submissions, as_json):
    """Check submissions against the server's rejection rules and KernelGuard (all of submissions/ by default).

    Prints `path:line: RULE error|warning: message`; exits 1 when any finding would get a file rejected.
    """
    import json
    from pathlib import Path

    from harness import lint as linter
    from harness import submission as subs

    paths = []
    for arg in submissions or [str(s.path) for s in subs.discover()]:
        try:
            path = subs.resolve(arg).path if arg.strip().isdigit() else Path(arg)
        except subs.SubmissionError as error:
            raise click.UsageError(str(error))
        if not path.is_file():
            raise click.UsageError(f"no such submission file: {arg}")
        paths.append(path)
    if not paths:
        raise click.UsageError("no submissions to lint: name one, or add files to submissions/")
    report, blocking, warnings = {}, 0, 0
    for path in paths:
        shown = _relative(path)
        try:
            findings = linter.lint_file(path)
        except OSError as error:
            raise click.UsageError(f"cannot read {shown}: {error.strerror or error}")
        report[shown] = [vars(f) for f in findings]
        blocking += sum(f.blocking for f in findings)
        warnings += sum(not f.blocking for f in findings)
        if not as_json:
            for finding in findings:
                click.secho(finding.format(shown), fg="red" if finding.blocking else "yellow")
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(f"{len(paths)} file(s): {blocking} blocking finding(s), {warnings} warning(s)")
    raise SystemExit(1 if blocking else 0)


@main.command()
@click.argument("submission")
@click.option("--mode", type=click.Choice(["test", "benchmark", "leaderboard"]), default="leaderboard",
              show_default=True, help="The popcorn mode; only leaderboard mode is ranked.")
@click.option("--leaderboard", default=None, help="Default: the file's `#!POPCORN leaderboard` directive.")
@click.option("--gpu", default=None, help="Default: the file's `#!POPCORN gpu` directive.")
@click.option("--dry-run", is_flag=True, help="Run the gate and print the popcorn-cli command; send nothing.")
@click.option("--force", is_flag=True, help="Send even when the gate or the rate-limit memory says no.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=None, metavar="SECONDS",
              help="Give up waiting for popcorn-cli after this long (default: 3600).")
def submit(submission, mode, leaderboard, gpu, dry_run, force, timeout_s):
    """Send SUBMISSION (a number or a path) to the MI355X leaderboard through popcorn-cli, after a local gate.

    Exit codes: 0 sent and everything passed; 1 refused by the gate, a rate limit or the server, or a
    remote failure; 2 bad usage, popcorn-cli missing or not registered.
    """
    import time

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from harness import remote

    console = Console(highlight=False, soft_wrap=True)  # soft wrap: the command line stays copyable
    try:
        plan = remote.plan(submission, mode=mode, leaderboard=leaderboard, gpu=gpu, force=force)
    except remote.RemoteError as error:
        click.echo(f"error: {error}", err=True)
        raise SystemExit(error.exit_code)
    for warning in plan.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    if plan.problems and not dry_run:
        click.echo(f"error: {plan.problems[0]}", err=True)
        raise SystemExit(plan.problems[0].exit_code)
    try:
        with console.status(f"local gate for {plan.submission.path.name}..."):
            gate = remote.run_gate(plan)
    except KeyboardInterrupt:
        click.echo("error: interrupted during the local gate; nothing sent", err=True)
        raise SystemExit(130)
    for check in gate.checks:
        mark = {True: "[green]ok[/]", False: "[red]FAIL[/]", None: "[dim]skipped[/]"}[check.ok]
        console.print(f"gate {check.name}: {mark} {escape(check.details[0]) if check.details else ''}")
        for detail in check.details[1:]:
            console.print(f"    {escape(detail)}")
    verdict = "passed" if gate.ok else ("failed (--force: sending anyway)" if force else "failed: refused")
    console.print(f"gate verdict: {verdict}")
    console.print(f"command: {escape(plan.command_line)}")
    if dry_run:
        for problem in plan.problems:
            console.print(f"note: a real send would stop here: {escape(str(problem))}")
        console.print(f"rate limit: {escape(plan.rate.message)}")
        console.print("dry run: nothing sent, nothing recorded")
        raise SystemExit(0 if gate.ok or force else 1)
    if not gate.ok and not force:
        raise SystemExit(1)
    started = time.monotonic()
    console.print(f"sending to {plan.leaderboard} on {plan.gpu}; waiting up to "
                  f"{timeout_s or remote.DEFAULT_TIMEOUT_S:.0f} s for the report")
    with console.status("sending...") as status:
        def waiting(elapsed, last_line):
            status.update(escape(f"waiting for {plan.gpu} ({elapsed:.0f} s){': ' + last_line[:80] if last_line else ''}"))
        try:
            outcome = remote.send(plan, timeout_s=timeout_s or remote.DEFAULT_TIMEOUT_S, on_wait=waiting)
        except remote.RemoteError as error:
            click.echo(f"error: {error}", err=True)
            raise SystemExit(error.exit_code)
    if outcome.report is not None:
        table = Table(title=escape(f"{plan.submission.path.name} on {plan.gpu} ({plan.mode} mode, "
                                   f"{time.monotonic() - started:.0f} s)"))
        for column in ("run", "mode", "status", "shapes passed", "geomean µs", "reason"):
            table.add_column(column)
        for row in remote.outcome_rows(outcome.records):
            table.add_row(*(escape(cell) for cell in row))
        console.print(table)
    for line in remote.score_lines(outcome.records):
        console.print(escape(line))
    console.print(escape(f"raw report: {_relative(outcome.report_dir)}; {len(outcome.records)} ledger record(s) written"))
    if outcome.error is not None:
        click.echo(f"error: {outcome.error}", err=True)
    raise SystemExit(outcome.exit_code)


def _relative(path) -> str:
    """The path as the user would type it: relative to the working directory when it is below it."""
    from pathlib import Path

    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------
# run / list / doctor (evaluation core)
# ---------------------------------------------------------------------------------------------

_MODES = ("test", "benchmark", "leaderboard", "profile")


def _reports_errors_in_one_line(command):
    """A bad input is one 'error:' line and exit 2; a harness bug is one line too, never a traceback."""
    import functools
    import os

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from harness.cases import CaseError
        from harness.platform import PlatformError
        from harness.submission import SubmissionError

        try:
            return command(*args, **kwargs)
        except (SubmissionError, PlatformError, CaseError) as error:
            click.echo(f"error: {error}", err=True)
            raise SystemExit(2)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            raise SystemExit(130)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except Exception as error:
            if os.environ.get("HARNESS_DEBUG"):
                raise
            click.echo(f"internal error: {type(error).__name__}: {error} (HARNESS_DEBUG=1 shows the traceback)",
                       err=True)
            raise SystemExit(2)

    return wrapper


def _short_spec(spec: dict) -> str:
    """'4×1024 s4217' (batch × kv length, seed; q length only when it is not 1) for table rows."""
    text = f"{spec['batchsize']}×{spec['kvseqlen']}"
    if spec.get("qseqlen", 1) != 1:
        text += f" q{spec['qseqlen']}"
    text += f" s{spec['seed']}"
    extras = [f"{k}={v}" for k, v in spec.items() if k not in ("batchsize", "kvseqlen", "qseqlen", "seed")]
    return " ".join([text] + extras)


def _us(ns: float) -> str:
    return f"{ns / 1000:.1f}" if ns >= 100_000 else f"{ns / 1000:.2f}"


def _case_note(result) -> str:
    """The first line of a case's message, then the submission's own notes (which path it took...)."""
    parts = [(result.message.splitlines() or [""])[0]] + [f"{k}={v}" for k, v in result.notes.items()]
    return " ".join(part for part in parts if part)


def _run_table(run):
    """One table per submission: per case status and timings in µs; test mode adds each case's note."""
    from rich.markup import escape
    from rich.table import Table

    from harness import protocol

    timed = run.mode in ("benchmark", "leaderboard")
    colour = {"pass": "green", "fail": "red", "error": "red", "timeout": "red", "skip": "yellow"}
    title = f"{run.submission.label} · {run.mode} · {run.platform.describe()}"
    if timed:
        title += f" · flush {run.flush}"
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("case (bs×kv seed)", no_wrap=True)
    table.add_column("status", no_wrap=True)
    if timed:
        for name in ("mean ± err µs", "best µs", "worst µs", "runs"):
            table.add_column(name, justify="right", no_wrap=True)
    else:
        table.add_column("note", overflow="fold")
    for index, result in enumerate(run.results, start=1):
        row = [str(index), _short_spec(result.spec), f"[{colour.get(result.status, 'white')}]{result.status}[/]"]
        if timed:
            stats = result.stats
            row += ([f"{_us(stats.mean)} ± {_us(stats.err)}", _us(stats.best), _us(stats.worst), str(stats.runs)]
                    if stats else ["", "", "", ""])
        else:
            row.append(escape(_case_note(result)))
        table.add_row(*row)
    geomean = protocol.geomean_ns(run)
    if geomean is not None:
        table.caption = f"geometric mean of the means: {_us(geomean)} µs"
        table.caption_justify = "left"
    return table


def _print_run(console, run) -> None:
    from rich.markup import escape

    if run.status == "skip":
        console.print(f"[yellow]skip[/] {escape(run.submission.label)}: {escape(run.reason)}")
        return
    console.print(_run_table(run))
    if run.mode in ("benchmark", "leaderboard"):  # timed tables have no room for notes: one line per case below
        for index, result in enumerate(run.results, start=1):
            if _case_note(result):
                console.print(f"  {index}. {escape(_case_note(result))}", highlight=False)
    for result in run.results:
        if result.report:
            console.print(f"[bold]profile: {escape(_short_spec(result.spec))}[/]")
            console.print(result.report, markup=False, highlight=False, soft_wrap=True)
    # The worker's last words for the first case that crashed or raised; the rest are in the worker log.
    crashed = next((result for result in run.results if result.log_tail), None)
    if crashed:
        console.print(f"[dim]last output of the worker ({escape(_short_spec(crashed.spec))}):[/]")
        console.print(crashed.log_tail, markup=False, highlight=False, style="dim", soft_wrap=True)
    for warning in run.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    if run.failed:
        console.print(f"[red]{run.status}:[/] {escape(run.reason)}")
        if run.log_path:
            console.print(f"[dim]worker log: {escape(_relative(run.log_path))}[/]")


@main.command()
@click.argument("submissions", nargs=-1)
@click.option("--all", "run_all", is_flag=True, help="Run every submission in submissions/.")
@click.option("--mode", type=click.Choice(_MODES), default="test", show_default=True,
              help="The official eval.py mode.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="cuda means any GPU, ROCm included.")
@click.option("--cases", "cases_arg", default=None, metavar="official|small|FILE",
              help="Shapes to run (default: official on a GPU, small on a CPU). FILE: a YAML list or eval.py lines.")
@click.option("--flush", type=click.Choice(["fast", "official"]), default="fast", show_default=True,
              help="Cache flush before each timed call: a few times the last-level cache, or eval.py's 64 GiB randn.")
@click.option("--json", "as_json", is_flag=True, help="Print the ledger records as JSON instead of tables.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Time limit per case (default: task.yml's test/benchmark/ranked timeout).")
@_reports_errors_in_one_line
def run(submissions, run_all, mode, device, cases_arg, flush, as_json, timeout):
    """Validate and time submissions (numbers like 120, or file paths) with the official protocol.

    Exit code: 0 when everything that could run passed, 1 when a submission failed, 2 for bad input.
    """
    import json

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from harness import cases, ledger, protocol, timing
    from harness import platform as platforms
    from harness import submission as subs

    if run_all and submissions:
        raise click.UsageError("give submissions or --all, not both")
    if not run_all and not submissions:
        raise click.UsageError("name at least one submission (a number like 120 or a path), or pass --all")
    chosen = subs.discover() if run_all else [subs.resolve(arg) for arg in submissions]
    if not chosen:
        raise subs.SubmissionError(f"no submissions in {subs.SUBMISSIONS_DIR}")
    here = platforms.detect(device)
    out = Console()
    notices = Console(stderr=True)
    if cases_arg is None:
        cases_arg = "official" if here.is_gpu else "small"
        if not here.is_gpu:
            notices.print("No GPU here: using the small CPU cases (--cases official forces the official shapes).")
    specs = cases.load(cases_arg, mode)
    if not here.is_gpu and flush == "official" and mode in ("benchmark", "leaderboard"):
        notices.print("On the CPU there is no cache flush: --flush official is ignored.")
    if here.is_gpu and flush == "official" and mode in ("benchmark", "leaderboard") and not timing.official_flush_fits():
        raise platforms.PlatformError("--flush official allocates 64 GiB per call, more than this GPU holds; "
                                      "use --flush fast")
    try:
        secret = protocol.secret_seed()
    except ValueError as error:
        raise cases.CaseError(str(error))
    timeout_s = timeout or cases.case_timeout_s(mode)

    runs, records = [], []
    for sub in chosen:
        columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        with Progress(*columns, console=notices, transient=True,
                      disable=as_json or not notices.is_terminal) as bar:
            task = bar.add_task(sub.label, total=None)

            def show(completed, total, label, task=task, bar=bar, sub=sub):
                bar.update(task, completed=completed, total=total, description=f"{sub.label}: {label}")

            result = protocol.evaluate(sub, here, mode, specs, cases_name=cases_arg, flush=flush,
                                       timeout_s=timeout_s, secret=secret, progress=show)
        record = protocol.record(result)
        try:
            ledger.append(record)
        except OSError as error:
            notices.print(f"[yellow]warning:[/] could not write the ledger: {error}")
        runs.append(result)
        records.append(record)
        if not as_json:
            _print_run(out, result)
    if as_json:
        click.echo(json.dumps(records, indent=2))
    elif len(runs) > 1:
        counts = {status: sum(r.status == status for r in runs) for status in ("pass", "fail", "error", "skip")}
        out.print(", ".join(f"{n} {status}" for status, n in counts.items() if n))
    raise SystemExit(1 if any(r.failed for r in runs) else 0)


@main.command(name="list")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True)
@_reports_errors_in_one_line
def list_submissions(device):
    """Every submission, what it needs, and whether this machine can run it."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from harness import platform as platforms
    from harness import submission as subs

    here = platforms.detect(device)
    found = subs.discover()
    console = Console()
    if not found:
        console.print(f"no submissions in {escape(_relative(subs.SUBMISSIONS_DIR))}")
        return
    table = Table(title=f"submissions · this machine: {here.describe()}", title_justify="left")
    for name in ("#", "file", "needs", "runs here"):
        table.add_column(name, no_wrap=True)
    table.add_column("why / how", overflow="fold")
    for sub in found:
        ok, reason = platforms.can_run(sub, here)
        table.add_row(str(sub.number), sub.path.name, sub.needs_label(), "[green]yes[/]" if ok else "[yellow]no[/]",
                      escape(reason))
    console.print(table)


@main.command()
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True)
@_reports_errors_in_one_line
def doctor(device):
    """What this machine is (device, arch, versions) and what it can run."""
    from pathlib import Path

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from harness import platform as platforms
    from harness import submission as subs

    here = platforms.detect(device)
    console = Console()
    facts = Table(show_header=False, title="this machine", title_justify="left")
    facts.add_column(style="bold")
    facts.add_column()
    facts.add_row("device", here.device_name)
    facts.add_row("arch", here.arch)
    facts.add_row("backend", here.backend)
    for name, version in here.versions.items():
        facts.add_row(name, version or "[dim]not installed[/]")
    console.print(facts)

    reach = Table(title="what it can run", title_justify="left")
    reach.add_column("a submission that needs")
    reach.add_column("runs here")
    reach.add_column("why / how", overflow="fold")
    examples = {"torch": {"torch"}, "triton": {"torch", "triton"}, "hip": {"torch", "hip"},
                "aiter": {"torch", "aiter"}}
    for need, requirements in examples.items():
        probe = subs.Submission(number=None, slug=need, path=Path(need), requirements=frozenset(requirements),
                                sha256="")
        ok, reason = platforms.can_run(probe, here)
        reach.add_row(need, "[green]yes[/]" if ok else "[yellow]no[/]", escape(reason))
    console.print(reach)
    found = subs.discover()
    runnable = [s for s in found if platforms.can_run(s, here)[0]]
    console.print(f"{len(runnable)} of {len(found)} submissions in submissions/ can run here"
                  + (f": {', '.join(s.label for s in runnable)}" if runnable else ""), highlight=False)


@main.command(name="compile")
@click.argument("submission")
@click.option("--target", type=click.Choice(["gfx950", "gfx942", "sm90"]), default="gfx950", show_default=True,
              help="GPU to compile for; no such GPU is needed on this machine.")
@_reports_errors_in_one_line
def compile_command(submission, target):
    """Compile a submission's Triton kernels ahead of time and report registers, spills, LDS/shared memory, MFMA/MMA use."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from harness import aot
    from harness import submission as subs

    try:
        path = subs.resolve(submission).path
    except subs.SubmissionError as error:
        raise click.UsageError(str(error))
    console = Console()
    try:
        with console.status(f"compiling {path.name} for {target}..."):
            reports = aot.compile_submission(path, target)
    except aot.AotError as error:
        click.echo(f"error: {error}", err=True)
        raise SystemExit(2)
    if not reports:
        click.echo(f"{path.name} has no @triton.jit kernels")
        return
    amd = aot.TARGETS[target][0] == "hip"
    table = Table(title=f"{path.name} for {target}", title_justify="left")
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
    console.print(table)
    if any(r.error and not r.skipped for r in reports):
        raise SystemExit(1)
