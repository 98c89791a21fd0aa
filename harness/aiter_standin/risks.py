"""Known risks of the runner's aiter kernels that a stand-in run cannot show: a warning on every call that takes
one, so that a user learns it before a ranked run (docs/AITER_STANDIN.md, "The non-persistent a8w8 kernel")."""
import warnings

RACY_A8W8 = "mla_a8w8_qh16_qseqlen1_gqaratio16"  # non-persistent fp8 Q and KV, the runner's pin f3be04a12a
RACY_A8W8_TEXT = (
    f"aiter's non-persistent a8w8 kernel ({RACY_A8W8}.co) runs here: on the runner two full-work files that passed "
    "the tests and benchmark mode failed ranked mode with 5-6% of elements mismatched, each time on a shape that "
    "took this kernel (dgavriloff/amd-structkernel lb_v99_20260320_175159.log at 256 x 8k, "
    "lb_v104_20260320_190936.log at 4 x 8k; MI355X_FACTS.md 'Ranked-mode failures'). Its disassembly at "
    "f3be04a12a has no s_barrier between the waves' reads of the fp8 P tile in LDS and the next tile's LDS writes "
    "over the same bytes, on every tile (the _ps kernel has a barrier there): an LDS race, unverified on hardware. "
    "Persistent a8w8 (get_mla_metadata_v1 + the _ps kernel) or a16w16 avoid it")


class RankedModeRisk(UserWarning):
    """A call the stand-in computes correctly but the runner's kernel may not in ranked mode."""



def ranked_risk(kernel: str) -> str | None:
    """The warning for a call that takes `kernel`, emitted now (None when the kernel has no known risk)."""
    if kernel != RACY_A8W8:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("always", RankedModeRisk)  # every call, not once per line
        warnings.warn(RACY_A8W8_TEXT, RankedModeRisk, stacklevel=4)
    return RACY_A8W8_TEXT
