"""Every instruction form that aiter's gfx950 MLA code objects and our HIP builds hold gets an executor
(issue 39): a static check over saved listings (tests/emulator/listings/), no wheel and no objdump.
Building is where a family rejects a mnemonic or an operand form it lacks (NotEmulated); nothing runs."""
import re
from pathlib import Path

import pytest

from harness.emulator import executor
from harness.emulator.disasm import Program, parse_listing
from harness.emulator.errors import NotEmulated

LISTINGS = Path(__file__).parent / "listings"
STATED = re.compile(r"(\d+) files, (\d+) mnemonics")


class EveryAddress(dict):
    """Branch targets lie outside a listing of forms: any address is instruction 0."""

    def __contains__(self, address):
        return True

    def __missing__(self, address):
        return 0


def forms(name: str) -> Program:
    program = Program(parse_listing((LISTINGS / name).read_text()))
    program.index_of = EveryAddress()
    return program


def unbuilt(program: Program) -> list[str]:
    """'mnemonic operands: why' of each form no family builds."""
    failed = []
    for index, ins in enumerate(program.instructions):
        try:
            executor.build(ins, program, index)
        except (NotEmulated, LookupError, ValueError) as error:
            failed.append(f"{ins.text.split('//')[0].strip()}: {error!r}")
    return failed


@pytest.mark.parametrize("name", ["aiter_mla_gfx950.txt", "ours_hip_gfx950.txt"])
def test_every_listed_form_builds(name):
    program = forms(name)
    assert len(program.instructions) > 200
    assert unbuilt(program) == []


def test_the_aiter_listing_holds_every_mnemonic_it_states():
    text = (LISTINGS / "aiter_mla_gfx950.txt").read_text()
    files, mnemonics = map(int, STATED.search(text).groups())
    named = re.findall(r"^#   (mla_\S+\.co)$", text, re.MULTILINE)
    assert len(named) == files == 20
    listed = {ins.mnemonic for ins in parse_listing(text)}
    assert len(listed) == mnemonics
    # the MFMA and fp8 forms aiter's a8w8 decode kernels reach
    assert {"v_mfma_f32_16x16x32_fp8_fp8", "v_cvt_pk_f32_fp8_sdwa"} <= listed


def test_a_form_no_family_builds_is_reported():
    program = Program(parse_listing(
        "\tv_cvt_pk_f32_fp8_sdwa v[2:3], v1 src0_sel:BYTE_7 // 000000000000: 7E04ACF9 00060601\n"
        "\tv_frobnicate_b32 v1, v2 // 000000000008: 7E020302\n"))
    failed = unbuilt(program)
    assert [line.split(":")[0] for line in failed] == [
        "v_cvt_pk_f32_fp8_sdwa v[2", "v_frobnicate_b32 v1, v2"]
