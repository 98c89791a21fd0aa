"""Runs submission 200 under TRITON_INTERPRET=1 on the CPU and prints its results as one JSON object.

tests/test_triton_kernel.py starts this in a child process: Triton picks the interpreter when it is
first imported (its own tl.max, tl.cdiv... are @triton.jit functions too), so a test process that has
already imported Triton for a GPU target cannot switch. Every number here comes from a real run.
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

spec = importlib.util.spec_from_file_location("sub200", REPO / "submissions" / "200_triton_mxfp4.py")
sub = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sub)


def cpu_input(batch, kv_len, seed, **options):
    return ref.generate_input(batch, 1, kv_len, seed, device="cpu", **options)


def exact_mxfp4_attention(data) -> torch.Tensor:
    """float64 attention of bf16 Q over the exactly dequantized MXFP4 KV: the kernel's math without rounding."""
    q, kv_data, _, kv_indptr, config = data
    packed, scales = kv_data["mxfp4"]
    kv = ref.dequantize_mxfp4(packed.reshape(packed.shape[0], -1), scales).double()
    out = torch.empty((q.shape[0], q.shape[1], ref.V_HEAD_DIM), dtype=torch.float64)
    bounds = kv_indptr.tolist()
    for b in range(q.shape[0]):
        k = kv[bounds[b]:bounds[b + 1]]
        scores = (q[b].double() @ k.T) * config["sm_scale"]
        out[b] = torch.softmax(scores, dim=-1) @ k[:, : ref.V_HEAD_DIM]
    return out


def max_diff(a, b) -> float:
    return float((a.double() - b.double()).abs().max())


def official(data, out) -> dict:
    ok, message = ref.check_implementation(data, out)
    return {"ok": bool(ok), "message": message}


results = {"exact": [], "official": []}
for batch, kv_len, seed, splits in [(1, 64, 11, None), (3, 257, 12, None), (2, 300, 5, 3)]:
    data = cpu_input(batch, kv_len, seed)
    tuning = {"kv_format": "mxfp4"} | ({} if splits is None else {"splits": splits})
    out = sub.mla_decode(data, **tuning)
    expected = exact_mxfp4_attention(data)
    results["exact"].append({"case": [batch, kv_len, seed, splits], "shape": list(out.shape),
                             "dtype": str(out.dtype), "max_err": max_diff(out, expected),
                             "max_ref": float(expected.abs().max())})
for case in [(1, 64, 11), (3, 257, 12)]:
    data = cpu_input(*case)
    results["official"].append({"case": list(case)} | official(data, sub.custom_kernel(data)))

# 5 tokens over 4 splits of 64-token slices leaves splits 1..3 empty; 130 tokens reach three of them.
data = cpu_input(3, 130, 21, kv_seq_lens=[5, 130, 64])
out = sub.mla_decode(data, kv_format="mxfp4", splits=4)
bf16_out = sub.mla_decode(data, kv_format="bf16", splits=4)
results["uneven"] = {"finite": bool(torch.isfinite(out.float()).all()),
                     "finite_bf16": bool(torch.isfinite(bf16_out.float()).all()),
                     "max_err": max_diff(out, exact_mxfp4_attention(data))} | official(data, out)


def with_scales(data, scales):
    q, kv_data, qo_indptr, kv_indptr, config = data
    return q, dict(kv_data, mxfp4=(kv_data["mxfp4"][0], scales)), qo_indptr, kv_indptr, config


# aiter's layout (row stride 24, garbage pad rows) against the same scales with poisoned padding (0xFF is
# NaN in e8m0) and against a compact (200, 18) copy: a kernel that reads past the corner or assumes a
# stride of 18 gives a different output.
data = cpu_input(2, 100, 31)
scales = data[1]["mxfp4"][1].view(torch.uint8)
poisoned = scales.clone()
poisoned[200:] = 0xFF
poisoned[:, 18:] = 0xFF
variants = {"poisoned": with_scales(data, poisoned), "compact": with_scales(data, scales[:200, :18].contiguous())}
results["layout"] = {"shape": list(scales.shape), "stride": scales.stride(0),
                     "equal": {name: [bool(torch.equal(sub.mla_decode(data, kv_format="mxfp4", qk_scaled=s),
                                                       sub.mla_decode(variant, kv_format="mxfp4", qk_scaled=s)))
                                      for s in (0, 1)] for name, variant in variants.items()}}

data = cpu_input(2, 200, 41)
results["splits_agree"] = max_diff(sub.mla_decode(data, kv_format="mxfp4", splits=1),
                                   sub.mla_decode(data, kv_format="mxfp4", splits=5))

data = cpu_input(2, 150, 51)
results["paths"] = {name: official(data, sub.mla_decode(data, kv_format=fmt, **tuning))
                    for name, fmt, tuning in [("fp8", "fp8", {}), ("fp8_reuse", "fp8", {"fp8_reuse": 1}),
                                              ("bf16", "bf16", {})]}

data = cpu_input(2, 130, 71)
results["scaled_vs_decoded"] = max_diff(sub.mla_decode(data, kv_format="mxfp4"),
                                        sub.mla_decode(data, kv_format="mxfp4", qk_scaled=1))

first, second = cpu_input(1, 64, 61), cpu_input(1, 64, 62)
out1 = sub.custom_kernel(first).clone()
results["fresh"] = {"differ": not torch.equal(out1, sub.custom_kernel(second)),
                    "repeatable": bool(torch.equal(out1, sub.custom_kernel(first)))}

print(json.dumps(results))
