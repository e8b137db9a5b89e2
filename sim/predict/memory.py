"""Parameters and memory per GPU: weights, gradients and optimizer states per ZeRO stage,
activations per recomputation mode and pipeline schedule, the LM head's logits.

* **Parameters** of a pipeline stage per GPU: attention ``(h·(a+2g)·d + a·d·h)/t``, MLP
  ``h·f·(2 or 3)/t`` (+ biases for GPT-style models), norms (replicated), MoE router and
  the ``E/ep`` local experts ``/t``, the embedding ``V·h/t`` on the first stage and the LM
  head ``V·h/t`` (a copy when tied) with the final norm on the last. FP8 jobs save the
  inputs of their GEMMs in FP8 (1 byte: Transformer Engine keeps the quantized copy for the
  weight gradient).
* **Bytes per parameter**: weights 2 (bf16/fp16; 1 for FP8 jobs of a framework with
  ``fp8_param_gather``), main gradients ``training.grad_bytes`` (default the framework's
  gradient dtype: fp32 4, bf16 2; sharded over DP × CP, the group that reduces them),
  PyTorch FSDP keeps its sharded parameters in fp32 (4, the master copy) and Adam's 8; optimizer ``training.optimizer_bytes`` (12: fp32
  master, Adam m and v). ZeRO 1 shards the optimizer states over DP, 2 also the
  gradients, 3 also the weights (expert parameters over the expert-DP group dp/ep).
  FSDP once a step under pipeline parallelism (:func:`fsdp_per_step`) also holds the stage's
  gathered bf16 parameters (2) and its unsharded fp32 gradient accumulator (4) for the
  whole step.
* **Activations per layer and micro-batch** (Korthikanti et al., "Reducing Activation
  Recomputation in Large Transformer Models", 2022, with flash attention: no s² scores):
  ``none`` stores the inputs of every kernel with a backward — for GPT with t-way TP and
  no SP ``s·b·h·(10 + 24/t)`` bytes, with SP ``s·b·h·34/t``; ``selective`` drops the
  norms' outputs and the activation's output (recomputed); ``full`` keeps the layer input
  (``2·s·b·h``, / t with SP).
* **Context parallelism as torch runs it** (``framework.cp_attention: per_step``): the K and V
  the ring attention exchanges and its fp32 accumulators, held while a layer's attention
  runs (:func:`sim.predict.cp_ring.buffer_bytes`; all c ranks' K and V with torch's
  all-gather rotater: 6.5 GiB a GPU for Llama 3 8B at 262,144 tokens on CP 8).
* **Logits** of the last stage: bf16 logits and their fp32 softmax for the loss (6 bytes a
  token and vocabulary entry, / t: ``framework.cross_entropy_fusion`` ``none``, ``torch``);
  with a fused loss (``te``, ``flash_attn``, ``inductor``) the bf16 logits alone (2 bytes).
* **In flight**: a 1F1B stage s holds ``min(p − s, m)`` micro-batches; interleaved holds
  ``min(2(p − s − 1) + (v − 1)·p + 1, m·v)`` chunks of ``L/(p·v)`` layers (Megatron's
  warm-up); the first stage is the fullest.

Example::

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 96, "hidden": 12288, "heads": 96, "seq_length": 2048,
    ...                              "vocab": 51200}, "parallel": {"tp": 8, "pp": 16, "dp": 8},
    ...                    "training": {"global_batch": 1536, "recompute": "full"},
    ...                    "gpu": {"preset": "A100-80GB"}}, "j.yaml")
    >>> round(sum(stage_params(j, s).total for s in range(16)) * 8 / 1e9, 1)   # GPT-3: 174.6B + tied copy
    175.3
    >>> m = stage_memory(j, 0)
    >>> round(m.total_GiB, 1), round(m.activations / 2**30, 2)
    (30.6, 4.5)
"""
from __future__ import annotations

from dataclasses import dataclass

from sim.predict import cp_ring
from sim.predict.job import TrainingJob
from sim.predict.schedule import peak_in_flight

GiB = float(2**30)


@dataclass(frozen=True, slots=True)
class StageParams:
    """Parameters of one GPU of a pipeline stage: dense (reduced over DP) and expert
    (reduced over dp/ep)."""

    dense: float
    expert: float

    @property
    def total(self) -> float:
        """dense + expert."""
        return self.dense + self.expert


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Bytes per GPU of one stage."""

    weights: float
    grads: float
    optimizer: float
    activations: float
    logits: float
    reserved: float
    cp_buffers: float = 0.0

    @property
    def total(self) -> float:
        """Every term, bytes."""
        return (self.weights + self.grads + self.optimizer + self.activations + self.logits + self.reserved
                + self.cp_buffers)

    @property
    def total_GiB(self) -> float:
        """Every term, GiB."""
        return self.total / GiB


def virtual_stage_layers(j: TrainingJob) -> list[int]:
    """Layers of each virtual stage ``c·p + s`` (in model order): even when ``pp × v``
    divides the layers; else the first and last virtual stages give up one layer each for
    the embedding and the loss when that makes it divide (Megatron-Core's
    ``account_for_embedding_in_pipeline_split`` / ``..._loss_...``; the Llama 3 paper's 126
    layers on 16 stages: 7, 8 × 14, 7); ``parallel.first_stage_layers`` /
    ``last_stage_layers`` set them (Megatron's ``--decoder-first/last-pipeline-num-layers``);
    any remainder goes to the middle stages, one each.

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 126, "hidden": 1024, "heads": 8, "seq_length": 128,
    ...                              "vocab": 1024}, "parallel": {"pp": 16},
    ...                    "training": {"global_batch": 16}, "gpu": {"preset": "H100-SXM"}}, "j.yaml")
    >>> vs = virtual_stage_layers(j)
    >>> vs[0], vs[1], vs[-1], sum(vs)
    (7, 8, 7, 126)
    """
    p, v, L = j.parallel.pp, j.chunks, j.model.layers
    n = p * v
    first, last = j.parallel.first_stage_layers, j.parallel.last_stage_layers
    if first is None and last is None:
        if L % n == 0:
            return [L // n] * n
        if (L + 2) % n == 0 and n > 1:
            first = last = (L + 2) // n - 1
    out = [0] * n
    if first is not None:
        out[0] = first
    if last is not None and n > 1:
        out[-1] = last
    fixed = [i for i in range(n) if (i == 0 and first is not None) or (i == n - 1 and last is not None and n > 1)]
    free = [i for i in range(n) if i not in fixed]
    rest = L - sum(out)
    for k, i in enumerate(free):
        out[i] = rest // len(free) + (1 if k < rest % len(free) else 0)
    return out


def chunk_layers(j: TrainingJob, stage: int) -> list[int]:
    """Layers of each model chunk GPU ``stage`` runs (chunk c is virtual stage ``c·p + stage``)."""
    vs = virtual_stage_layers(j)
    return [vs[c * j.parallel.pp + stage] for c in range(j.chunks)]


def stage_layers(j: TrainingJob, stage: int) -> list[int]:
    """The layer indices GPU ``stage`` runs (every chunk: chunk c holds the layers of virtual
    stage ``c·p + stage``)."""
    vs = virtual_stage_layers(j)
    starts = [sum(vs[:i]) for i in range(len(vs))]
    out = []
    for c in range(j.chunks):
        i = c * j.parallel.pp + stage
        out += list(range(starts[i], starts[i] + vs[i]))
    return out


def layer_params(j: TrainingJob, layer: int) -> StageParams:
    """One layer's parameters on one GPU."""
    m, t = j.model, j.parallel.tp
    d = m.d_head
    gpt = m.norm == "layernorm"
    attn = (m.hidden * (m.heads + 2 * m.kv) * d + m.heads * d * m.hidden) / t
    attn += ((m.heads + 2 * m.kv) * d / t + m.hidden) if gpt else 0.0
    norms = (4 if gpt else 2) * m.hidden
    mats = 3 if m.mlp == "swiglu" else 2
    if m.is_moe_layer(layer):
        experts = m.experts // j.parallel.ep * m.hidden * m.moe_ffn * mats / j.expert_tp
        return StageParams(attn + norms + m.hidden * m.experts, experts)
    mlp = m.hidden * m.ffn * mats / t + ((m.ffn / t + m.hidden) if gpt else 0.0)
    return StageParams(attn + norms + mlp, 0.0)


def stage_params(j: TrainingJob, stage: int) -> StageParams:
    """Parameters on one GPU of pipeline stage ``stage``."""
    m, t, p = j.model, j.parallel.tp, j.parallel.pp
    dense = expert = 0.0
    for layer in stage_layers(j, stage):
        lp = layer_params(j, layer)
        dense += lp.dense
        expert += lp.expert
    emb = m.vocab * m.hidden / t
    if stage == 0:
        dense += emb
    if stage == p - 1:
        dense += (2 if m.norm == "layernorm" else 1) * m.hidden
        if p > 1 or not m.tied_embeddings:
            dense += emb
    return StageParams(dense, expert)


def activation_bytes_per_layer(j: TrainingJob, moe: bool) -> float:
    """Stored activations of one layer and micro-batch (module docstring)."""
    m, p = j.model, j.parallel
    t = p.tp
    T = j.training.micro_batch * m.seq_length // p.cp
    sp = p.sequence_parallel and t > 1
    Tn = T // t if sp else T
    h, e = m.hidden, 2.0
    if j.training.recompute == "full":
        return e * Tn * h
    qkv = (m.heads + 2 * m.kv) * m.d_head // t
    a_t = m.heads // t
    width = (m.moe_ffn if moe else m.ffn) // t
    k = m.top_k if moe else 1
    n1 = 2 * width if m.mlp == "swiglu" else width
    mask = Tn * h * (2 if m.dropout else 0)
    g = 1.0 if j.training.precision == "fp8" else e      # GEMM inputs saved in FP8 (Transformer Engine)
    norm_out = 2 * g * Tn * h
    act_out = g * T * k * width
    total = (e * Tn * h + norm_out / 2 + e * T * qkv + g * T * a_t * m.d_head + 4.0 * T * a_t
             + mask + e * Tn * h + norm_out / 2 + e * T * k * h * (1 if moe else 0)
             + e * T * k * n1 + act_out)
    if moe:
        total += 4.0 * Tn * m.experts
    if j.training.recompute == "selective":
        total -= norm_out + act_out
    elif j.framework.attention_impl(j.gpu.chip) == "unfused":    # Korthikanti et al.: 5·a·s²·b of scores
        total += (5.0 if m.dropout else 2.0) * a_t * T * m.seq_length
    return float(total)


def in_flight(j: TrainingJob, stage: int) -> float:
    """Micro-batches (in layer-chunk units, fractional for interleaved) whose activations
    GPU ``stage`` holds at its peak."""
    p, v, m = j.parallel.pp, j.chunks, j.microbatches
    if j.orders is not None:                      # a user-defined schedule: its own peak
        return peak_in_flight(j.orders[stage]) / v
    if v == 1:                                    # 1F1B and ZB-H1
        return float(min(p - stage, m))
    chunks = min(2 * (p - stage - 1) + (v - 1) * p + 1, m * v)
    return chunks / v


def fsdp_per_step(j: TrainingJob) -> bool:
    """FSDP under pipeline parallelism that gathers each unit once a step and reduces after
    the last backward (``framework.fsdp_pipeline: per_step``, torchtitan): the stage's
    parameters stay gathered and its gradients accumulate unsharded between micro-batches.

    >>> from sim.predict.job import job_from_dict
    >>> spec = {"model": {"layers": 4, "hidden": 1024, "heads": 16, "seq_length": 1024, "vocab": 32000},
    ...         "training": {"global_batch": 32}, "parallel": {"pp": 2, "dp": 4, "zero": 3},
    ...         "gpu": {"preset": "H100-SXM"}, "framework": {"name": "torchtitan"}}
    >>> fsdp_per_step(job_from_dict(spec, "j.yaml"))
    True
    >>> spec["framework"]["name"] = "pytorch-fsdp"        # FSDP1 re-gathers every micro-batch
    >>> fsdp_per_step(job_from_dict(spec, "j.yaml"))
    False
    """
    fw, par = j.framework, j.parallel
    return (fw.data_parallel == "fsdp" and par.zero >= 2 and par.dp > 1 and par.pp > 1
            and fw.fsdp_pipeline == "per_step")


def stage_memory(j: TrainingJob, stage: int) -> MemoryBreakdown:
    """Memory per GPU of pipeline stage ``stage`` (module docstring)."""
    par, tr, m = j.parallel, j.training, j.model
    sp = stage_params(j, stage)
    dp, edp = par.dp * par.cp, j.expert_dp * par.cp                   # sharded over DP x CP
    fsdp = j.framework.data_parallel == "fsdp" and par.zero >= 2
    # per step (torchtitan under PP): the stage's bf16 parameters stay gathered from the first
    # forward to the last backward (apply_fsdp: reshard_after_forward=False under PP), and its
    # gradients accumulate unsharded in fp32 until the reduce-scatter after the last backward
    held_params, held_grads = (2.0 * sp.total, 4.0 * sp.total) if fsdp_per_step(j) else (0.0, 0.0)
    # FSDP's sharded parameters are the fp32 master (4 bytes), Adam's m and v 8 more; the
    # bf16 copy exists only for the unit being computed
    w_bytes, o_bytes = (4.0, 8.0) if fsdp else (j.weight_bytes, float(tr.optimizer_bytes))

    def shard(nbytes: float, from_stage: int) -> float:
        if par.zero >= from_stage:
            return nbytes * (sp.dense / dp + sp.expert / edp)
        return nbytes * sp.total

    layers = stage_layers(j, stage)
    per_mb = sum(activation_bytes_per_layer(j, m.is_moe_layer(x)) for x in layers)
    T = tr.micro_batch * m.seq_length // par.cp
    per_logit = 2.0 + 4.0 if j.framework.cross_entropy_fusion in ("none", "torch") else 2.0
    logits = per_logit * T * m.vocab / par.tp if stage == par.pp - 1 else 0.0
    return MemoryBreakdown(shard(w_bytes, 3 if not fsdp else 2) + held_params,
                           held_grads or shard(j.grad_bytes, 2), shard(o_bytes, 1),
                           per_mb * in_flight(j, stage), logits, tr.reserved_GiB * GiB, cp_ring.buffer_bytes(j))


__all__ = ["MemoryBreakdown", "StageParams", "activation_bytes_per_layer", "fsdp_per_step", "in_flight", "layer_params",
           "stage_layers", "stage_memory", "stage_params"]
