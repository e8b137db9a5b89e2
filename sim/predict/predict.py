"""One prediction: a job on its fabric → iteration time, throughput, memory, breakdowns,
critical path, bottleneck.

Steps: build the fabric (``fabric`` section as in scenario files; by default the fewest
blocks of ``topo/specs/pod64k.yaml`` that hold the job) and place the job's servers
(``network.placement``: contiguous, fragmented or random, as ``sim.workloads.place_job``),
ranks server-major; refuse the job when it needs more GPUs than the fabric has or more memory
than the GPU (:mod:`sim.predict.memory`; the refusal names what fills it and the changes
that would make it fit, :func:`memory_remedies`); time every stage's passes
(:mod:`sim.predict.stages`, as the job's framework runs them); run the pipeline schedule
(:mod:`sim.predict.schedule`: 1F1B, interleaved, ZB-H1 or user-defined); then, per stage,
what the framework does once a step: the data-parallel gradient reduction (DDP: all-reduce;
distributed optimizer / ZeRO-1: reduce-scatter; FSDP and ZeRO-2/3 reduce per unit inside the
passes, HSDP all-reduces the shards over replicas here; every group simulated on the fabric
at once, over DP × CP, in the framework's gradient dtype), overlapped with the backward when
``overlap_grad_reduce`` (each model chunk's share starts with that chunk's last backward,
one after another; at least the last bucket comes after the last backward), the optimizer
step (memory-bound, on the shard), the parameter all-gather (hidden under the next
iteration's first forward when ``overlap_param_gather``) and the framework's fixed cost per
step. The iteration ends when the last stage does, × the straggler factor of a synchronous
step over N GPUs (:func:`straggler_factor`); its energy is :mod:`sim.predict.energy`'s.

FLOPs: *model* FLOPs are ``3 ×`` the forward's (attention counted in full, s² not s²/2,
as Megatron-LM and PaLM count), so MFU is comparable across papers; *hardware* FLOPs add
the recomputed forwards — with full recomputation this is exactly the Megatron-LM paper's
``96·B·s·l·h²·(1 + s/6h + V/16lh)``.

Example::

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 4, "hidden": 1024, "heads": 16, "seq_length": 1024,
    ...                              "vocab": 32000}, "parallel": {"tp": 2, "pp": 2, "dp": 2},
    ...                    "training": {"global_batch": 32}, "gpu": {"preset": "H800"},
    ...                    "fabric": {"spec_file": "topo/specs/default.yaml"}}, "j.yaml")
    >>> r = predict(j)
    >>> r.iteration_s > 0, 0 < r.mfu < 1, r.pipeline.makespan_s <= r.iteration_s
    (True, True, True)
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Optional

from sim.predict import calibration, optimizer
from sim.predict.a2a_overlap import combined_pass_s
from sim.predict.comm import CommModel, CommTime
from sim.predict.energy import IterationEnergy, fabric_switches, iteration_energy
from sim.predict.job import TrainingJob
from sim.predict.kernels import Kernel, kernel_time_s
from sim.predict.memory import GiB, MemoryBreakdown, layer_params, stage_memory, stage_params
from sim.predict.nccl_sms import contention_s
from sim.predict.schedule import PipelineResult, simulate_pipeline, simulate_zbh1
from sim.predict.stages import StageCost, overlap_ctas, shard_group, sharded_pattern, stage_costs
from sim.runner import build_sim_fabric
from sim.scenario import Scenario
from sim.topology import SimFabric, SimInputError
from sim.workloads import Job, place_job


@dataclass(slots=True)
class StageTail:
    """What follows a stage's last backward: DP reduction (full and exposed), optimizer,
    ZeRO 1/2 parameter all-gather (exposed), the stage's end, and what its compute lost to
    the SMs of the once-a-step collectives it overlapped (``nccl_sms_s``:
    :mod:`sim.predict.nccl_sms`; the last backward's and the first forward's)."""

    dp_s: float
    dp_exposed_s: float
    optimizer_s: float
    param_gather_s: float
    dp_start_s: float
    end_s: float
    nccl_sms_s: float = 0.0


@dataclass(slots=True)
class Prediction:
    """Everything ``python -m sim predict`` reports (see :mod:`sim.predict.report`)."""

    job: TrainingJob
    iteration_s: float
    pipeline: PipelineResult
    stages: list[StageCost]
    tails: list[StageTail]
    memory: list[MemoryBreakdown]
    comm: dict[str, CommTime]
    model_flops: float
    hardware_flops: float
    fabric_gpus: int
    wall_s: float = 0.0
    fabric_wall_s: float = 0.0
    energy: Optional[IterationEnergy] = None
    straggler_s: float = 0.0

    @property
    def tokens_per_s(self) -> float:
        """Tokens trained per second (global batch × sequence / iteration)."""
        return self.job.tokens_per_iteration / self.iteration_s

    @property
    def model_tflops_per_gpu(self) -> float:
        """Model TFLOP/s per GPU (no recomputation counted)."""
        return self.model_flops / self.iteration_s / self.job.gpus / 1e12

    @property
    def hardware_tflops_per_gpu(self) -> float:
        """TFLOP/s per GPU with the recomputed forwards (the Megatron-LM paper's figure)."""
        return self.hardware_flops / self.iteration_s / self.job.gpus / 1e12

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation: model TFLOP/s over the GPU's dense peak at the job's
        precision (fp8 jobs: the fp8 peak)."""
        return self.model_tflops_per_gpu * 1e12 / self.job.gpu.peak_flops(self.job.training.precision)

    @property
    def critical_stage(self) -> int:
        """The stage whose end is the iteration's end."""
        return max(range(len(self.tails)), key=lambda s: self.tails[s].end_s)


def model_flops(j: TrainingJob) -> tuple[float, float]:
    """(model, hardware) FLOPs of one iteration (module docstring)."""
    m, t = j.model, j.parallel.tp
    per_token_layers = 0.0
    recomputed = 0.0
    for layer in range(m.layers):
        lp = layer_params(j, layer)
        mats = 3 if m.mlp == "swiglu" else 2
        active = lp.dense                                   # attention, MLP or router, norms: per GPU
        if m.is_moe_layer(layer):
            active += m.top_k * m.hidden * m.moe_ffn * mats / t  # the experts a token visits
        f = 2.0 * active * t + 4.0 * m.seq_length * m.heads * m.d_head
        per_token_layers += f
        if j.training.recompute == "full":
            recomputed += f
    head = 2.0 * m.hidden * m.vocab
    tokens = float(j.tokens_per_iteration)
    model = 3.0 * tokens * (per_token_layers + head)
    return model, model + tokens * recomputed


def _fabric(j: TrainingJob) -> tuple[SimFabric, Job]:
    fab = dict(j.fabric)
    sc = Scenario(name=j.name, fabric=fab, source=j.source)
    if "topology" not in fab and "blocks" not in fab:
        spec = sc.fabric_spec()
        per_block = spec.servers_per_block * spec.rails
        fab["blocks"] = max(1, min(spec.blocks, math.ceil(j.gpus / per_block)))
        sc = Scenario(name=j.name, fabric=fab, source=j.source)
    sf = build_sim_fabric(sc)
    total = len(sf.fabric.hosts) * sf.rails
    p = j.parallel
    if j.gpus > total:
        raise SimInputError(f"{j.source}: parallel: the job needs {j.gpus} GPUs (tp {p.tp} x pp {p.pp} x cp {p.cp} "
                            f"x dp {p.dp}) but the fabric has {total} ({len(sf.fabric.hosts)} servers x {sf.rails})")
    per_server = sf.rails if j.gpus >= sf.rails else max(2, j.gpus)     # one GPU: placed as two, one used
    if j.gpus > 1 and j.gpus % per_server:
        raise SimInputError(f"{j.source}: parallel: {j.gpus} GPUs do not fill whole servers of {sf.rails} GPUs")
    return sf, place_job(sf, max(2, j.gpus), j.network.placement, j.network.seed, per_server)


@dataclass(slots=True)
class JobFabric:
    """What a job's predictions share when only its ``kernels`` section changes: the
    fabric, the job's placement on it, and the collectives already simulated on it
    (``python -m sim calibrate-run`` predicts each run under many efficiency factors).

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 512, "heads": 8, "seq_length": 512,
    ...                              "vocab": 1000}, "parallel": {"pp": 2, "dp": 4},
    ...                    "training": {"global_batch": 8}, "gpu": {"preset": "H800"},
    ...                    "fabric": {"spec_file": "topo/specs/default.yaml"}}, "j.yaml")
    >>> jf = job_fabric(j)
    >>> predict(j, jf).iteration_s == predict(j).iteration_s, len(jf.fabric_times) > 0
    (True, True)
    """

    sf: SimFabric
    placed: Job
    fabric_times: dict[tuple[str, str, float], CommTime] = field(default_factory=dict)


def job_fabric(j: TrainingJob) -> JobFabric:
    """Build the job's fabric and place it (``SimInputError`` when it does not fit)."""
    sf, placed = _fabric(j)
    return JobFabric(sf, placed)


def _fits(j: TrainingJob) -> Optional[float]:
    """The worst stage's GiB when ``j`` fits in its GPU, else None."""
    try:
        worst = max(stage_memory(j, s).total for s in range(j.parallel.pp))
    except (ValueError, ZeroDivisionError):
        return None
    return worst / GiB if worst <= j.gpu.hbm_bytes else None


def memory_remedies(j: TrainingJob) -> list[str]:
    """Changes, one at a time, after which the job fits, each with its figure: more
    recomputation, a higher ZeRO stage, half the micro-batch, twice the TP or PP (carved
    out of DP) — the first two that work."""
    p, t = j.parallel, j.training
    tries: list[tuple[str, TrainingJob]] = []
    for rc in ("selective", "full"):
        if ("none", "selective", "full").index(rc) > ("none", "selective", "full").index(t.recompute):
            tries.append((f"training.recompute: {rc}", replace(j, training=replace(t, recompute=rc))))
    for z in range(p.zero + 1, 4):
        if p.dp > 1:
            tries.append((f"parallel.zero: {z}", replace(j, parallel=replace(p, zero=z))))
    if t.micro_batch > 1:
        mb = t.micro_batch // 2
        tries.append((f"training.micro_batch: {mb}", replace(j, training=replace(t, micro_batch=mb))))
    if p.dp % 2 == 0:
        for k in ("tp", "pp"):
            val = getattr(p, k) * 2
            if k == "tp" and (j.model.heads % val or j.model.kv % val or val > 8):
                continue
            if k == "pp" and j.model.layers < val:
                continue
            tries.append((f"parallel.{k}: {val} (dp {p.dp // 2})",
                          replace(j, parallel=replace(p, **{k: val, "dp": p.dp // 2}))))
    out = []
    for what, cand in tries:
        got = _fits(cand)
        if got is not None:
            out.append(f"{what} ({got:.1f} GiB)")
        if len(out) == 2:
            break
    return out


def _check_memory(j: TrainingJob, mem: list[MemoryBreakdown]) -> None:
    s = max(range(len(mem)), key=lambda i: mem[i].total)
    m = mem[s]
    if m.total > j.gpu.hbm_bytes:
        parts = sorted((("weights", m.weights), ("gradients", m.grads), ("optimizer", m.optimizer),
                        ("activations", m.activations), ("logits", m.logits), ("reserved", m.reserved),
                        ("CP buffers", m.cp_buffers)),
                       key=lambda kv: -kv[1])
        fills = ", ".join(f"{k} {v / GiB:.1f}" for k, v in parts)
        fixes = memory_remedies(j)
        advice = ("fits with " + " or ".join(fixes)) if fixes else \
            "nothing tried fits (more recomputation, ZeRO, a smaller micro-batch, 2x TP or PP): use more GPUs"
        raise SimInputError(
            f"{j.source}: gpu.hbm_GiB: the job does not fit: stage {s} needs {m.total_GiB:.1f} GiB per GPU "
            f"({fills}) but {j.gpu.name} has {j.gpu.hbm_GiB:g} GiB; {advice}")


def _reduction(overlap: bool, dp_s: float, last_b_of_chunk: list, bucket_share: float,
               late_s: float = 0.0) -> tuple[float, float]:
    """(start, end) of a stage's gradient reduction: after its last backward, or, when
    overlapped, each chunk's share from the start of that chunk's last backward, one
    after another on the DP stream, the last bucket after the last backward (which ends
    ``late_s`` after its scheduled end: the SMs the reduction took from it)."""
    last = max(o.end_s for o in last_b_of_chunk) + late_s
    if not overlap or dp_s <= 0:
        return last, last + dp_s
    start, free = float("inf"), 0.0
    for o in sorted(last_b_of_chunk, key=lambda o: o.end_s):
        begin = max(free, o.start_s)
        start = min(start, begin)
        free = begin + dp_s / len(last_b_of_chunk)
    return start, max(free, last + dp_s * bucket_share)


@dataclass(slots=True)
class FsdpStepTail:
    """FSDP's once-a-step collectives of one pipeline stage (``framework.fsdp_pipeline:
    per_step``): the gradient reduce-scatter (with FSDP2's copy of the accumulated gradients
    into its buffer) in seconds, when it starts and ends, the parameter all-gather's seconds
    left exposed after the first forward (with FSDP2's copy-out), and the collectives used."""

    dp_s: float
    dp_start_s: float
    dp_end_s: float
    gather_exposed_s: float
    used: dict[str, CommTime]
    gather_sms_s: float = 0.0


def fsdp_step_tail(j: TrainingJob, comm: CommModel, params: float, last_b_of_chunk: list,
                   first_forward) -> FsdpStepTail:
    """What FSDP2 under ``torch.distributed.pipelining`` does once a step on a stage of
    ``params`` parameters per GPU (unsharded; :func:`sim.predict.stages.sharded_pattern`
    ``per_step``): the schedule's last backward of each model chunk runs the chunk's
    post-backward (``_PipelineStageBase.backward_maybe_with_nosync``,
    ``torch/distributed/pipelining/stage.py``): its accumulated fp32 gradients are copied
    into the reduce-scatter buffer (``foreach_reduce``: read and written in the reduce dtype)
    and reduce-scattered over the shard group, chunk after chunk on the DP stream, each from
    the end of its chunk's last backward; the units were gathered once, at the step's first
    forward, and stay gathered (torchtitan ``apply_fsdp``: ``reshard_after_forward=False``
    under PP): the all-gather (and FSDP2's copy-out of it) runs under that forward, what
    exceeds it is exposed, and the forward loses the SMs the gather holds
    (:mod:`sim.predict.nccl_sms`, ``gather_sms_s``). Under HSDP the reduced shards are then
    all-reduced over the replicas (FSDP2's ``foreach_reduce``)."""
    fw = j.framework
    wire = fw.grad_wire_bytes
    grp = shard_group(j)
    rs = comm.collective(grp, "reducescatter", wire * params)
    ag = comm.collective(grp, "allgather", j.weight_bytes * params)
    copy_in = kernel_time_s(Kernel("fsdp.rs_copy_in", "memory", bytes=2.0 * wire * params), j.gpu,
                            j.training.precision, j.kernels)
    copy_out = kernel_time_s(Kernel("fsdp.copy_out", "memory", bytes=2.0 * j.weight_bytes * params), j.gpu,
                             j.training.precision, j.kernels)
    used = {f"{grp}.reducescatter.grads": rs, f"{grp}.allgather.params": ag}
    dp_s = rs.seconds + copy_in
    if grp == "dps":                            # HSDP: the reduced shards all-reduced over the replicas
        ar = comm.collective("dpr", "allreduce", wire * params / fw.hybrid_shard)
        used["dpr.allreduce.grads"] = ar
        dp_s += ar.seconds
    n = len(last_b_of_chunk)
    start, free = float("inf"), 0.0
    for o in sorted(last_b_of_chunk, key=lambda o: o.end_s):
        begin = max(free, o.end_s)
        start = min(start, begin)
        free = begin + dp_s / n
    ff_s = first_forward.end_s - first_forward.start_s
    lost = contention_s(ff_s, ag.seconds, overlap_ctas(j, comm, grp, "allgather", j.weight_bytes * params), j.gpu.sms)
    exposed = max(0.0, ag.seconds - ff_s - lost) + copy_out
    return FsdpStepTail(dp_s, start, free, exposed, used, lost)


def _tails(j: TrainingJob, comm: CommModel, pipe: PipelineResult) -> tuple[list[StageTail], dict[str, CommTime]]:
    par, fw = j.parallel, j.framework
    out, used = [], {}
    pattern = sharded_pattern(j)
    per_unit = pattern == "per_unit"
    wire = fw.grad_wire_bytes
    first_f: dict[int, object] = {}
    last_b_of: dict[tuple[int, int], object] = {}
    for o in pipe.ops:
        if o.kind == "F":
            if o.stage not in first_f or o.start_s < first_f[o.stage].start_s:
                first_f[o.stage] = o
        else:
            k = (o.stage, o.chunk)
            if k not in last_b_of or o.end_s > last_b_of[k].end_s:
                last_b_of[k] = o
    for s in range(par.pp):
        sp = stage_params(j, s)
        last_b_of_chunk = [last_b_of[(s, c)] for c in range(j.chunks)]
        last_b = max(last_b_of_chunk, key=lambda o: o.end_s)
        dp_s = ag_s = 0.0
        dp_coll: tuple[str, str, float] = ("dp", "allreduce", 0.0)        # the reduction's group, kind, bytes
        if pattern == "per_step":
            step = fsdp_step_tail(j, comm, sp.total, last_b_of_chunk, first_f[s])
            used.update(step.used)
            opt = optimizer.step_time_s(j, s, sp.dense / (par.dp * par.cp) + sp.expert / (j.expert_dp * par.cp))
            end = step.dp_end_s + opt + step.gather_exposed_s + step.gather_sms_s + fw.iteration_s
            out.append(StageTail(step.dp_s, step.dp_end_s - last_b.end_s, opt, step.gather_exposed_s,
                                 step.dp_start_s, end, step.gather_sms_s))
            continue
        if per_unit:
            if shard_group(j) == "dps":                           # HSDP: the shards all-reduced over replicas
                c1 = comm.collective("dpr", "allreduce", wire * sp.total / fw.hybrid_shard)
                used["dpr.allreduce.grads"] = c1
                dp_s = c1.seconds
                dp_coll = ("dpr", "allreduce", wire * sp.total / fw.hybrid_shard)
            elif fw.data_parallel == "zero" and par.zero == 2:    # ZeRO-2: updated weights gathered once
                g1 = comm.collective("dp", "allgather", j.weight_bytes * sp.dense)
                used["dp.allgather.params"] = g1
                ag_s = g1.seconds
        else:
            kind = "allreduce" if par.zero == 0 or fw.data_parallel == "ddp" else "reducescatter"
            c1 = comm.collective("dp", kind, wire * sp.dense)
            c2 = comm.collective("edp", kind, wire * sp.expert)
            used[f"dp.{kind}.grads"], used[f"edp.{kind}.grads"] = c1, c2
            dp_s = c1.seconds + c2.seconds
            dp_coll = ("dp", kind, wire * sp.dense)
            if kind == "reducescatter":
                g1 = comm.collective("dp", "allgather", j.weight_bytes * sp.dense)
                g2 = comm.collective("edp", "allgather", j.weight_bytes * sp.expert)
                used["dp.allgather.params"] = g1
                ag_s = g1.seconds + g2.seconds
        share = min(1.0, j.bucket_MiB * 2**20 / max(wire * sp.total, 1.0))
        start, dp_end = _reduction(j.overlap_grad_reduce, dp_s, last_b_of_chunk, share)
        # the backward under the reduction runs on the SMs its NCCL channels leave (nccl_sms):
        # every bucket but the last (``share`` of the gradients, after the last backward)
        under = max(0.0, last_b.end_s - start)
        lost = 0.0
        if under > 0:
            lost = contention_s(under, min(dp_s * (1.0 - share), under), overlap_ctas(j, comm, *dp_coll), j.gpu.sms)
        if lost > 0:
            start, dp_end = _reduction(j.overlap_grad_reduce, dp_s, last_b_of_chunk, share, lost)
        shard = (sp.dense / (par.dp * par.cp) + sp.expert / (j.expert_dp * par.cp)) if par.zero >= 1 else sp.total
        opt = optimizer.step_time_s(j, s, shard)
        ff = first_f[s]
        ff_s = ff.end_s - ff.start_s
        gather_lost = 0.0
        if j.overlap_param_gather and ag_s > 0:
            gather_lost = contention_s(ff_s, ag_s, overlap_ctas(j, comm, "dp", "allgather", j.weight_bytes * sp.dense),
                                       j.gpu.sms)
            ag_exposed = max(0.0, ag_s - ff_s - gather_lost)
        else:
            ag_exposed = ag_s
        end = dp_end + opt + ag_exposed + gather_lost + fw.iteration_s
        out.append(StageTail(dp_s, dp_end - last_b.end_s - lost, opt, ag_exposed, start, end, lost + gather_lost))
    return out, used


def _combined(j: TrainingJob, stages: list[StageCost], extra_s: float) -> Optional[list[list[list[float]]]]:
    """Each stage's combined forward + backward steps (``framework.moe_a2a_overlap``;
    :mod:`sim.predict.a2a_overlap`) by forward and backward chunk, ``extra_s`` added to each;
    None without the overlap."""
    if not j.framework.moe_a2a_overlap:
        return None
    return [[[combined_pass_s(f, b) + extra_s for b in sc.bwd_ops] for f in sc.fwd_ops] for sc in stages]


def predict(j: TrainingJob, fabric: Optional[JobFabric] = None) -> Prediction:
    """Predict one training iteration of ``j`` (module docstring); ``fabric``: the job's
    :class:`JobFabric` from an earlier prediction of the same job (default: built here)."""
    t0 = time.perf_counter()
    mem = [stage_memory(j, s) for s in range(j.parallel.pp)]
    _check_memory(j, mem)
    jf = fabric or job_fabric(j)
    sf = jf.sf
    comm = CommModel(j, sf, jf.placed, fabric_times=jf.fabric_times)
    stages = stage_costs(j, comm)
    p2p_bytes = j.training.micro_batch * j.model.seq_length // j.parallel.cp * j.model.hidden * 2.0 / j.parallel.tp
    p2p = comm.p2p(p2p_bytes)
    if j.parallel.schedule == "zb-h1":
        pipe = simulate_zbh1(j.parallel.pp, j.microbatches, [s.fwd_s[0] for s in stages], [s.bwd_s[0] for s in stages],
                             [s.wgrad_s[0] for s in stages], p2p.seconds)
    elif j.chunks > 1 and j.parallel.pp > 1 and not j.framework.overlap_p2p_comm:
        # blocking send/receive: every pass holds its GPU until its transfer is done
        t = p2p.seconds
        pipe = simulate_pipeline(j.parallel.pp, j.microbatches, j.chunks, [[f + t for f in s.fwd_s] for s in stages],
                                 [[b + t for b in s.bwd_s] for s in stages], 0.0, orders=j.orders,
                                 wgrad_s=[s.wgrad_s for s in stages], combined_s=_combined(j, stages, 2.0 * t))
    else:
        combined = _combined(j, stages, 0.0)
        pipe = simulate_pipeline(j.parallel.pp, j.microbatches, j.chunks, [s.fwd_s for s in stages],
                                 [s.bwd_s for s in stages], p2p.seconds, orders=j.orders,
                                 wgrad_s=[s.wgrad_s for s in stages], combined_s=combined)
    tails, used = _tails(j, comm, pipe)
    used["pp.sendrecv"] = p2p
    for (kind, coll, size), ct in sorted(comm.timed.items(), key=lambda kv: kv[0][2]):
        if kind in ("tp", "ep", "cp"):
            used[f"{kind}.{coll}"] = ct                      # the largest of each kind
    mf, hf = model_flops(j)
    base = max(t.end_s for t in tails)
    it = base * straggler_factor(j.gpus)
    fabric_gpus = len(sf.fabric.hosts) * sf.rails
    return Prediction(j, it, pipe, stages, tails, mem, used, mf, hf, fabric_gpus, time.perf_counter() - t0,
                      comm.fabric_wall_s, _energy(j, stages, tails, it, sf), it - base)


def straggler_factor(gpus: int) -> float:
    """A synchronous step waits for its slowest GPU: with each GPU's step time jittering by
    a relative σ (clocks, thermals, the host), the slowest of N is ``1 + σ·√(2 ln N)`` of
    the mean (the expected maximum of N normal draws); σ is fitted on the validation set's
    fit split (:mod:`sim.predict.calibration`, 0 when not)."""
    sigma = calibration.current().straggler_sigma
    return 1.0 + sigma * math.sqrt(2.0 * math.log(max(gpus, 2)))


def _energy(j: TrainingJob, stages: list[StageCost], tails: list[StageTail], it: float,
            sf: SimFabric) -> IterationEnergy:
    """Energy of the iteration (:mod:`sim.predict.energy`), the stages' timelines averaged."""
    m = j.microbatches
    compute = comm = 0.0
    for sc, t in zip(stages, tails):
        for ops in sc.fwd_ops + sc.bwd_ops:
            for o in ops:
                if o.stream == "compute":
                    compute += m * o.seconds
                elif o.stream != "host":
                    comm += m * o.seconds
        comm += t.dp_exposed_s + t.param_gather_s
        compute += t.optimizer_s + t.nccl_sms_s
    compute, comm = compute / len(stages), comm / len(stages)
    compute = min(compute, it)
    comm = min(comm, it - compute)
    e, g = j.energy, j.gpu
    busy = e.gpu_busy_W if e.gpu_busy_W >= 0 else (g.power_limit_W or g.tdp_W)
    idle = e.gpu_idle_W if e.gpu_idle_W >= 0 else g.idle_W
    switches = fabric_switches(j.gpus, e.switch_ports)
    servers = max(1.0, j.gpus / sf.rails)
    return iteration_energy(e, j.gpus, compute, comm, it - compute - comm, busy, idle, switches, servers,
                            float(j.tokens_per_iteration))


__all__ = ["JobFabric", "Prediction", "StageTail", "job_fabric", "model_flops", "predict"]
