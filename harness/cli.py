"""The `harness` command: parses arguments and prints; the work lives in the other modules."""
import click

from harness import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
def main():
    """Validate, time, rank and submit amd-mixed-mla submissions."""
