"""Per-stage costs of one micro-batch: every kernel of every layer a pipeline stage runs
(forward, recomputation, backward; the embedding on the first stage, the LM head on the
last), each timed (compute: :func:`sim.predict.kernels.kernel_time_s`; collectives:
:class:`sim.predict.comm.CommModel`), summed into the forward and backward pass times
the pipeline schedule runs, as the job's framework (:mod:`sim.predict.framework`) runs them:

* a collective on the critical path (TP without overlap, EP) adds its whole time; one
  ``hidden_by`` a kernel (CP's KV exchange under the attention) adds only what exceeds that
  kernel; with ``tp_comm_overlap`` η, a TP all-gather / reduce-scatter hides up to η of the
  GEMM that consumes / produces it (Transformer Engine's userbuffers, torch's async TP);
  with ``tp_overlap_config`` (a userbuffers config) each TP collective of a dense layer is
  timed with its GEMM as TE's method for that GEMM runs them (:func:`tp_overlap_exposed_s`,
  :mod:`sim.predict.tp_overlap`), the share staying for collectives the config does not name;
  with ``tp_bwd_overlap`` (Megatron, Transformer Engine) the backward of a column-parallel
  linear runs its re-gather under its dgrad GEMM and its input gradient's reduce-scatter /
  all-reduce under its wgrad GEMM (:data:`BWD_OVERLAP`), each exposed only where it outlasts
  that GEMM;
* memory-bound kernels move ``elementwise_traffic`` × their fused bytes; an eager PyTorch
  stack (``elementwise_traffic`` null) moves, besides the fitted ``eager_traffic``, what
  each block's primitives move one kernel at a time (:data:`sim.predict.graph.EAGER_BYTES`:
  RMSNorm 9×, complex rotary 5×, SwiGLU 10/6 of the fused bytes);
* a layer's pass is never shorter than its kernels' host launch time (``cpu_op_s`` each):
  small layers of eager stacks are bound by the CPU (``host.launch`` op);
* sharded data parallelism per unit (a transformer layer), per micro-batch: FSDP /
  ZeRO-3 all-gather a layer's parameters before its forward (and, resharded, again before
  its backward) and reduce-scatter its gradients after, FSDP/ZeRO-2 (SHARD_GRAD_OP) gather
  once in the forward, DeepSpeed ZeRO-2 only reduces; with prefetch the next unit's
  collectives run under this unit's compute (a pass costs Σ max(compute, comm) plus the
  first gather), without it they add up; the collectives go over the DP group, or the
  shard group of ``hybrid_shard`` GPUs (HSDP);
* FSDP under pipeline parallelism with ``framework.fsdp_pipeline: per_step``
  (``torch.distributed.pipelining``: torchtitan): no collective inside the passes; the
  stage's units are gathered once a step and its gradients reduce-scattered after each
  chunk's last backward (:func:`sim.predict.predict` adds both to the stage's tail);
* PyTorch FSDP's own copies around a unit's collectives, per micro-batch
  (:func:`fsdp_copies`): FSDP2 (``fully_shard``) all-gathers into one flat buffer and copies
  it out into the unit's parameters on the compute stream
  (``torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py``,
  ``foreach_all_gather_copy_out``: ``current_stream().wait_event`` then
  ``split_with_sizes_copy``: the unit's gathered bytes read and written, after every
  all-gather), and copies the unit's gradients into the reduce-scatter buffer in the reduce
  dtype (``foreach_reduce``: ``torch._chunk_cat``, bf16 read, reduce dtype written) before its
  reduce-scatter; FSDP1's flat parameter is gathered in place and reduced from its flat
  gradient, but its post-backward hook casts the gradient to the reduce dtype when that
  differs (``flat_param.grad.to(handle._reduce_dtype)``) and divides it by the
  pre-divide factor before the reduce-scatter (``_div_if_needed`` / the default
  ``reduce_scatter_hook``; factor > 1 for 2+ ranks), on its post-backward stream, ahead of
  that unit's reduce-scatter (``torch/distributed/fsdp/_runtime_utils.py``);
* the trainer's training metrics (``framework.train_metrics``,
  :func:`sim.predict.graph.train_metrics`) follow the last stage's backward;
* ``microbatch_overhead_s`` is added to every forward pass.
* an NCCL collective that runs beside compute (FSDP's prefetched collectives, the backward's
  TP collectives under their GEMMs) holds one SM per channel: the compute it overlaps loses
  :func:`sim.predict.nccl_sms.contention_s` (an op named :data:`CONTENTION`), and the
  collective hides that much more (``framework.nccl_sm_contention``; :func:`overlap_ctas`).

Example::

    >>> from sim.predict.job import job_from_dict
    >>> from sim.predict.kernels import Kernel
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 1024,
    ...                              "vocab": 32000}, "training": {"global_batch": 4},
    ...                    "gpu": {"preset": "H800"}}, "j.yaml")
    >>> pass_ops(j, [Kernel("x", "memory", bytes=2.345e9)], None)[0].seconds > 1e-3
    True
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from sim.predict import graph
from sim.predict.comm import CommModel
from sim.predict.job import TrainingJob
from sim.predict.kernels import Kernel, kernel_time_s
from sim.predict.memory import chunk_layers, fsdp_per_step, layer_params, stage_layers
from sim.predict.nccl_sms import collective_ctas, contention_s, parse_version
from sim.predict.tp_overlap import COLLECTIVE_SLOT, bulk_s, margin, pipeline_s, ring_exchange_s


#: the name of the time compute loses to the SMs an overlapped collective holds
#: (:mod:`sim.predict.nccl_sms`): one line of the breakdown by operator
CONTENTION = "nccl.sm_contention"


def overlap_ctas(j: TrainingJob, comm: Optional[CommModel], kind: str, collective: str, size_bytes: float) -> int:
    """SMs (NCCL CTAs) the job's ``collective`` of ``size_bytes`` per rank over its ``kind``
    groups holds while it overlaps compute; 0 with ``framework.nccl_sm_contention`` off
    (:func:`sim.predict.nccl_sms.collective_ctas`)."""
    fw = j.framework
    if comm is None or not fw.nccl_sm_contention or size_bytes <= 0:
        return 0
    ct = comm.collective(kind, collective, size_bytes)
    return collective_ctas(j.gpu.chip, ct.medium, ct.note, comm.local_members(kind), comm.nic_Bps, size_bytes,
                           parse_version(fw.nccl_version, j.source), fw.nccl_ctas)


def contention_op(name: str, seconds: float) -> list[TimedOp]:
    """The compute time lost to an overlapped collective's SMs, as an op (none when 0)."""
    return [TimedOp(name, "compute", "contention", seconds, seconds, 0.0)] if seconds > 0 else []


def stream_of(k: Kernel) -> str:
    """``compute`` for kernels, else the group's stream (``tp`` | ``ep`` | ``cp`` | ``dp``)."""
    return "compute" if k.kind != "comm" else k.group


@dataclass(frozen=True, slots=True)
class TimedOp:
    """A kernel with its time on the critical path (exposed) and its full time."""

    name: str
    stream: str
    kind: str
    seconds: float
    full_s: float
    flops: float


@dataclass(slots=True)
class StageCost:
    """One stage's passes: ``fwd_s[c]``, ``bwd_s[c]`` per chunk, their ops, the ZeRO-3 traffic."""

    stage: int
    fwd_s: list[float] = field(default_factory=list)
    bwd_s: list[float] = field(default_factory=list)
    fwd_ops: list[list[TimedOp]] = field(default_factory=list)
    bwd_ops: list[list[TimedOp]] = field(default_factory=list)
    wgrad_s: list[float] = field(default_factory=list)


#: the backward's TP collectives of a column-parallel linear → the GEMM of the same linear
#: that runs while they do (``framework.tp_bwd_overlap``): Megatron's
#: ``LinearWithGradAccumulationAndAsyncCommunication.backward`` (megatron/mpu/layers.py at
#: 9aad9203aa, 2022-05; megatron/core/tensor_parallel/layers.py to core_r0.8.0) and TE's
#: ``LayerNormLinear`` / ``Linear`` backward (v1.8, v2.9) issue the re-gather of the saved
#: sequence-parallel input before the dgrad GEMM and wait after it, and the dgrad's
#: reduce-scatter (all-reduce without SP) before the wgrad GEMM and wait after it. The
#: row-parallel linears' grad-output all-gathers (``tp.allgather.*.bwd``) are synchronous in
#: both (``_ReduceScatterToSequenceParallelRegion.backward``; TE's grad-output gather): not here.
BWD_OVERLAP: dict[str, str] = {
    "tp.allgather.attn.regather": "qkv.dgrad",
    "tp.allgather.mlp.regather": "fc1.dgrad",
    "tp.reducescatter.attn.bwd": "qkv.wgrad",
    "tp.reducescatter.mlp.bwd": "fc1.wgrad",
    "tp.reducescatter.head.bwd": "lm_head.wgrad",
    "tp.allreduce.qkv.dgrad": "qkv.wgrad",
    "tp.allreduce.fc1.dgrad": "fc1.wgrad",
    "tp.allreduce.lm_head.dgrad": "lm_head.wgrad",
}


def _neighbour_gemm(kernels: list[Kernel], i: int, times: dict[str, float]) -> float:
    """Time of the GEMM a TP collective overlaps: the next one for an all-gather (its
    consumer), the previous one for a reduce-scatter / all-reduce (its producer)."""
    k = kernels[i]
    forward = k.collective == "allgather" and not k.name.endswith(".regather")   # the wgrad's re-gather: under dgrad
    rng = range(i + 1, len(kernels)) if forward else range(i - 1, -1, -1)
    for n in rng:
        if kernels[n].kind == "gemm":
            return times.get(kernels[n].name, 0.0)
        if kernels[n].kind == "comm" and kernels[n].group == "tp":
            break
    return 0.0


def _chunk(k: Kernel, parts: int) -> Kernel:
    """GEMM ``k`` cut into ``parts`` along its first (token) dimension: one part."""
    m, n, kk = k.dims
    mc = max(1, m // parts)
    in_b = 1.0 if k.fp8 else graph.E
    return replace(k, flops=k.flops * mc / m, bytes=(mc * kk + kk * n) * in_b + mc * n * graph.E, dims=(mc, n, kk))


def tp_overlap_exposed_s(j: TrainingJob, k: Kernel, gemm: Kernel, gemm_s: float, full_s: float, prec: str,
                         eff: float) -> Optional[float]:
    """The time TP collective ``k`` adds beyond its GEMM (``gemm``, unchunked ``gemm_s``)
    under the job's userbuffers config (:mod:`sim.predict.tp_overlap`): the pair's makespan
    by the slot's method less ``gemm_s`` (never below 0); None when ``k`` is none of the
    config's slots (an MoE layer's collectives: the share applies).

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 8192, "heads": 64, "seq_length": 8192,
    ...                              "vocab": 128256, "mlp": "swiglu", "kv_heads": 8, "ffn_hidden": 28672},
    ...                    "training": {"global_batch": 8, "precision": "fp8"},
    ...                    "parallel": {"tp": 4, "sequence_parallel": True}, "gpu": {"preset": "H100-SXM"},
    ...                    "framework": {"name": "megatron-bridge",
    ...                                  "tp_overlap_config": "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192"}},
    ...                   "j.yaml")
    >>> ag = Kernel("tp.allgather.attn", "comm", collective="allgather", group="tp", size_bytes=8192 * 8192.0)
    >>> qkv = Kernel("qkv", "gemm", flops=2.0 * 8192 * 2560 * 8192, bytes=1e8, dims=(8192, 2560, 8192), fp8=True)
    >>> t = tp_overlap_exposed_s(j, ag, qkv, 1e-3, 0.4e-3, "fp8", 1.0)
    >>> 0.0 <= t < 0.4e-3
    True
    """
    cfg = j.framework.tp_overlap_config
    if cfg is None or k.name not in COLLECTIVE_SLOT:
        return None
    o = cfg.slot(COLLECTIVE_SLOT[k.name][0])
    tp, sms = j.parallel.tp, j.gpu.sms

    def gemm_part_s(parts: int) -> float:
        t = kernel_time_s(_chunk(gemm, parts), j.gpu, prec, j.kernels, eff)
        return margin(t, o.num_sm, sms) if o.set_sm_margin else t

    if o.method == "bulk":
        pair = bulk_s(gemm_s, full_s, o.num_sm, sms, o.set_sm_margin)
    elif o.method == "pipeline":
        pair = pipeline_s(gemm_part_s(o.num_splits), full_s / o.num_splits, o.num_splits)
    else:
        step = full_s / (tp - 1)                          # one ring step: S/tp bytes to the next rank
        pair = ring_exchange_s(gemm_part_s(tp), step, tp)
        if k.collective == "reducescatter":               # TE's reduce of the tp received chunks
            red = Kernel(f"{k.name}.reduce", "memory", bytes=k.size_bytes * (tp + 1) / tp)
            pair += kernel_time_s(red, j.gpu, prec, j.kernels)
    return max(0.0, pair - gemm_s)


def pass_ops(j: TrainingJob, kernels: list[Kernel], comm: Optional[CommModel]) -> list[TimedOp]:
    """Time every kernel of one pass (module docstring)."""
    fw = j.framework
    prec = j.training.precision
    if prec == "fp8" and fw.fp8_recipe in ("blockwise", "rowwise"):
        prec = "fp8_block"                        # block / row scales: the block-scaled GEMM rates
    times: dict[str, float] = {}
    gemms = {k.name: k for k in kernels if k.kind == "gemm"}
    eff = fw.efficiency
    for k in kernels:
        if k.kind == "comm":
            continue
        if k.kind == "memory" and not k.name.startswith(("optimizer", "fp8.")):
            k = replace(k, bytes=k.bytes * fw.traffic * (graph.eager_factor(j, k.name) if fw.eager else 1.0))
        times[k.name] = kernel_time_s(k, j.gpu, prec, j.kernels, eff)
    out: list[TimedOp] = []
    for i, k in enumerate(kernels):
        if k.kind != "comm":
            t = times[k.name]
            out.append(TimedOp(k.name, "compute", k.kind, t, t, k.flops))
            continue
        full = comm.collective(k.group, k.collective, k.size_bytes).seconds if comm else 0.0
        hidden = times.get(k.hidden_by, 0.0) if k.hidden_by else 0.0
        ub = COLLECTIVE_SLOT.get(k.name) if fw.tp_overlap_config is not None and k.group == "tp" else None
        if ub is not None and ub[1] in gemms:
            exposed = tp_overlap_exposed_s(j, k, gemms[ub[1]], times[ub[1]], full, prec, eff)
            if exposed is not None:
                out.append(TimedOp(k.name, stream_of(k), "comm", exposed, full, 0.0))
                continue
        if k.group == "tp" and k.collective in ("allgather", "reducescatter") and fw.tp_comm_overlap > 0:
            hidden = max(hidden, fw.tp_comm_overlap * _neighbour_gemm(kernels, i, times))
        lost = 0.0
        if fw.tp_bwd_overlap and BWD_OVERLAP.get(k.name) in gemms:
            under = times[BWD_OVERLAP[k.name]]
            hidden = max(hidden, under)
            lost = contention_s(under, full, overlap_ctas(j, comm, k.group, k.collective, k.size_bytes), j.gpu.sms)
        out.append(TimedOp(k.name, stream_of(k), "comm", max(0.0, full - hidden - lost), full, 0.0))
        out += contention_op(CONTENTION, lost)
    return out


def _host_floor(j: TrainingJob, ops: list[TimedOp]) -> list[TimedOp]:
    """``ops`` plus the host launch time the GPU waits for, if any (module docstring)."""
    n = sum(1 for o in ops if o.stream == "compute" and o.kind != "contention")
    gpu = sum(o.seconds for o in ops)
    wait = n * j.framework.cpu_op_s - gpu
    return ops + [TimedOp("host.launch", "host", "host", wait, wait, 0.0)] if wait > 0 else ops


def _prefix(ops: list[TimedOp], prefix: str) -> list[TimedOp]:
    return [TimedOp(f"{prefix}{o.name}", o.stream, o.kind, o.seconds, o.full_s, o.flops) for o in ops]


@dataclass(frozen=True, slots=True)
class UnitComm:
    """Per-micro-batch collectives of one sharded unit: forward gather, backward gather and
    gradient reduce-scatter (seconds, 0 when the pattern has none)."""

    ag_fwd: float
    ag_bwd: float
    rs: float


def sharded_pattern(j: TrainingJob) -> str:
    """How the data-parallel collectives run: ``per_unit`` (FSDP / ZeRO-2/3 / Megatron-FSDP,
    every micro-batch), ``per_step`` (FSDP under pipeline parallelism where the stack gathers
    once a step and reduces after the last backward: ``framework.fsdp_pipeline``) or
    ``per_iteration`` (DDP, distributed optimizer, ZeRO-1).

    >>> from sim.predict.job import job_from_dict
    >>> def job(pp, name):
    ...     return job_from_dict({"model": {"layers": 4, "hidden": 1024, "heads": 16, "seq_length": 1024,
    ...                                     "vocab": 32000}, "training": {"global_batch": 32},
    ...                           "parallel": {"pp": pp, "dp": 4, "zero": 3}, "gpu": {"preset": "H100-SXM"},
    ...                           "framework": {"name": name}}, "j.yaml")
    >>> sharded_pattern(job(2, "torchtitan")), sharded_pattern(job(1, "torchtitan"))
    ('per_step', 'per_unit')
    >>> sharded_pattern(job(2, "pytorch-fsdp"))
    'per_unit'
    """
    fw, z = j.framework, j.parallel.zero
    if j.parallel.dp == 1 or z == 0:
        return "per_iteration"
    if fsdp_per_step(j):
        return "per_step"
    if fw.data_parallel in ("fsdp", "zero") and z >= 2:
        return "per_unit"
    if fw.data_parallel == "distributed_optimizer" and z == 3:
        return "per_unit"
    return "per_iteration"


def shard_group(j: TrainingJob) -> str:
    """The group a per-unit collective runs over: ``dp`` or HSDP's shard group ``dps``."""
    hs = j.framework.hybrid_shard
    return "dps" if 0 < hs < j.parallel.dp else "dp"


def unit_comm(j: TrainingJob, comm: CommModel, params: float) -> UnitComm:
    """The collectives of a unit of ``params`` parameters (per GPU) (module docstring)."""
    fw, z = j.framework, j.parallel.zero
    grp = shard_group(j)
    ag = comm.collective(grp, "allgather", j.weight_bytes * params).seconds
    rs = comm.collective(grp, "reducescatter", fw.grad_wire_bytes * params).seconds
    if fw.data_parallel == "zero" and z == 2:              # DeepSpeed ZeRO-2: weights replicated
        return UnitComm(0.0, 0.0, rs)
    if z == 2:                                             # FSDP SHARD_GRAD_OP
        return UnitComm(ag, 0.0, rs)
    return UnitComm(ag, ag if fw.fsdp_reshard else 0.0, rs)


def fsdp_copies(j: TrainingJob, params: list[float], uc: list[UnitComm]
                ) -> tuple[list[list[TimedOp]], list[list[TimedOp]], list[float]]:
    """PyTorch FSDP's copies around each unit's collectives (module docstring): per unit of
    ``params[u]`` parameters (per GPU, unsharded), the compute-stream ops before its
    forward, those before and after its backward (FSDP2's copy-out of each all-gather, its
    reduce-scatter copy-in), and the seconds its reduce-scatter waits for on FSDP1's
    post-backward stream (cast, pre-divide).

    >>> from sim.predict.job import job_from_dict
    >>> def fsdp(name):
    ...     return job_from_dict({"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 1024,
    ...                                     "vocab": 32000}, "training": {"global_batch": 8},
    ...                           "parallel": {"dp": 8, "zero": 3}, "gpu": {"preset": "H100-SXM"},
    ...                           "framework": {"name": name}}, "j.yaml")
    >>> u = [UnitComm(1e-3, 1e-3, 1e-3)]
    >>> f, b, rs = fsdp_copies(fsdp("torchtitan"), [1e8], u)
    >>> [o.name for o in f[0]], [o.name for o in b[0]], rs
    (['fsdp.copy_out'], ['fsdp.copy_out', 'fsdp.rs_copy_in'], [0.0])
    >>> f, b, rs = fsdp_copies(fsdp("composer-fsdp"), [1e8], u)
    >>> f, b, rs[0] > 0
    ([[]], [[]], True)
    """
    fw = j.framework
    wire = fw.grad_wire_bytes
    fwd: list[list[TimedOp]] = []
    bwd: list[list[TimedOp]] = []
    rs_wait: list[float] = []

    def mem(name: str, nbytes: float) -> TimedOp:
        t = kernel_time_s(Kernel(name, "memory", bytes=nbytes), j.gpu, j.training.precision, j.kernels)
        return TimedOp(name, "compute", "memory", t, t, 0.0)

    for p, c in zip(params, uc):
        if fw.fsdp_flat_params:                     # FSDP1: post-backward stream, before the reduce-scatter
            fwd.append([])
            bwd.append([])
            cast = (graph.E + wire) * p if wire != graph.E else 0.0     # BF16 gradients, even of FP8 weights
            rs_wait.append(mem("fsdp.grad_cast", cast + 2.0 * wire * p).seconds if c.rs > 0 else 0.0)
            continue
        copy_out = 2.0 * j.weight_bytes * p
        fwd.append([mem("fsdp.copy_out", copy_out)] if c.ag_fwd > 0 else [])
        b = [mem("fsdp.copy_out", copy_out)] if c.ag_bwd > 0 else []
        if c.rs > 0:
            b.append(mem("fsdp.rs_copy_in", (graph.E + wire) * p))   # the BF16 gradient read
        bwd.append(b)
        rs_wait.append(0.0)
    return fwd, bwd, rs_wait


def fsdp_grad_accumulate(j: TrainingJob, params: list[float]) -> list[TimedOp]:
    """FSDP2's gradient accumulation without gradient sync, once per unit of ``params[u]``
    parameters (per GPU, unsharded) after each micro-batch's backward (``sharded_pattern``
    ``per_step``): its post-backward adds the unit's fresh gradients into the unsharded
    accumulator kept in the reduce dtype (``FSDPParam.accumulate_unsharded_grad_if_needed``
    / ``to_accumulated_grad_if_needed``, ``torch/distributed/fsdp/_fully_shard/_fsdp_param.py``):
    the gradient read in the parameters' dtype, the accumulator read and written in the
    reduce dtype (fp32 for torchtitan: 2 + 4 + 4 bytes a parameter).

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 4, "hidden": 1024, "heads": 16, "seq_length": 1024,
    ...                              "vocab": 32000}, "training": {"global_batch": 32},
    ...                    "parallel": {"pp": 2, "dp": 4, "zero": 3}, "gpu": {"preset": "H100-SXM"},
    ...                    "framework": {"name": "torchtitan"}}, "j.yaml")
    >>> [o.name for o in fsdp_grad_accumulate(j, [1e8, 1e8])]
    ['fsdp.grad_accumulate', 'fsdp.grad_accumulate']
    """
    wire = j.framework.grad_wire_bytes
    out = []
    for p in params:
        t = kernel_time_s(Kernel("fsdp.grad_accumulate", "memory", bytes=(graph.E + 2.0 * wire) * p), j.gpu,
                          j.training.precision, j.kernels)
        out.append(TimedOp("fsdp.grad_accumulate", "compute", "memory", t, t, 0.0))
    return out


def _stream(ops_per_unit: list[list[TimedOp]], before: list[float], after: list[float], prefetch: bool,
            label: str, ctas: int = 0, sms: int = 1) -> list[TimedOp]:
    """One pass of units with their collectives: ``before[u]`` must finish before unit u
    computes (its all-gather), ``after[u]`` follows it (its reduce-scatter). Prefetched,
    the network runs unit u+1's gather and unit u−1's reduce-scatter while unit u computes:
    exposed is the first gather, ``max(0, before[u+1] + after[u−1] − compute[u])`` per unit
    and the last reduce-scatter; without prefetch every collective is exposed. The
    collectives under unit u hold ``ctas`` of the GPU's ``sms`` SMs: unit u's compute loses
    :func:`sim.predict.nccl_sms.contention_s` (its own op, which also hides as much more)."""
    out: list[TimedOp] = []
    n = len(ops_per_unit)
    if prefetch and before and before[0] > 0:
        out.append(TimedOp(f"{label}.first", "dp", "comm", before[0], before[0], 0.0))
    for u, ops in enumerate(ops_per_unit):
        if not prefetch and before[u] > 0:
            out.append(TimedOp(f"{label}.u{u}", "dp", "comm", before[u], before[u], 0.0))
        out += ops
        if prefetch:
            net = (before[u + 1] if u + 1 < n else 0.0) + (after[u - 1] if u > 0 else 0.0)
            busy = sum(o.seconds for o in ops)
            lost = contention_s(busy, net, ctas, sms)
            out += contention_op(CONTENTION, lost)
            exposed = max(0.0, net - busy - lost)
            if exposed > 0:
                out.append(TimedOp(f"{label}.u{u}", "dp", "comm", exposed, net, 0.0))
        elif after[u] > 0:
            out.append(TimedOp(f"{label}.rs{u}", "dp", "comm", after[u], after[u], 0.0))
    if prefetch and n and after[-1] > 0:
        out.append(TimedOp(f"{label}.last", "dp", "comm", after[-1], after[-1], 0.0))
    return out


def stage_costs(j: TrainingJob, comm: CommModel) -> list[StageCost]:
    """Forward/backward pass times of every stage and chunk for one micro-batch."""
    p, v = j.parallel.pp, j.chunks
    fw = j.framework
    cache: dict[bool, tuple[list[TimedOp], list[TimedOp]]] = {}

    def layer(moe: bool) -> tuple[list[TimedOp], list[TimedOp]]:
        if moe not in cache:
            f = _host_floor(j, pass_ops(j, graph.layer_forward(j, moe), comm))
            b = _host_floor(j, pass_ops(j, graph.recompute_forward(j, moe) + graph.layer_backward(j, moe), comm))
            cache[moe] = (f, b)
        return cache[moe]

    pattern = sharded_pattern(j)
    per_unit = pattern == "per_unit"
    out = []
    for s in range(p):
        sc = StageCost(s)
        layers = stage_layers(j, s)
        per_chunk = chunk_layers(j, s)
        start = 0
        for c in range(v):
            first, last = (s == 0 and c == 0), (s == p - 1 and c == v - 1)
            ids = layers[start:start + per_chunk[c]]
            start += per_chunk[c]
            f_units: list[list[TimedOp]] = []
            b_units: list[list[TimedOp]] = []
            params: list[float] = []
            if first:
                f_units.append(pass_ops(j, graph.embedding_forward(j), comm))
                b_units.append(pass_ops(j, graph.embedding_backward(j), comm))
                params.append(j.model.vocab * j.model.hidden / j.parallel.tp)
            for layer_id in ids:
                f, b = layer(j.model.is_moe_layer(layer_id))
                f_units.append(_prefix(f, f"L{layer_id}."))
                b_units.append(_prefix(b, f"L{layer_id}."))
                params.append(layer_params(j, layer_id).total)
            if last:
                f_units.append(pass_ops(j, graph.head_forward(j), comm))
                b_units.append(pass_ops(j, graph.head_backward(j), comm))
                params.append(j.model.vocab * j.model.hidden / j.parallel.tp)
            if per_unit:
                uc = [unit_comm(j, comm, x) for x in params]
                rs = [u.rs for u in uc]
                if fw.data_parallel == "fsdp":
                    cf, cb, wait = fsdp_copies(j, params, uc)
                    f_units = [c + u for c, u in zip(cf, f_units)]
                    b_units = [c[:1] + u + c[1:] if c and c[0].name == "fsdp.copy_out" else u + c
                               for c, u in zip(cb, b_units)]
                    rs = [r + w for r, w in zip(rs, wait)]
                ctas = overlap_ctas(j, comm, shard_group(j), "allgather", j.weight_bytes * max(params))
                fwd = _stream(f_units, [u.ag_fwd for u in uc], [0.0] * len(uc), fw.fsdp_prefetch, "shard.allgather",
                              ctas, j.gpu.sms)
                ru = list(reversed(uc))
                bwd = _stream(list(reversed(b_units)), [u.ag_bwd for u in ru], list(reversed(rs)), fw.fsdp_prefetch,
                              "shard.reducescatter", ctas, j.gpu.sms)
            else:
                if pattern == "per_step":
                    b_units = [u + [acc] for u, acc in zip(b_units, fsdp_grad_accumulate(j, params))]
                fwd = [o for u in f_units for o in u]
                bwd = [o for u in reversed(b_units) for o in u]
            fwd = fwd + pass_ops(j, graph.fp8_scale_update(j, "fwd", len(ids)), comm)
            bwd = bwd + pass_ops(j, graph.fp8_scale_update(j, "bwd", len(ids)), comm)
            if last and fw.train_metrics > 0:
                bwd = bwd + pass_ops(j, graph.train_metrics(j), comm)
            if fw.microbatch_s > 0:
                fwd = fwd + [TimedOp("host.microbatch", "host", "host", fw.microbatch_s, fw.microbatch_s, 0.0)]
            sc.fwd_ops.append(fwd)
            sc.bwd_ops.append(bwd)
            sc.fwd_s.append(sum(o.seconds for o in fwd))
            sc.bwd_s.append(sum(o.seconds for o in bwd))
            sc.wgrad_s.append(sum(o.seconds for o in bwd if o.name.endswith(".wgrad")))
        out.append(sc)
    return out


__all__ = ["BWD_OVERLAP", "CONTENTION", "StageCost", "contention_op", "overlap_ctas", "TimedOp", "UnitComm", "fsdp_copies", "fsdp_grad_accumulate", "pass_ops", "shard_group", "sharded_pattern", "stage_costs",
           "stream_of", "unit_comm"]
