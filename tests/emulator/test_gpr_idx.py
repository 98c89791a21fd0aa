"""s_set_gpr_idx_on/off (VGPR indexing through M0) against numpy: the enabled operands of each VALU in the region
move by M0[7:0], the others stay; M0 takes the index and the mode bits (AMD's CDNA pseudocode: M0[7:0] = S0[7:0],
M0[15:12] = the raw S1 field, other bits kept)."""
import numpy as np

from .snippets import snippet

RNG = np.random.default_rng(29)


def rows(n):
    return [RNG.integers(0, 2**31, 64, dtype=np.uint64).astype(np.uint32) for _ in range(n)]


def test_src0_index_moves_only_the_first_source_and_sets_m0():
    x = rows(4)  # v10..v13
    body = """  s_mov_b32 m0, 0xabcd0f00
  s_movk_i32 s8, 0x102
  s_set_gpr_idx_on s8, gpr_idx(SRC0)
  v_add_u32_e32 v20, v10, v11
  v_sub_u32_e32 v21, v11, v10
  v_mov_b32_e32 v22, v10
  s_set_gpr_idx_off
  v_mov_b32_e32 v23, m0
  v_mov_b32_e32 v24, v10"""
    out = snippet(body, x, outputs=5)
    assert np.array_equal(out[0], x[2] + x[1])          # v[10 + 2] + v11
    assert np.array_equal(out[1], x[3] - x[0])          # v[11 + 2] - v10: SRC1 does not move
    assert np.array_equal(out[2], x[2])                 # VOP1's source moves too
    assert np.all(out[3] == ((0xABCD0F00 & ~0xF0FF) | 0x02 | 1 << 12))
    assert np.array_equal(out[4], x[0])                 # after the off: no index


def test_dst_and_src1_modes_with_a_runtime_index():
    x = rows(4)
    body = """  s_mov_b32 s9, 1
  v_mov_b32_e32 v20, 0
  v_mov_b32_e32 v21, 0
  s_set_gpr_idx_on s9, gpr_idx(SRC1,DST)
  v_xor_b32_e32 v20, v10, v11
  s_set_gpr_idx_off
  s_add_u32 s9, s9, 1
  s_set_gpr_idx_on s9, gpr_idx(SRC0)
  v_add_u32_e32 v22, v10, v10
  s_set_gpr_idx_off"""
    out = snippet(body, x, outputs=3)
    assert np.all(out[0] == 0)                          # v20 untouched: the write went to v21
    assert np.array_equal(out[1], x[0] ^ x[2])          # v21 = v10 ^ v[11 + 1]
    assert np.array_equal(out[2], x[2] + x[0])          # index 2: v12 + v10


def test_one_region_in_a_loop_takes_each_index_value():
    x = rows(4)
    body = """  s_mov_b32 s9, 0
loop:
  s_set_gpr_idx_on s9, gpr_idx(SRC1,DST)
  v_lshlrev_b32_e32 v20, 1, v10
  s_set_gpr_idx_off
  s_add_u32 s9, s9, 1
  s_cmp_lt_u32 s9, 4
  s_cbranch_scc1 loop"""
    out = snippet(body, x, outputs=4)
    for k in range(4):                                  # v[20 + k] = v[10 + k] << 1 (SRC0 is the constant 1)
        assert np.array_equal(out[k], x[k] << np.uint32(1))
