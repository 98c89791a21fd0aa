"""reference.py's quantizers work a few rows at a time: the bytes must not depend on the chunk size."""
import pytest
import torch

import reference as ref

ONE_SHOT = 1 << 40  # a chunk larger than any input: the whole tensor at once


def kv_like(rows: int, width: int = ref.QK_HEAD_DIM, seed: int = 5) -> torch.Tensor:
    """bf16 KV rows whose amax sits in the last rows: a per-chunk scale would differ from the whole one."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn((rows, 1, width), generator=gen).to(torch.bfloat16)
    x[-1, 0, 7] = 40.0  # the per-tensor fp8 amax, in the last chunk only
    x[rows // 2, 0, :32] = 0.0  # an empty MXFP4 block
    return x


def mxfp4_bytes(x: torch.Tensor, rounding: str) -> tuple:
    """(packed bytes, the written scale rows [:rows]): the pad rows are random by design."""
    packed, scales = ref.quantize_mxfp4(x, rounding=rounding)
    rows = x.numel() // x.shape[-1]
    return packed.view(torch.uint8), scales.view(torch.uint8)[:rows]


@pytest.mark.parametrize("chunk", [1, 100, 3 * 576 + 5])  # under a row, one row, rows and a bit
@pytest.mark.parametrize("rounding", ["away", "even"])
def test_mxfp4_chunked_equals_one_shot(monkeypatch, chunk, rounding):
    x = kv_like(11)
    monkeypatch.setattr(ref, "QUANTIZE_CHUNK_ELEMENTS", ONE_SHOT)
    packed_whole, scales_whole = mxfp4_bytes(x, rounding)
    monkeypatch.setattr(ref, "QUANTIZE_CHUNK_ELEMENTS", chunk)
    packed, scales = mxfp4_bytes(x, rounding)
    assert packed.shape == (11, 1, 288) and scales.shape == (11, 24)
    assert torch.equal(packed, packed_whole)
    assert torch.equal(scales, scales_whole)  # the 18 block scales and the 6 zero columns


@pytest.mark.parametrize("chunk", [1, 1000, 576 * 4])
@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e4m3fnuz])
def test_fp8_chunked_equals_one_shot(monkeypatch, chunk, dtype):
    x = kv_like(9)
    monkeypatch.setattr(ref, "QUANTIZE_CHUNK_ELEMENTS", ONE_SHOT)
    whole, scale_whole = ref.quantize_fp8(x, dtype)
    monkeypatch.setattr(ref, "QUANTIZE_CHUNK_ELEMENTS", chunk)
    chunked, scale = ref.quantize_fp8(x, dtype)
    assert chunked.shape == x.shape and chunked.dtype == dtype
    assert torch.equal(scale, scale_whole)
    assert torch.equal(chunked.view(torch.uint8), whole.view(torch.uint8))


def test_generate_input_is_the_same_with_tiny_chunks(monkeypatch):
    monkeypatch.setattr(ref, "QUANTIZE_CHUNK_ELEMENTS", ONE_SHOT)
    whole = ref.generate_input(3, 1, 40, seed=17, device="cpu")
    monkeypatch.setattr(ref, "QUANTIZE_CHUNK_ELEMENTS", 700)
    chunked = ref.generate_input(3, 1, 40, seed=17, device="cpu")
    (x8, s8), (x8_whole, s8_whole) = chunked[1]["fp8"], whole[1]["fp8"]
    assert torch.equal(s8, s8_whole) and torch.equal(x8.view(torch.uint8), x8_whole.view(torch.uint8))
    packed, scales = chunked[1]["mxfp4"]
    packed_whole, scales_whole = whole[1]["mxfp4"]
    assert torch.equal(packed.view(torch.uint8), packed_whole.view(torch.uint8))
    assert torch.equal(scales.view(torch.uint8)[:120], scales_whole.view(torch.uint8)[:120])
