"""Which lane mapping of ds_read_b64_tr_b8/_b16 makes Triton's gfx950 dots right on the emulator (issue 28).

Compiles one Triton dot whose B operand is loaded N-contiguous (Triton's AMD backend reads it with the transposed
LDS loads), runs it on the gfx950 emulator under each candidate mapping, and prints the largest error against
torch. Usage: .venv/bin/python bench/tools/transpose_layouts.py   (CPU, a few seconds; bench/notes/2026-12-02-*)
"""
import sys
from pathlib import Path

import numpy as np
import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from harness.emulator import launch_triton, matrix  # noqa: E402


@triton.jit
def dot(a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    tl.store(out_ptr + m[:, None] * N + n[None, :], tl.dot(a, b))


def candidates(element_bytes: int) -> dict:
    """(source lane, source element) per result lane and element, for five readings of the 16-lane transpose."""
    per = 8 // element_bytes
    stride = 16 // per
    lane, e = np.arange(64)[:, None], np.arange(per)[None, :]
    row, w = lane // 16 * 16, lane % 16
    spread = lambda x: np.broadcast_to(x, (64, per))
    return {"A": (row + e * stride + w % stride, spread(w // stride)),
            "B": (row + (w // per) * per + e, spread(w % per)),
            "C": (row + e + per * (w % stride), spread(w // stride)),
            "D": (row + e * stride + w // per, spread(w % per)),
            "E": (row + (w % per) * stride + e, spread(w // per))}


def main() -> None:
    launch_triton.install()
    right = matrix.transpose_source
    for dtype, element_bytes in ((torch.float16, 2), (torch.float8_e4m3fn, 1)):
        for name, mapping in candidates(element_bytes).items():
            matrix.transpose_source = lambda size, m=mapping, b=element_bytes: m if size == b else right(size)
            launch_triton._state["codes"].clear()
            dot.device_caches.clear()  # compile afresh: executors are built per code object
            a, b, out = torch.randn(16, 64).to(dtype), torch.randn(64, 64).to(dtype), torch.zeros(16, 64)
            dot[(1,)](a, b, out, 16, 64, 64, num_warps=4)
            print(f"{str(dtype):22} candidate {name}: max error {(out - a.float() @ b.float()).abs().max():.3g}")
    matrix.transpose_source = right


if __name__ == "__main__":
    main()
