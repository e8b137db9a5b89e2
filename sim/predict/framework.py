"""Training frameworks as the predictor runs them: each profile is the communication pattern,
the overlaps, the kernels and the fixed costs of one software stack, with defaults taken
from that stack's own code or documentation of the release (the source beside each one).
A job names its framework (the ``framework`` section; default ``megatron-core``) and may
override any field.

=====================  ====================================================================
field                  meaning
=====================  ====================================================================
``data_parallel``      ``ddp`` (gradients all-reduced), ``distributed_optimizer`` (Megatron:
                       gradients reduce-scattered and parameters all-gathered once an
                       iteration, in buckets overlapped with the last backward / next forward),
                       ``zero`` (DeepSpeed: stage from ``parallel.zero``), ``fsdp`` (PyTorch
                       FSDP / FSDP2: per unit, per micro-batch; ``parallel.zero`` 3 =
                       FULL_SHARD, 2 = SHARD_GRAD_OP)
``fsdp_reshard``       FULL_SHARD frees the gathered parameters after a unit's forward and
                       gathers them again for its backward (FSDP2's ``reshard_after_forward``)
``fsdp_prefetch``      the next unit's all-gather is issued while this one computes
                       (``forward_prefetch``/``BACKWARD_PRE``; FSDP2 always)
``hybrid_shard``       HSDP: shard inside groups of this many GPUs (a server: 8), replicate
                       across them (0: shard over all of DP)
``overlap_grad_reduce``  DP gradient reduction in buckets as the last backward produces them
``overlap_param_gather`` the distributed optimizer's parameter all-gather under the next forward
``bucket_MiB``         gradient bucket (Megatron: 40M elements; DeepSpeed 500M; DDP 25 MiB)
``grad_reduce_dtype``  ``fp32``, ``bf16`` or ``fp16`` gradients on the wire, or ``auto``: Megatron-LM's
                       rule (``megatron/training/arguments.py``): gradients are accumulated and
                       reduced in the parameters' dtype, fp16 for an fp16 job, unless
                       ``--accumulate-allreduce-grads-in-fp32``, which bf16 forces (fp32)
``tp_comm_overlap``    share of a tensor-parallel all-gather / reduce-scatter hidden behind the
                       GEMM that consumes / produces it (Transformer Engine userbuffers:
                       ``--tp-comm-overlap``; torch async TP); 0: every TP collective exposed
``tp_overlap_config``  Transformer Engine's userbuffers config, per GEMM (a name of
                       :data:`sim.predict.tp_overlap.CONFIGS` — Megatron-Bridge's
                       ``userbuffers_*`` — or a mapping of GEMM slots to ``method``,
                       ``num_sm``, ``num_splits``, ``set_sm_margin``): ring-exchange, bulk or
                       pipelined overlap of each TP collective with its GEMM
                       (:mod:`sim.predict.tp_overlap`); null: the ``tp_comm_overlap`` share
``tp_bwd_overlap``     the backward of a column-parallel linear (QKV, FC1, LM head) runs its TP
                       collectives asynchronously under its own GEMMs, as Megatron's
                       ``LinearWithGradAccumulationAndAsyncCommunication.backward`` and
                       Transformer Engine's ``Linear`` / ``LayerNormLinear`` do: the
                       sequence-parallel re-gather of the saved input under the dgrad GEMM,
                       the input gradient's reduce-scatter (all-reduce without sequence
                       parallelism) under the wgrad GEMM; each exposed only where it outlasts
                       that GEMM (:data:`sim.predict.stages.BWD_OVERLAP`). False: they wait in
                       turn (Megatron-LM before 2022-02: ``copy_to_tensor_model_parallel_region``'s
                       synchronous all-reduce; the PyTorch stacks)
``overlap_p2p_comm``   interleaved schedules: the send/receive between pipeline stages runs under
                       the next pass (Megatron-Core ``--overlap-p2p-communication``); false: each
                       pass waits for its own send/receive before the next one starts (NeMo
                       23.x launcher: ``overlap_p2p_comm: False``, ``batch_p2p_comm: True``)
``attention``          ``unfused`` (QKᵀ and AV as batched GEMMs, the s² scores through a fused
                       softmax: Megatron-LM before flash attention), ``fa2``, ``fa3``, ``cudnn``,
                       ``triton`` (the FlashAttention algorithm written in Triton: Tri Dao's
                       ``flash_attn_triton``, LLM Foundry's ``attn_impl: triton``; FA2's
                       tables × the fitted ``attention.triton`` share, which
                       :mod:`sim.predict.calibration` bounds by the FA2 paper's 1.3-2.5×),
                       or ``auto`` (cuDNN's fused attention on an H100 die, FA2 on an A100)
``elementwise_traffic``  bytes of the memory-bound kernels relative to fused ones (1.0: fused
                       norms, bias-activation, rotary and residual kernels; eager PyTorch runs
                       each primitive as its own kernel: null, the fitted ``eager_traffic``)
``cpu_op_s``           host time to launch one kernel: a pass is never shorter than its kernel
                       count × this (eager PyTorch ~10-20 µs an op; compiled or CUDA-graphed less)
``microbatch_overhead_s``  fixed cost per micro-batch (schedule bookkeeping, data, loss; null:
                       the figure fitted for the framework's family, :mod:`sim.predict.calibration`)
``iteration_overhead_s``   fixed cost per iteration (optimizer launch, grad-norm, logging, data; null:
                       fitted likewise)
``optimizer``          the optimizer step's implementation: ``fused`` (one multi-tensor kernel:
                       Apex / Transformer Engine ``FusedAdam``, ``torch.optim.AdamW(fused=True)``),
                       ``foreach`` (``torch._foreach_*`` ops, torch's default on CUDA) or
                       ``forloop`` (one kernel per op per tensor: Composer's ``DecoupledAdamW``);
                       :mod:`sim.predict.optimizer`
``optimizer_sync``     the loop reads each tensor's step count from the GPU (``.item()``, Composer's
                       ``DecoupledAdamW``): one host-device sync per tensor
``train_metrics``      training metrics the trainer updates after every micro-batch's backward,
                       each recomputing the cross entropy over the logits (Composer's
                       ``_eval_train_metrics``; LLM Foundry's MPT: ``LanguageCrossEntropy`` and
                       ``LanguagePerplexity``, ``use_train_metrics`` default true): 0 for stacks
                       that only log the loss
``fsdp_pipeline``      FSDP under pipeline parallelism: ``per_microbatch`` (each unit gathered, resharded
                       and reduce-scattered every micro-batch, as without PP) or ``per_step``
                       (``torch.distributed.pipelining`` with FSDP2, torchtitan: the units are
                       gathered once a step and kept — ``reshard_after_forward=False`` under PP,
                       torchtitan ``apply_fsdp``; ``set_reshard_after_backward(False)`` in the
                       stage's backward — and the gradients accumulate unsharded
                       (``set_requires_gradient_sync(False)``) and are reduce-scattered once,
                       after each model chunk's last backward: ``_PipelineStageBase.
                       backward_maybe_with_nosync``, ``torch/distributed/pipelining/stage.py``)
``fsdp_flat_params``   PyTorch FSDP1: a unit's parameters flattened into one ``FlatParameter``
                       cut into contiguous shards (a GPU updates the tensors its shard touches);
                       false: FSDP2 shards every parameter
``fp8_recipe``         ``delayed``, ``current``, ``tensorwise`` (per-tensor scales), ``blockwise``
                       (1×128 / 128×128 scales); see :mod:`sim.predict.graph`
``fp8_weight_cache``   FP8 weights are cast once a step, not once a micro-batch
``fp8_amax_group``     delayed scaling: the group over which Transformer Engine all-reduces
                       (max) a pass's amaxes when it updates the scales (``fp8_autocast``'s
                       ``fp8_group``): ``tp_cp`` (Megatron-Core's ``get_amax_reduction_group(
                       with_context_parallel=True)``, the TP × CP ranks at core_r0.8.0) or
                       ``world`` (no ``fp8_group``: the default process group, Composer's
                       ``get_precision_context``); :func:`sim.predict.graph.fp8_scale_update`
``selective_ac``       what ``recompute: selective`` replays: ``megatron`` (Korthikanti et al.:
                       the norms and the activation function; unfused attention's core) or
                       ``op`` (torchtitan's per-op policy: every op but ``mm``, attention,
                       reduce-scatter and ``max``, and every second ``mm``:
                       :func:`sim.predict.graph.sac_gemm_shares`)
``fp8_fc2_fused``      FP8 jobs: the MLP's activation function writes FC2's FP8 input itself
                       (Transformer Engine's ``LayerNormMLP``); false: the stack runs its own
                       activation kernel in BF16 and FC2's ``Linear`` quantizes its input as
                       a standalone cast (Megatron-Core's ``MLP``: ``linear_fc1``, then
                       Megatron's ``bias_swiglu_impl`` / ``bias_gelu_impl``, then
                       ``linear_fc2`` = ``TERowParallelLinear``, a TE ``Linear``;
                       ``megatron/core/transformer/mlp.py``)
``cp_comm``            context parallelism: ``ring`` (Megatron/TE's P2P ring, each step under
                       that step's attention) or ``allgather`` (K and V gathered before the
                       attention, exposed: the Llama 3 paper; torch's default rotate method)
``cp_attention``       context parallelism's attention kernels: ``one_kernel`` (one flash kernel
                       over the local queries and all s keys, the exchange under or before it:
                       the model of Megatron/TE and Llama 3 here) or ``per_step`` (torch's ring
                       attention, ``torch.distributed.tensor.experimental.context_parallel``:
                       one SDPA call per CP step on a block of the sequence, the partial outputs
                       merged in fp32, the K/V gradients passed round the ring in fp32;
                       :mod:`sim.predict.cp_ring`); ``cp_comm`` then picks torch's rotater
                       (``allgather``: ``_AllGatherRotater``, ``ring``: ``_AllToAllRotater``)
``repeat_kv``          grouped-query attention's K and V are copied to every query head before
                       the attention kernel (torchtitan's Llama: ``repeat_kv``, an expand and a
                       reshape, ``models/llama/model.py``; :func:`sim.predict.graph._repeat_kv`)
                       and the gradient summed back; false: the kernel reads the KV heads itself
                       (Transformer Engine's fused attention with ``num_gqa_groups``, FA2's GQA)
``moe_dispatcher``     ``alltoall`` (NCCL all-to-all: every token sent once per expert it picks),
                       ``deepep`` (DeepEP's normal kernels / Megatron's flex "hybridep": a token
                       crosses the network once per remote server it goes to, then NVLink; FP8
                       dispatch, BF16 combine) or ``deepep_ll`` (low-latency kernels: pure RDMA
                       per expert); :meth:`sim.predict.comm.CommModel.moe_dispatch`
``moe_a2a_overlap``    Megatron-Core's ``overlap_moe_expert_parallel_comm`` + ``delay_wgrad_compute``
                       (Megatron-Bridge's ``moe_a2a_overlap`` preset flag): the steady phase runs
                       one micro-batch's forward with another's backward, each one's EP
                       all-to-alls under the other's compute, one more warm-up forward
                       (:mod:`sim.predict.a2a_overlap`); false: every all-to-all on the critical path
``moe_qps_per_channel``  RDMA queue pairs per DeepEP channel (more QPs spread a channel over
                       more ECMP paths of a RoCE fabric)
``cross_entropy_fusion``  the loss over the vocab-parallel logits
                       (:data:`sim.predict.graph.CE_BYTES_PER_LOGIT`): ``none`` (Megatron's
                       ``vocab_parallel_cross_entropy`` on the logits cast to fp32: the cast and
                       five fp32 passes forward, the softmax kept; an in-place multiply and the
                       cast back backward), ``te`` (Transformer Engine's Triton
                       ``parallel_cross_entropy``, Megatron-Core's ``cross_entropy_loss_fusion``
                       with ``cross_entropy_fusion_impl: te``: three BF16 passes forward, the
                       gradient written in place, two backward), ``flash_attn`` (flash-attn's
                       Triton ``CrossEntropyLoss``: one BF16 read forward, a read and a write
                       backward), ``torch`` (``torch.nn.functional.cross_entropy`` on the logits
                       cast to fp32, eager; torch's ``loss_parallel`` under TP) or ``inductor``
                       (that loss under ``torch.compile``, as torchtitan compiles it with
                       ``training.compile`` from 2025; a job override, in no profile: on for
                       those runs it moves two fit runs past 10 %, sim/README nineteenth round)
``nccl_sm_contention``  a collective that runs beside compute on another stream holds one SM
                       per NCCL channel, so the compute it overlaps runs on the others
                       (:mod:`sim.predict.nccl_sms`; the ``nccl.sm_contention`` line of the
                       breakdown); false: the overlapped collective costs the compute nothing
``nccl_version``       the NCCL release the stack ran (``"2.18"``): how many channels a ring
                       across Hopper servers gets (32 at 2.18–2.20, 16 from 2.21 with 8 NICs)
``nccl_ctas``          the channels (CTAs) every overlapped collective holds, as
                       ``NCCL_MAX_NCHANNELS`` / ``NCCL_MIN_NCHANNELS`` pin them (null: NCCL's
                       own count for the GPU, the group's members per server and the NIC)
``fp8_param_gather``   FP8 jobs keep the model's weights in FP8 (1 byte) and all-gather them in
                       FP8 (Megatron-Core ``--fp8-param-gather``; torchao's FSDP2 float8
                       all-gather, ``enable_fsdp_float8_all_gather``: each shard cast to FP8
                       before the gather); their gradients stay BF16
``fp8_tp_gather``      FP8 jobs with sequence parallelism cast a layer's input to FP8 before the
                       tensor-parallel all-gather and gather 1 byte an element (torchao's
                       ``PrepareFloat8ModuleInput`` / ``Float8ColwiseParallel``; the output
                       gradient's all-gather likewise, ``Float8RowwiseParallel``'s backward
                       cast; Transformer Engine's LayerNormLinear gathers its FP8 output); the
                       reduce-scatters stay BF16
=====================  ====================================================================

Profiles (:data:`PROFILES`):

* ``megatron-lm`` (2021, Narayanan et al. SC21): DDP all-reduce of fp32 gradients after the
  backward, unfused attention with Megatron's fused scale-mask-softmax, fused bias-GeLU.
* ``megatron-deepspeed`` (MT-NLG, BLOOM): Megatron-LM 2021's kernels, DeepSpeed ZeRO-1 for
  the optimizer (gradients reduced once a step).
* ``megatron-core`` (0.5+, the Megatron-LM README's performance section): Transformer
  Engine layers, cuDNN/flash attention, distributed optimizer with ``--overlap-grad-reduce``
  and ``--overlap-param-gather``, ``--tp-comm-overlap``, fp32 gradient reduction.
* ``nemo`` (NeMo 24.x recipes on Megatron-Core; 23.x launcher configs: apex's
  ``distributed_fused_adam`` with overlapped grad sync, no Transformer Engine: unfused
  attention) and ``megatron-bridge`` (NeMo 25.x): Megatron-Core's pattern; FP8 delayed
  scaling (24.x) or current scaling (25.x).
* ``deepspeed``: ZeRO stage of ``parallel.zero``, ``overlap_comm``, 500M-element buckets,
  eager PyTorch kernels.
* ``pytorch-fsdp`` / ``composer-fsdp`` (MosaicML LLM Foundry 2024: FSDP1 per transformer
  block, ``limit_all_gathers``, ``BACKWARD_PRE`` prefetch, flash attention 2, mostly eager
  kernels) and ``torchtitan`` (FSDP2 per block, reshard after forward, ``torch.compile`` per
  block when the job says ``compile``, SDPA flash attention, torchao float8 tensorwise).
* ``llama3-meta`` (Llama 3 paper §3.3: 4D parallelism with FSDP that does not reshard after
  forward — parameters gathered and gradients reduced once a step — TP + SP, CP by
  all-gather, flash attention).

Example::

    >>> f = resolve_framework({"name": "torchtitan", "compile": True}, "j.yaml")
    >>> f.data_parallel, f.attention, f.family, f.traffic < PROFILES["pytorch-fsdp"].traffic
    ('fsdp', 'fa2', 'pytorch', True)
    >>> resolve_framework({"name": "jax"}, "j.yaml")
    Traceback (most recent call last):
    ...
    sim.topology.SimInputError: j.yaml: framework.name: unknown framework 'jax' (known: composer-fsdp, deepspeed, llama3-meta, megatron-bridge, megatron-core, megatron-deepspeed, megatron-lm, nemo, pytorch-fsdp, torchtitan)
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Optional

from sim.predict import calibration
from sim.predict.fields import parse_section
from sim.predict.nccl_sms import MAX_CHANNELS, parse_version
from sim.predict.tp_overlap import LayerOverlap, parse_config
from sim.topology import SimInputError

DP_MODES = ("ddp", "distributed_optimizer", "zero", "fsdp")
ATTENTION = ("auto", "unfused", "fa2", "fa3", "cudnn", "triton")
FP8_RECIPES = ("delayed", "current", "tensorwise", "rowwise", "blockwise")
#: the groups delayed scaling reduces its amaxes over (``fp8_amax_group``; comm group kinds)
FP8_AMAX_GROUPS = ("tp_cp", "world")
MOE_DISPATCHERS = ("alltoall", "deepep", "deepep_ll")
#: the optimizer step's implementations (:mod:`sim.predict.optimizer`)
OPTIMIZERS = ("fused", "foreach", "forloop")
#: how FSDP's collectives run under pipeline parallelism (``fsdp_pipeline``)
FSDP_PIPELINE = ("per_microbatch", "per_step")
CP_ATTENTION = ("one_kernel", "per_step")
#: the loss kernels (``cross_entropy_fusion``)
CE_FUSION = ("none", "te", "flash_attn", "torch", "inductor")


@dataclass(frozen=True, slots=True)
class Framework:
    """One software stack (module docstring)."""

    name: str = "megatron-core"
    version: str = ""
    data_parallel: str = "distributed_optimizer"
    fsdp_reshard: bool = True
    fsdp_prefetch: bool = True
    hybrid_shard: int = 0
    overlap_grad_reduce: bool = True
    overlap_param_gather: bool = True
    bucket_MiB: float = 160.0
    grad_reduce_dtype: str = "fp32"
    tp_comm_overlap: float = 0.0
    tp_overlap_config: Optional[LayerOverlap] = None
    tp_bwd_overlap: bool = False
    overlap_p2p_comm: bool = True
    attention: str = "auto"
    elementwise_traffic: Optional[float] = 1.0
    cpu_op_s: float = 4e-6
    microbatch_overhead_s: Optional[float] = None
    iteration_overhead_s: Optional[float] = None
    family: str = "megatron"
    fp8_recipe: str = "delayed"
    fp8_weight_cache: bool = True
    fp8_amax_group: str = "tp_cp"
    fp8_fc2_fused: bool = True
    selective_ac: str = "megatron"
    fp8_param_gather: bool = False
    fp8_tp_gather: bool = True
    cp_comm: str = "ring"
    cp_attention: str = "one_kernel"
    repeat_kv: bool = False
    moe_dispatcher: str = "alltoall"
    moe_qps_per_channel: int = 4
    moe_a2a_overlap: bool = False
    compile: bool = False
    async_tp: bool = False
    optimizer: str = "fused"
    optimizer_sync: bool = False
    fsdp_flat_params: bool = False
    fsdp_pipeline: str = "per_microbatch"
    train_metrics: int = 0
    cross_entropy_fusion: str = "none"
    nccl_sm_contention: bool = True
    nccl_version: str = "2.21"
    nccl_ctas: Optional[int] = None

    @property
    def traffic(self) -> float:
        """``elementwise_traffic``, or the fitted eager-PyTorch figure when it is left null."""
        return self.elementwise_traffic if self.elementwise_traffic is not None else calibration.current().eager_traffic

    @property
    def eager(self) -> bool:
        """Eager PyTorch (``elementwise_traffic`` left null): every primitive of a norm,
        rotary or activation is its own kernel (:data:`sim.predict.graph.EAGER_BYTES`)."""
        return self.elementwise_traffic is None

    @property
    def efficiency(self) -> float:
        """The fitted share of the sustained compute rate this stack reaches (``python -m sim
        validate --fit --free``; 1.0 when not fitted: :mod:`sim.predict.calibration`)."""
        return calibration.current().framework_efficiency_for(self.name)

    @property
    def microbatch_s(self) -> float:
        """``microbatch_overhead_s``, or the fitted figure of the framework's family."""
        v = self.microbatch_overhead_s
        return v if v is not None else calibration.current().overhead(self.family, "microbatch_s")

    @property
    def iteration_s(self) -> float:
        """``iteration_overhead_s``, or the fitted figure of the framework's family."""
        v = self.iteration_overhead_s
        return v if v is not None else calibration.current().overhead(self.family, "iteration_s")

    def attention_impl(self, chip: str) -> str:
        """The attention kernels this stack runs on a die."""
        if self.attention != "auto":
            return self.attention
        return "cudnn" if chip == "H100" else "fa2"

    @property
    def grad_wire_bytes(self) -> float:
        """Bytes per gradient element on the wire (``auto`` unresolved: fp32)."""
        return 2.0 if self.grad_reduce_dtype in ("bf16", "fp16") else 4.0


# The backward's TP collectives under their linear layer's GEMMs (tp_bwd_overlap): Megatron's
# LinearWithGradAccumulationAndAsyncCommunication.backward issues the sequence-parallel
# all-gather of the saved input with async_op=True before the dgrad GEMM and waits after it,
# then the dgrad's reduce-scatter (all-reduce without SP) with async_op=True before the wgrad
# GEMM and waits after it (megatron/mpu/layers.py at 9aad9203aa, the sequence-parallel merge
# of 2022-05-20; megatron/core/tensor_parallel/layers.py at 5f03f6dc89, 2023-07, and
# core_r0.8.0); the async all-reduce first came with 9c5a830f25 (2022-02-22). Transformer
# Engine's LayerNormLinear / Linear backward without userbuffers does the same ("Overlap input
# AG with dgrad", "Overlap dgrad-RS/AR with wgrad": pytorch/module/layernorm_linear.py at
# v1.8; gather_along_first_dim / reduce_scatter_along_first_dim with async_op=True at v2.9),
# and its bulk userbuffers overlaps (ub_bulk_dgrad, ub_bulk_wgrad) pair the same collectives
# with the same GEMMs.
# Megatron-Core's MLP (megatron/core/transformer/mlp.py) runs linear_fc1 (TE LayerNormLinear),
# then its own bias_swiglu_impl / bias_gelu_impl in BF16, then linear_fc2 (TERowParallelLinear,
# a TE Linear that quantizes its input itself): FC2's FP8 input is a standalone cast
_MCORE = Framework("megatron-core", data_parallel="distributed_optimizer", overlap_grad_reduce=True,
                   overlap_param_gather=True, bucket_MiB=160.0, grad_reduce_dtype="auto", tp_comm_overlap=0.85,
                   attention="auto", elementwise_traffic=1.0, cpu_op_s=4e-6, fp8_recipe="delayed",
                   fp8_fc2_fused=False, tp_bwd_overlap=True)
# the PyTorch stacks keep the earlier rounds' assumption: FC2's FP8 input written by the
# activation (LLM Foundry's FP8 runs use TE's LayerNormMLP; torchtitan's FP8 runs are compiled,
# and inductor fuses torchao's cast into the preceding element-wise kernel)
_EAGER = dict(elementwise_traffic=None, cpu_op_s=15e-6, family="pytorch", fp8_fc2_fused=True)

#: the profiles (module docstring); a job's ``framework`` fields override them
PROFILES: dict[str, Framework] = {f.name: f for f in (
    replace(_MCORE, name="megatron-lm", data_parallel="ddp", overlap_grad_reduce=False, overlap_param_gather=False,
            tp_comm_overlap=0.0, attention="unfused", bucket_MiB=25.0),
    # DeepSpeed's pipeline engine steps through its schedule instruction by instruction in
    # Python: its fixed costs are those of the PyTorch family; the Megatron-LM it forked in
    # 2021 predates the async backward collectives (tp_bwd_overlap; the fork not read)
    replace(_MCORE, name="megatron-deepspeed", data_parallel="zero", overlap_grad_reduce=False,
            overlap_param_gather=False, tp_comm_overlap=0.0, attention="unfused", bucket_MiB=500.0 * 2,
            family="pytorch", tp_bwd_overlap=False),
    _MCORE,
    # NeMo's performance scripts (scripts/performance/helpers.py, set_precision_configs):
    # grad_reduce_in_fp32 = False, and the FP8 mixed-precision recipes set fp8_param_gather
    replace(_MCORE, name="nemo", grad_reduce_dtype="bf16", fp8_param_gather=True),
    # Megatron-Bridge's pretraining: GPTModelProvider's cross_entropy_loss_fusion = True (only
    # the PEFT recipes turn it off) and the performance scripts' cross_entropy_fusion_impl =
    # "te" (scripts/performance/utils/helpers.py at v0.2.0, utils/overrides.py at v0.3.0 and
    # v0.4.1; the Llama providers default to "te" too): Megatron-Core (0d8e0714cd,
    # LanguageModule.compute_language_model_loss) then calls te_parallel_cross_entropy
    replace(_MCORE, name="megatron-bridge", fp8_recipe="current", grad_reduce_dtype="bf16", fp8_param_gather=True,
            moe_dispatcher="deepep", cross_entropy_fusion="te"),
    replace(_MCORE, name="deepspeed", data_parallel="zero", overlap_param_gather=True, tp_comm_overlap=0.0, tp_bwd_overlap=False,
            attention="fa2", fp8_tp_gather=False, bucket_MiB=500.0 * 2, grad_reduce_dtype="bf16", **_EAGER),
    # FSDP1 (torch.distributed.fsdp.FullyShardedDataParallel: FlatParameter per unit) with
    # torch.optim.AdamW's default multi-tensor path (torch/optim/adamw.py: foreach on CUDA)
    replace(_MCORE, name="pytorch-fsdp", data_parallel="fsdp", tp_comm_overlap=0.0, tp_bwd_overlap=False, attention="fa2",
            fp8_tp_gather=False, grad_reduce_dtype="fp32", fp8_recipe="tensorwise", fp8_weight_cache=False, optimizer="foreach",
            fsdp_flat_params=True, **_EAGER),
    # LLM Foundry's MPT yamls: optimizer decoupled_adamw = Composer's DecoupledAdamW, a Python
    # loop over the parameters that reads each one's CUDA step count with .item()
    # (composer/optim/decoupled_weight_decay.py); FSDP1 with use_orig_params=True
    # (composer/trainer/dist_strategy.py); Composer's trainer updates the model's training
    # metrics after every micro-batch's backward (trainer.py, _eval_train_metrics), and MPT's
    # are LanguageCrossEntropy and LanguagePerplexity (llmfoundry/models/mpt/modeling_mpt.py,
    # use_train_metrics default True), each a CrossEntropyLoss over the logits
    # (composer/metrics/nlp.py). The loss: MPT's loss_fn defaults to "fused_crossentropy",
    # flash-attn's CrossEntropyLoss (llmfoundry/models/mpt/modeling_mpt.py from 2023-05 on; the
    # benchmark's `pip install .[gpu-flash2]` is flash-attn 2.4.2 at 5e85bd62d, #838), a Triton
    # kernel on the BF16 logits (cross_entropy_fusion: flash_attn). FP8 (amp_fp8): Composer's
    # get_precision_context enters te.fp8_autocast with a DelayedScaling recipe and no
    # fp8_group (composer/core/precision.py), so TE reduces the amaxes over the default
    # (world) process group (fp8_amax_group: world). NCCL: the benchmarks' image
    # mosaicml/pytorch:2.1.0_cu121 (#543's sweep.sh) runs torch 2.1.0, whose CUDA 12.1 wheel
    # pins nvidia-nccl-cu12 2.18.1 (nccl_version: its Hopper channel rule, sim.predict.nccl_sms)
    replace(_MCORE, name="composer-fsdp", data_parallel="fsdp", tp_comm_overlap=0.0, tp_bwd_overlap=False, attention="fa2",
            fp8_tp_gather=False, grad_reduce_dtype="fp32", fp8_recipe="delayed", fp8_weight_cache=False, optimizer="forloop",
            fp8_amax_group="world", optimizer_sync=True, fsdp_flat_params=True, train_metrics=2, cross_entropy_fusion="flash_attn",
            nccl_version="2.18", **_EAGER),
    # torchtitan: FSDP2 under torch.distributed.pipelining gathers once a step and reduces
    # after the last backward (fsdp_pipeline: per_step; apply_fsdp at 9dec370, 2024-12:
    # "For PP, do not reshard after forward to avoid per-microbatch all-gathers");
    # torch.optim.AdamW with optimizer.implementation = "fused", the default since
    # #881 (2025-02-24); before it `--optimizer.fused` defaulted to False and foreach ran
    # (torchtitan/optimizer.py at 9dec370: "fused": fused, "foreach": not fused);
    # context parallelism by torch's ring attention (cp_attention: per_step) with the
    # all-gather rotater (9dec370 config_manager.py: --experimental.context_parallel_rotate_method
    # default "allgather"; utils.create_context_parallel_ctx calls set_rotate_method);
    # attention: torch's flash backend (FA2): cuDNN's is the last choice from torch #138522
    # (2024-10-22) on, and the 2024-12 benchmarks ran torch 1963fc8 (2024-12-23); under CP
    # utils.get_train_context allows only FLASH_ATTENTION and EFFICIENT_ATTENTION.
    # repeat_kv stays off although torchtitan's Llama copies K and V to every head
    # (models/llama/model.py): on, the fit split loses two rows (sim/README, thirteenth round);
    # TP through DTensor: each collective runs when autograd reaches its redistribution, none
    # under a linear layer's GEMMs (tp_bwd_overlap off); the loss: F.cross_entropy on
    # pred.float(), eager (train.py at 9dec370), under TP in torch's loss_parallel
    # (disable_loss_parallel defaults to False); components/loss.py at e7c0cae and 820504e
    # (the 2025-06 runs) compiles it with training.compile: cross_entropy_fusion "inductor",
    # left a job override like repeat_kv (on, the fit split loses two rows: sim/README,
    # nineteenth round)
    replace(_MCORE, name="torchtitan", data_parallel="fsdp", tp_comm_overlap=0.0, tp_bwd_overlap=False, attention="fa2",
            grad_reduce_dtype="fp32", fp8_recipe="tensorwise", fp8_weight_cache=False, cp_comm="allgather",
            cp_attention="per_step", selective_ac="op", optimizer="fused", fsdp_pipeline="per_step",
            cross_entropy_fusion="torch", **_EAGER),
    # Meta's Llama 3 stack is not published: no backward overlap is assumed (tp_bwd_overlap)
    replace(_MCORE, name="llama3-meta", data_parallel="distributed_optimizer", tp_comm_overlap=0.5, tp_bwd_overlap=False,
            attention="fa2", cp_comm="allgather"),
)}

#: what ``compile: true`` changes (torch.compile fuses the element-wise chains and cuts launches)
COMPILED = dict(elementwise_traffic=1.0, cpu_op_s=5e-6)
#: what ``async_tp: true`` changes (torch's async TP: the all-gather/reduce-scatter decomposed
#: and overlapped with the GEMM, micro-pipelined)
ASYNC_TP = dict(tp_comm_overlap=0.7)


@dataclass(slots=True)
class FrameworkSection:
    """The job's ``framework`` section: a profile name, its version, and overrides."""

    name: str = "megatron-core"
    version: str = ""
    data_parallel: Optional[str] = None
    fsdp_reshard: Optional[bool] = None
    fsdp_prefetch: Optional[bool] = None
    hybrid_shard: Optional[int] = None
    overlap_grad_reduce: Optional[bool] = None
    overlap_param_gather: Optional[bool] = None
    bucket_MiB: Optional[float] = None
    grad_reduce_dtype: Optional[str] = None
    tp_comm_overlap: Optional[float] = None
    #: a config name or a mapping: read by :func:`sim.predict.tp_overlap.parse_config`, listed here for the known fields
    tp_overlap_config: Optional[str] = None
    tp_bwd_overlap: Optional[bool] = None
    overlap_p2p_comm: Optional[bool] = None
    attention: Optional[str] = None
    elementwise_traffic: Optional[float] = None
    cpu_op_s: Optional[float] = None
    microbatch_overhead_s: Optional[float] = None
    iteration_overhead_s: Optional[float] = None
    fp8_recipe: Optional[str] = None
    fp8_weight_cache: Optional[bool] = None
    fp8_amax_group: Optional[str] = None
    fp8_fc2_fused: Optional[bool] = None
    selective_ac: Optional[str] = None
    fp8_param_gather: Optional[bool] = None
    fp8_tp_gather: Optional[bool] = None
    cp_comm: Optional[str] = None
    cp_attention: Optional[str] = None
    repeat_kv: Optional[bool] = None
    moe_dispatcher: Optional[str] = None
    moe_qps_per_channel: Optional[int] = None
    moe_a2a_overlap: Optional[bool] = None
    compile: Optional[bool] = None
    async_tp: Optional[bool] = None
    optimizer: Optional[str] = None
    optimizer_sync: Optional[bool] = None
    fsdp_flat_params: Optional[bool] = None
    fsdp_pipeline: Optional[str] = None
    train_metrics: Optional[int] = None
    cross_entropy_fusion: Optional[str] = None
    nccl_sm_contention: Optional[bool] = None
    nccl_version: Optional[str] = None
    nccl_ctas: Optional[int] = None


def _one_of(v: Any, known: tuple[str, ...], source: str, where: str) -> None:
    if v not in known:
        raise SimInputError(f"{source}: framework.{where}: unknown value {v!r} (known: {', '.join(known)})")


def resolve_framework(data: Any, source: str) -> Framework:
    """The profile named by ``data`` (the parsed ``framework`` section, or None) with its
    overrides; ``SimInputError`` names the field and the reason (module docstring)."""
    ub: Optional[LayerOverlap] = None
    if isinstance(data, dict) and data.get("tp_overlap_config") is not None:
        ub = parse_config(data["tp_overlap_config"], source)
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k != "tp_overlap_config"}
    sec = parse_section(data, "framework", FrameworkSection, source)
    if sec.name not in PROFILES:
        raise SimInputError(f"{source}: framework.name: unknown framework {sec.name!r} "
                            f"(known: {', '.join(sorted(PROFILES))})")
    base = PROFILES[sec.name]
    if sec.compile:
        base = replace(base, **COMPILED)
    if sec.async_tp:
        base = replace(base, **ASYNC_TP)
    over = {f.name: getattr(sec, f.name) for f in fields(sec) if getattr(sec, f.name) is not None}
    f = replace(base, **over)
    if ub is not None:
        f = replace(f, tp_overlap_config=ub)
    _one_of(f.data_parallel, DP_MODES, source, "data_parallel")
    _one_of(f.attention, ATTENTION, source, "attention")
    _one_of(f.grad_reduce_dtype, ("fp32", "bf16", "fp16", "auto"), source, "grad_reduce_dtype")
    _one_of(f.fp8_recipe, FP8_RECIPES, source, "fp8_recipe")
    _one_of(f.fp8_amax_group, FP8_AMAX_GROUPS, source, "fp8_amax_group")
    _one_of(f.cp_comm, ("ring", "allgather"), source, "cp_comm")
    _one_of(f.cp_attention, CP_ATTENTION, source, "cp_attention")
    _one_of(f.selective_ac, ("megatron", "op"), source, "selective_ac")
    _one_of(f.moe_dispatcher, MOE_DISPATCHERS, source, "moe_dispatcher")
    _one_of(f.optimizer, OPTIMIZERS, source, "optimizer")
    _one_of(f.fsdp_pipeline, FSDP_PIPELINE, source, "fsdp_pipeline")
    _one_of(f.cross_entropy_fusion, CE_FUSION, source, "cross_entropy_fusion")
    parse_version(f.nccl_version, source)
    if f.nccl_ctas is not None and not 0 <= f.nccl_ctas <= MAX_CHANNELS:
        raise SimInputError(f"{source}: framework.nccl_ctas: NCCL's channels, 0 to {MAX_CHANNELS}, got {f.nccl_ctas}")
    if f.train_metrics < 0:
        raise SimInputError(f"{source}: framework.train_metrics: must be >= 0, got {f.train_metrics}")
    if f.moe_qps_per_channel < 1:
        raise SimInputError(f"{source}: framework.moe_qps_per_channel: at least 1, got {f.moe_qps_per_channel}")
    if not 0.0 <= f.tp_comm_overlap <= 1.0:
        raise SimInputError(f"{source}: framework.tp_comm_overlap: a share in [0, 1], got {f.tp_comm_overlap}")
    if f.elementwise_traffic is not None and f.elementwise_traffic < 1.0:
        raise SimInputError(f"{source}: framework.elementwise_traffic: at least 1 (fused), got {f.elementwise_traffic}")
    for k in ("cpu_op_s", "microbatch_overhead_s", "iteration_overhead_s", "bucket_MiB"):
        if getattr(f, k) is not None and getattr(f, k) < 0:
            raise SimInputError(f"{source}: framework.{k}: must be >= 0, got {getattr(f, k)}")
    if f.hybrid_shard < 0:
        raise SimInputError(f"{source}: framework.hybrid_shard: must be >= 0, got {f.hybrid_shard}")
    return f


__all__ = ["ATTENTION", "CP_ATTENTION", "DP_MODES", "FP8_AMAX_GROUPS", "FP8_RECIPES", "FSDP_PIPELINE", "OPTIMIZERS", "Framework", "FrameworkSection", "PROFILES", "resolve_framework"]
