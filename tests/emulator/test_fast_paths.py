"""The executors' short paths (typed register views, EXEC all ones, packed f32 by rows, cached
lane masks) against independent numpy and Python computations, under full and partial EXEC."""
from fractions import Fraction

import numpy as np
import pytest
import torch

from harness.emulator.code_object import load_code_object
from harness.emulator.errors import EmulationFault
from harness.emulator.launch import run_kernel
from harness.emulator.numerics import fma_f32
from harness.emulator.wave import mask_bits

from .kernels import compile_hip, memory_of, pack_args
from .snippets import as_f32, snippet
from .test_valu import exact_fma

RNG = np.random.default_rng(27)
HALF_EXEC = "  s_mov_b32 exec_lo, 0x0f0f0f0f\n  s_mov_b32 exec_hi, 0\n"  # lanes 0-3, 8-11 ... 24-27
RESTORE = "  s_mov_b64 exec, -1\n"
ON = np.array([(0x0F0F0F0F >> lane) & 1 if lane < 32 else 0 for lane in range(64)], bool)


def floats(n=6):
    return [RNG.standard_normal(64).astype(np.float32) for _ in range(n)]


def test_packed_f32_ops_follow_op_sel_and_neg():
    x = floats()
    body = """  v_pk_mul_f32 v[20:21], v[10:11], v[12:13] op_sel:[1,0] op_sel_hi:[0,1]
  v_pk_fma_f32 v[22:23], v[10:11], v[12:13], v[14:15] neg_lo:[1,0,0] neg_hi:[0,0,1]
  v_pk_add_f32 v[24:25], v[10:11], 1.0
  v_pk_fma_f32 v[26:27], v[10:11], v[12:13], v[14:15] op_sel:[0,1,0] op_sel_hi:[1,0,1] \
neg_lo:[0,1,0] neg_hi:[0,1,0]"""
    out = as_f32(snippet(body, x, outputs=8))
    assert np.array_equal(out[0], x[1] * x[2]) and np.array_equal(out[1], x[0] * x[3])
    low = [exact_fma(-float(a), float(b), float(c)) for a, b, c in zip(x[0], x[2], x[4])]
    high = [exact_fma(float(a), float(b), -float(c)) for a, b, c in zip(x[1], x[3], x[5])]
    assert np.array_equal(out[2].view(np.uint32), np.array(low, np.float32).view(np.uint32))
    assert np.array_equal(out[3].view(np.uint32), np.array(high, np.float32).view(np.uint32))
    assert np.array_equal(out[4], x[0] + np.float32(1)) and np.array_equal(out[5], x[1] + np.float32(1))
    low = [exact_fma(float(a), -float(b), float(c)) for a, b, c in zip(x[0], x[3], x[4])]
    high = [exact_fma(float(a), -float(b), float(c)) for a, b, c in zip(x[1], x[2], x[5])]
    assert np.array_equal(out[6].view(np.uint32), np.array(low, np.float32).view(np.uint32))
    assert np.array_equal(out[7].view(np.uint32), np.array(high, np.float32).view(np.uint32))


def test_packed_mov_reads_before_it_writes_and_keeps_inactive_lanes():
    x = floats(4)
    body = """  v_mov_b32 v20, v12
  v_mov_b32 v21, v13
  v_pk_mov_b32 v[20:21], v[10:11], v[20:21] op_sel:[1,0]
  v_mov_b32 v22, v10
  v_mov_b32 v23, v11
""" + HALF_EXEC + "  v_pk_mul_f32 v[22:23], v[12:13], v[12:13]\n" + RESTORE
    out = snippet(body, x, outputs=4)
    raw = [v.view(np.uint32) for v in x]
    assert np.array_equal(out[0], raw[1]) and np.array_equal(out[1], raw[2])
    assert np.array_equal(out[2], np.where(ON, (x[2] * x[2]).view(np.uint32), raw[0]))
    assert np.array_equal(out[3], np.where(ON, (x[3] * x[3]).view(np.uint32), raw[1]))


def test_compares_selects_and_adds_under_partial_exec():
    a, b = floats(2)
    body = """  v_mov_b32 v20, 7
  v_mov_b32 v21, 9
""" + HALF_EXEC + """  v_cmp_gt_f32 s[8:9], v10, v11
  v_cndmask_b32 v20, 3, 5, s[8:9]
  v_add_f32 v21, v10, v11
  v_cmpx_lt_f32 s[10:11], v10, 0
""" + RESTORE + """  v_mov_b32 v22, s8
  v_mov_b32 v23, s9
  v_mov_b32 v24, s10
  v_mov_b32 v25, s11"""
    out = snippet(body, [a, b], outputs=6)
    greater = (a > b) & ON
    assert np.array_equal(out[0], np.where(ON, np.where(greater, 5, 3), 7))
    assert np.array_equal(out[1], np.where(ON, (a + b).view(np.uint32), 9))
    bits = sum(1 << lane for lane in range(64) if greater[lane])
    assert int(out[2, 0]) == bits & 0xFFFFFFFF and int(out[3, 0]) == bits >> 32
    below = sum(1 << lane for lane in range(64) if a[lane] < 0 and ON[lane])
    assert int(out[4, 0]) == below & 0xFFFFFFFF and int(out[5, 0]) == below >> 32


def test_mask_bits_matches_a_python_sum_for_cached_and_fresh_masks():
    for _ in range(200):
        lanes = RNG.random(64) < RNG.random()
        expected = sum(1 << lane for lane in range(64) if lanes[lane])
        assert mask_bits(lanes) == expected and mask_bits(lanes.copy()) == expected
    assert mask_bits(np.arange(64) % 3 == 0) == sum(1 << k for k in range(0, 64, 3))


def reference_fma(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    """a*b+c rounded once: exact fractions for finite sums, IEEE's rules (as float64 gives them,
    the product being exact there) for infinities, NaN and exact zeros."""
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        return np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    value = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if value == 0:
        return np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    if abs(value) >= Fraction(2**128 - 2**103):  # past float32's max by half an ulp or more
        return np.float32(np.inf if value > 0 else -np.inf)
    return exact_fma(float(a), float(b), float(c))


def fma_cases() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random bit patterns (subnormals, infinities, NaN among them), random normals, and sums
    whose float64 value lands on a float32 tie that the exact value is not."""
    bits = RNG.integers(0, 2**32, (3, 4096), dtype=np.uint64).astype(np.uint32).view(np.float32)
    normal = RNG.standard_normal((3, 4096)).astype(np.float32)
    tiny = (RNG.standard_normal((3, 512)) * 2.0 ** -70).astype(np.float32)
    eps = [np.float32(2.0 ** -k) for k in (15, 23, 24)]
    traps = []
    for sign in (1, -1):
        for scale in (1.0, 2.0 ** -100, 2.0 ** 100, 2.0 ** -126):
            a, b = np.float32(1 + eps[0]), np.float32((1 - eps[0]) * eps[2] * scale)
            traps.append((a, sign * b, np.float32(sign * (1 + eps[1]) * scale)))
            traps.append((a, -sign * b, np.float32(sign * (1 + 2 * eps[1]) * scale)))
    f = np.float32
    specials = [(f(np.inf), f(0), f(1)), (f(-0.0), f(1), f(-0.0)), (f(3.4e38), f(2), f(-3.4e38)),
                (f(2.0 ** 64), f(2.0 ** 64), f(0)), (f(np.nan), f(1), f(1)), (f(np.inf), f(1), f(-np.inf)),
                (f(1e-45), f(0.5), f(0)), (f(1e-45), f(1.5), f(0))]
    extra = np.array(traps + specials, np.float32).T
    a, b, c = (np.concatenate(parts) for parts in zip(bits, normal, tiny, extra))
    return a, b, c


def test_fma_f32_matches_exact_fractions_on_edges_ties_and_random_bits():
    a, b, c = fma_cases()
    with np.errstate(all="ignore"):
        out = fma_f32(a, b, c)
    with np.errstate(all="ignore"):
        expected = np.array([reference_fma(x, y, z) for x, y, z in zip(a, b, c)], np.float32)
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(out), nan)
    assert np.array_equal(out[~nan].view(np.uint32), expected[~nan].view(np.uint32))
    for lane in range(0, len(a), 97):  # the same lanes one by one (the scalar path)
        with np.errstate(all="ignore"):
            one = np.float32(fma_f32(a[lane], b[lane], c[lane]))
        assert one.view(np.uint32) == expected[lane].view(np.uint32) or (np.isnan(one) and nan[lane])


def test_perm_b32_picks_bytes_signs_and_constants_per_lane():
    a, b = (RNG.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    selector = RNG.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    selector[:16] = np.arange(16, dtype=np.uint32) * 0x01010101  # every selector value 0-15 once
    body = """  v_perm_b32 v20, v10, v11, v12
  s_mov_b32 s12, 0x0c080501
  v_perm_b32 v21, v10, v11, s12"""
    out = snippet(body, [a, b, selector], outputs=2)

    def reference(s0, s1, sel):
        pool = int(s0) << 32 | int(s1)
        result = 0
        for k in range(4):
            code = int(sel) >> 8 * k & 0xFF
            if code < 8:
                byte = pool >> 8 * code & 0xFF
            elif code < 12:
                byte = 0xFF if pool >> 8 * (2 * (code - 8) + 1) + 7 & 1 else 0
            else:
                byte = 0 if code == 12 else 0xFF
            result |= byte << 8 * k
        return result
    assert [int(x) for x in out[0]] == [reference(*lane) for lane in zip(a, b, selector)]
    assert [int(x) for x in out[1]] == [reference(x, y, 0x0C080501) for x, y in zip(a, b)]


def test_ldexp_f32_rounds_once_and_saturates_huge_exponents():
    x = (RNG.standard_normal(64) * 2.0 ** RNG.integers(-60, 60, 64)).astype(np.float32)
    e = RNG.integers(-200, 200, 64).astype(np.int32)
    e[:6] = [2**31 - 1, -2**31, 300, -300, 129, -160]
    out = as_f32(snippet("  v_ldexp_f32 v20, v10, v11", [x, e])[0])
    for lane in range(64):
        if e[lane] > 400:
            expected = np.float32(np.copysign(np.inf, x[lane]))
        elif e[lane] < -400:
            expected = np.float32(np.copysign(0.0, x[lane]))
        elif abs(Fraction(float(x[lane])) * Fraction(2) ** int(e[lane])) >= Fraction(2**128 - 2**103):
            expected = np.float32(np.copysign(np.inf, x[lane]))
        else:
            expected = exact_fma(float(x[lane]), 2.0 ** int(e[lane]), 0.0)
            expected = np.float32(np.copysign(expected, x[lane]))
        assert out[lane].view(np.uint32) == expected.view(np.uint32), lane


def test_lds_accesses_past_the_end_fail_and_the_last_bytes_do_not():
    body = """  v_mov_b32 v2, 0xf8
  v_mov_b32 v3, 0xfc
  ds_write_b64 v2, v[10:11]
  ds_read_b64 v[20:21], v2
  ds_read_b64 v[22:23], v3"""
    x = floats(2)
    with pytest.raises(EmulationFault) as caught:
        snippet(body, x, outputs=2, lds=256)
    assert caught.value.kind == "lds out of bounds" and "LDS byte 259" in str(caught.value)
    out = snippet(body.rsplit("\n", 1)[0], x, outputs=2, lds=256)
    assert len(set(out[0])) == 1 and out[0][0] in x[0].view(np.uint32)  # one lane's write won


def test_select_chains_into_their_own_register_under_full_and_partial_exec():
    a, b = floats(2)
    index = (np.arange(64) % 5).astype(np.uint32)
    body = """  v_mov_b32 v20, v10
  v_mov_b32 v21, v10
  v_cmp_eq_u32_e64 s[6:7], 1, v12
  v_cndmask_b32_e64 v20, v20, v11, s[6:7]
  v_cmp_eq_u32_e64 s[6:7], 2, v12
  v_cndmask_b32_e64 v20, v20, 7, s[6:7]
""" + HALF_EXEC + """  v_cmp_eq_u32_e64 s[6:7], 3, v12
  v_cndmask_b32_e64 v21, v21, v11, s[6:7]
""" + RESTORE
    out = snippet(body, [a, b, index], outputs=2)
    raw_a, raw_b = a.view(np.uint32), b.view(np.uint32)
    assert np.array_equal(out[0], np.where(index == 1, raw_b, np.where(index == 2, 7, raw_a)))
    assert np.array_equal(out[1], np.where((index == 3) & ON, raw_b, raw_a))


def test_ds_bpermute_with_an_offset_and_huge_addresses_under_full_and_partial_exec():
    x = RNG.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    address = RNG.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    address[:4] = 0xFFFFFFFC  # + the offset wraps past 32 bits
    body = """  v_mov_b32 v21, 5
  ds_bpermute_b32 v20, v11, v10 offset:12
""" + HALF_EXEC + "  ds_bpermute_b32 v21, v11, v10 offset:12\n" + RESTORE
    out = snippet(body, [x, address], outputs=2)
    chosen = [(int(a) + 12) // 4 % 64 for a in address]
    assert [int(v) for v in out[0]] == [int(x[c]) for c in chosen]
    partial = [int(x[c]) if ON[c] else 0 for c in chosen]
    assert [int(v) for v in out[1]] == [p if ON[lane] else 5 for lane, p in enumerate(partial)]


BROADCAST = """
KERNEL void bcast(const float* x, float* out) {
  SHARED float cell[2];
  if (tid() == 64) cell[0] = x[0];
  BARRIER
  out[tid()] = cell[0];
}"""


def test_a_broadcast_lds_read_is_read_once_and_still_races():
    x, out = torch.randn(4), torch.zeros(128)
    for barrier in ("sync();", ""):
        code = load_code_object(compile_hip(BROADCAST.replace("BARRIER", barrier)))
        if barrier:
            run_kernel(code, "bcast", (1, 1, 1), (128, 1, 1), pack_args(x, out), memory=memory_of(x, out))
            assert torch.equal(out, x[0].expand(128))
            continue
        with pytest.raises(EmulationFault) as caught:  # wave 0 reads before wave 1 writes
            run_kernel(code, "bcast", (1, 1, 1), (128, 1, 1), pack_args(x, out), memory=memory_of(x, out))
        assert caught.value.kind == "lds race" and caught.value.mnemonic.startswith("ds_write")


def test_blocks_of_plain_instructions_keep_every_count_and_result(monkeypatch):
    from harness.emulator import executor
    from .test_end_to_end import REDUCTION
    source = compile_hip(REDUCTION)
    x = torch.randn(3, 1000)

    def run():
        out = torch.zeros(3)
        code = load_code_object(source)
        counts = run_kernel(code, "row_sum", (3, 1, 1), (256, 1, 1), pack_args(x, out, 1000),
                            memory=memory_of(x, out))
        return out, counts, code.__dict__["_executors"].spans
    out, counts, spans = run()
    monkeypatch.setattr(executor, "plain", lambda ins: False)
    plain_out, plain_counts, no_spans = run()
    assert spans and not no_spans
    assert torch.equal(out, plain_out) and counts.by_mnemonic == plain_counts.by_mnemonic
    assert counts.instructions == plain_counts.instructions and counts.by_class == plain_counts.by_class
