"""Writes tests/fixtures/mxfp4_golden.npz: bytes of the pinned aiter's own MXFP4 quantizer, run on the CPU.

The official runner pinned ROCm/aiter f3be04a12a (2026-03-04); its aiter/utility/fp4_utils.py is byte for
byte the one in the PyPI wheel amd-aiter==0.1.7.post2.dev18 (sha256 EXPECTED_SHA256 below, checked here).
This script loads that one file (no aiter install, no GPU), stubs the single aiter import it makes
(`from . import dtypes`), and runs its Triton kernel `dynamic_mxfp4_quant` through TRITON_INTERPRET=1.

    pip download --no-deps amd-aiter==0.1.7.post2.dev18 -d /tmp/aiter_wheel
    mkdir -p /tmp/aiter_src && python -m zipfile -e /tmp/aiter_wheel/amd_aiter-*.whl /tmp/aiter_src
    TRITON_INTERPRET=1 python bench/tools/make_mxfp4_golden.py /tmp/aiter_src/aiter/utility/fp4_utils.py

The fixture holds the inputs (64 rows x 576 bf16, as bits), the packed fp4x2 bytes and the written corner
of the scale tensor ([:64, :24]), plus what was observed about the layout: the scale tensor's shape and
which of its bytes the kernel writes (it runs twice, torch.empty filling uint8 tensors with a different
sentinel each time: a byte that differs between the runs was never written). Only this output is
committed, never aiter code. tests/test_mxfp4_golden.py holds reference.py to it.

Triton: 3.9's interpreter is the only one that runs the file (3.5.1, 3.6.0, 3.7.1 and 3.8.0 all fail on
its `.floor()` method call), and three small shims below make it run the file as a GPU compile does:
scalar[None, :] allowed (as Triton <= 3.8 compiled it), boolean store masks, exact bf16 -> float32.
Blocks of bf16 subnormals assume the GPU keeps float32 subnormals (no flush to zero) in x * 2^127.

Scaled values below 2^-31 are kept out of the inputs on purpose: the kernel shifts a 32-bit mantissa right
by 126 - e, which is 32 or more there; numpy (the interpreter) gives 0, the GPU's shift instruction may use
the count mod 32, and no MI355X was at hand to tell.
"""
import hashlib
import importlib.util
import json
import os
import sys
import types
from pathlib import Path

assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1 (the kernel runs on the CPU)"

import numpy as np  # noqa: E402
import torch  # noqa: E402

EXPECTED_SHA256 = "488b2250bac5a4f498e4a53e9f4914c26eea74b5683951a7e09130f920c7ab88"
WHEEL = "amd-aiter==0.1.7.post2.dev18"
COMMIT = "f3be04a12a0cfd6b5e2c7a94edc774f1bc24460d"
OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "mxfp4_golden.npz"
N = 576
BLOCK = 32
STRUCTURED_ROWS = 48  # hand-built blocks: ties, near misses, subnormal and zero blocks, saturation
RANDOM_ROWS = 16  # randn rows; 64 rows in all, so the 256-row scale tensor has 192 pad rows
SENTINELS = (0xA5, 0x5A)  # what torch.empty's uint8 tensors hold before the kernel runs, one per run

# Every E2M1 tie (midpoints between neighbouring codes) and every code value.
TIES = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
CODES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def bf16_neighbours(value: float) -> list[float]:
    """The bf16 numbers just below and just above value (a tie's near misses)."""
    bits = torch.tensor([value], dtype=torch.bfloat16).view(torch.int16).item()
    pair = torch.tensor([bits - 1, bits + 1], dtype=torch.int16).view(torch.bfloat16)
    return pair.float().tolist()


def tie_block(amax: float) -> list[float]:
    """32 values of one block whose scale is 1 when amax is in [4, 7): every tie, both signs, near misses, zeros."""
    head = [amax] + TIES + [-t for t in TIES] + [0.0, -0.0]
    misses = [v for t in (0.25, 1.25, 5.0) for v in bf16_neighbours(t)]
    rest = [0.5, -1.0, 3.0, -4.0, 6.0, -6.0, 1.5, -2.0, 4.0, -3.0, 2.0]
    block = head + misses + rest
    return block[:BLOCK]


def scaled_tie_block(amax: float, shift: int) -> list[float]:
    """A tie block times 2^shift: the same ties, seen through scale byte 127 + shift."""
    return [v * 2.0 ** shift for v in tie_block(amax)]


def rows_of_blocks(blocks: list[list[float]]) -> list[list[float]]:
    """Blocks laid out 18 to a row (the last row cycled to fill)."""
    per_row = N // BLOCK
    rows = []
    for start in range(0, len(blocks), per_row):
        chunk = blocks[start:start + per_row]
        while len(chunk) < per_row:
            chunk = chunk + chunk[: per_row - len(chunk)]
        rows.append([v for b in chunk for v in b])
    return rows


def structured_rows() -> list[list[float]]:
    gen = torch.Generator().manual_seed(7)
    blocks = []
    # Ties at scale 1 (amax 4, 6 and 6.5: mantissa below 0.75, no round-up) and at many other scales.
    for amax in (4.0, 6.0, 6.5):
        blocks += [scaled_tie_block(amax, shift) for shift in range(-40, 41, 5)]
    # amax 7 = 1.75 * 4 rounds up to 8: scale 2, so ties sit at twice the values.
    blocks += [[v * 2.0 ** s for v in [7.0] + [2 * t for t in TIES[:6]] + [-2 * t for t in TIES[:6]]
                + [0.0] * 19] for s in (-3, 0, 9)]
    # Subnormal scales: amax at or below 2^-125, scale clamped to -127, bf16 subnormal elements.
    for amax in (1.5 * 2.0 ** -126, 2.0 ** -126, 1.75 * 2.0 ** -127, 2.0 ** -128, 2.0 ** -133):
        values = [amax, -amax] + [amax * f for f in (0.5, 0.25, 0.125, 0.75, -0.375, 0.625)]
        values += [t * 2.0 ** -127 for t in TIES] + [-t * 2.0 ** -127 for t in TIES[:4]]
        values = [v if abs(v) >= 2.0 ** -133 or v == 0 else 0.0 for v in values]
        blocks.append((values + [0.0] * BLOCK)[:BLOCK])
    # Zero blocks: +0, -0 and both.
    blocks += [[0.0] * BLOCK, [-0.0] * BLOCK, [0.0, -0.0] * (BLOCK // 2)]
    # Saturation: amax mantissa just under 0.75 (scaled amax 6.97 -> 6), at 0.75 (rounds up), the bf16 max.
    for amax in (1.7421875, -1.7421875, 1.75, 1.7578125, 3.3895313892515355e38, -3.3895313892515355e38):
        for shift in ((-20, 0, 30) if abs(amax) < 2 else (0,)):
            a = amax * 2.0 ** shift
            values = [a, a * 0.99, -a * 0.95, a * 0.9, a * 0.87, a / 7 * 6.5, a / 7 * 5.5, a / 2]
            blocks.append((values + [v * a / 8 for v in CODES] + [0.0] * BLOCK)[:BLOCK])
    # Random picks of ties and code values at random scales.
    pool = torch.tensor(TIES + CODES + [-v for v in TIES + CODES] + [6.0])
    for _ in range(36):
        shift = int(torch.randint(-60, 60, (1,), generator=gen))
        blocks.append((pool[torch.randint(0, len(pool), (BLOCK,), generator=gen)] * 2.0 ** shift).tolist())
    # Up to STRUCTURED_ROWS rows: the tie blocks again at every scale from 2^-100 to 2^100.
    shifts = iter(range(-100, 101))
    while len(blocks) < STRUCTURED_ROWS * (N // BLOCK):
        shift = next(shifts, None)
        if shift is None:
            shifts = iter(range(-100, 101))
            continue
        blocks.append(scaled_tie_block(6.0 if shift % 2 else 4.0, shift))
    return rows_of_blocks(blocks)


def random_rows(count: int) -> list[list[float]]:
    """randn rows like the task's KV, some at other magnitudes."""
    gen = torch.Generator().manual_seed(2026)
    x = torch.randn(count, N, generator=gen)
    for i, factor in enumerate((37.0, 1e-3, 1e3, 2.0 ** -120, 2.0 ** 100)):
        x[i * 3] *= factor
    return x.tolist()


def build_inputs() -> torch.Tensor:
    """STRUCTURED_ROWS + RANDOM_ROWS rows of 576 bf16 values."""
    rows = structured_rows() + random_rows(RANDOM_ROWS)
    return torch.tensor(rows, dtype=torch.float32).to(torch.bfloat16)


def smallest_scaled_magnitude(x: torch.Tensor) -> float:
    """The smallest nonzero |x| / 2^scale of the blocks (what the kernel's mantissa shift sees)."""
    blocks = x.float().reshape(-1, BLOCK)
    bits = blocks.abs().amax(dim=1).view(torch.int32).to(torch.int64)
    rounded = ((bits + 0x200000) & 0x7F800000).to(torch.int32).view(torch.float32)
    scale = (torch.floor(torch.log2(rounded)) - 2).clamp(-127, 127)
    scaled = (blocks.abs() * torch.exp2(-scale)[:, None]).double()
    return float(scaled[scaled > 0].min())


def allow_indexing_scalars() -> None:
    """Triton 3.9 refuses `pid[None, :]` on a scalar, which the pinned kernel does (`bs_offs_n[None, :]`);
    Triton up to 3.8 ignored the surplus `:` (an unsqueeze). Restore that, so 3.9's interpreter (the one
    whose interpreter can run the kernel's `.floor()` method; 3.5 to 3.8 fail there) runs the file as it
    compiled for the official runner."""
    import triton.language as tl

    original = tl.core.tensor.__getitem__
    if getattr(original, "_scalar_slices_allowed", False):
        return

    def getitem(self, slices, _semantic=None):
        items = list(slices) if isinstance(slices, tuple) else [slices]
        kept, full_slices = [], 0
        for item in items:
            is_full = isinstance(item, slice) and item == slice(None)
            full_slices += is_full
            if not (is_full and full_slices > len(self.shape)):
                kept.append(item)
        return original(self, tuple(kept), _semantic=_semantic)

    setattr(getitem, tl.core.TRITON_BUILTIN, True)
    getitem._scalar_slices_allowed = True
    tl.core.tensor.__getitem__ = getitem


def keep_splatted_compares_boolean() -> None:
    """Triton 3.9's interpreter tags a scalar compare with its operands' int32 type, so splatting it (what
    `[None, :]` does to a scalar) gives an int32 store mask that its store refuses; compiled code has an
    i1 there. Keep such splats boolean."""
    from triton.runtime import interpreter
    import triton.language as tl

    original = interpreter.InterpreterBuilder.create_splat

    def create_splat(self, ret_ty, arg):
        out = original(self, ret_ty, arg)
        if np.asarray(arg.data).dtype == np.bool_:
            out = interpreter.TensorHandle(out.data.astype(np.bool_), tl.int1)
        return out

    interpreter.InterpreterBuilder.create_splat = create_splat


def widen_bf16_exactly() -> None:
    """Triton 3.9's interpreter widens bf16 subnormals to float32 wrongly (it renormalizes them, then clamps
    the exponent and loses their leading bit: 0.75 * 2^-126 becomes 0.5 * 2^-126). GPUs widen bf16 by a
    16-bit shift, exact for every value; do the same."""
    from triton.runtime import interpreter
    import triton.language as tl

    original = interpreter.InterpreterBuilder.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.bfloat16 and dst_type.scalar == tl.float32:
            bits = np.asarray(src.data).astype(np.uint32) << 16
            return interpreter.TensorHandle(bits.view(np.float32), tl.float32)
        return original(self, src, dst_type)

    interpreter.InterpreterBuilder.cast_impl = cast_impl


def load_aiter_quantizer(path: Path):
    """aiter's fp4_utils.py as a module of a stand-in package, with the one aiter module it imports stubbed."""
    package = types.ModuleType("aiter_stub")
    package.__path__ = []
    utility = types.ModuleType("aiter_stub.utility")
    utility.__path__ = []
    dtypes = types.ModuleType("aiter_stub.utility.dtypes")
    dtypes.fp4x2, dtypes.fp8_e8m0, dtypes.fp32 = torch.uint8, torch.uint8, torch.float32  # viewed as raw bytes
    utility.dtypes = dtypes
    sys.modules.update({"aiter_stub": package, "aiter_stub.utility": utility, "aiter_stub.utility.dtypes": dtypes})
    spec = importlib.util.spec_from_file_location("aiter_stub.utility.fp4_utils", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_with_sentinel(quantize, x: torch.Tensor, sentinel: int) -> tuple[torch.Tensor, torch.Tensor]:
    """quantize(x) as raw bytes, with every uint8 torch.empty filled with sentinel first."""
    real_empty = torch.empty

    def empty(*args, **kwargs):
        tensor = real_empty(*args, **kwargs)
        if tensor.dtype == torch.uint8:
            tensor.fill_(sentinel)
        return tensor

    torch.empty = empty
    try:
        packed, scales = quantize(x)
    finally:
        torch.empty = real_empty
    return packed.view(torch.uint8).clone(), scales.view(torch.uint8).clone()


def main() -> None:
    source = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/aiter_src/aiter/utility/fp4_utils.py")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if digest != EXPECTED_SHA256:
        raise SystemExit(f"{source} has sha256 {digest}, not the pinned aiter's {EXPECTED_SHA256}")
    allow_indexing_scalars()
    keep_splatted_compares_boolean()
    widen_bf16_exactly()
    fp4_utils = load_aiter_quantizer(source)
    x = build_inputs()
    rows = x.shape[0]
    assert smallest_scaled_magnitude(x) >= 2.0 ** -31, "an input needs a mantissa shift of 32 or more"
    (packed, scales), (packed_b, scales_b) = (run_with_sentinel(fp4_utils.dynamic_mxfp4_quant, x, s)
                                              for s in SENTINELS)
    assert packed.shape == (rows, N // 2) and torch.equal(packed, packed_b)
    written = scales == scales_b
    observed = {
        "wheel": WHEEL,
        "commit": COMMIT,
        "fp4_utils_sha256": digest,
        "function": "aiter.utility.fp4_utils.dynamic_mxfp4_quant(x) (shuffle=False), TRITON_INTERPRET=1, CPU",
        "triton": __import__("triton").__version__ + " interpreter, with this script's three shims",
        "torch": torch.__version__,
        "scale_shape": list(scales.shape),
        "first_rows_all_written": bool(written[:rows].all()),
        "pad_rows_untouched": bool((scales[rows:] == SENTINELS[0]).all() and (scales_b[rows:] == SENTINELS[1]).all()),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        OUT,
        x_bf16_bits=x.view(torch.int16).numpy().view(np.uint16),
        fp4x2=packed.numpy(),
        scales=scales[:rows].numpy(),
        meta=np.array(json.dumps(observed, sort_keys=True)),
    )
    print(json.dumps(observed, indent=1))
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {rows} rows)")


if __name__ == "__main__":
    main()
