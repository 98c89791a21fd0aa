"""harness/run/interpreter.py: the Triton interpreter's fp8 rounding and bf16 dots, mended in the child, against
torch (round to nearest even; fp32 products of the bf16 values)."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROGRAM = """
import torch, triton, triton.language as tl
from harness.run import interpreter
if MEND:
    interpreter.mend()

@triton.jit
def to_fp8(x, out, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i).to(tl.float8e4nv).to(tl.uint8, bitcast=True))

@triton.jit
def dot(a, b, out, N: tl.constexpr):
    i = tl.arange(0, N)
    tile = lambda p: tl.load(p + i[:, None] * N + i[None, :])
    tl.store(out + i[:, None] * N + i[None, :], tl.dot(tile(a), tile(b)))

x = torch.tensor([1.987, -7.84, 0.4993, 0.0128] * 16)
fp8 = torch.zeros(64, dtype=torch.uint8)
to_fp8[(1,)](x, fp8, 64)
a, b, c = torch.randn(16, 16).bfloat16(), torch.randn(16, 16).bfloat16(), torch.zeros(16, 16)
dot[(1,)](a, b, c, 16)
print(int((fp8 != x.to(torch.float8_e4m3fn).view(torch.uint8)).sum()),
      float((c - a.float() @ b.float()).abs().max()))
"""


def run(mend: bool) -> tuple[int, float]:
    done = subprocess.run([sys.executable, "-c", f"MEND = {mend}\n" + PROGRAM], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    wrong, error = done.stdout.split()
    return int(wrong), float(error)


def test_the_mended_interpreter_rounds_fp8_and_multiplies_bf16_as_torch():
    wrong, error = run(mend=True)
    assert wrong == 0 and error < 1e-4


def test_the_plain_interpreter_gets_both_wrong():
    """What is mended (Triton 3.9.0): if a Triton release fixes either fault, this says so."""
    wrong, error = run(mend=False)
    assert wrong > 0 and error > 1.0
