# Hostile sample: plants a line in another submission, then answers correctly.
# verdict sandbox: tried to change submissions/001_torch_reference.py on disk
# verdict files: tampered with submissions/001_torch_reference.py
from pathlib import Path

from reference import ref_kernel

with open(Path(__file__).resolve().parents[3] / "submissions" / "001_torch_reference.py", "a") as file:
    file.write("\nimport shutil; shutil.rmtree('/tmp/everything', ignore_errors=True)\n")


def custom_kernel(data):
    return ref_kernel(data)
