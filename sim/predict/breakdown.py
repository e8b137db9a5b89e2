"""Breakdowns of a prediction: time per operator and per stream on the critical stage,
the critical path in a few segments, and the bottleneck in one sentence.

* **By operator**: each kernel's time per iteration on the stage that ends last (calls ×
  exposed time; layers' kernels summed over the stage's layers: ``fc1`` is every layer's).
* **By stream**: ``compute`` (GEMMs, attention, memory-bound kernels), ``tp`` / ``ep`` /
  ``cp`` (their exposed collectives), ``pp-bubble`` (the stage idle inside the pipeline:
  warm-up, cool-down, waits for a transfer or for a slower stage — the LM head's), ``dp`` (the exposed gradient reduction,
  ZeRO traffic), ``optimizer``. They sum to the iteration time.
* **Critical path**: the pipeline ops whose ends fixed the iteration, grouped into runs
  on one stage, then the stage's reduction and optimizer step.

Example::

    >>> pretty_op("L17.fc1.wgrad"), pretty_op("recompute.qkv")
    ('fc1.wgrad', 'recompute.qkv')
"""
from __future__ import annotations

from collections import defaultdict

from sim.predict.predict import Prediction
from sim.predict.stages import CONTENTION


def pretty_op(name: str) -> str:
    """A kernel's name without its layer prefix (``L17.``)."""
    head, _, rest = name.partition(".")
    return rest if head.startswith("L") and head[1:].isdigit() else name


def by_operator(r: Prediction, stage: int | None = None) -> dict[str, float]:
    """Seconds per iteration of each kernel on ``stage`` (default: the critical stage)."""
    s = r.critical_stage if stage is None else stage
    m = r.job.microbatches
    out: dict[str, float] = defaultdict(float)
    sc = r.stages[s]
    for ops in sc.fwd_ops + sc.bwd_ops:
        for o in ops:
            out[pretty_op(o.name)] += m * o.seconds
    t = r.tails[s]
    out["dp.gradient_reduction (exposed)"] += t.dp_exposed_s
    out["optimizer.adam"] += t.optimizer_s
    if t.nccl_sms_s:
        out[CONTENTION] += t.nccl_sms_s
    if t.param_gather_s:
        out["dp.param_allgather (exposed)"] += t.param_gather_s
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def by_stream(r: Prediction, stage: int | None = None) -> dict[str, float]:
    """Seconds per iteration per stream on ``stage`` (module docstring); sums to the iteration."""
    s = r.critical_stage if stage is None else stage
    m = r.job.microbatches
    out: dict[str, float] = defaultdict(float)
    sc = r.stages[s]
    for ops in sc.fwd_ops + sc.bwd_ops:
        for o in ops:
            out[o.stream] += m * o.seconds
    busy = m * (sum(sc.fwd_s) + sum(sc.bwd_s))
    t = r.tails[s]
    last_b_end = t.end_s - t.optimizer_s - t.param_gather_s - t.dp_exposed_s - t.nccl_sms_s
    out["pp-bubble"] = max(0.0, last_b_end - busy) + (r.iteration_s - r.straggler_s - t.end_s)
    out["stragglers"] = r.straggler_s
    out["dp"] += t.dp_exposed_s + t.param_gather_s
    out["compute"] += t.nccl_sms_s
    out["optimizer"] = t.optimizer_s
    return {k: v for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v > 0}


def compute_split(r: Prediction, stage: int | None = None) -> dict[str, float]:
    """Compute seconds per iteration by kernel kind: ``gemm``, ``attention``, ``memory``."""
    s = r.critical_stage if stage is None else stage
    out: dict[str, float] = defaultdict(float)
    for ops in r.stages[s].fwd_ops + r.stages[s].bwd_ops:
        for o in ops:
            if o.stream == "compute":
                out[o.kind] += r.job.microbatches * o.seconds
    return dict(out)


def gemm_fraction_of_peak(r: Prediction, stage: int | None = None) -> float:
    """Achieved share of the datasheet peak of the critical stage's GEMMs (FLOP-weighted)."""
    s = r.critical_stage if stage is None else stage
    flops = secs = 0.0
    for ops in r.stages[s].fwd_ops + r.stages[s].bwd_ops:
        for o in ops:
            if o.stream == "compute" and o.kind == "gemm":
                flops += o.flops
                secs += o.seconds
    peak = r.job.gpu.peak_flops(r.job.training.precision)
    return flops / secs / peak if secs > 0 and peak > 0 else 0.0


def _runs(chain: list) -> list[list]:
    runs: list[list] = []
    for op in chain:
        if runs and runs[-1][-1].stage == op.stage:
            runs[-1].append(op)
        else:
            runs.append([op])
    return runs


def _describe(run: list) -> str:
    f = sum(1 for o in run if o.kind == "F")
    b = len(run) - f
    what = " + ".join(x for x in (f"{f} forward" if f else "", f"{b} backward" if b else "") if x)
    return (f"stage {run[0].stage}: {what} pass{'es' if len(run) > 1 else ''}, "
            f"{run[-1].end_s - run[0].start_s:.3f} s (micro-batches {run[0].mb}..{run[-1].mb})")


def critical_path(r: Prediction) -> list[str]:
    """The critical path as lines: runs of passes on one stage (single passes of one
    micro-batch hopping stage to stage merged into one line), then the tail."""
    lines: list[str] = []
    runs = _runs(r.pipeline.critical_path())
    i = 0
    while i < len(runs):
        k = i
        while (k + 1 < len(runs) and len(runs[k + 1]) == 1 and len(runs[i]) == 1
               and runs[k + 1][0].kind == runs[i][0].kind and runs[k + 1][0].mb == runs[i][0].mb):
            k += 1
        if k > i:
            a, b = runs[i][0], runs[k][0]
            kind = "forward" if a.kind == "F" else "backward"
            chunks = f", chunk {a.chunk} -> {b.chunk}" if a.chunk != b.chunk else ""
            lines.append(f"stage {a.stage} -> stage {b.stage}{chunks}: {kind} of micro-batch {a.mb} from stage to "
                         f"stage, {k - i + 1} passes and their transfers, {b.end_s - a.start_s:.3f} s")
        else:
            lines.append(_describe(runs[i]))
        i = k + 1
    s = r.critical_stage
    t = r.tails[s]
    if t.dp_exposed_s > 0:
        lines.append(f"stage {s}: DP gradient reduction, {t.dp_exposed_s:.3f} s exposed of {t.dp_s:.3f} s")
    lines.append(f"stage {s}: optimizer step, {t.optimizer_s:.3f} s")
    if t.param_gather_s > 0:
        lines.append(f"stage {s}: ZeRO parameter all-gather, {t.param_gather_s:.3f} s exposed")
    return lines


def bottleneck(r: Prediction) -> str:
    """The largest contributor to the iteration on the critical stage, in one sentence."""
    it = r.iteration_s
    comp = compute_split(r)
    streams = by_stream(r)
    parts = {"GEMMs": comp.get("gemm", 0.0), "attention kernels": comp.get("attention", 0.0),
             "memory-bound kernels (norms, activations, residuals, loss)": comp.get("memory", 0.0),
             "tensor-parallel collectives": streams.get("tp", 0.0),
             "expert all-to-all": streams.get("ep", 0.0), "context-parallel KV exchange": streams.get("cp", 0.0),
             "the pipeline bubble": streams.get("pp-bubble", 0.0),
             "the data-parallel gradient reduction": streams.get("dp", 0.0),
             "the optimizer step": streams.get("optimizer", 0.0)}
    ranked = sorted(parts.items(), key=lambda kv: -kv[1])
    (name, sec), (name2, sec2) = ranked[0], ranked[1]
    j = r.job
    tp_medium = next((c.medium for k, c in r.comm.items() if k.startswith("tp.")), "nvlink")
    why = {"GEMMs": f"compute-bound at {100 * gemm_fraction_of_peak(r):.0f} % of the {j.gpu.name}'s "
                    f"{j.training.precision} peak on average (kernel tables: the report's kernel sources)",
           "the pipeline bubble": f"(p-1)/(m*v) = {j.parallel.pp - 1}/({j.microbatches}*{j.chunks}): "
                                  "more micro-batches or virtual stages shrink it",
           "tensor-parallel collectives": f"tp {j.parallel.tp} on the critical path over {tp_medium}",
           "the data-parallel gradient reduction": "not hidden by the backward: enable overlap_grad_reduce, "
                                                   "or a faster fabric policy",
           }.get(name, "")
    return (f"Bottleneck: {name}, {sec:.3f} s of the {it:.3f} s iteration ({100 * sec / it:.0f} %) on stage "
            f"{r.critical_stage}{'; ' + why if why else ''}; next: {name2} ({100 * sec2 / it:.0f} %).")


__all__ = ["bottleneck", "by_operator", "by_stream", "compute_split", "critical_path", "gemm_fraction_of_peak",
           "pretty_op"]
