"""Issue 29: the stand-in warns on every call that takes aiter's non-persistent a8w8 kernel (the ranked-mode
failures of MI355X_FACTS.md and the LDS window in its disassembly), and on no other kernel."""
import warnings

import torch

from harness.aiter_standin import decode, journal, risks
from harness.aiter_standin.dtypes import fp8


def _inputs(batch: int = 2, kv: int = 64):
    q = torch.randn(batch, 16, 576)
    kv_bf16 = torch.randn(batch * kv, 1, 1, 576)
    q_scale, kv_scale = q.abs().amax() / 448, kv_bf16.abs().amax() / 448
    qo = torch.arange(batch + 1, dtype=torch.int32)
    kv_indptr = torch.arange(0, (batch + 1) * kv, kv, dtype=torch.int32)
    return ((q / q_scale).to(fp8), (kv_bf16 / kv_scale).to(fp8), qo, kv_indptr,
            q_scale.reshape(1).float(), kv_scale.reshape(1).float(), q.to(torch.bfloat16), kv_bf16.to(torch.bfloat16))


def _call(q, kv, qo, kv_indptr, **scales):
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16)
    indices = torch.arange(kv.shape[0], dtype=torch.int32)
    last = torch.ones(q.shape[0], dtype=torch.int32)
    decode.mla_decode_fwd(q, kv, out, qo, kv_indptr, indices, last, 1, page_size=1, sm_scale=576 ** -0.5, **scales)


def test_every_non_persistent_a8w8_call_warns_and_journals_the_warning():
    q8, kv8, qo, kv_indptr, q_scale, kv_scale, _, _ = _inputs()
    with warnings.catch_warnings(record=True) as caught, journal.recording() as calls:
        for _ in range(3):
            _call(q8, kv8, qo, kv_indptr, q_scale=q_scale, kv_scale=kv_scale)
    raised = [w for w in caught if issubclass(w.category, risks.RankedModeRisk)]
    assert len(raised) == 3  # every call, not once
    text = str(raised[0].message)
    assert "mla_a8w8_qh16_qseqlen1_gqaratio16.co" in text and "lb_v99_20260320_175159.log" in text
    assert "s_barrier" in text and "unverified" in text
    assert [c["kernel"] for c in calls] == [risks.RACY_A8W8] * 3 and all(c["warning"] == text for c in calls)


def test_a_bf16_non_persistent_call_does_not_warn():
    _, _, qo, kv_indptr, _, _, q16, kv16 = _inputs()
    with warnings.catch_warnings(record=True) as caught, journal.recording() as calls:
        _call(q16, kv16, qo, kv_indptr)
    assert not [w for w in caught if issubclass(w.category, risks.RankedModeRisk)]
    assert calls[0]["warning"] is None and calls[0]["kernel"] != risks.RACY_A8W8
