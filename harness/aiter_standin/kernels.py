"""The runner's MLA asm kernels (hsa/gfx950/mla/mla_asm.csv at f3be04a12a) and how asm_mla.cu picks one.

pick() follows mla_decode_stage1_asm_fwd's dispatch: q/kv type names, gqa ratio, persistent or not, and the
padded q length it looks up; a combination the catalogue lacks is refused as the runner refuses it
("cannot get heuristic kernel"), with what that means for the caller.
"""
from harness.aiter_standin.errors import StandInRefusal

# (q_type, kv_type, gqa, persistent, q_seq_len) -> kernel, decode rows only (prefill rows left out)
CATALOGUE = {
    ("bf16", "bf16", 128, 0, 0): "mla_dec_stage1_bf16_a16w16_subQ128_mqa128",
    ("bf16", "bf16", 16, 1, 4): "mla_a16w16_qh16_m16x4_n16x1_coex0_mask1_ps",
    ("bf16", "bf16", 16, 0, 1): "mla_dec_stage1_bf16_a16w16_subQ16_mqa16",
    ("bf16", "bf16", 16, 0, 4): "mla_a16w16_qh16_m16x4_n16x1_coex0_mask1",
    ("bf16", "bf16", 16, 0, 8): "mla_a16w16_qh16_m32x4_n16x1_coex0_mask1",
    ("bf16", "fp8", 16, 1, 4): "mla_a16w8_qh16_m16x4_n16x1_coex0_mask1_ps",
    ("fp8", "fp8", 16, 1, 1): "mla_a8w8_qh16_qseqlen1_gqaratio16_ps",
    ("fp8", "fp8", 16, 1, 2): "mla_a8w8_qh16_qseqlen2_gqaratio16_ps",
    ("fp8", "fp8", 16, 1, 4): "mla_a8w8_qh64_qseqlen4_gqaratio16_ps",
    ("fp8", "fp8", 16, 0, 1): "mla_a8w8_qh16_qseqlen1_gqaratio16",
    ("fp8", "fp8", 16, 0, 2): "mla_a8w8_qh16_qseqlen2_gqaratio16",
    ("fp8", "fp8", 16, 0, 4): "mla_a8w8_qh64_qseqlen4_gqaratio16",
    ("fp8", "fp8", 32, 1, 4): "mla_a8w8_qh32_qseqlen4_gqaratio32_ps",
    ("fp8", "fp8", 128, 0, 0): "mla_a8w8_qh128_m32x4_n16x2_msk1",
    ("fp8", "fp8", 128, 1, 0): "mla_a8w8_qh128_m32x4_n16x2_msk0_ps",
    ("bf16", "bf16", 32, 0, 0): "mla_a16w16_qh16_m32x1_n16x1_coex0_mask1",
    ("bf16", "bf16", 64, 0, 0): "mla_a16w16_qh16_m64x1_n16x1_coex0_mask1",
}
VARIANTS = {("fp8", "fp8"): "a8w8", ("bf16", "fp8"): "a16w8", ("bf16", "bf16"): "a16w16", ("bf16", "byte"): "a16w8"}


def _lookup_length(q_type: str, kv_type: str, gqa: int, persistent: bool, max_seqlen_q: int) -> tuple[int, bool]:
    """(the q length asm_mla.cu looks up, persistent flag it uses) for these arguments."""
    length = max_seqlen_q
    if gqa == 128:
        return 0, persistent and not (q_type == "bf16" and kv_type == "bf16")
    if gqa == 16:
        if q_type == "bf16" and kv_type == "bf16":
            if persistent:
                length = 4 if max_seqlen_q <= 4 else max_seqlen_q
            else:
                length = 1 if max_seqlen_q == 1 else 4 if max_seqlen_q <= 4 else 8
        elif q_type == "bf16" and kv_type in ("fp8", "byte"):
            length = 4 if persistent and max_seqlen_q <= 4 else max_seqlen_q
        elif q_type == "fp8":
            if max_seqlen_q > 4:
                raise StandInRefusal("mla_decode_stage1_asm_fwd: only support fp8 mla decoding for qo_len <= 4 "
                                     f"(max_seqlen_q={max_seqlen_q}; the runner stops here)")
            length = max_seqlen_q if max_seqlen_q <= 2 else 4
    elif gqa == 32:
        if q_type == "bf16" and kv_type == "bf16" and not persistent:
            length = 0
        elif q_type == "fp8" and kv_type == "fp8" and not (max_seqlen_q == 4 and persistent):
            raise StandInRefusal("mla_decode_stage1_asm_fwd: fp8/fp8 with gqa_ratio=32 only supports "
                                 "decode_qlen=4 in persistent mode")
    elif gqa == 64 and q_type == "bf16" and kv_type == "bf16" and not persistent:
        length = 0
    return length, persistent


def pick(q_type: str, kv_type: str, gqa: int, persistent: bool, max_seqlen_q: int) -> str:
    """The kernel the runner launches, or a refusal naming what the catalogue lacks."""
    length, ps = _lookup_length(q_type, kv_type, gqa, persistent, max_seqlen_q)
    kernel = CATALOGUE.get((q_type, kv_type, gqa, int(ps), length))
    if kernel is None:
        mode = "persistent" if persistent else "non-persistent"
        raise StandInRefusal(
            f"mla_decode_stage1_asm_fwd: cannot get heuristic kernel for q {q_type}, kv {kv_type}, gqa {gqa}, "
            f"{mode}, max_seqlen_q {max_seqlen_q}: the runner's gfx950 MLA kernels (mla_asm.csv) have none, so "
            f"the runner stops here. Kernels for gqa {gqa}: "
            + (", ".join(f"{k[0]}/{k[1]} {'ps' if k[3] else 'non-ps'} qlen {k[4]}" for k in CATALOGUE if k[2] == gqa)
               or "none"))
    return kernel


def variant(q_type: str, kv_type: str) -> str | None:
    return VARIANTS.get((q_type, kv_type))
