"""A sweep's outputs in its run folder: ``results.csv`` (every point, ``sim.sweep.run.COLUMNS``),
``results.md`` (the best configuration per scale, then every point), ``best_per_scale.png``
(the fastest configuration at every GPU count, labelled) and ``pareto.png`` (iteration
time vs GPUs of every feasible point, the Pareto front — no point is faster with as few
GPUs — drawn as a line).

Example::

    >>> rows = [{"gpus": 8, "iteration_s": 2.0, "status": "ok", "label": "a"},
    ...         {"gpus": 8, "iteration_s": 1.5, "status": "ok", "label": "b"},
    ...         {"gpus": 16, "iteration_s": 1.6, "status": "ok", "label": "c"},
    ...         {"gpus": 16, "iteration_s": 1.0, "status": "ok", "label": "d"}]
    >>> [r["label"] for r in best_per_scale(rows)], [r["label"] for r in pareto_front(rows)]
    (['b', 'd'], ['b', 'd'])
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Sequence

from sim.sweep.run import COLUMNS


def _ok(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("status") == "ok" and math.isfinite(float(r["iteration_s"]))]


def best_per_scale(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The feasible point of least iteration time at every GPU count (ascending GPUs)."""
    best: dict[int, dict[str, Any]] = {}
    for r in _ok(rows):
        g = int(r["gpus"])
        if g not in best or r["iteration_s"] < best[g]["iteration_s"]:
            best[g] = r
    return [best[g] for g in sorted(best)]


def pareto_front(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Feasible points no other point beats on both GPUs (fewer or equal) and time (less)."""
    front: list[dict[str, Any]] = []
    for r in sorted(_ok(rows), key=lambda x: (int(x["gpus"]), float(x["iteration_s"]))):
        if not front or r["iteration_s"] < front[-1]["iteration_s"]:
            if front and int(front[-1]["gpus"]) == int(r["gpus"]):
                continue
            front.append(r)
    return front


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """Every point as one CSV row (``COLUMNS``)."""
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt(r.get(k, "")) for k in COLUMNS})
    return path


def markdown(rows: Sequence[dict[str, Any]], title: str, wall_s: float, engine: str) -> str:
    """The results as markdown: best per scale, then every point."""
    cols = ("label", "gpus", "tp", "pp", "dp", "policy", "seed", "status", "iteration_s", "tokens_per_s",
            "tflops_per_gpu", "mfu", "memory_GiB", "error")
    ok = len(_ok(rows))
    out = [f"# Sweep {title}", "",
           f"{len(rows)} points ({ok} feasible) in {wall_s:.1f} s on {engine}.", "",
           "## Best configuration per scale", "",
           "| GPUs | configuration | iteration (s) | tokens/s | TFLOP/s per GPU | MFU | bottleneck |",
           "|---|---|---|---|---|---|---|"]
    for r in best_per_scale(rows):
        out.append(f"| {r['gpus']} | {r['label']} | {r['iteration_s']:.4g} | {r['tokens_per_s']:.4g} | "
                   f"{r['tflops_per_gpu']:.4g} | {r['mfu']:.1%} | {r['bottleneck']} |")
    out += ["", "## Every point", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(_fmt(r.get(c, "")).replace("|", "/") for c in cols) + " |")
    return "\n".join(out) + "\n"


def write_plots(rows: Sequence[dict[str, Any]], folder: Path, title: str) -> list[Path]:
    """``best_per_scale.png`` and ``pareto.png`` (nothing when no point is feasible)."""
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    ok = _ok(rows)
    if not ok:
        return []
    best = best_per_scale(rows)
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = [str(r["gpus"]) for r in best]
    bars = ax.bar(xs, [r["iteration_s"] for r in best], color="tab:blue")
    for b, r in zip(bars, best):
        ax.annotate(f"tp{r['tp']} pp{r['pp']} dp{r['dp']}\n{r['policy']}", (b.get_x() + b.get_width() / 2,
                    b.get_height()), ha="center", va="bottom", fontsize=7)
    ax.set_ylim(0, max(r["iteration_s"] for r in best) * 1.2)      # room for the labels
    ax.set_xlabel("GPUs")
    ax.set_ylabel("iteration time (s)")
    ax.set_title(f"{title}: best configuration per scale")
    fig.tight_layout()
    p1 = folder / "best_per_scale.png"
    fig.savefig(p1, dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4))
    for pol in sorted({r["policy"] for r in ok}):
        pts = [r for r in ok if r["policy"] == pol]
        ax.scatter([r["gpus"] for r in pts], [r["iteration_s"] for r in pts], label=pol, s=18, alpha=0.7)
    front = pareto_front(rows)
    ax.plot([r["gpus"] for r in front], [r["iteration_s"] for r in front], "k--", lw=1, label="Pareto front")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("iteration time (s)")
    ax.set_title(f"{title}: iteration time vs GPUs")
    ax.legend(fontsize=8)
    fig.tight_layout()
    p2 = folder / "pareto.png"
    fig.savefig(p2, dpi=120)
    plt.close(fig)
    return [p1, p2]


def write_outputs(rows: Sequence[dict[str, Any]], folder: Path, title: str, wall_s: float,
                  engine: str) -> list[Path]:
    """CSV, markdown and plots into ``folder`` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    md = folder / "results.md"
    md.write_text(markdown(rows, title, wall_s, engine))
    return [write_csv(rows, folder / "results.csv"), md, *write_plots(rows, folder, title)]


__all__ = ["best_per_scale", "markdown", "pareto_front", "write_csv", "write_outputs", "write_plots"]
