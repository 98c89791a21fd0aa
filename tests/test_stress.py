"""Stress cases: structured data beside the official randn, where shortcuts show and correct kernels do not."""
import pytest
import torch

import reference
from harness.run import accuracy, cases


def test_the_kinds_agree_and_the_case_set_covers_each_shape_once_per_kind():
    assert cases.STRESS_KINDS == reference.STRESS_KINDS
    specs = cases.load("stress", "test", gpu=False)
    assert len(specs) == len(cases.SMALL) * len(cases.STRESS_KINDS)
    assert {spec["stress"] for spec in specs} == set(cases.STRESS_KINDS)
    assert all(cases.validate(spec) == spec for spec in specs)
    with pytest.raises(cases.CaseError, match="stress must be one of"):
        cases.validate({"batchsize": 1, "qseqlen": 1, "kvseqlen": 8, "seed": 1, "stress": "spiky"})


def test_peaked_keys_take_most_of_the_attention():
    q, kv_data, qo_indptr, kv_indptr, config = reference.generate_input(2, 1, 1024, 3, device="cpu", stress="peaked")
    keys = kv_data["bf16"][:1024, 0].float()
    weights = torch.softmax(q[0].float() @ keys.T * config["sm_scale"], dim=-1)  # (heads, kv)
    top = weights.topk(reference.PEAK_TOKENS, dim=-1).values.sum(dim=-1)
    assert float(top.min()) > 0.5


def test_qscale_moves_the_amax_and_the_data_is_seeded():
    plain = reference.generate_input(2, 1, 64, 3, device="cpu")[0]
    scaled = reference.generate_input(2, 1, 64, 3, device="cpu", stress="qscale")[0]
    assert torch.allclose(scaled.float(), plain.float() * reference.Q_GAIN, rtol=1e-2)
    again = reference.generate_input(2, 1, 64, 3, device="cpu", stress="heavy")[1]["bf16"]
    assert torch.equal(again, reference.generate_input(2, 1, 64, 3, device="cpu", stress="heavy")[1]["bf16"])


def fixed_amax_decode(data, amax=5.0):
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    scale = torch.tensor([amax / 448.0])
    q8 = (q.float() / scale).clamp(-448.0, 448.0).to(kv8.dtype)
    return reference.torch_a8w8_decode(q8, scale, kv8.squeeze(1), kv_scale, qo_indptr, kv_indptr, config["sm_scale"])


@pytest.mark.parametrize("kind, shortcut_fails", [(None, False), ("qscale", True)])
def test_a_fixed_q_amax_passes_randn_and_fails_qscale(kind, shortcut_fails):
    data = reference.generate_input(2, 1, 257, 5, device="cpu", stress=kind)
    ok, _ = reference.check_implementation(data, fixed_amax_decode(data))
    assert ok != shortcut_fails


@pytest.mark.parametrize("kind", reference.STRESS_KINDS)
def test_the_reference_in_bf16_stays_near_its_noise_on_every_kind(kind):
    """A correct kernel of another precision (exact attention on bf16, like an a16w16 one) still passes."""
    data = reference.generate_input(2, 1, 700, 9, device="cpu", stress=kind)
    expected = reference.ref_kernel(data)
    exact = accuracy.exact_attention(data).to(torch.bfloat16)
    assert reference.check_implementation(data, exact)[0]
    assert accuracy.relative_error(exact, expected) < 1.5 * accuracy.noise_floor(data, expected)
