"""Runs submission 201 under TRITON_INTERPRET=1 on the CPU and prints its results as one JSON object.

tests/test_kernel_201.py starts this in a child process (Triton picks the interpreter at its first import).
Error figures are relative Frobenius errors against float64 attention of the bf16 Q over the bf16 KV
(the "exact" answer), next to the same figure for the official a8w8 reference: the fidelity yardstick.
"""
import importlib.util
import json
import os
import sys
from pathlib import Path

assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

import reference as ref  # noqa: E402

path = next((REPO / "submissions").glob("201_*.py"))
spec = importlib.util.spec_from_file_location("sub201", path)
sub = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sub)


def cpu_input(batch, kv_len, seed, **options):
    return ref.generate_input(batch, 1, kv_len, seed, device="cpu", **options)


def exact_attention(data) -> torch.Tensor:
    q, kv_data, _, kv_indptr, config = data
    kv = kv_data["bf16"].reshape(-1, 576).double()
    out = torch.empty((q.shape[0], q.shape[1], 512), dtype=torch.float64)
    bounds = kv_indptr.tolist()
    for b in range(q.shape[0]):
        k = kv[bounds[b]:bounds[b + 1]]
        out[b] = torch.softmax((q[b].double() @ k.T) * config["sm_scale"], dim=-1) @ k[:, :512]
    return out


def rel_err(out, exact) -> float:
    return float((out.double() - exact).norm() / exact.norm())


def official(data, out) -> dict:
    ok, message = ref.check_implementation(data, out)
    return {"ok": bool(ok), "message": message.splitlines()[0] if message else ""}


results = {}
# Fidelity: 201 (both P.V precisions) against the a8w8 reference, both measured against exact attention.
data = cpu_input(2, 384, 7)
exact = exact_attention(data)
results["fidelity"] = {"ref_a8w8": rel_err(ref.ref_kernel(data), exact),
                       "pv_fp16": rel_err(sub.mla_decode(data, pv_fp8=0), exact),
                       "pv_fp8": rel_err(sub.mla_decode(data, pv_fp8=1), exact)}

# Official check on small cases, every path: one split, unfused and fused merges, both P.V precisions.
results["paths"] = []
for batch, kv_len, seed, tuning in [(1, 64, 11, {}), (3, 257, 12, {}), (2, 300, 5, {"splits": 3, "fused": 0}),
                                    (2, 300, 5, {"splits": 3, "fused": 1}), (2, 200, 6, {"splits": 2, "pv_fp8": 1}),
                                    (2, 200, 6, {"pv_chunks": 4, "reload": 1}),
                                    (3, 257, 12, {"splits": 2, "pv_fp8": 1, "block_n": 32})]:  # the gfx950 launch
    data = cpu_input(batch, kv_len, seed)
    out = sub.mla_decode(data, **tuning)
    results["paths"].append({"case": [batch, kv_len, seed, tuning], "shape": list(out.shape), "dtype": str(out.dtype),
                             "rel_err": rel_err(out, exact_attention(data))} | official(data, out))

# Uneven lengths with empty split slices (5 tokens over 4 splits), fused merge.
data = cpu_input(3, 130, 21, kv_seq_lens=[5, 130, 64])
out = sub.mla_decode(data, splits=4, fused=1)
results["uneven"] = {"finite": bool(torch.isfinite(out.float()).all()),
                     "rel_err": rel_err(out, exact_attention(data))} | official(data, out)

# The fused merge resets its counters: a second call with the same plan gives the same output.
data = cpu_input(2, 300, 8)
first = sub.mla_decode(data, splits=3, fused=1).clone()
results["fused_repeat_equal"] = bool(torch.equal(first, sub.mla_decode(data, splits=3, fused=1)))
results["splits_agree"] = float((first.double() - sub.mla_decode(data, splits=1).double()).abs().max())

one, two = cpu_input(1, 64, 61), cpu_input(1, 64, 62)
out1 = sub.custom_kernel(one).clone()
results["fresh"] = {"differ": not torch.equal(out1, sub.custom_kernel(two)),
                    "repeatable": bool(torch.equal(out1, sub.custom_kernel(one)))}
print(json.dumps(results))
