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
# Fidelity: 201 against the a8w8 reference, both measured against exact attention.
data = cpu_input(2, 384, 7)
exact = exact_attention(data)
results["fidelity"] = {"ref_a8w8": rel_err(ref.ref_kernel(data), exact), "fp8": rel_err(sub.mla_decode(data), exact)}

# Official check on small cases: one split (the output written directly), several splits and the merge kernel.
results["paths"] = []
for batch, kv_len, seed, tuning in [(1, 64, 11, {}), (3, 257, 12, {}), (2, 300, 5, {"splits": 3}),
                                    (2, 200, 6, {"splits": 2}), (3, 257, 12, {"splits": 1})]:
    data = cpu_input(batch, kv_len, seed)
    out = sub.mla_decode(data, **tuning)
    results["paths"].append({"case": [batch, kv_len, seed, tuning], "shape": list(out.shape), "dtype": str(out.dtype),
                             "rel_err": rel_err(out, exact_attention(data))} | official(data, out))

# Uneven lengths with empty split slices (5 tokens over 4 splits).
data = cpu_input(3, 130, 21, kv_seq_lens=[5, 130, 64])
out = sub.mla_decode(data, splits=4)
results["uneven"] = {"finite": bool(torch.isfinite(out.float()).all()),
                     "rel_err": rel_err(out, exact_attention(data))} | official(data, out)

# A second call on the same plan (its partial buffers reused) gives the same output; split counts agree.
data = cpu_input(2, 300, 8)
first = sub.mla_decode(data, splits=3).clone()
results["repeat_equal"] = bool(torch.equal(first, sub.mla_decode(data, splits=3)))
results["splits_agree"] = float((first.double() - sub.mla_decode(data, splits=1).double()).abs().max())

# The merge kernel by 128-dim slices (the sm90 path's, few sequences and many splits) and by whole rows,
# against the log2-sum-exp weighted mean in float64; one split of one head has no tokens (-inf).
gen = torch.Generator().manual_seed(3)
seqs, splits = 2, 5
parts = torch.randn(seqs * splits * 16, 512, generator=gen)
lse = torch.randn(seqs * splits * 16, generator=gen) * 4
lse[7] = float("-inf")
weights = torch.exp2(lse.double().view(seqs, splits, 16, 1))
expected = (weights * parts.double().view(seqs, splits, 16, 512)).sum(1) / weights.sum(1)
results["merge"] = {}
for name, dims, chunk in (("rows", 512, 8), ("slices", 128, 2)):
    merged = torch.empty(seqs, 16, 512, dtype=torch.bfloat16)
    sub.mla_merge_kernel[(seqs, 16, 512 // dims)](parts, lse, merged, splits, SPLITS_CHUNK=chunk, DIMS=dims)
    results["merge"][name] = float((merged.double() - expected).abs().max() / expected.abs().max())

one, two = cpu_input(1, 64, 61), cpu_input(1, 64, 62)
out1 = sub.custom_kernel(one).clone()
results["fresh"] = {"differ": not torch.equal(out1, sub.custom_kernel(two)),
                    "repeatable": bool(torch.equal(out1, sub.custom_kernel(one)))}
print(json.dumps(results))
