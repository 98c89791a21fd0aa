"""The options several `harness` commands share, defined once (as asv's commands/common_args.py): the same flag
means the same thing in every command. Also the two argument rules they share (submissions or --all; a ledger
that is there)."""
import os

import click

from harness.run.cases import MODES

device_option = click.option("--device", type=click.Choice(["auto", "cuda", "cpu", "gfx950"]), default="auto",
                             show_default=True, help="cuda means any GPU, ROCm included; gfx950: HIP and Triton kernels on the gfx950 "
                             "emulator (CPU, correctness only).")
all_option = click.option("--all", "run_all", is_flag=True, help="Every submission in submissions/.")
ledger_option = click.option("--ledger", "ledger_file", type=click.Path(dir_okay=False), default=None,
                             help="Ledger to read (default: $HARNESS_LEDGER or results/ledger.jsonl).")


def spread_options(command):
    """run's --gpus and --cluster: several submissions at once, each on one GPU (docs/MANY_GPUS.md)."""
    command = click.option("--cluster", default=None, metavar="ADDRESS",
                           help="Send each submission as a Ray task (num_gpus=1) to this cluster "
                                "(auto: $RAY_ADDRESS; pip install '.[cluster]').")(command)
    return click.option("--gpus", default=None, metavar="all|N|0,3,5",
                        help="Spread the submissions over this node's GPUs: all, the first N, or these "
                             "indices; one submission per GPU at a time.")(command)


def mode_option(default=None, choices=MODES, help="Only records of this mode."):
    return click.option("--mode", type=click.Choice(choices), default=default, show_default=default is not None,
                        help=help)


def check_submissions_or_all(submissions, run_all) -> None:
    """Submissions named or --all, the same rule in every command that takes both."""
    if run_all and submissions:
        raise click.UsageError("give submissions or --all, not both")


def existing_ledger(ledger_file):
    """A ledger that is not there is a usage error however it was named (a typo must not read as 'no results')."""
    from harness import paths

    found = paths.ledger_file(ledger_file)
    if not found.is_file():
        named = ("--ledger" if ledger_file else f"${paths.LEDGER_ENV}" if os.environ.get(paths.LEDGER_ENV)
                 else f"${paths.RESULTS_ENV}" if os.environ.get(paths.RESULTS_ENV) else "the default")
        raise click.UsageError(f"no ledger at {found} (named by {named})")


def echo_warnings(caught) -> None:
    for warning in caught:
        click.echo(f"warning: {warning.message}", err=True)
