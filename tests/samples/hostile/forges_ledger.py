# Hostile sample: appends a forged passing record to the ledger, then fails (all zeros).
# verdict sandbox: tried to change
# verdict files: tampered with
import json
import os
from pathlib import Path

import torch

FORGED_MARK = "forged-by-hostile-sample"


def ledger() -> Path:
    if os.environ.get("HARNESS_LEDGER"):
        return Path(os.environ["HARNESS_LEDGER"])
    results = os.environ.get("HARNESS_RESULTS") or Path(__file__).resolve().parents[3] / "results"
    return Path(results) / "ledger.jsonl"


forged = {"schema": 1, "run_id": FORGED_MARK, "source": "local", "status": "pass", "reason": "", "mode": "test",
          "submission": {"number": None, "path": "tests/samples/hostile/forges_ledger.py", "sha256": ""},
          "results": [], "warnings": [], "device": {"name": "NVIDIA H200", "arch": "sm_90", "backend": "cuda"}}
with open(ledger(), "a") as file:
    file.write(json.dumps(forged) + "\n")


def custom_kernel(data):
    return torch.zeros((data[0].shape[0], 16, 512), dtype=torch.bfloat16, device=data[0].device)
