"""The opcode table (executor.FAMILIES): every mnemonic the family tables know, and every one in the
saved listings, is claimed by exactly one family, the one its table belongs to."""
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.emulator import executor, salu, smem, sopp, valu_forms, valu_packed, vcmp
from harness.emulator.disasm import parse_listing
from harness.emulator.errors import NotEmulated
from harness.emulator.valu_ops import OPS

FLOAT_KINDS, INT_KINDS = ("f16", "f32", "f64"), ("i16", "u16", "i32", "u32", "i64", "u64")
VALU_SUFFIXES = ("", "_e32", "_e64", "_dpp", "_sdwa")
LISTINGS = Path(__file__).parent / "listings"


def scalar_mnemonics():
    for name in [*salu.SOP2, *salu.SOP1, *salu.SOPK]:
        yield f"s_{name}", "salu"
    for op in salu.SAVEEXEC:
        yield f"s_{op}_saveexec_b64", "salu"
    for test in salu.SOPC:
        for kind in ("i32", "u32"):
            yield f"s_cmp_{test}_{kind}", "salu"
            yield f"s_cmpk_{test}_{kind}", "salu"
    yield from ((f"s_bitcmp{bit}_b{width}", "salu") for bit in (0, 1) for width in (32, 64))
    for name in [*sopp.NO_OPS, *sopp.CONTROL, *(f"cbranch_{c}" for c in sopp.CONDITIONS)]:
        yield f"s_{name}", "sopp"
    for size in smem.SIZES:
        yield f"s_load_{size}", "smem"
        yield f"s_buffer_load_{size}", "smem"
    yield from (("s_memtime", "smem"), ("s_memrealtime", "smem"), ("s_set_gpr_idx_on", "gpr_idx"))


def vector_mnemonics():
    tables = ((OPS, "valu"), (valu_forms.FORMS, "valu_forms"),
              ({**valu_packed.HALF_OPS, **valu_packed.WIDE_OPS, **valu_packed.SPECIAL}, "valu_packed"))
    for table, family in tables:
        for name in table:
            yield from ((f"v_{name}{suffix}", family) for suffix in VALU_SUFFIXES)
    for compare in ("cmp", "cmpx"):
        for tests, kinds in ((vcmp.FLOAT_TESTS, FLOAT_KINDS), (vcmp.INT_TESTS, INT_KINDS)):
            for test in tests:
                yield from ((f"v_{compare}_{test}_{kind}{s}", "vcmp") for kind in kinds for s in ("_e32", "_e64"))
        yield from ((f"v_{compare}_class_{kind}", "vcmp") for kind in FLOAT_KINDS)
    for name in ("mfma_f32_16x16x32_bf16", "mfma_scale_f32_16x16x128_f8f6f4", "accvgpr_read_b32",
                 "accvgpr_write_b32", "accvgpr_mov_b32", "permlane16_swap_b32", "permlane32_swap_b32",
                 "cvt_scalef32_pk_f32_fp8", "cvt_scalef32_pk_f16_fp4", "smfmac_f32_16x16x64_bf16"):
        yield f"v_{name}", "matrix"


def memory_mnemonics():
    yield from (("ds_read_b64_tr_b8", "matrix"), ("ds_read_b64_tr_b16", "matrix"), ("ds_read_b32", "ds"),
                ("ds_write2_b32", "ds"), ("ds_add_u32", "ds"), ("ds_bpermute_b32", "ds"),
                ("global_load_dwordx4", "vmem"), ("global_atomic_add_f32", "vmem"),
                ("flat_store_dword", "vmem"), ("buffer_load_dword", "buffer"), ("buffer_wbl2", "buffer"),
                ("scratch_load_dword", "scratch"), ("scratch_store_dwordx4", "scratch"))


KNOWN = dict([*scalar_mnemonics(), *vector_mnemonics(), *memory_mnemonics()])


def test_every_family_of_the_table_has_mnemonics_here():
    assert len(KNOWN) > 1000
    assert set(KNOWN.values()) == {row.name for row in executor.FAMILIES}


@pytest.mark.parametrize("family", sorted(set(KNOWN.values())))
def test_each_known_mnemonic_has_exactly_its_own_family(family):
    for mnemonic in [m for m, f in KNOWN.items() if f == family]:
        assert [row.name for row in executor.claimants(mnemonic)] == [family], mnemonic


@pytest.mark.parametrize("name", ["snippet.txt", "hip_reduction.txt", "triton_dot.txt"])
def test_every_mnemonic_of_a_real_listing_has_one_family(name):
    mnemonics = {ins.mnemonic for ins in parse_listing((LISTINGS / name).read_text())}
    for mnemonic in mnemonics:
        assert len(executor.claimants(mnemonic)) == 1, mnemonic


@pytest.mark.parametrize("mnemonic", ["s_bcnt0_i32_b64", "s_cmp_xx_u32", "s_foo_saveexec_b64",
                                      "s_cbranch_cdbgsys", "v_frobnicate_f32", "image_load", "exp"])
def test_a_mnemonic_no_row_claims_is_not_emulated_by_name(mnemonic):
    ins = SimpleNamespace(mnemonic=mnemonic, operands=[], modifiers={}, words=[0])
    assert executor.claimants(mnemonic) == []
    with pytest.raises(NotEmulated) as caught:
        executor.build(ins, None, 0)
    assert caught.value.mnemonic == mnemonic


def test_two_rows_claiming_one_mnemonic_stop_the_build(monkeypatch):
    greedy = executor.Family("s", "greedy", lambda name: name.startswith("add_"), executor.by_name(salu.build))
    monkeypatch.setitem(executor.BY_ENCODING, "s", executor.BY_ENCODING["s"] + (greedy,))
    ins = SimpleNamespace(mnemonic="s_add_u32", operands=["s0", "s1", "s2"], modifiers={}, words=[0])
    with pytest.raises(LookupError, match="salu.*greedy"):
        executor.build(ins, None, 0)
