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


def _relative(path) -> str:
    """The path as the user would type it: relative to the working directory when it is below it."""
    from pathlib import Path

    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
