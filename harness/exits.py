"""Exit codes and how every command reports a failure: one `error:` line, the same code for the same kind.

`reports_errors` wraps each command; `OneLineErrors` is the command group, so click's own usage errors
(an unknown option, a bad choice) read the same way instead of click's usage block.
"""
import functools
import os
import sys

import click

# Exit codes, the same for every command (pytest's habit: 3 is the tool's own fault).
EXIT_PASSED = 0       # everything that ran passed
EXIT_FAILED = 1       # a submission failed (or a send/gate refused)
EXIT_USAGE = 2        # bad arguments or input, or results that cannot be written
EXIT_BUG = 3          # a harness bug: one line, HARNESS_DEBUG=1 shows the traceback
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader went away
EXIT_CODES_HELP = ("Exit codes: 0 all passed, 1 a submission failed, 2 usage or input error (a result that cannot "
                   "be written included), 3 harness bug, 130 interrupted.")


def reports_errors(command):
    """A bad input is one 'error:' line and exit 2; a harness bug is one line too, never a traceback."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from harness.run.cases import CaseError
        from harness.compile.compiled import CompileError
        from harness.results.diff import NothingComparable
        from harness.platform import PlatformError
        from harness.remote.popcorn_errors import RemoteError
        from harness.run.session import ResultsError
        from harness.submission import SubmissionError

        try:
            return command(*args, **kwargs)
        except (SubmissionError, PlatformError, CaseError, NothingComparable, ResultsError, CompileError) as error:
            click.echo(f"error: {error}", err=True)
            raise SystemExit(EXIT_USAGE)
        except RemoteError as error:
            click.echo(f"error: {error}", err=True)
            raise SystemExit(error.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            raise SystemExit(EXIT_INTERRUPTED)
        except BrokenPipeError:  # the reader (head, less) stopped reading: stop quietly, as a shell tool does
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(EXIT_BROKEN_PIPE)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except Exception as error:
            if os.environ.get("HARNESS_DEBUG"):
                raise
            click.echo(f"internal error: {type(error).__name__}: {error} (HARNESS_DEBUG=1 shows the traceback)",
                       err=True)
            raise SystemExit(EXIT_BUG)

    return wrapper


class OneLineErrors(click.Group):
    """click's usage errors as one `error:` line (no usage block), exit 2; Ctrl-C as exit 130."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as error:
            click.echo(f"error: {error.format_message()}", err=True)
            sys.exit(EXIT_USAGE if isinstance(error, click.UsageError) else error.exit_code)
        except click.exceptions.Abort:
            click.echo("interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(code if isinstance(code, int) else EXIT_PASSED)
