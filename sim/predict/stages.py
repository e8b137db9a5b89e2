"""Per-stage costs of one micro-batch: every kernel of every layer a pipeline stage runs
(forward, recomputation, backward; the embedding on the first stage, the LM head on the
last), each timed (compute: :func:`sim.predict.kernels.kernel_time_s`; collectives:
:class:`sim.predict.comm.CommModel`), summed into the forward and backward pass times
the pipeline schedule runs.

A collective on the critical path (TP, EP) adds its whole time; one ``hidden_by`` a
kernel (CP's KV exchange under the attention) adds only what exceeds that kernel. ZeRO-3
all-gathers a chunk's weights before its forward and again before its backward and
reduce-scatters its gradients after, over DP, prefetched under the chunk's compute (only
the excess is exposed).

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

from dataclasses import dataclass, field
from typing import Optional

from sim.predict import graph
from sim.predict.comm import CommModel
from sim.predict.job import TrainingJob
from sim.predict.kernels import Kernel, kernel_time_s
from sim.predict.memory import stage_layers, stage_params


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


def pass_ops(j: TrainingJob, kernels: list[Kernel], comm: Optional[CommModel]) -> list[TimedOp]:
    """Time every kernel of one pass, collectives exposed beyond their ``hidden_by``."""
    by_name = {k.name: kernel_time_s(k, j.gpu, j.training.precision, j.kernels) for k in kernels if k.kind != "comm"}
    out: list[TimedOp] = []
    for k in kernels:
        if k.kind != "comm":
            t = by_name[k.name]
            out.append(TimedOp(k.name, "compute", k.kind, t, t, k.flops))
            continue
        full = comm.collective(k.group, k.collective, k.size_bytes).seconds if comm else 0.0
        hidden = by_name.get(k.hidden_by, 0.0) if k.hidden_by else 0.0
        out.append(TimedOp(k.name, stream_of(k), "comm", max(0.0, full - hidden), full, 0.0))
    return out


def _prefix(ops: list[TimedOp], prefix: str) -> list[TimedOp]:
    return [TimedOp(f"{prefix}{o.name}", o.stream, o.kind, o.seconds, o.full_s, o.flops) for o in ops]


def stage_costs(j: TrainingJob, comm: CommModel) -> list[StageCost]:
    """Forward/backward pass times of every stage and chunk for one micro-batch."""
    p, v = j.parallel.pp, j.chunks
    cache: dict[bool, tuple[list[TimedOp], list[TimedOp]]] = {}

    def layer(moe: bool) -> tuple[list[TimedOp], list[TimedOp]]:
        if moe not in cache:
            f = pass_ops(j, graph.layer_forward(j, moe), comm)
            b = pass_ops(j, graph.recompute_forward(j, moe) + graph.layer_backward(j, moe), comm)
            cache[moe] = (f, b)
        return cache[moe]

    out = []
    per_chunk = j.model.layers // (p * v)
    for s in range(p):
        sc = StageCost(s)
        layers = stage_layers(j, s)
        for c in range(v):
            fwd: list[TimedOp] = []
            bwd: list[TimedOp] = []
            first, last = (s == 0 and c == 0), (s == p - 1 and c == v - 1)
            if first:
                fwd += pass_ops(j, graph.embedding_forward(j), comm)
            for i, layer_id in enumerate(layers[c * per_chunk:(c + 1) * per_chunk]):
                f, b = layer(j.model.is_moe_layer(layer_id))
                fwd += _prefix(f, f"L{layer_id}.")
                bwd = _prefix(b, f"L{layer_id}.") + bwd
            if last:
                fwd += pass_ops(j, graph.head_forward(j), comm)
                bwd = pass_ops(j, graph.head_backward(j), comm) + bwd
            if first:
                bwd += pass_ops(j, graph.embedding_backward(j), comm)
            if j.parallel.zero == 3 and j.parallel.dp > 1:
                fwd, bwd = _zero3(j, comm, s, v, fwd, bwd)
            sc.fwd_ops.append(fwd)
            sc.bwd_ops.append(bwd)
            sc.fwd_s.append(sum(o.seconds for o in fwd))
            sc.bwd_s.append(sum(o.seconds for o in bwd))
        out.append(sc)
    return out


def _zero3(j: TrainingJob, comm: CommModel, s: int, v: int, fwd: list[TimedOp],
           bwd: list[TimedOp]) -> tuple[list[TimedOp], list[TimedOp]]:
    params = stage_params(j, s).total / v
    ag = comm.collective("dp", "allgather", 2.0 * params).seconds
    rs = comm.collective("dp", "reducescatter", float(j.training.grad_bytes) * params).seconds
    f_busy, b_busy = sum(o.seconds for o in fwd), sum(o.seconds for o in bwd)
    return (fwd + [TimedOp("zero3.allgather.params", "dp", "comm", max(0.0, ag - f_busy), ag, 0.0)],
            bwd + [TimedOp("zero3.allgather+reducescatter", "dp", "comm", max(0.0, ag + rs - b_busy), ag + rs, 0.0)])


__all__ = ["StageCost", "TimedOp", "pass_ops", "stage_costs", "stream_of"]
