"""What a spread run shows as it goes: one live row per GPU in a terminal, one plain line per finished
case and submission (prefixed with its GPU) when piped."""
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from harness.run import spread


def verdict_line(run) -> str:
    """'119_x: fail: case 2 (...): ...': one finished submission."""
    return f"{run.submission.label}: {run.status}" + (f": {run.reason}" if run.reason else "")


class GpuRows(spread.Watcher):
    """A spread.Watcher that prints; use it in a `with` around spread.spread."""

    def __init__(self, console, gpus: list, case_line, quiet: bool = False):
        self.console = console
        self.case_line = case_line  # display.case_line, handed in: only the cli imports display
        self.live = console.is_terminal and not quiet
        self.quiet = quiet
        columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        self.bar = Progress(*columns, console=console, transient=True, disable=not self.live)
        self.rows = {gpu.index: self.bar.add_task(f"{gpu.label}: idle", total=None) for gpu in gpus}

    def __enter__(self):
        self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        return self.bar.__exit__(*exc)

    def say(self, line: str) -> None:
        if not self.live and not self.quiet:  # piped or in CI: plain lines instead of the live rows
            self.console.print(line, highlight=False, markup=False, soft_wrap=True)

    def started(self, gpu, submission, pid, pinning):
        self.bar.reset(self.rows[gpu.index], total=None, description=f"{gpu.label}: {submission.label}")
        self.say(f"{gpu.label} | {submission.label}: started")

    def progress(self, gpu, submission, completed, total, label):
        self.bar.update(self.rows[gpu.index], completed=completed, total=total,
                        description=f"{gpu.label}: {escape(submission.label)}: {escape(label)}")

    def case(self, gpu, submission, index, total, result):
        self.say(f"{gpu.label} | {self.case_line(submission.label, index, total, result)}")

    def finished(self, gpu, outcome):
        run = outcome.run
        self.bar.update(self.rows[gpu.index], description=f"{gpu.label}: idle")
        self.say(f"{gpu.label} | {verdict_line(run)}")


class TaskLines(spread.Watcher):
    """A cluster run's one line per finished submission (Ray reports no progress of a task)."""

    def __init__(self, console):
        self.console = console

    def finished(self, gpu, outcome):
        run = outcome.run
        self.console.print(f"ray | {verdict_line(run)}", highlight=False, markup=False, soft_wrap=True)


def spread_outcomes(chosen, settings, gpus_request, cluster, console, case_line, quiet=False) -> list:
    """The outcomes of `run --gpus` (this node) or `run --cluster` (Ray), shown as they go; on Ctrl-C
    what is lost is printed before KeyboardInterrupt goes on."""
    from harness.run import cluster as clusters

    if cluster is not None:
        console.print(f"sending {len(chosen)} submission(s) to the Ray cluster at {cluster}", highlight=False)
        return clusters.spread_on_cluster(chosen, settings, cluster, TaskLines(console))
    gpus = spread.choose(gpus_request, spread.visible_gpus())
    console.print(f"spreading {len(chosen)} submission(s) over {', '.join(g.label for g in gpus)}", highlight=False)
    try:
        with GpuRows(console, gpus, case_line, quiet) as rows:
            return spread.spread(chosen, settings, gpus, rows)
    except KeyboardInterrupt as interrupt:
        for line in getattr(interrupt, "lines", []):
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        raise
