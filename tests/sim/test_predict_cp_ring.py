"""Issue 31, twelfth round (i31-cp): context parallelism as torch's ring attention runs it
(``framework.cp_attention: per_step``, torchtitan's default): one SDPA call per CP step on a
block of the sequence, fp32 merges of the partial outputs, the K/V gradients passed round
the ring in fp32; against one flash kernel over the local queries (``one_kernel``)."""
from __future__ import annotations

import pytest

from sim.predict import cp_ring
from sim.predict.comm import CommModel
from sim.predict.framework import CP_ATTENTION, PROFILES
from sim.predict.graph import layer_backward, layer_forward, recompute_forward
from sim.predict.job import job_from_dict
from sim.predict.predict import job_fabric
from sim.predict.stages import pass_ops
from sim.topology import SimInputError

LLAMA = {"layers": 4, "hidden": 4096, "heads": 32, "kv_heads": 8, "seq_length": 65536, "vocab": 128256,
         "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "ffn_hidden": 14336, "tied_embeddings": False}


def job(cp: int, framework: dict | None = None, mask: str = "causal", seq: int = 65536):
    return job_from_dict({"model": {**LLAMA, "seq_length": seq},
                          "training": {"global_batch": 8 // cp, "attention_mask": mask},
                          "parallel": {"cp": cp, "dp": 8 // cp, "zero": 3}, "gpu": {"preset": "H100-SXM"},
                          "framework": framework or {"name": "torchtitan"}}, "j.yaml")


def elements(j) -> float:
    """N: elements of one layer's local attention output, b · s/c · a/t · d."""
    return j.training.micro_batch * j.model.seq_length // j.parallel.cp * j.model.heads * j.model.d_head


def test_profiles() -> None:
    assert CP_ATTENTION == ("one_kernel", "per_step")
    assert PROFILES["torchtitan"].cp_attention == "per_step"
    for name in ("megatron-core", "nemo", "megatron-bridge", "llama3-meta", "pytorch-fsdp", "deepspeed"):
        assert PROFILES[name].cp_attention == "one_kernel", name


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_one_kernel_per_step_and_their_shapes(cp: int) -> None:
    """c SDPA calls a layer and direction: step 0 causal on s/c × s/c, steps 1..c-1 non-causal
    on s/c × s/2c (looked up at the shorter side); their FLOPs add up to the one kernel's."""
    j = job(cp)
    s_local = 65536 // cp
    fwd = [k for k in layer_forward(j, False) if k.kind == "attention"]
    assert [k.name for k in fwd] == [f"cp.attention.{i}" for i in range(cp)]
    assert [(k.seq, k.causal) for k in fwd] == [(s_local, True)] + [(s_local // 2, False)] * (cp - 1)
    one = [k for k in layer_forward(job(cp, {"name": "torchtitan", "cp_attention": "one_kernel"}), False)
           if k.kind == "attention"]
    assert len(one) == 1 and one[0].seq == s_local
    assert sum(k.flops for k in fwd) == pytest.approx(one[0].flops)
    bwd = [k for k in layer_backward(j, False) if k.kind == "attention"]
    assert [k.name for k in bwd] == [f"cp.attention.{i}.bwd" for i in range(cp)]
    assert sum(k.flops for k in bwd) == pytest.approx(2.5 * one[0].flops)
    assert all(k.phase == "bwd" for k in bwd)


@pytest.mark.parametrize("cp", [2, 8])
def test_merge_and_accumulation_bytes(cp: int) -> None:
    """The fp32 merge after every step but the first and the casts (forward); the fp32
    accumulation of dQ/dK/dV per step (backward); eager counts each primitive, compiled one
    pass a step."""
    for compiled, mode in ((False, "eager"), (True, "compiled")):
        j = job(cp, {"name": "torchtitan", "compile": compiled})
        n = elements(j)
        fwd = {k.name: k.bytes for k in layer_forward(j, False) if k.name.startswith("cp.merge")}
        assert len(fwd) == cp                              # c-1 merges + the casts
        assert sum(fwd.values()) == pytest.approx((cp_ring.MERGE_CASTS_B + (cp - 1) * cp_ring.MERGE_STEP_B[mode]) * n)
        acc = sum(k.bytes for k in layer_backward(j, False) if k.name.startswith("cp.bwd.accum"))
        assert acc == pytest.approx((cp_ring.ACCUM_ONCE_B[mode] + cp_ring.ACCUM_STEP0_B[mode]
                                     + (cp - 1) * cp_ring.ACCUM_STEP_B[mode]) * n)
    assert cp_ring.MERGE_STEP_B["eager"] > cp_ring.MERGE_STEP_B["compiled"]


def test_merges_cost_time() -> None:
    """The merges are timed memory-bound kernels: a forward pass with them is longer than its
    SDPA blocks alone, by their bytes at HBM speed."""
    j = job(4)
    fab = job_fabric(j)
    ops = pass_ops(j, layer_forward(j, False), CommModel(j, fab.sf, fab.placed))
    merges = [o.seconds for o in ops if o.name.startswith("cp.merge.")]
    assert len(merges) == 4 and all(s > 0 for s in merges)
    n = elements(j)
    assert sum(merges) >= (cp_ring.MERGE_CASTS_B + 3 * cp_ring.MERGE_STEP_B["eager"]) * n / j.gpu.hbm_Bps


def test_kv_exchange_and_fp32_gradient_ring() -> None:
    """All-gather rotater: the K and V of all c ranks (a/t heads after repeat_kv), under
    step 0's SDPA, again in the backward; the fp32 dK/dV go round the ring c times, each
    under the next step's backward, the last exposed."""
    cp = 4
    j = job(cp)
    n = elements(j)
    ag = [k for k in layer_forward(j, False) if k.kind == "comm"]
    assert [(k.name, k.collective, k.hidden_by) for k in ag] == [("cp.allgather.kv", "allgather", "cp.attention.0")]
    assert ag[0].size_bytes == pytest.approx(cp * 2 * n * 2.0)
    bwd = [k for k in layer_backward(j, False) if k.group == "cp"]
    assert bwd[0].name == "cp.bwd.allgather.kv" and bwd[0].hidden_by == "cp.attention.0.bwd"
    dkv = [k for k in bwd if k.name.startswith("cp.permute.dkv")]
    assert [k.hidden_by for k in dkv] == ["cp.attention.1.bwd", "cp.attention.2.bwd", "cp.attention.3.bwd", ""]
    assert all(k.size_bytes * (cp - 1) / cp == pytest.approx(2 * n * 4.0) for k in dkv)   # fp32, one peer
    ring = [k for k in layer_forward(job(cp, {"name": "torchtitan", "cp_comm": "ring"}), False) if k.kind == "comm"]
    assert [k.hidden_by for k in ring] == [f"cp.attention.{i}" for i in range(cp - 1)]


def test_recomputation_replays_the_steps() -> None:
    """Full recomputation replays the c blocks, the merges and the all-gather (under the
    replayed step 0)."""
    j = job_from_dict({"model": LLAMA, "training": {"global_batch": 4, "recompute": "full"},
                       "parallel": {"cp": 2, "dp": 4, "zero": 3}, "gpu": {"preset": "H100-SXM"},
                       "framework": {"name": "torchtitan"}}, "j.yaml")
    names = {k.name: k for k in recompute_forward(j, False)}
    assert {"recompute.cp.attention.0", "recompute.cp.attention.1", "recompute.cp.merge.1"} <= set(names)
    assert names["recompute.cp.allgather.kv"].hidden_by == "recompute.cp.attention.0"


@pytest.mark.parametrize("section, field", [
    ({"name": "torchtitan", "cp_attention": "ring_blocks"}, "framework.cp_attention"),
    ({"name": "megatron-core", "cp_attention": 3}, "framework.cp_attention"),
])
def test_bad_value_named(section: dict, field: str) -> None:
    with pytest.raises(SimInputError, match=field):
        job(2, section)


def test_per_step_needs_causal_flash() -> None:
    """torch: "Load balancing requires `is_causal=True`"; SDPA flash/efficient only."""
    with pytest.raises(SimInputError, match="framework.cp_attention.*attention_mask causal"):
        job(2, mask="full")
    with pytest.raises(SimInputError, match="framework.cp_attention.*unfused"):
        job(2, {"name": "torchtitan", "attention": "unfused"})
    job(1, mask="full")                                    # no CP: no constraint
    job(2, {"name": "torchtitan", "cp_attention": "one_kernel"}, mask="full")
