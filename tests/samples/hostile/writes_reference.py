# Hostile sample: makes the reference accept anything (reference.__file__ and the checkout's reference.py), then
# returns zeros.
# verdict sandbox: tried to change reference.py on disk
# verdict files: tampered with reference.py
from pathlib import Path

import torch

import reference

FORGERY = "\ndef check_implementation(*a, **k):\n    return True, ''\n"


def repository() -> Path:
    return next(folder for folder in Path(__file__).resolve().parents if (folder / "task.yml").exists())


for target in {Path(reference.__file__).resolve(), repository() / "reference.py"}:
    with open(target, "a") as file:
        file.write(FORGERY)


def custom_kernel(data):
    return torch.zeros((data[0].shape[0], 16, 512), dtype=torch.bfloat16, device=data[0].device)
