# Hostile sample: rewrites task.py (the next run's child imports it), then answers correctly.
# verdict sandbox: tried to change task.py on disk
# verdict files: tampered with task.py
from pathlib import Path

import task
from reference import ref_kernel

for target in {Path(task.__file__).resolve(), Path(__file__).resolve().parents[3] / "task.py"}:
    with open(target, "a") as file:
        file.write("\nimport os; os.environ['HOSTILE'] = '1'\n")


def custom_kernel(data):
    return ref_kernel(data)
