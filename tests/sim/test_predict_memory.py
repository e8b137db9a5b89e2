"""Memory accounting: parameters, ZeRO sharding, activations per recomputation mode
(Korthikanti et al. 2022), micro-batches in flight, and the refusal of a job that does
not fit."""
from __future__ import annotations

import pytest

from predict_jobs import small
from sim.predict.job import job_from_dict
from sim.predict.memory import activation_bytes_per_layer, in_flight, stage_memory, stage_params
from sim.predict.predict import predict
from sim.topology import SimInputError

GPT3 = {"model": {"layers": 96, "hidden": 12288, "heads": 96, "seq_length": 2048, "vocab": 51200},
        "parallel": {"tp": 8, "pp": 16, "dp": 8}, "training": {"global_batch": 1536},
        "gpu": {"preset": "A100-80GB"}}


def _job(**over: dict) -> object:
    d = {k: dict(v) for k, v in GPT3.items()}
    for k, v in over.items():
        d[k].update(v)
    return job_from_dict(d, "gpt3.yaml")


def test_gpt3_parameters() -> None:
    j = _job()
    total = sum(stage_params(j, s).total for s in range(16)) * 8
    emb = 51200 * 12288
    assert total - emb == pytest.approx(174.6e9, rel=2e-3)         # 174.6B, plus the last stage's tied copy


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_zero_shards_optimizer_then_grads_then_weights(zero: int) -> None:
    m0, m = stage_memory(_job(), 1), stage_memory(_job(parallel={"zero": zero}), 1)
    assert m.optimizer == pytest.approx(m0.optimizer / (8 if zero >= 1 else 1))
    assert m.grads == pytest.approx(m0.grads / (8 if zero >= 2 else 1))
    assert m.weights == pytest.approx(m0.weights / (8 if zero >= 3 else 1))
    assert m0.weights * 6 == pytest.approx(m0.optimizer)            # 2 bytes vs 12 bytes per parameter


@pytest.mark.parametrize("tp, sp", [(1, False), (2, False), (8, False), (8, True)])
def test_activations_per_layer_are_korthikantis(tp: int, sp: bool) -> None:
    j = _job(parallel={"tp": tp, "pp": 1, "dp": 1, "sequence_parallel": sp}, training={"global_batch": 4})
    s, b, h, a = 2048, 1, 12288, 96
    per_token = (34 / tp) if sp else (10 + 24 / tp)                  # flash attention: no 5as/h term
    lse = 4 * s * b * a / tp                                          # fp32 log-sum-exp per head
    assert activation_bytes_per_layer(j, False) == pytest.approx(s * b * h * per_token + lse)
    full = _job(parallel={"tp": tp, "pp": 1, "dp": 1, "sequence_parallel": sp},
                training={"global_batch": 4, "recompute": "full"})
    assert activation_bytes_per_layer(full, False) == pytest.approx(2 * s * b * h / (tp if sp else 1))


def test_in_flight_micro_batches_per_schedule() -> None:
    j = _job()
    assert [in_flight(j, s) for s in (0, 1, 15)] == [16, 15, 1]
    v = _job(parallel={"schedule": "interleaved", "virtual_stages": 2})
    assert in_flight(v, 0) == pytest.approx((2 * 15 + 16 + 1) / 2)   # Megatron's warm-up + 1, in micro-batches


def test_a_job_that_does_not_fit_is_refused_with_the_sizes() -> None:
    j = job_from_dict(small(model={"layers": 48, "hidden": 8192, "heads": 64}, parallel={"tp": 2, "pp": 1, "dp": 4},
                            gpu={"preset": "A100-40GB"}), "big.yaml")
    with pytest.raises(SimInputError) as e:
        predict(j)
    msg = str(e.value)
    assert msg.startswith("big.yaml: gpu.hbm_GiB: the job does not fit: stage 0 needs")
    assert "A100-40GB has 40 GiB" in msg and "optimizer" in msg


def test_selective_recomputation_stores_less_than_none_and_more_than_full() -> None:
    acts = [activation_bytes_per_layer(_job(training={"recompute": mode}), False)
            for mode in ("none", "selective", "full")]
    assert acts[0] > acts[1] > acts[2]
