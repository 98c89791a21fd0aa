"""MFMA hazards: inline-asm MFMA in HIP source, and the wait states the compiled code leaves after each MFMA.

An MFMA's result is written several cycles after issue. LLVM's GCN hazard recognizer inserts the wait states
(s_nop or independent instructions) a later read needs, but only for instructions it can see: an MFMA issued
through inline `asm("v_mfma...")` is opaque to it, so a VALU may read the result too early and get stale data.
`inline_asm_mfma` finds such asm in a submission's text; `mfma_waits` measures the compiled code.
"""
from __future__ import annotations

import dataclasses
import re

from harness.checks.findings import Finding

RULE = "INLINE_ASM_MFMA"
# asm / __asm__ (optionally volatile), then string literals up to the first colon; the text mentions an MFMA.
_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\s*(?:volatile|__volatile__)?\s*\(\s*((?:\"(?:[^\"\\]|\\.)*\"\s*)+)")
_MFMA = re.compile(r"\bv_(?:mfma|smfmac)_\w+")
REASON = ("LLVM's hazard recognizer cannot see into inline asm, so it inserts no wait states after this MFMA: "
          "a VALU may read the result too few wait states later (120 read a score 3 wait states after the MFMA "
          "where the builtin form gets s_nop 11); use the __builtin_amdgcn_mfma_* builtin instead")


def inline_asm_mfma(text: str) -> list[Finding]:
    """One finding per asm statement that issues an MFMA, at its line in the submission file."""
    findings = []
    for match in _ASM.finditer(text):
        mnemonic = _MFMA.search(match.group(1))
        if mnemonic:
            line = text.count("\n", 0, match.start()) + 1
            findings.append(Finding(RULE, line, f"inline-asm {mnemonic.group(0)}: {REASON}", False))
    return findings


# ---------------------------------------------------------------------------
# Disassembly (llvm-objdump -d --no-show-raw-insn)
# ---------------------------------------------------------------------------

_REGISTER = re.compile(r"\b([va])(?:\[(\d+):(\d+)\]|(\d+)(?!\w))")


def _registers(operand: str) -> set[tuple[str, int]]:
    regs = set()
    for kind, low, high, single in _REGISTER.findall(operand):
        first, last = (int(low), int(high)) if low else (int(single), int(single))
        regs |= {(kind, r) for r in range(first, last + 1)}
    return regs


def _operands(instruction: str) -> list[str]:
    parts = instruction.split(None, 1)
    return [p.strip() for p in parts[1].split(",")] if len(parts) > 1 else []


def is_mfma(instruction: str) -> bool:
    return instruction.startswith(("v_mfma", "v_smfmac"))


@dataclasses.dataclass(frozen=True)
class MfmaWait:
    mfma: str  # the MFMA's mnemonic
    reader: str  # the first instruction reading its result ("" when none before a branch / the end)
    wait_states: int  # s_nop N counts N + 1, any other instruction 1


_STOPS = ("s_branch", "s_cbranch", "s_setpc", "s_endpgm")


def mfma_waits(instructions: list[str]) -> list[MfmaWait]:
    """For each MFMA, the wait states before the first non-MFMA instruction that reads its result.

    Straight-line only: the walk stops at a branch. Another MFMA using the result as its accumulator is
    skipped over (the hardware forwards srcC for dependent MFMAs of the same shape).
    """
    waits = []
    for index, instruction in enumerate(instructions):
        if not is_mfma(instruction):
            continue
        operands = _operands(instruction)
        result = _registers(operands[0]) if operands else set()
        count, reader = 0, ""
        for later in instructions[index + 1:]:
            if later.startswith(_STOPS):
                break
            mnemonic = later.split(None, 1)[0]
            later_operands = _operands(later)
            stores = "_store" in mnemonic or mnemonic.startswith("ds_write")
            sources = later_operands if stores else later_operands[1:]
            if not is_mfma(later) and any(_registers(op) & result for op in sources):
                reader = mnemonic
                break
            if not stores and later_operands and _registers(later_operands[0]) & result:
                break  # overwritten before any read
            nop = re.match(r"s_nop\s+(0x[0-9a-fA-F]+|\d+)", later)
            count += int(nop.group(1), 0) + 1 if nop else 1
        waits.append(MfmaWait(instruction.split(None, 1)[0], reader, count))
    return waits
