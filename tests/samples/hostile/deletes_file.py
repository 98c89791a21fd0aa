# Hostile sample: deletes a tracked file of the checkout, then answers correctly.
# verdict sandbox: tried to change scoreboard.md on disk
# verdict files: tampered with scoreboard.md on disk (deleted
import os
from pathlib import Path

from reference import ref_kernel

os.remove(Path(__file__).resolve().parents[3] / "scoreboard.md")


def custom_kernel(data):
    return ref_kernel(data)
