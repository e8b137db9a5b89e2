"""Telemetry and report of the all-to-all scenario (:mod:`scenarios.alltoall`): the switches'
counters polled during every phase with the live per-uplink line (GOR, in the GOR phase,
runs on its own poller),
and the per-phase section and bar plot appended to ``runs/<time>/report.md``.

>>> with poll_fabric(fabric, programmer, rates, 0.25, uplinks) as (poller, t0):  # doctest: +SKIP
...     ...
>>> append_alltoall(run_dir, result)                                         # doctest: +SKIP
"""
from __future__ import annotations

import math
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from controller.telemetry.poller import TelemetryPoller, fabric_links, p4rt_reader
from scenarios.common import live_line

PLOT = "alltoall_uplinks.png"


@contextmanager
def poll_fabric(fabric: Any, programmer: Any, rates: Mapping[tuple[str, int], float],
                period_s: float, uplinks: Sequence[str]) -> Iterator[tuple[Any, float]]:
    """(a started ``controller.telemetry.poller.TelemetryPoller`` over every fabric link,
    printing the live line once a second; its start time, monotonic)."""
    live = live_line(list(uplinks))
    shown = [-1.0]

    def on_tick(t_s: float, samples: Any) -> None:
        if t_s - shown[0] >= 1.0 - 1e-6:
            shown[0] = t_s
            live(t_s, samples)

    rate = next(iter(rates.values()), 0.0)       # every link measured against the uplinks' rate
    nominal = {(sw.name, p): rate for sw in fabric.switches for p in sw.ports} if rate else None
    conns = programmer.connections
    poller = TelemetryPoller({n: p4rt_reader(c) for n, c in conns.items()},
                             fabric_links(fabric, nominal), period_s, on_tick=on_tick)
    t0 = time.monotonic()
    poller.start()
    try:
        yield poller, t0
    finally:
        poller.stop()


def render_section(res: Any) -> str:
    """The markdown section of every phase (``res``: ``scenarios.alltoall.AllToAllResult``)."""
    phases = list(res.phases.values())
    uplinks = sorted({u for p in phases for u in p.uplink_tx})
    lines = ["", "## All-to-all: random vs TCCL source ports (vs random + GOR)", "",
             f"Uplink queue rate {res.queue_rate_pps:g} pps; random ports from seed {res.seed} "
             "(a draw the hash model predicts to collide); TCCL ports from `PortPlanner` on the "
             "programmed hash model (across pods `CrossPodPlanner`, NIC ports planned with the "
             "source ports); GOR off in both. The `gor` phase, when run, repeats the "
             "random ports with GOR on (decision log `gor/gor.jsonl`).", "",
             "| uplink | " + " | ".join(f"{p.ports}: predicted flows | {p.ports}: tx packets"
                                       for p in phases) + " |",
             "|---|" + "---|---|" * len(phases)]
    for u in uplinks:
        lines.append(f"| {u} | " + " | ".join(f"{p.predicted.get(u, 0)} | {p.uplink_tx.get(u, 0)}"
                                              for p in phases) + " |")
    cores = sorted({u for p in phases for u in getattr(p, "core_tx", {})})
    if cores:
        lines += ["", "Spine → core links (the third tier; their counters, not throttled):", "",
                  "| spine -> core | " + " | ".join(f"{p.ports}: predicted flows | {p.ports}: tx "
                                                   "packets" for p in phases) + " |",
                  "|---|" + "---|---|" * len(phases)]
        for u in cores:
            lines.append(f"| {u} | " + " | ".join(
                f"{p.core_predicted.get(u, 0)} | {p.core_tx.get(u, 0)}" for p in phases) + " |")
        flows = sum(phases[0].core_predicted.values())
        lines += ["", f"{flows} flows over {len(cores)} spine → core links: whole flows give a "
                  f"busiest ÷ mean of {math.ceil(flows / len(cores)) * len(cores) / flows:.3g} at "
                  "best (the busiest link carries at least ceil(flows / links))." if flows else ""]
    core_cols = " spine→core max/mean measured | spine→core max/mean predicted |" if cores else ""
    lines += ["", "| ports | max/mean measured | max/mean predicted |" + core_cols
              + " completion (s) | flows delivered | packets lost |",
              "|---|---|---|" + ("---|---|" if cores else "") + "---|---|---|"]
    for p in phases:
        core = (f" {p.core_max_over_mean} | {p.core_predicted_max_over_mean} |" if cores else "")
        lines.append(f"| {p.ports} | {p.max_over_mean} | {p.predicted_max_over_mean} |{core} "
                     f"{p.completion_s} | {p.delivered}/{len(p.flows)} | {p.lost_pkts} |")
    for p in phases:
        if p.ports == "gor":
            lines += ["", f"GOR: {p.orders} orders, {p.confirmed} confirmed on the counters; moves "
                      f"its 75 % rule refused: {', '.join(p.rejected) or 'none'}."]
    lines += ["", "Completion: first data packet → last acknowledgement over every flow of the "
              "phase (the NIC reports' monotonic clock); max/mean over the source leaves' "
              "uplinks, from the switches' tx counters (data, plus the ACKs and CNPs that the "
              "receivers of the other direction send).",
              "", f"![per-uplink packets per phase]({PLOT})", ""]
    lines += [f"- error: {e}" for e in res.errors]
    return "\n".join(lines) + "\n"


def write_phase_plot(run_dir: Path, res: Any) -> Path:
    """Bar chart of tx packets per uplink, one group of bars per phase."""
    import matplotlib  # noqa: PLC0415 — heavy: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 — heavy: matplotlib
    phases = list(res.phases.values())
    uplinks = sorted({u for p in phases for u in p.uplink_tx})
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(1, len(phases))
    for i, p in enumerate(phases):
        ax.bar([k + i * width for k in range(len(uplinks))], [p.uplink_tx.get(u, 0) for u in uplinks],
               width, label=f"{p.ports} (max/mean {p.max_over_mean}, {p.completion_s} s)")
    ax.set_xticks([k + width * (len(phases) - 1) / 2 for k in range(len(uplinks))], uplinks)
    ax.set_ylabel("tx packets")
    ax.set_title("all-to-all: packets per leaf uplink")
    ax.legend(fontsize="small")
    fig.tight_layout()
    path = run_dir / PLOT
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def append_alltoall(run_dir: Path, res: Any) -> list[Path]:
    """Append :func:`render_section` to ``report.md`` and write the bar plot."""
    with (run_dir / "report.md").open("a") as fh:
        fh.write(render_section(res))
    return [run_dir / "report.md", write_phase_plot(run_dir, res)]


__all__ = ["PLOT", "append_alltoall", "poll_fabric", "render_section", "write_phase_plot"]
