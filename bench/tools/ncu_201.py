"""Drives one shape of 201 for Nsight Compute (`git show 66ad16a:bench/device_ncu.sh`): a few calls of mla_decode, the last one profiled.

    python bench/tools/ncu_201.py BATCHxKV [key:value,...]
"""
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "tools"))

import reference  # noqa: E402
from bench_decode import load_submission  # noqa: E402

batch, kv_len = map(int, sys.argv[1].split("x"))
tuning = {k: int(v) for k, _, v in (p.partition(":") for p in filter(None, (sys.argv[2:] or [""])[0].split(",")))}
module = load_submission(201)
data = reference.generate_input(batch, 1, kv_len, 4217, device="cuda")
for _ in range(3):
    module.mla_decode(data, **tuning)
torch.cuda.synchronize()
