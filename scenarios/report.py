"""The scenario report: ``runs/<timestamp>/report.md`` and its PNG plots.

Files written by :func:`write_report` into the run directory:

* ``report.md`` — the scenario, the flows (source ports and predicted uplinks), the
  timeline, predicted vs measured load per uplink, busiest-uplink load ÷ mean, ECN marks,
  peak queue depth, and notes;
* ``utilisation.png`` — per-link utilisation over time (heat map, one row per link
  direction);
* ``ecn_marks.png`` — ECN marks per interval, per link;
* ``queue_depth.png`` — max queue depth per interval, per link;
* ``telemetry.json`` — the raw series (for re-plotting).

>>> rec = ScenarioRecord("default", seed=7, target="p4sim")          # doctest: +SKIP
>>> write_report(Path("runs/x"), rec, series)                        # doctest: +SKIP
[PosixPath('runs/x/report.md'), ...]
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

from scenarios.telemetry import LinkId, TelemetrySeries

PLOT_FILES = ("utilisation.png", "ecn_marks.png", "queue_depth.png")
LEGEND_ROWS = 14
"""Entries per legend column in the ECN and queue plots (a 4-inch figure holds about so many)."""


@dataclass(slots=True)
class FlowRecord:
    """One elephant as reported: who, which source port, which uplink the hash model
    predicts (``"b0r0l0->s1"``), and how many packets it sent.

    >>> FlowRecord("b0s0:5000->b1s0", "10.0.0.1", "10.1.0.1", 5000, "b0r0l0->s1").sport
    5000
    """

    label: str
    src_ip: str
    dst_ip: str
    sport: int
    predicted_uplink: str
    sent: int = 0


@dataclass(slots=True)
class ScenarioRecord:
    """What a scenario did, for the report: flows, timeline (``(t_s, text)``), settings.

    >>> r = ScenarioRecord("default", seed=1, target="p4sim"); r.event(0.0, "start")
    >>> r.timeline
    [(0.0, 'start')]
    """

    name: str
    seed: int
    target: str
    rail: int = 0
    flow_rate_pps: float = 0.0
    queue_rate_pps: Optional[float] = None
    duration_s: float = 0.0
    flows: list[FlowRecord] = field(default_factory=list)
    uplinks: list[str] = field(default_factory=list)  # the uplinks the elephants may take
    timeline: list[tuple[float, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)

    def event(self, t_s: float, text: str) -> None:
        """Add a timeline line at ``t_s`` seconds."""
        self.timeline.append((round(t_s, 2), text))

    def predicted_load(self) -> dict[str, int]:
        """Flows per uplink as the hash model predicts (every uplink listed)."""
        out = {u: 0 for u in self.uplinks}
        for f in self.flows:
            out[f.predicted_uplink] = out.get(f.predicted_uplink, 0) + 1
        return out

    def predicted_busiest(self) -> Optional[str]:
        """The uplink with the most predicted flows (None when tied or no flows)."""
        load = self.predicted_load()
        if not load:
            return None
        top = max(load.values())
        best = [u for u, n in load.items() if n == top]
        return best[0] if len(best) == 1 else None


@dataclass(slots=True)
class UplinkRow:
    """Predicted vs measured numbers of one uplink."""

    uplink: str
    predicted_flows: int
    measured_pkts: int
    share_pct: float
    mean_util_pct: float
    marks: int
    peak_qdepth: int


def uplink_rows(record: ScenarioRecord, series: TelemetrySeries) -> list[UplinkRow]:
    """One row per uplink of ``record.uplinks``, from the prediction and the series.

    >>> from scenarios.telemetry import LinkSample
    >>> s = TelemetrySeries(); s.add(LinkId("l", 1, "s0", "uplink"), LinkSample(1, 1, 30, 0, 2, 9, 0.3))
    >>> r = ScenarioRecord("d", 1, "p4sim", uplinks=["l->s0"]); uplink_rows(r, s)[0].marks
    2
    """
    by_name = {str(l): l for l in series.links()}
    totals, marks = series.totals(), series.marks()
    peaks, utils = series.peak_qdepth(), series.mean_util()
    pred = record.predicted_load()
    all_pkts = sum(totals.get(by_name[u], 0) for u in record.uplinks if u in by_name)
    rows = []
    for u in record.uplinks:
        l = by_name.get(u)
        pkts = totals.get(l, 0) if l else 0
        rows.append(UplinkRow(u, pred.get(u, 0), pkts,
                              round(100.0 * pkts / all_pkts, 1) if all_pkts else 0.0,
                              round(100.0 * utils.get(l, 0.0), 1) if l else 0.0,
                              marks.get(l, 0) if l else 0, peaks.get(l, 0) if l else 0))
    return rows


def measured_busiest(record: ScenarioRecord, series: TelemetrySeries) -> Optional[str]:
    """The uplink of ``record.uplinks`` that sent the most packets."""
    links = [l for l in series.links() if str(l) in record.uplinks]
    best = series.busiest(links)
    return str(best) if best is not None else None


def busiest_over_mean(record: ScenarioRecord, series: TelemetrySeries) -> float:
    """Measured packets of the busiest uplink ÷ mean over the uplinks (1.0 = balanced)."""
    links = [l for l in series.links() if str(l) in record.uplinks]
    return round(series.max_over_mean(links), 3) if links else 0.0


def render_markdown(record: ScenarioRecord, series: TelemetrySeries) -> str:
    """The text of ``report.md``."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started_at))
    rows = uplink_rows(record, series)
    pred_b, meas_b = record.predicted_busiest(), measured_busiest(record, series)
    lines = [
        f"# Scenario `{record.name}` — {when}",
        "",
        f"Target **{record.target}**, rail {record.rail}, seed **{record.seed}** (source ports "
        f"drawn at random from it), {len(record.flows)} elephants at {record.flow_rate_pps:g} "
        f"pps each for {record.duration_s:g} s, uplink queue rate "
        + (f"{record.queue_rate_pps:g} pps." if record.queue_rate_pps else "not set (unsupported "
           "on this target): utilisation is relative to link speed."),
        "",
        "Utilisation = tx packets/s ÷ the port's queue rate (pps) when a rate is set, else "
        "tx bits/s ÷ link speed (links without a rate of their own, e.g. spine downlinks, are "
        "measured against the uplinks' rate); read from the switches' `FabricEgress.telemetry.tx` "
        "counters. The return traffic toward block 0 is the receivers' RoCEv2 ACKs and CNPs.",
        "",
        "## Flows",
        "",
        "| flow | src | dst | UDP src port | predicted uplink | packets sent |",
        "|---|---|---|---|---|---|",
        *[f"| {f.label} | {f.src_ip} | {f.dst_ip} | {f.sport} | {f.predicted_uplink} | {f.sent} |"
          for f in record.flows],
        "",
        "## Timeline",
        "",
        *[f"- t = {t:5.2f} s — {text}" for t, text in record.timeline],
        "",
        "## Predicted vs measured per uplink",
        "",
        "| uplink | predicted flows | measured packets | share | mean util | ECN marks | peak qdepth (pkts) |",
        "|---|---|---|---|---|---|---|",
        *[f"| {r.uplink} | {r.predicted_flows} | {r.measured_pkts} | {r.share_pct:.1f} % | "
          f"{r.mean_util_pct:.1f} % | {r.marks} | {r.peak_qdepth} |" for r in rows],
        "",
        f"- Busiest uplink predicted by the hash model: **{pred_b or 'tie'}**; measured: "
        f"**{meas_b or '-'}** ({'match' if pred_b and pred_b == meas_b else 'no single prediction' if not pred_b else 'MISMATCH'}).",
        f"- Busiest-uplink load ÷ mean: **{busiest_over_mean(record, series):.2f}** (1.00 = balanced).",
        f"- ECN marks on the uplinks: **{sum(r.marks for r in rows)}**; peak queue depth "
        f"**{max((r.peak_qdepth for r in rows), default=0)}** packets.",
        "",
        "## All fabric links",
        "",
        "| link | kind | packets | ECN marks | peak qdepth |",
        "|---|---|---|---|---|",
        *[f"| {l} | {l.kind} | {n} | {series.marks()[l]} | {series.peak_qdepth()[l]} |"
          for l, n in series.totals().items()],
        "",
        "## Plots",
        "",
        "![utilisation](utilisation.png)",
        "",
        "![ECN marks](ecn_marks.png)",
        "",
        "![queue depth](queue_depth.png)",
        "",
    ]
    if record.notes:
        lines += ["## Results", "", *[f"- {n}" for n in record.notes], ""]
    return "\n".join(lines)


def _matrix(series: TelemetrySeries, attr: str, links: list[LinkId]) -> list[list[float]]:
    n = max((len(series.samples[l]) for l in links), default=0)
    return [[float(getattr(s, attr)) for s in series.samples[l]] + [0.0] * (n - len(series.samples[l]))
            for l in links]


def write_plots(run_dir: Path, series: TelemetrySeries) -> list[Path]:
    """The three PNGs (matplotlib, Agg backend); the paths written."""
    import matplotlib  # noqa: PLC0415 — heavy: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 — heavy: matplotlib

    links = series.links()
    times = series.times()
    names = [str(l) for l in links]
    paths = []
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.35 * max(1, len(links))))
    data = [[100.0 * v for v in row] for row in _matrix(series, "util", links)] or [[0.0]]
    extent = (0.0, times[-1] if times else 1.0, len(links) - 0.5 if links else 0.5, -0.5)
    im = ax.imshow(data, aspect="auto", cmap="inferno", vmin=0, vmax=max(100.0, max(map(max, data))),
                   extent=extent, interpolation="nearest")
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("time (s)")
    ax.set_title("per-link utilisation (%)")
    fig.colorbar(im, ax=ax, label="util %")
    fig.tight_layout()
    paths.append(run_dir / "utilisation.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)
    for fname, attr, title, ylabel in (("ecn_marks.png", "marks", "ECN marks per interval", "marks"),
                                       ("queue_depth.png", "max_qdepth", "max queue depth per interval",
                                        "packets")):
        fig, ax = plt.subplots(figsize=(10, 4))
        for l in links:
            ss = series.samples[l]
            if any(getattr(s, attr) for s in ss):
                ax.plot([s.t_s for s in ss], [getattr(s, attr) for s in ss], label=str(l))
        ax.set_xlabel("time (s)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        handles = ax.get_legend_handles_labels()[0]
        if handles:
            # a column holds about LEGEND_ROWS entries in the 4-inch figure: a two-pod
            # fabric's dozens of links in one column overflowed it (tight_layout refused)
            ax.legend(fontsize="small", loc="upper right", ncol=-(-len(handles) // LEGEND_ROWS))
        else:
            ax.text(0.5, 0.5, "none", transform=ax.transAxes, ha="center")
        fig.tight_layout()
        paths.append(run_dir / fname)
        fig.savefig(paths[-1], dpi=90)
        plt.close(fig)
    return paths


def series_to_json(series: TelemetrySeries) -> str:
    """The raw series as JSON: ``{"b0r0l0->s0": {"kind", "port", "samples": [...]}}``."""
    return json.dumps({str(l): {"switch": l.switch, "port": l.port, "peer": l.peer, "kind": l.kind,
                                "samples": [asdict(s) for s in ss]}
                       for l, ss in series.samples.items()}, indent=1)


def new_run_dir(root: Path, when: Optional[float] = None) -> Path:
    """``root/<YYYYmmdd-HHMMSS>`` (a suffix when it exists), created."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when or time.time()))
    path, i = root / stamp, 1
    while path.exists():
        path, i = root / f"{stamp}-{i}", i + 1
    path.mkdir(parents=True)
    return path


def report_failures(run_dir: Path, scenario: str, reasons: list[str],
                    say: Callable[[str], None]) -> int:
    """Say why ``scenario`` measured nothing (one line a reason), add them to the run's
    ``report.md`` under "## The scenario failed", and return the exit status: 1 when there
    is a reason, else 0. A scenario that measured nothing never ends with success.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> report_failures(d, "story", ["GOR sent no move order"], print)
    story: FAILED: GOR sent no move order
    1
    >>> "## The scenario failed" in (d / "report.md").read_text()
    True
    """
    for why in reasons:
        say(f"{scenario}: FAILED: {why}")
    if reasons:
        with (run_dir / "report.md").open("a") as fh:
            fh.write("\n## The scenario failed\n\n" + "".join(f"- {w}\n" for w in reasons))
    return 1 if reasons else 0


def write_report(run_dir: Path, record: ScenarioRecord, series: TelemetrySeries) -> list[Path]:
    """Write ``report.md``, the plots and ``telemetry.json`` into ``run_dir``; their paths."""
    run_dir.mkdir(parents=True, exist_ok=True)
    md = run_dir / "report.md"
    md.write_text(render_markdown(record, series))
    raw = run_dir / "telemetry.json"
    raw.write_text(series_to_json(series))
    return [md, *write_plots(run_dir, series), raw]


__all__ = ["FlowRecord", "PLOT_FILES", "ScenarioRecord", "UplinkRow", "busiest_over_mean",
           "measured_busiest", "new_run_dir", "render_markdown", "report_failures", "series_to_json",
           "uplink_rows", "write_plots", "write_report"]
