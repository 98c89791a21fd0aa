"""The decoder (disasm.parse_listing) on saved llvm-objdump-22 listings, no objdump run. Made with
`llvm-objdump-22 -d --mcpu=gfx950` (snippet.txt: an assembled snippet kernel) and with `-d -l`
(hip_reduction.txt: test_end_to_end's REDUCTION built by clang-22 -g; triton_dot.txt: test_triton's
bf16 `dot` as Triton's AMD backend builds it for gfx950)."""
import re
from pathlib import Path

import pytest

from harness.emulator.disasm import Program, parse_listing
from harness.emulator.sopp import simm16

LISTINGS = Path(__file__).parent / "listings"
# objdump's own branch comment: '// 000000001558: BF85FFF2 <k+0x24>'
BRANCH_COMMENT = re.compile(r"<(\w+)\+0x([0-9a-f]+)>\s*$")
FUNCTION = re.compile(r"^([0-9a-f]{16}) <(\w+)>:$")


def listing(name: str) -> str:
    return (LISTINGS / name).read_text()


def program(name: str) -> Program:
    return Program(parse_listing(listing(name)))


def by_mnemonic(instructions, mnemonic):
    return [ins for ins in instructions if ins.mnemonic == mnemonic]


@pytest.mark.parametrize("name", ["snippet.txt", "hip_reduction.txt", "triton_dot.txt"])
def test_every_instruction_line_is_read_and_the_text_is_contiguous(name):
    text = listing(name)
    lines = [line for line in text.splitlines() if line.startswith("\t") and "// 0000" in line]
    decoded = program(name).instructions
    assert len(decoded) == len(lines) > 20
    assert [ins.mnemonic for ins in decoded] == [line.split()[0] for line in lines]
    starts = {int(found.group(1), 16) for found in map(FUNCTION.match, text.splitlines()) if found}
    assert decoded[0].pc in starts
    for ins, following in zip(decoded, decoded[1:]):
        assert ins.pc + ins.size == following.pc, ins.text
        assert ins.size == 4 * len(ins.words) in (4, 8, 12)


@pytest.mark.parametrize("name", ["snippet.txt", "hip_reduction.txt", "triton_dot.txt"])
def test_branch_targets_from_the_words_are_where_objdump_says(name):
    text = listing(name)
    bases = {found.group(2): int(found.group(1), 16)
             for found in map(FUNCTION.match, text.splitlines()) if found}
    decoded = program(name)
    branches = [ins for ins in decoded.instructions if ins.mnemonic.startswith(("s_branch", "s_cbranch"))]
    assert branches
    lines = {int(line.split("// ")[1][:12], 16): line for line in text.splitlines() if "// 0000" in line}
    for ins in branches:
        function, offset = BRANCH_COMMENT.search(lines[ins.pc]).groups()
        target = ins.pc + 4 + 4 * simm16(ins)
        assert target == bases[function] + int(offset, 16)
        assert target in decoded.index_of


def test_operands_and_modifiers_of_the_snippet():
    decoded = program("snippet.txt").instructions
    first = decoded[0]
    assert (first.pc, first.mnemonic, first.operands) == (0x1500, "s_load_dwordx4", ["s[4:7]", "s[0:1]", "0x0"])
    assert first.words == [0xC00A0100, 0x00000000]
    (dpp,) = by_mnemonic(decoded, "v_add_u32_dpp")
    assert dpp.operands == ["v10"] * 3
    assert dpp.modifiers == {"row_shr": "1", "row_mask": "0xf", "bank_mask": "0xf"}
    (sdwa,) = by_mnemonic(decoded, "v_add_u32_sdwa")
    assert sdwa.modifiers == {"dst_sel": "WORD_1", "dst_unused": "UNUSED_PAD",
                              "src0_sel": "BYTE_0", "src1_sel": "BYTE_1"}
    (fma,) = by_mnemonic(decoded, "v_fma_f32")
    assert fma.operands == ["v13", "-v10", "|v11|", "0.5"] and fma.modifiers == {}
    (pack,) = by_mnemonic(decoded, "v_cvt_pk_fp8_f32")
    assert pack.modifiers == {"op_sel": "[0,0,1]"}
    (load,) = by_mnemonic(decoded, "global_load_dword")
    assert load.operands == ["v10", "v1", "s[4:5]"] and load.modifiers == {"offset": "256"}
    (pair,) = by_mnemonic(decoded, "ds_write2_b32")
    assert pair.operands == ["v1", "v10", "v11"] and pair.modifiers == {"offset1": "64"}
    (wait,) = [ins for ins in by_mnemonic(decoded, "s_waitcnt") if ins.operands == ["vmcnt(0)"]]
    assert wait.modifiers == {}
    (end,) = by_mnemonic(decoded, "s_endpgm")
    assert end.operands == [] and end is decoded[-1]
    assert all(ins.source_line is None for ins in decoded)  # no -l, no debug info


def test_source_lines_follow_the_annotations():
    decoded = program("hip_reduction.txt").instructions
    assert all(ins.source_line and re.fullmatch(r"/tmp/\w+/k\.hip:\d+", ins.source_line) for ins in decoded)
    assert decoded[0].source_line.endswith("k.hip:7")
    assert {ins.source_line.rsplit(":", 1)[1] for ins in by_mnemonic(decoded, "s_barrier")} <= {"10"}
    literal = [ins for ins in decoded if ins.mnemonic == "s_mov_b64" and ins.operands[1] == "0x400"]
    assert literal and literal[0].size == 8  # a 32-bit literal follows the instruction word


def test_the_triton_listing_names_the_dot_line():
    decoded = program("triton_dot.txt").instructions
    mfma = by_mnemonic(decoded, "v_mfma_f32_32x32x16_bf16")
    assert len(mfma) >= 2
    assert {ins.source_line.rsplit("/", 1)[1] for ins in mfma} == {"test_triton.py:45"}
    assert mfma[0].operands == ["v[16:31]", "v[2:5]", "v[42:45]", "0"]
    assert mfma[1].operands[3] == "v[16:31]"  # '...v[16:31]// 0000...': no space before the comment
    reads = by_mnemonic(decoded, "ds_read_b64_tr_b16")
    assert reads and all(ins.operands[0].startswith("v[") for ins in reads)
    assert {ins.modifiers.get("offset", "0") for ins in reads} >= {"0", "512", "2048"}
