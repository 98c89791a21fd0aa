"""The forms aiter's stage-1 kernels (a16w16, a16w8, a8w8) left to numpy, now on the C fast
path, against the numpy executors bit for bit: bf16 MFMAs with AGPR operands, the AGPR moves,
buffer_store_dwordx2/x3/x4. C sums an MFMA cell's products in float64 only where every order
is exact; elsewhere numpy runs that MFMA."""
import random

import numpy as np
import pytest

from harness.emulator import launch as launch_module
from harness.emulator.code_object import load_code_object
from harness.emulator.native import program as native_program
from harness.emulator.wave import VGPR_FILE

from .kernels import assemble
from .native_bench import first_step_apart, run_one, skip_without_clang
from .test_native_differential import start_state

ROWS = 2 * VGPR_FILE  # the VGPRs, then the AGPRs
BF16_ROWS = 32  # v0-v31 and a0-a31 hold bf16 pairs


def mfma_line(rng) -> str:
    """One bf16 MFMA: A and B in VGPRs or AGPRs, C a register block or 0, D a VGPR or AGPR block."""
    def block(size):
        first = size * rng.randrange(BF16_ROWS // size)
        return f"{rng.choice('va')}[{first}:{first + size - 1}]"
    shape, per_operand, out = rng.choice([("16x16x16", 2, 4), ("16x16x32", 4, 4),
                                          ("32x32x8", 2, 16), ("32x32x16", 4, 16)])
    first = 32 + out * rng.randrange(2)
    d = f"{rng.choice('va')}[{first}:{first + out - 1}]"
    c = rng.choice([d, "0"])
    return f"v_mfma_f32_{shape}_bf16 {d}, {block(per_operand)}, {block(per_operand)}, {c}"


def move_line(rng) -> str:
    v, a = rng.randrange(BF16_ROWS, 64), rng.randrange(BF16_ROWS, 64)
    return rng.choice([f"v_accvgpr_write_b32 a{a}, v{v}", f"v_accvgpr_read_b32 v{v}, a{a}",
                       f"v_accvgpr_write_b32 a{a}, 1.0", f"v_accvgpr_mov_b32 a{a}, a{v}"])


def program(seed: int, length: int):
    rng = random.Random(seed)
    lines = [mfma_line(rng) if rng.random() < 0.6 else move_line(rng) for _ in range(length)]
    text = "".join(f"  {line}\n" for line in lines + ["s_endpgm"])
    return load_code_object(assemble(text, lds=4096, vgprs=64, accum=64))


def bf16_rows(rng, magnitude_bits: int) -> np.ndarray:
    """bf16 pairs [BF16_ROWS, 64]: signs, 2^(±magnitude_bits) spread, some zeros."""
    exponent = rng.integers(-magnitude_bits, magnitude_bits + 1, (BF16_ROWS, 64, 2))
    values = np.ldexp(rng.uniform(1, 2, exponent.shape), exponent) * rng.choice([-1, 1], exponent.shape)
    values[rng.random(exponent.shape) < 0.05] = 0.0
    halves = (values.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint32)
    return halves[..., 0] | halves[..., 1] << np.uint32(16)


def start(seed: int, magnitude_bits: int, full_exec: bool):
    state = start_state(seed, 0, full_exec)
    rng = np.random.default_rng(seed)
    v = np.zeros((ROWS, 64), np.uint32)
    v[:64] = state.v
    v[:BF16_ROWS] = bf16_rows(rng, magnitude_bits)
    v[VGPR_FILE:VGPR_FILE + BF16_ROWS] = bf16_rows(rng, magnitude_bits)
    v[VGPR_FILE + BF16_ROWS:VGPR_FILE + 64] = state.v[32:64]  # f32 accumulators
    state.v = v
    return state


def both_paths(code, state, monkeypatch) -> tuple[str | None, list[int]]:
    """(where the step traces first differ, the instructions C handed to numpy)."""
    reference_steps, fast_steps, to_numpy = [], [], []
    run_one(code, state, native=False, steps=reference_steps)
    numpy_step = launch_module.run_wave

    def recorded(launch, w, budget, *table):
        to_numpy.append(w.pc)
        return numpy_step(launch, w, budget, *table)
    monkeypatch.setattr(launch_module, "run_wave", recorded)
    run_one(code, state, native=True, steps=fast_steps)
    monkeypatch.setattr(launch_module, "run_wave", numpy_step)
    return first_step_apart(code, reference_steps, fast_steps), to_numpy


@pytest.fixture(scope="module")
def code():
    skip_without_clang()
    return program(5, 120)


@pytest.mark.parametrize("full_exec", [True, False])
def test_bf16_mfmas_and_agpr_moves_match_in_c(code, full_exec, monkeypatch):
    """Operands within 2^±6 of 1: every cell's sum is exact, so C runs every one of them."""
    assert all(native_program.source(code.program)[1])
    apart, to_numpy = both_paths(code, start(21, 6, full_exec), monkeypatch)
    assert apart is None
    assert to_numpy == []


def test_wide_operands_go_to_numpy_and_still_match(code, monkeypatch):
    """Operands 2^±40 apart: a sum would round, its order is numpy's dgemm's, so C hands those
    MFMAs to numpy (and the rest still match)."""
    apart, to_numpy = both_paths(code, start(22, 40, True), monkeypatch)
    assert apart is None
    mfmas = [k for k, ins in enumerate(code.program.instructions) if "mfma" in ins.mnemonic]
    assert set(to_numpy) <= set(mfmas)
    assert len(to_numpy) > len(mfmas) // 2


@pytest.mark.parametrize("full_exec", [True, False])
def test_multi_dword_buffer_stores_match(full_exec, monkeypatch):
    """Lanes 12 bytes apart, stores of 8-16 bytes: neighbours overlap (numpy stores dword by
    dword, lanes in order within each) and the upper lanes cross num_records (600) mid-store."""
    rng = random.Random(3)
    lines = []
    for _ in range(40):
        words = rng.choice([2, 3, 4])
        first = 4 * rng.randrange(12)
        lines.append(f"buffer_store_dword{'' if words == 1 else f'x{words}'} v[{first}:{first + words - 1}],"
                     f" v59, s[44:47], {rng.choice([0, 4])} offen offset:{4 * rng.randrange(8)}")
    lines.append("s_endpgm")
    code = load_code_object(assemble("".join(f"  {line}\n" for line in lines), lds=4096))
    skip_without_clang()
    state = start_state(31, 0, full_exec)
    state.v[59] = np.arange(64, dtype=np.uint32) * 12
    state.s[46] = 600
    apart, to_numpy = both_paths(code, state, monkeypatch)
    assert apart is None
    assert to_numpy == []


@pytest.mark.parametrize("full_exec", [True, False])
def test_fp8_and_bf8_decodes_match(full_exec, monkeypatch):
    """v_cvt_(pk_)f32_fp8/bf8 on every byte value (NaN codes too), each byte or word picked by
    SDWA's src0_sel (a16w8's v_cvt_pk_f32_fp8_sdwa)."""
    forms = ["v_cvt_pk_f32_fp8_sdwa v[{d}:{e}], v{a} src0_sel:WORD_1",
             "v_cvt_pk_f32_fp8_sdwa v[{d}:{e}], v{a} src0_sel:WORD_0",
             "v_cvt_pk_f32_bf8_sdwa v[{d}:{e}], v{a} src0_sel:WORD_1",
             "v_cvt_pk_f32_fp8_e64 v[{d}:{e}], v{a}",
             "v_cvt_pk_f32_bf8 v[{d}:{e}], v{a}",
             "v_cvt_f32_fp8_sdwa v{d}, v{a} src0_sel:BYTE_3",
             "v_cvt_f32_bf8_sdwa v{d}, v{a} src0_sel:BYTE_1",
             "v_cvt_f32_fp8 v{d}, v{a}"]
    lines = [forms[k % len(forms)].format(d=32 + 2 * (k % 12), e=33 + 2 * (k % 12), a=k % 8)
             for k in range(48)] + ["s_endpgm"]
    code = load_code_object(assemble("".join(f"  {line}\n" for line in lines), lds=4096))
    skip_without_clang()
    state = start_state(41, 0, full_exec)
    state.v[:8] = np.arange(8 * 256, dtype=np.uint32).reshape(8, 64, 4).astype(np.uint8).view(np.uint32)[..., 0]
    apart, to_numpy = both_paths(code, state, monkeypatch)
    assert apart is None
    assert to_numpy == []
