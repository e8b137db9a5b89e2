"""What ``python -m sim predict`` prints and writes: the summary (iteration time,
tokens/s, TFLOP/s per GPU and MFU, memory per GPU, the collectives), the breakdowns by
stream and by operator, the critical path and the bottleneck; ``report.md`` with the
same text and ``trace.json`` (Chrome/Perfetto) side by side in the run folder.

Example::

    >>> _table([("a", 1.0), ("bb", 3.0)], 4.0)[1]
    'bb                                          3.000 s   75.0 %'
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from sim.predict import graph
from sim.predict.breakdown import bottleneck, by_operator, by_stream, critical_path
from sim.predict.kernels import compute_rate
from sim.predict.memory import GiB, stage_params
from sim.predict.predict import Prediction
from sim.predict.trace import write_trace


def kernel_sources(j) -> dict[str, dict[str, int]]:
    """Where each compute kernel's rate comes from (one layer forward + backward, the LM
    head): kind → provenance → count (``measured``, ``shape model``, ``derived ...``,
    ``default``, ``factors``; memory-bound kernels: ``default`` HBM efficiency)."""

    out: dict[str, Counter] = {}
    moe = j.model.experts > 0
    ks = graph.layer_forward(j, moe) + graph.layer_backward(j, moe) + graph.head_forward(j) + graph.head_backward(j)
    for k in ks:
        if k.kind == "comm":
            continue
        prov = "default" if k.kind == "memory" else compute_rate(k, j.gpu, j.training.precision, j.kernels).provenance
        out.setdefault(k.kind, Counter())[prov] += 1
    return {kind: dict(c) for kind, c in out.items()}


def _sources_line(j) -> str:
    parts = []
    for kind, c in kernel_sources(j).items():
        label = {"memory": "memory-bound"}.get(kind, kind)
        parts.append(f"{label}: " + ", ".join(f"{n} {p}" for p, n in sorted(c.items(), key=lambda kv: -kv[1])))
    table = j.kernels.table or f"sim/predict/kernel_tables/{j.gpu.chip}.csv"
    return f"kernel rates ({table})  " + "; ".join(parts)


def _energy_line(r: Prediction) -> str:
    e = r.energy
    if e is None:
        return "energy               (not computed)"
    per_it = f"{e.total_J / 3.6e6:.2f} kWh" if e.total_J >= 3.6e5 else f"{e.total_J / 1e3:.1f} kJ"
    return (f"energy               {per_it} per iteration, {e.per_token_J:.3g} J per token, "
            f"{e.power_kW:,.0f} kW average (PUE {e.pue:g}; GPUs {100 * e.gpu_J / e.it_J:.0f} % of the IT power)")


def _table(rows: list[tuple[str, float]], total: float) -> list[str]:
    return [f"{name:<40} {sec:8.3f} s {100 * sec / total:6.1f} %" for name, sec in rows]


def summary_lines(r: Prediction, top_ops: int = 15) -> list[str]:
    """The report as lines of text."""
    j, p = r.job, r.job.parallel
    params = sum(stage_params(j, s).dense * p.tp + stage_params(j, s).expert * j.expert_tp * p.ep for s in range(p.pp))
    kind = f"MoE {j.model.experts}x top-{j.model.top_k}" if j.model.experts else "dense"
    sched = p.schedule + (f" v={j.chunks}" if j.chunks > 1 else "")
    peak = j.gpu.peak_flops(j.training.precision) / 1e12
    worst = max(range(len(r.memory)), key=lambda s: r.memory[s].total)
    m = r.memory[worst]
    it = r.iteration_s
    lines = [
        f"job {j.name}: {kind} {params / 1e9:.1f}B parameters, {j.gpus} x {j.gpu.name} "
        f"(tp {p.tp}, pp {p.pp} {sched}, cp {p.cp}, dp {p.dp}, ep {p.ep}, zero {p.zero}"
        f"{', sp' if p.sequence_parallel else ''}), {j.training.precision}, recompute {j.training.recompute}, "
        f"{j.microbatches} micro-batches of {j.training.micro_batch}, policy {j.network.policy}, "
        f"fabric of {r.fabric_gpus} GPUs",
        f"iteration            {it:.3f} s",
        f"tokens/s             {r.tokens_per_s:,.0f}",
        f"TFLOP/s per GPU      {r.model_tflops_per_gpu:.1f} model (MFU {100 * r.mfu:.1f} % of {peak:g}), "
        f"{r.hardware_tflops_per_gpu:.1f} with recomputation ({100 * r.hardware_tflops_per_gpu / peak:.1f} %)",
        f"memory per GPU       {m.total_GiB:.1f} of {j.gpu.hbm_GiB:g} GiB on stage {worst} (weights "
        f"{m.weights / GiB:.1f}, gradients {m.grads / GiB:.1f}, optimizer {m.optimizer / GiB:.1f}, activations "
        f"{m.activations / GiB:.1f}, logits {m.logits / GiB:.1f}, reserved {m.reserved / GiB:.1f}"
        + (f", CP buffers {m.cp_buffers / GiB:.1f})" if m.cp_buffers else ")"),
        _energy_line(r),
        _sources_line(j),
        "collectives (one call):",
    ]
    for name, c in sorted(r.comm.items()):
        if c.medium != "none":
            lines.append(f"  {name:<26} {c.seconds * 1e3:10.3f} ms  {c.medium}{'  (' + c.note + ')' if c.note else ''}")
    s = r.critical_stage
    lines += ["", f"by stream (stage {s}, the last to finish)", *_table(list(by_stream(r).items()), it)]
    ops = list(by_operator(r).items())
    lines += ["", f"by operator (stage {s}, top {top_ops} of {len(ops)})", *_table(ops[:top_ops], it)]
    lines += ["", "critical path", *[f"  {x}" for x in critical_path(r)], "", bottleneck(r)]
    lines.append(f"(predicted in {r.wall_s:.2f} s, {r.fabric_wall_s:.2f} s of it simulating the fabric)")
    return lines


def prediction_json(r: Prediction) -> dict:
    """The headline figures as a JSON-able dict."""
    return {"job": r.job.name, "gpus": r.job.gpus, "iteration_s": r.iteration_s, "tokens_per_s": r.tokens_per_s,
            "model_tflops_per_gpu": r.model_tflops_per_gpu, "hardware_tflops_per_gpu": r.hardware_tflops_per_gpu,
            "mfu": r.mfu, "memory_GiB_per_stage": [m.total_GiB for m in r.memory],
            "by_stream_s": by_stream(r), "by_operator_s": by_operator(r), "bottleneck": bottleneck(r),
            "energy": None if r.energy is None else {
                "iteration_J": r.energy.total_J, "per_token_J": r.energy.per_token_J, "power_kW": r.energy.power_kW,
                "gpu_J": r.energy.gpu_J, "nic_J": r.energy.nic_J, "switch_J": r.energy.switch_J,
                "server_J": r.energy.server_J, "pue": r.energy.pue}}


def write_outputs(r: Prediction, out: Path) -> tuple[Path, Path]:
    """``report.md``, ``prediction.json`` and ``trace.json`` in ``out``; returns (report, trace)."""
    out.mkdir(parents=True, exist_ok=True)
    trace = write_trace(r, out / "trace.json")
    report = out / "report.md"
    report.write_text(f"# Prediction: {r.job.name}\n\nJob file: `{r.job.source}`. Trace: `trace.json` "
                      "(open in chrome://tracing or ui.perfetto.dev).\n\n```\n"
                      + "\n".join(summary_lines(r, top_ops=40)) + "\n```\n")
    (out / "prediction.json").write_text(json.dumps(prediction_json(r), indent=1))
    return report, trace


__all__ = ["kernel_sources", "prediction_json", "summary_lines", "write_outputs"]
