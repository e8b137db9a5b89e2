"""Tables, plots and the markdown report of simulation runs (``runs/sim-<time>/``).

Plots (matplotlib, Agg): ``fct_cdf.png`` (CDF of the completion times of the job's flows
over the fabric, NVLink left out, per policy, first phase of the largest scenario), ``tier_util.png`` (utilisation of the
leaf-uplink and spine-downlink tiers per policy), ``job_time_vs_scale.png`` (collective
time per policy against the number of GPUs).

Example::

    >>> print(format_table([["a", "1"], ["bb", "22"]], ["k", "v"]))
    k   v
    --  --
    a   1
    bb  22
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from sim.runner import ScenarioResult

REPO = Path(__file__).resolve().parent.parent


def format_table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    """A plain left-aligned text table."""
    cols = list(zip(*([list(header)] + [list(r) for r in rows])))
    width = [max(len(c) for c in col) for col in cols]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, width)).rstrip(),
             "  ".join("-" * w for w in width)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, width)).rstrip() for r in rows]
    return "\n".join(lines)


def _fmt_s(x: float) -> str:
    if not np.isfinite(x):
        return "undeliverable"
    return f"{x * 1e3:.3f} ms" if x >= 1e-3 else f"{x * 1e6:.1f} us"


def result_rows(res: ScenarioResult) -> list[list[str]]:
    """One row per policy: GPUs, collective time, slowdown vs ideal, max uplink load,
    GOR moves, wall time."""
    rows = []
    n = res.job.num_ranks
    for r in res.results:
        up = r.tier_util(res.sf, "leaf_up")
        moves = sum(p.gor_moves + p.gor_overrides for p in r.phases)
        pooled = r.policy == "ideal"          # the ideal bound loads pooled bundles, not links
        rows.append([res.scenario.name, str(n), r.policy, _fmt_s(r.collective_s),
                     f"{res.slowdown(r.policy):.2f}", "-" if pooled else f"{up.max(initial=0):.2f}",
                     "-" if pooled else f"{up[up > 0].mean() if (up > 0).any() else 0:.2f}",
                     str(moves) if r.policy == "tccl_gor" else "-",
                     str(r.undeliverable), f"{r.wall_s:.1f}"])
    return rows


HEADER = ["scenario", "gpus", "policy", "collective", "x ideal", "uplink util max", "mean used",
          "gor moves", "undeliverable", "wall s"]


def run_dir(base: Optional[Path] = None) -> Path:
    """A new ``runs/sim-<time>/`` folder."""
    d = (base or REPO / "runs") / time.strftime("sim-%Y%m%d-%H%M%S")
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_plots(results: Sequence[ScenarioResult], out: Path) -> list[Path]:
    """The three plots of the module docstring; returns their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    paths = []
    big = max(results, key=lambda r: r.job.num_ranks)
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in big.results:
        ph = r.phases[0]
        f = np.sort(ph.fct_s[np.isfinite(ph.fct_s) & (ph.hops > 0)])      # fabric flows, not NVLink
        if len(f):
            ax.step(f * 1e6, np.arange(1, len(f) + 1) / len(f), where="post", label=r.policy)
    ax.set_xlabel("completion time of the job's fabric flows (us), one step")
    ax.set_ylabel("CDF")
    ax.set_title(f"{big.scenario.name}: {big.job.num_ranks} GPUs")
    ax.legend()
    paths.append(out / "fct_cdf.png")
    fig.tight_layout()
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharey=True)
    for ax, tier in zip(axes, ("leaf_up", "spine_down")):
        data = [r.tier_util(big.sf, tier) for r in big.results if r.policy != "ideal"]
        data = [d[d > 0] if (d > 0).any() else d for d in data]
        ax.boxplot(data, tick_labels=[r.policy for r in big.results if r.policy != "ideal"])
        ax.set_title(f"{tier} links in use")
        ax.set_ylabel("job bytes / (capacity x step time)")
    fig.tight_layout()
    paths.append(out / "tier_util.png")
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    policies = [r.policy for r in results[0].results]
    for p in policies:
        xs = [r.job.num_ranks for r in results]
        ys = [r.by_policy()[p].collective_s for r in results]
        ax.plot(xs, [y * 1e3 for y in ys], marker="o", label=p)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("collective time (ms)")
    ax.legend()
    fig.tight_layout()
    paths.append(out / "job_time_vs_scale.png")
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)
    return paths


def write_report(results: Sequence[ScenarioResult], out: Path, title: str, notes: str = "") -> Path:
    """``report.md``: the table, what was simulated, the plots."""
    rows = [row for r in results for row in result_rows(r)]
    sc = results[0].scenario
    w = sc.workload
    lines = [f"# {title}", "",
             f"Workload: {w.collective} ({w.algorithm}, order {w.order}, {w.channels} channel(s)), "
             f"{w.size_bytes} bytes per rank; placement {sc.job.placement}; "
             f"background flows {sc.background.flows}; failures {sc.failures or 'none'}.", "",
             "Times are predictions: simulated max-min transfer time per step plus "
             f"{sc.model.per_host_s * 1e6:g} us per host and {sc.model.per_hop_s * 1e6:g} us per switch hop, "
             "times the step count. `x ideal` = over the perfectly balanced bound.", ""]
    if notes:
        lines += [notes, ""]
    lines += ["```", format_table(rows, HEADER), "```", ""]
    for r in results:
        for p in r.results:
            if p.undeliverable:
                lines.append(f"- {r.scenario.name} / {p.policy}: {p.undeliverable} job flows undeliverable, "
                             f"e.g. {'; '.join(p.examples[:2])}")
    lines += ["", "![FCT CDF](fct_cdf.png)", "", "![tier utilisation](tier_util.png)", "",
              "![job time vs scale](job_time_vs_scale.png)", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


__all__ = ["HEADER", "format_table", "result_rows", "run_dir", "write_plots", "write_report"]
