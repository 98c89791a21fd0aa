"""The `harness` command: parses arguments and prints; the work lives in the other modules.

Options several commands share are defined once in harness/cli_options.py.
Every command runs inside `reports_errors` and the group is a `OneLineErrors` (harness/exits.py): a bad
argument is one `error:` line and exit code 2, everywhere.
"""
import os

import click

from harness import __version__
from harness.exits import (EXIT_CODES_HELP, EXIT_FAILED, EXIT_PASSED, EXIT_USAGE, OneLineErrors,
                           reports_errors)
from harness.run.cases import MODES
from harness.cli_options import (all_option, check_submissions_or_all, device_option, echo_warnings,
                                 existing_ledger, ledger_option, mode_option, spread_options)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
def main():
    """Validate, time, rank and submit amd-mixed-mla submissions."""


@main.command()
@click.option("--baseline", type=int, default=None, metavar="N",
              help="Submission number to compute speedups against (default: the lowest-numbered one in each table).")
@ledger_option
@click.option("--output", type=click.Path(dir_okay=False), default=None, help="Page to write (default: scoreboard.md).")
@click.option("--chart", type=click.Path(dir_okay=False), default=None,
              help="Chart to write (default: results/scoreboard.png).")
@click.option("--include-interpreter", is_flag=True,
              help="Also show times taken through the Triton interpreter on a CPU (they say nothing about a GPU).")
@click.option("--allow-empty", is_flag=True, help="Replace an existing page even when the ledger gives no table.")
@reports_errors
def scoreboard(baseline, ledger_file, output, chart, include_interpreter, allow_empty):
    """Regenerate scoreboard.md and its chart from the ledger."""
    import warnings

    from harness.results import scoreboard as board

    existing_ledger(ledger_file)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            summary = board.regenerate(ledger_file=ledger_file, output=output, chart=chart, baseline=baseline,
                                       include_interpreter=include_interpreter, allow_empty=allow_empty)
        except (board.BaselineError, board.EmptyScoreboard) as error:
            raise click.UsageError(str(error))
        except OSError as error:
            click.echo(f"error: cannot write the scoreboard: {error}", err=True)
            raise SystemExit(EXIT_USAGE)
    echo_warnings(caught)
    tables = f"{summary.tables} table" + ("" if summary.tables == 1 else "s")
    click.echo(f"wrote {summary.output} ({tables} from {summary.records} records)")
    click.echo(f"wrote {summary.chart}" if summary.chart else "no chart: nothing timed in the ledger yet")


@main.command(epilog=EXIT_CODES_HELP.replace("a submission failed", "--fail-above found a regression"))
@click.argument("a")
@click.argument("b")
@click.option("--source", is_flag=True, help="Also show a unified diff of the two files.")
@click.option("--device", default=None, metavar="auto|cuda|cpu|NAME",
              help="Compare records from there: cuda any GPU, cpu the CPU (as `run --device` means them), or the "
                   "device whose name contains NAME (default, auto: the newest GPU group holding both).")
@mode_option()
@click.option("--include-interpreter", is_flag=True,
              help="Also compare times taken through the Triton interpreter on a CPU (they say nothing about a GPU).")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--fail-above", type=click.FloatRange(min=0), default=None, metavar="PCT",
              help="Exit 1 when B is slower than A by more than PCT % on any shape or on the geomean.")
@click.option("--estimate", "estimated", is_flag=True,
              help="Compare the two newest MI355X estimates instead (harness estimate; a model, not measurements).")
@ledger_option
@reports_errors
def diff(a, b, source, device, mode, include_interpreter, as_json, fail_above, estimated, ledger_file):
    """Per-shape speedup of submission B over A (numbers like 119 or file paths)."""
    import json
    import warnings

    from harness.results import diff as differ
    from harness import display
    from harness.display import estimate as display_estimate
    from harness.results import estimates, records

    existing_ledger(ledger_file)
    console = display.console()
    if estimated:
        guess = estimates.compare(records.load(ledger_file), a, b)
        display_estimate.print_estimate_diff(console, guess, estimates.verdict(guess))
        raise SystemExit(EXIT_PASSED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            comparison = differ.compare(records.load(ledger_file), a, b, device=device, mode=mode,
                                        include_interpreter=include_interpreter)
        except differ.NothingComparable as error:
            if not source or as_json or fail_above is not None:
                raise
            comparison = None  # --source still shows what changed between the two files
            console.print(f"note: no times to compare: {error}", highlight=False)
    echo_warnings(caught)
    slower = differ.regressions(comparison, fail_above) if fail_above is not None else []
    if as_json:
        click.echo(json.dumps(differ.as_json(comparison, fail_above), indent=2))
    elif comparison is not None:
        display.print_diff(console, comparison, differ.notes(comparison), slower, fail_above)
    if source:
        from harness import submission as subs

        display.print_source_diff(console, *(differ.source_diff(comparison) if comparison else
                                             (differ.files_diff(subs.resolve(a).path, subs.resolve(b).path), [])))
    raise SystemExit(EXIT_FAILED if slower else EXIT_PASSED)


@main.command()
@click.argument("submissions", nargs=-1)
@all_option
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON instead of lines.")
@reports_errors
def lint(submissions, run_all, as_json):
    """Check submissions against the server's rejection rules and KernelGuard (all of submissions/ by default).

    Prints `path:line: RULE error|warning: message`; exits 1 when any finding would get a file rejected.
    """
    import json

    from harness.checks import lint as linter
    from harness import paths
    from harness import submission as subs

    check_submissions_or_all(submissions, run_all)
    files = []
    for arg in submissions or [str(s.path) for s in subs.discover()]:
        try:  # the same files `run` takes, with the same one-line refusals
            files.append(subs.resolve(arg).path)
        except subs.SubmissionError as error:
            raise click.UsageError(str(error))
    if not files:
        raise click.UsageError("no submissions to lint: name one, or add files to submissions/")
    report, blocking, warnings = {}, 0, 0
    for path in files:
        shown = paths.shown(path)
        try:
            findings = linter.lint_file(path)
        except OSError as error:
            raise click.UsageError(f"cannot read {shown}: {error.strerror or error}")
        report[shown] = [vars(f) for f in findings]
        blocking += sum(f.blocking for f in findings)
        warnings += sum(not f.blocking for f in findings)
        if not as_json:
            for finding in findings:
                line = finding.format(shown)
                click.echo(line if os.environ.get("NO_COLOR") else
                           click.style(line, fg="red" if finding.blocking else "yellow"))
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(f"{len(files)} file(s): {blocking} blocking finding(s), {warnings} warning(s)")
    raise SystemExit(1 if blocking else 0)


@main.command()
@click.argument("submission")
@mode_option(default="leaderboard", choices=MODES[:3], help="The popcorn mode; only leaderboard mode is ranked.")
@click.option("--leaderboard", default=None, help="Default: the file's `#!POPCORN leaderboard` directive.")
@click.option("--gpu", default=None, help="Default: the file's `#!POPCORN gpu` directive.")
@click.option("--dry-run", is_flag=True, help="Run the gate and print the popcorn-cli command; send nothing.")
@click.option("--force", is_flag=True, help="Send even when the gate or the rate-limit memory says no.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=None, metavar="SECONDS",
              help="Give up waiting for popcorn-cli after this long (default: 3600).")
@reports_errors
def submit(submission, mode, leaderboard, gpu, dry_run, force, timeout_s):
    """Send SUBMISSION (a number or a path) to the MI355X leaderboard through popcorn-cli, after a local gate.

    Exit codes: 0 sent and everything passed; 1 refused by the gate, a rate limit or the server, or a
    remote failure; 2 bad usage, popcorn-cli missing or not registered.
    """
    import time

    from rich.markup import escape

    from harness import display, paths
    from harness.remote import gate
    from harness.remote import submit as remote

    console = display.console(highlight=False, soft_wrap=True)  # soft wrap: the command line stays copyable
    plan = remote.plan(submission, mode=mode, leaderboard=leaderboard, gpu=gpu, force=force)
    for warning in plan.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    if plan.problems and not dry_run:
        raise plan.problems[0]
    notices = display.console(stderr=True)
    try:
        with console.status(f"local gate for {plan.submission.path.name}...") as status:
            def gate_step(line):  # piped, the spinner shows nothing: the step goes to stderr as a line
                status.update(escape(f"local gate: {line}..."))
                if not notices.is_terminal:
                    notices.print(f"gate: {line}...", markup=False, highlight=False, soft_wrap=True)
            verdict = gate.run_gate(plan.submission, plan.text, plan.leaderboard, on_step=gate_step)
    except KeyboardInterrupt:
        click.echo("error: interrupted during the local gate; nothing sent", err=True)
        raise SystemExit(130)
    display.print_gate(console, verdict, force)
    console.print(f"command: {escape(plan.command_line)}")
    if dry_run:
        for problem in plan.problems:
            console.print(f"note: a real send would stop here: {escape(str(problem))}")
        console.print(f"rate limit: {escape(plan.rate.message)}")
        console.print("dry run: nothing sent, nothing recorded")
        raise SystemExit(0 if verdict.ok or force else 1)
    if not verdict.ok and not force:
        raise SystemExit(1)
    started = time.monotonic()
    console.print(f"sending to {plan.leaderboard} on {plan.gpu}; waiting up to "
                  f"{timeout_s or remote.DEFAULT_TIMEOUT_S:.0f} s for the report")
    with console.status("sending...") as status:
        def waiting(elapsed, last_line):
            status.update(escape(f"waiting for {plan.gpu} ({elapsed:.0f} s){': ' + last_line[:80] if last_line else ''}"))
        outcome = remote.send(plan, timeout_s=timeout_s or remote.DEFAULT_TIMEOUT_S, on_wait=waiting)
    if outcome.report is not None:
        console.print(display.send_table(f"{plan.submission.path.name} on {plan.gpu} ({plan.mode} mode, "
                                         f"{time.monotonic() - started:.0f} s)", outcome.records))
    for line in display.score_lines(outcome.records):
        console.print(escape(line))
    console.print(escape(f"raw report: {paths.shown(outcome.report_dir)}; {len(outcome.records)} ledger record(s) written"))
    if outcome.error is not None:
        click.echo(f"error: {outcome.error}", err=True)
    raise SystemExit(outcome.exit_code)


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("submissions", nargs=-1)
@all_option
@mode_option(default="test", help="The official eval.py mode.")
@device_option
@click.option("--cases", "cases_arg", default=None, metavar="official|small|stress|FILE",
              help="Shapes to run (default: official on a GPU, small on a CPU; test mode then also runs the stress "
                   "cases, whose findings are warnings). stress: structured data on the test shapes. FILE: a YAML "
                   "list or eval.py lines.")
@click.option("--flush", type=click.Choice(["fast", "official"]), default="fast", show_default=True,
              help="Cache flush before each timed call: a few times the last-level cache, or eval.py's 64 GiB randn.")
@click.option("--json", "as_json", is_flag=True, help="Print the ledger records as JSON instead of tables.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Time limit for each submission's whole run, as the official runner applies it "
                   "(default: task.yml's test/benchmark/ranked timeout).")
@click.option("--case-timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Also limit each case to this long.")
@click.option("--protection", type=click.Choice(["auto", "sandbox", "files", "off"]), default="auto", show_default=True,
              help="What keeps a submission from changing files on disk: the bwrap sandbox, the fallback's file "
                   "checks, or nothing (off: only to compare timings); auto takes the sandbox where it starts.")
@click.option("--allow-rejected", is_flag=True,
              help="Exit 0 for a file that passes but that the server's rules would reject (it still says so).")
@spread_options
@reports_errors
def run(submissions, run_all, mode, device, cases_arg, flush, as_json, timeout, case_timeout, protection,
        allow_rejected, gpus, cluster):
    """Validate and time submissions (numbers like 120, or file paths) with the official protocol."""
    import json

    from harness import display, paths
    from harness.run import session
    from harness import submission as subs

    check_submissions_or_all(submissions, run_all)
    if not run_all and not submissions:
        raise click.UsageError("name at least one submission (a number like 120 or a path), or pass --all")
    chosen = subs.discover() if run_all else [subs.resolve(arg) for arg in submissions]
    if not chosen:
        raise subs.SubmissionError(f"no submissions in {paths.SUBMISSIONS_DIR}")
    settings = session.settle(device=device, mode=mode, cases_arg=cases_arg, flush=flush, timeout_s=timeout,
                              case_timeout_s=case_timeout, protection=protection, submissions=tuple(chosen))
    out = display.console()
    notices = display.console(stderr=True)
    notices.print(f"protection: {settings.protection.describe()}", highlight=False, markup=False, soft_wrap=True)
    for notice in settings.notices:
        notices.print(notice)
    outcomes = []
    if gpus or cluster:  # the same evaluation, one submission per GPU at once (harness/run/spread.py)
        from harness.run import spread_rows

        outcomes = spread_rows.spread_outcomes(chosen, settings, gpus, cluster, notices, display.case_line,
                                               quiet=as_json)
        chosen = []
    for outcome in outcomes:
        if not as_json:
            display.print_run(out, outcome.run)
    def say(line):  # on a terminal too: a minutes-long build must not pass in silence
        notices.print(line, markup=False, highlight=False, soft_wrap=True)

    for sub in chosen:
        with display.Steps(notices, sub.label, bar=not as_json,
                           limit_s=settings.case_timeout_s or settings.limit_for(sub)) as steps:
            try:
                outcome = session.evaluate_and_record(sub, settings, progress=steps.step, on_case=steps.finished,
                                                      say=say)
            except KeyboardInterrupt:
                notices.print(steps.interrupted(), highlight=False, soft_wrap=True)
                raise
        outcomes.append(outcome)
        if not as_json:
            display.print_run(out, outcome.run)
        if outcome.ledger_error:
            break
    runs = [outcome.run for outcome in outcomes]
    if as_json:
        click.echo(json.dumps([outcome.record for outcome in outcomes], indent=2))
    elif len(runs) > 1:
        out.print(session.counts_line(runs))
    for note in filter(None, [session.interpreter_note(runs), session.emulator_note(runs)]):
        notices.print(f"note: {note}", highlight=False)
    lost = next((outcome.ledger_error for outcome in outcomes if outcome.ledger_error), None)
    if lost:
        raise lost
    raise SystemExit(session.exit_code(runs, allow_rejected))


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("submission")
@click.option("--target", type=click.Choice(["mi355x"]), default="mi355x", show_default=True, help="Machine to estimate for.")
@device_option
@click.option("--json", "as_json", is_flag=True, help="Print the ledger record as JSON instead of tables.")
@click.option("--protection", type=click.Choice(["auto", "sandbox", "files", "off"]), default="auto", show_default=True,
              help="What keeps the submission from changing files on disk (as for run).")
@reports_errors
def estimate(submission, target, device, as_json, protection):
    """Estimate SUBMISSION's MI355X leaderboard time from what it launches: a cost model, not a measurement."""
    import json

    from harness import display, submission as subs
    from harness.display import estimate as display_estimate
    from harness.estimate import runner
    from harness.results import ledger
    from harness.run import session

    chosen = subs.resolve(submission)
    here, guarding = session.prepare(device, protection)
    console = display.console()
    with display.Steps(display.console(stderr=True), chosen.label) as steps:
        result = runner.run(chosen, here, target, protection=guarding,
                            progress=steps.step)
    try:
        record = runner.save(result, session.git_checkout())
    except OSError as error:
        raise session.ResultsError("the estimate could not be written to the ledger: "
                                   f"{ledger.why_unwritten(error)}") from None
    click.echo(json.dumps(record, indent=2)) if as_json else display_estimate.print_estimate(console, result)
    raise SystemExit(EXIT_FAILED if result.status == "fail" else EXIT_PASSED)


@main.command(name="list")
@click.argument("submissions", nargs=-1)
@all_option
@device_option
@reports_errors
def list_submissions(submissions, run_all, device):
    """Every submission (or the ones named: numbers or files), what it needs, and whether this machine can run it."""
    from rich.markup import escape

    from harness import display, paths
    from harness import platform as platforms
    from harness import submission as subs

    check_submissions_or_all(submissions, run_all)
    here = platforms.run_platform(device)
    found = [subs.resolve(arg) for arg in submissions] if submissions else subs.discover()
    console = display.console()
    if not found:
        console.print(f"no submissions in {escape(paths.shown(paths.SUBMISSIONS_DIR))}")
    else:
        display.print_submissions(console, found, here, platforms.can_run)


@main.command()
@device_option
@reports_errors
def doctor(device):
    """What this machine is (device, arch, versions) and what it can run."""
    from harness import display
    from harness import platform as platforms
    from harness import submission as subs
    from harness.sandbox import guard

    here = platforms.run_platform(device)
    console = display.console()
    console.print(display.machine_table(here))
    console.print(f"protection of runs: {guard.choose('auto').describe()}", highlight=False, markup=False,
                  soft_wrap=True)
    console.print(display.reach_table(platforms.reach(here)))
    found = subs.discover()
    runnable = [s for s in found if platforms.can_run(s, here)[0]]
    console.print(f"{len(runnable)} of {len(found)} submissions in submissions/ can run here"
                  + (f": {', '.join(s.label for s in runnable)}" if runnable else ""), highlight=False)


@main.command(name="compile")
@click.argument("submission")
@click.option("--target", type=click.Choice(["gfx950", "gfx942", "sm90"]), default="gfx950", show_default=True,
              help="GPU to compile for; no such GPU is needed on this machine.")
@click.option("--protection", type=click.Choice(["auto", "sandbox", "files", "off"]), default="auto", show_default=True,
              help="What keeps the file's import from changing files on disk (as for run).")
@reports_errors
def compile_command(submission, target, protection):
    """Compile a submission's kernels ahead of time (Triton kernels, or HIP load_inline sources for gfx950/gfx942)
    and report registers, spills, LDS/shared memory, occupancy, MFMA/MMA use."""
    from harness import display
    from harness.compile import aot, compiled
    from harness.run import compiling
    from harness import submission as subs

    chosen = subs.resolve(submission)
    path = chosen.path
    console = display.console()
    with console.status(f"compiling {path.name} for {target} in its worker..."):
        outcome, _ = compiling.compile_and_record(chosen, target, protection=protection)
    if outcome.syntax_error:
        click.echo(f"{outcome.syntax_error_line(path.name)} (nothing compiled)")
    for problem in outcome.problems:
        console.print(f"[red]fail:[/] {display.escape(problem)}")
    if outcome.hip is not None:
        display.print_hip_report(console, outcome.hip)
    if outcome.triton:
        display.print_compile(console, path.name, target, outcome.triton, aot.TARGETS[target][0] == "hip")
    if outcome.status == "skip" and not outcome.syntax_error:
        click.echo(f"skip: {path.name}: {compiled.NOTHING_TO_COMPILE}")
    raise SystemExit(EXIT_FAILED if outcome.failed else EXIT_PASSED)
