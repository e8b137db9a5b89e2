"""The optimizer step as the stack's implementation runs it (issue 31): Adam(W) and the
gradient-norm clipping before it, memory-bound over this GPU's shard of the parameters,
and, for the implementations that launch kernels per parameter tensor, bound by the host.

=============  ==========================================================================
``optimizer``  what runs (bytes an element; kernel launches)
=============  ==========================================================================
``fused``      one multi-tensor kernel for the whole update (Apex / Transformer Engine
               ``FusedAdam`` of Megatron-LM, NeMo and DeepSpeed; ``torch.optim.AdamW(fused=
               True)``): fp32 master, m and v read and written, the fp32 gradient read twice
               (clipping and update), the bf16 weight written: 34 bytes, the GPU's time
``foreach``    ``torch.optim.AdamW``'s multi-tensor path (``torch/optim/adamw.py``,
               ``_multi_tensor_adamw``; the default on CUDA): one ``torch._foreach_*`` launch
               per op per group of tensors — weight decay ``mul_`` (8 bytes), ``lerp_`` of m
               (12), ``mul_`` and ``addcmul_`` of v (8 + 16), ``sqrt`` (8), ``div_`` (8),
               ``add_`` of eps (8), ``addcdiv_`` of the weight (16) — and the clipping's
               ``_foreach_norm`` (4) and ``_foreach_mul_`` (8): 96 bytes, 10 ops; a launch
               takes at most 36 tensors of 4 lists (``depth_to_max_tensors`` = 110, 64, 48,
               36, 30 by list count) and 320 blocks of 65,536 elements
               (``aten/src/ATen/native/cuda/MultiTensorApply.cuh``); host and GPU overlap,
               so the step takes the longer of the two
``forloop``    a Python loop over the parameter tensors, every op its own kernel
               (``torch.optim.AdamW(foreach=False)``, ``_single_tensor_adamw``; Composer's
               ``DecoupledAdamW.adamw``, ``composer/optim/decoupled_weight_decay.py``): the
               same 96 bytes, 11 launches a tensor (8 for the update, the step count's
               increment, the clipping's norm and ``mul_``)
=============  ==========================================================================

``optimizer_sync``: the loop reads each tensor's step count from the GPU (Composer's
``DecoupledAdamW`` keeps ``state['step']`` as a CUDA tensor and calls
``state_steps[i].item()`` before each parameter's update), so the host waits for the GPU
once per tensor: the step is Σ over tensors of (one sync + the longer of that tensor's
launches and its kernels) instead of the longer of all launches and all kernels. A host
operation costs the framework's ``cpu_op_s``; a tensor's kernels take an equal share of
the GPU time.

How many tensors a GPU updates (:func:`tensors_per_gpu`): a layer has its GEMM weights (a
fused QKV for a model with all heads as KV heads and a GeLU MLP — GPT, MPT —, separate Q, K
and V otherwise — Llama's ``wq``/``wk``/``wv``), the output projection, 2 or 3 MLP matrices
and 2 norm weights (biases are not counted); the first stage adds the embedding, the last
the final norm (and the LM head when not tied). PyTorch FSDP1 with ``use_orig_params``
(``framework.fsdp_flat_params``; Composer's default, ``composer/trainer/dist_strategy.py``:
``fsdp_config.setdefault('use_orig_params', True)``) flattens a unit's P tensors into one
parameter cut into contiguous shards: a GPU holds a piece of 1 + (P − 1)/shards of them on
average (the others are empty and have no gradient, so the loop skips them); FSDP2 shards
every parameter on its first dimension, so every GPU updates every tensor.

Example::

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 24, "hidden": 2048, "heads": 16, "seq_length": 2048,
    ...                              "vocab": 50368}, "training": {"global_batch": 64},
    ...                    "parallel": {"dp": 8, "zero": 3}, "gpu": {"preset": "H100-SXM"},
    ...                    "framework": {"name": "composer-fsdp"}}, "j.yaml")
    >>> round(tensors_per_gpu(j, 0), 1), j.framework.optimizer, j.framework.optimizer_sync
    (40.1, 'forloop', True)
    >>> fused = job_from_dict({**{"model": {"layers": 24, "hidden": 2048, "heads": 16, "seq_length": 2048,
    ...                       "vocab": 50368}, "training": {"global_batch": 64}, "parallel": {"dp": 8, "zero": 3},
    ...                       "gpu": {"preset": "H100-SXM"}}, "framework": {"name": "composer-fsdp",
    ...                       "optimizer": "fused", "optimizer_sync": False}}, "j.yaml")
    >>> step_time_s(j, 0, 1.6e8) > 2 * step_time_s(fused, 0, 1.6e8)
    True
"""
from __future__ import annotations

import math

from sim.predict.graph import OPTIMIZER_BYTES_PER_PARAM
from sim.predict.job import TrainingJob
from sim.predict.kernels import Kernel, kernel_time_s
from sim.predict.memory import stage_layers

IMPLEMENTATIONS = ("fused", "foreach", "forloop")
#: bytes moved per parameter element (module docstring)
BYTES_PER_PARAM = {"fused": OPTIMIZER_BYTES_PER_PARAM, "foreach": 96.0, "forloop": 96.0}
#: ``torch._foreach_*`` launches per group of tensors (8 update ops + 2 clipping ops)
FOREACH_OPS = 10
#: kernel launches per tensor of the for-loop (8 update ops, the step increment, 2 clipping ops)
FORLOOP_LAUNCHES = 11
#: MultiTensorApply.cuh: tensors per launch with 4 lists (params, grads, m, v)
MAX_TENSORS_PER_LAUNCH = 36
#: MultiTensorApply.cuh: 320 blocks of kChunkSize 65,536 elements per launch
MAX_ELEMENTS_PER_LAUNCH = 320 * 65536


def layer_tensors(j: TrainingJob) -> int:
    """Parameter tensors of one dense layer (module docstring)."""
    m = j.model
    fused_qkv = m.kv == m.heads and m.mlp != "swiglu"
    mats = 3 if m.mlp == "swiglu" else 2
    return (1 if fused_qkv else 3) + 1 + mats + 2


def tensors_per_gpu(j: TrainingJob, stage: int) -> float:
    """Parameter tensors one GPU of ``stage`` updates (module docstring)."""
    m, p, fw = j.model, j.parallel, j.framework
    units = [float(layer_tensors(j)) for _ in stage_layers(j, stage)]
    root = (1.0 if stage == 0 else 0.0) + (1.0 if stage == p.pp - 1 else 0.0)
    if stage == p.pp - 1 and (p.pp > 1 or not m.tied_embeddings):
        root += 1.0
    if root:
        units.append(root)
    shards = j.framework.hybrid_shard if 0 < fw.hybrid_shard < p.dp else p.dp
    if fw.data_parallel == "fsdp" and fw.fsdp_flat_params and p.zero >= 2 and shards > 1:
        return sum(min(n, 1.0 + (n - 1.0) / shards) for n in units)
    return sum(units)


def step_time_s(j: TrainingJob, stage: int, shard_params: float) -> float:
    """Seconds of the optimizer step (and gradient clipping) of one GPU of ``stage`` that
    updates ``shard_params`` elements (module docstring)."""
    fw = j.framework
    gpu_s = kernel_time_s(Kernel("optimizer.adam", "memory", bytes=shard_params * BYTES_PER_PARAM[fw.optimizer]),
                          j.gpu, j.training.precision, j.kernels)
    if fw.optimizer == "fused":
        return gpu_s
    n = max(tensors_per_gpu(j, stage), 1.0)
    c = fw.cpu_op_s
    if fw.optimizer == "foreach":
        launches = FOREACH_OPS * max(math.ceil(n / MAX_TENSORS_PER_LAUNCH),
                                     math.ceil(shard_params / MAX_ELEMENTS_PER_LAUNCH))
        return max(launches * c, gpu_s)
    host = n * FORLOOP_LAUNCHES * c
    if fw.optimizer_sync:
        return n * (c + max(FORLOOP_LAUNCHES * c, gpu_s / n))
    return max(host, gpu_s)


__all__ = ["BYTES_PER_PARAM", "IMPLEMENTATIONS", "layer_tensors", "step_time_s", "tensors_per_gpu"]
