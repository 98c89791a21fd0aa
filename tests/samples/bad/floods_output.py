#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: prints without end to stdout and stderr.

The worker's output goes to a capped log file, so the flood cannot fill the disk or the terminal.
Expected: error, "output cap".
"""
import sys

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    line = "debug: " + "x" * 1000
    while True:
        print(line)
        print(line, file=sys.stderr)
