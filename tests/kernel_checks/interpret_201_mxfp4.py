"""Runs 201's MXFP4 path (mla_decode(mxfp4=1)) under TRITON_INTERPRET=1 on the CPU; prints one JSON object.

tests/test_mxfp4_path_201.py starts this in a child process. Yardsticks, all float64 attention:
- "mx": Q as given (bf16) over reference.dequantize_mxfp4's KV (the dequantized MXFP4 attention);
- "mx_q8": the same with Q rounded the way the kernel rounds it (MXFP8: e4m3 with one power-of-two scale per
  head and 32 dims, 2^(floor(log2 amax) - 7)): the kernel's own arithmetic, up to bf16 P and the output cast;
- "bf16": Q over the bf16 KV (exact attention), with the a8w8 reference's distance from it for scale.
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
spec = importlib.util.spec_from_file_location("sub201_mx", path)
sub = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sub)


def mxfp8(x: torch.Tensor) -> torch.Tensor:
    """x (..., n) rounded to e4m3 with one power-of-two scale per 32 values, as float64."""
    blocks = x.double().reshape(*x.shape[:-1], -1, 32)
    amax = blocks.abs().amax(-1, keepdim=True)
    exponent = torch.where(amax > 0, torch.floor(torch.log2(amax)) - 7, torch.full_like(amax, -127.0))
    scale = torch.pow(2.0, exponent.clamp(min=-127))
    return ((blocks / scale).float().to(torch.float8_e4m3fn).double() * scale).reshape(x.shape)


def attention(q: torch.Tensor, kv: torch.Tensor, kv_indptr, sm_scale: float) -> torch.Tensor:
    bounds = kv_indptr.tolist()
    out = torch.empty((q.shape[0], q.shape[1], 512), dtype=torch.float64)
    for b in range(q.shape[0]):
        k = kv[bounds[b]:bounds[b + 1]]
        out[b] = torch.softmax((q[b] @ k.T) * sm_scale, dim=-1) @ k[:, :512]
    return out


def rel_err(out, exact) -> float:
    return float((out.double() - exact).norm() / exact.norm())


def yardsticks(data) -> dict:
    q, kv_data, _, kv_indptr, config = data
    packed, scales = kv_data["mxfp4"]
    kv_mx = ref.dequantize_mxfp4(packed.reshape(-1, 288), scales).double()
    q8 = torch.cat([mxfp8(q[..., :512]), mxfp8(q[..., 512:])], dim=-1)
    return {"mx": attention(q.double(), kv_mx, kv_indptr, config["sm_scale"]),
            "mx_q8": attention(q8, kv_mx, kv_indptr, config["sm_scale"]),
            "bf16": attention(q.double(), kv_data["bf16"].reshape(-1, 576).double(), kv_indptr, config["sm_scale"])}


results = {"cases": []}
for batch, kv_len, seed, splits, lens in [(1, 64, 5, 1, None), (3, 257, 12, 2, None), (2, 100, 3, 1, None),
                                          (3, 0, 21, 3, [1, 70, 33])]:
    data = ref.generate_input(batch, 1, kv_len, seed, device="cpu", kv_seq_lens=lens)
    out = sub.mla_decode(data, mxfp4=1, splits=splits)
    ok, _ = ref.check_implementation(data, out)
    marks = yardsticks(data)
    results["cases"].append({"case": [batch, kv_len, seed, splits], "ok": bool(ok),
                             "finite": bool(out.isfinite().all()), "shape": list(out.shape), **{f"err_{k}": rel_err(out, v) for k, v in marks.items()},
                             "ref_a8w8_err": rel_err(ref.ref_kernel(data), marks["bf16"])})

# Splits agree; the scale tensor's pad rows and its row stride change nothing (it is read as it comes).
data = ref.generate_input(3, 1, 257, 12, device="cpu")
one = sub.mla_decode(data, mxfp4=1, splits=1)
results["splits_agree"] = rel_err(sub.mla_decode(data, mxfp4=1, splits=3), one.double())
packed, scales = data[1]["mxfp4"]
raw = scales.view(torch.uint8)
rows = packed.shape[0]  # 3 x 257 tokens; the scale tensor has 1024 rows, the rest is padding
repadded = raw.clone()
repadded[rows:] = torch.randint(0, 256, repadded[rows:].shape, dtype=torch.uint8)
wide = torch.zeros((raw.shape[0], 40), dtype=torch.uint8)  # another row stride: 40 bytes
wide[:, :24] = raw
for name, other in (("pad_rows", repadded), ("stride_40", wide[:, :24])):
    kv_data = dict(data[1], mxfp4=(packed, other))
    again = sub.mla_decode((data[0], kv_data, data[2], data[3], data[4]), mxfp4=1, splits=1)
    results[name + "_equal"] = bool(torch.equal(again, one))
print(json.dumps(results))
