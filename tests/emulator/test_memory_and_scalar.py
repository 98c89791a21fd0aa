"""SALU, DS lane exchange, MUBUF range checks and LDS-DMA against numpy and Python ints."""
import numpy as np

from .snippets import snippet

RNG = np.random.default_rng(11)
LANE = np.arange(64, dtype=np.uint32)


def test_scalar_carry_chain_bfe_and_compare():
    body = """  s_mov_b32 s10, 0xfffffff0
  s_mov_b32 s11, 5
  s_add_u32 s12, s10, 0x20
  s_addc_u32 s13, s11, 0
  s_bfe_u32 s14, s10, 0x40004
  s_cmp_lt_i32 s10, 0
  s_cselect_b32 s15, 1, 2
  s_lshl2_add_u32 s16, s11, 3
  v_mov_b32 v20, s12
  v_mov_b32 v21, s13
  v_mov_b32 v22, s14
  v_mov_b32 v23, s15
  v_mov_b32 v24, s16"""
    out = snippet(body, [LANE], outputs=5)[:, 0]
    total = 0x5FFFFFFF0 + 0x20
    assert out.tolist() == [total & 0xFFFFFFFF, total >> 32, 0xFFFFFFF0 >> 4 & 0xF, 1, 5 * 4 + 3]


def test_ds_bpermute_and_swizzle_move_lanes():
    x = RNG.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    source = (63 - LANE) * 4
    body = """  ds_bpermute_b32 v20, v11, v10
  ds_swizzle_b32 v21, v10 offset:swizzle(SWAP,1)
  ds_swizzle_b32 v22, v10 offset:swizzle(QUAD_PERM,3,2,1,0)"""
    out = snippet(body, [x, source], outputs=3)
    assert np.array_equal(out[0], x[::-1])
    assert np.array_equal(out[1], x[LANE ^ 1])
    assert np.array_equal(out[2], x[LANE - LANE % 4 + 3 - LANE % 4])


def test_ds_write_read_b64_and_read2():
    x, y = (RNG.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    body = """  v_lshlrev_b32 v2, 3, v0
  ds_write_b64 v2, v[10:11]
  s_waitcnt lgkmcnt(0)
  ds_read2_b32 v[20:21], v2 offset1:1
  ds_read_b32 v22, v2 offset:4"""
    out = snippet(body, [x, y], outputs=3, lds=512)
    assert np.array_equal(out[0], x) and np.array_equal(out[1], y) and np.array_equal(out[2], y)


def buffer_descriptor(records: int) -> str:
    """SGPRs s[12:15] as a raw V# over the input buffer (base s[4:5], stride 0)."""
    return f"""  s_mov_b32 s12, s4
  s_and_b32 s13, s5, 0xffff
  s_mov_b32 s14, {records}
  s_mov_b32 s15, 0x20000"""


def test_buffer_loads_out_of_range_give_zero_and_stores_are_dropped():
    x = RNG.integers(1, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    body = buffer_descriptor(100) + """
  v_lshlrev_b32 v3, 4, v0
  buffer_load_dwordx4 v[20:23], v3, s[12:15], 0 offen
  v_mov_b32 v24, 0x1234
  buffer_store_dword v24, v1, s[12:15], 0 offen offset:96
  s_waitcnt vmcnt(0)
  buffer_load_dword v25, v1, s[12:15], 0 offen offset:96"""
    out = snippet(body, [x], outputs=6)
    loaded = out[:4].T.reshape(-1)[:256]
    in_range = np.arange(256) * 4 + 4 <= 100
    assert np.array_equal(loaded[in_range], x[:25]) and not loaded[~in_range].any()
    # dword 24 is the only store in range: the others were dropped, and read back as 0 past 100 bytes
    assert out[5, 0] == 0x1234 and not out[5, 1:].any()


def test_lds_dma_lands_at_m0_plus_lane_times_size():
    x = RNG.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    body = """  s_mov_b32 m0, 256
  v_lshlrev_b32 v3, 4, v0
  global_load_lds_dwordx4 v3, s[4:5]
  s_waitcnt vmcnt(0)
  v_add_u32 v4, 0x100, v3
  ds_read_b128 v[20:23], v4"""
    out = snippet(body, [x, x + 1, x + 2, x + 3], outputs=4, lds=2048)
    words = np.concatenate([x, x + 1, x + 2, x + 3])
    assert np.array_equal(out.T.reshape(-1), words)
