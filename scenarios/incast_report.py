"""Figures, reference and report of the incast scenario (:mod:`scenarios.incast`): one
phase's figures from the switches' polled counters and the NIC reports, what the outside
reference predicts for static and dynamic thresholds, the checks of a run against it, and
the section appended to ``runs/<time>/report.md``. Pure functions: no switch, no network.

The reference (cited in scenarios/README.md, "Incast"):

* Choudhury & Hahne, "Dynamic queue length thresholds for shared-memory packet switches",
  IEEE/ACM ToN 6(2), 1998: a queue may grow while it is below ``alpha * (B - Q)``; with
  ``S`` queues congested each settles at ``alpha * B / (1 + alpha * S)`` and
  ``B / (1 + alpha * S)`` of the buffer stays free, so the buffer never overflows and a
  queue alone may take ``alpha * B / (1 + alpha)``; static thresholds either cap a lone
  queue at ``T`` or, when ``S * T > B``, let the queues overflow the buffer.
* Vendors' shared-buffer PFC (Dell OS9 configuration guide, S4048-ON, "Priority-Based
  Flow Control Using Dynamic Buffer Method": pause frames at thresholds that depend on how
  many ports are congested; Cisco Catalyst 3850, "Dynamic Thresholding and Scaling":
  allocations scale down as the shared buffer is used up): under incast the switch
  pauses earlier, alone it lets a port queue deeper.

>>> jain_index([10.0, 10.0, 10.0, 10.0]), jain_index([10.0, 0.0])
(1.0, 0.5)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from p4src.buffermodel import DynamicThresholds, PfcAlpha, SharedBuffer, lone_port_xoff_cells

MODES = ("static", "dynamic")
LOADS = ("lone", "incast")
QDEPTH_BIN_PKTS = 4
"""Resolution of the switches' queue-depth histogram (p4src/include/define.p4)."""
QDEPTH_OPEN_BIN_PKTS = 60
"""The histogram's last bin is open-ended: a peak of 60 means "60 or more"."""


def jain_index(values: Sequence[float]) -> Optional[float]:
    """Jain's fairness index ``(sum x)^2 / (n * sum x^2)``: 1 when every flow gets the
    same, ``1/n`` when one gets everything; None without flows or throughput.

    >>> jain_index([3.0, 1.0]), jain_index([]), jain_index([0.0, 0.0])
    (0.8, None, None)
    """
    if not values:
        return None
    sq = sum(v * v for v in values)
    if sq <= 0:
        return None
    return round(sum(values) ** 2 / (len(values) * sq), 3)


@dataclass(slots=True)
class FlowFigures:
    """One flow of a phase, from its NIC reports: packets sent (retransmissions in),
    received, goodput, PSNs the receiver found missing, PAUSE frames its NIC honoured.

    >>> FlowFigures("b0s0:50000->b1s0", 100, 98, 0.8, 2).lost_pkts
    2
    """

    label: str
    sent_pkts: int
    recv_pkts: int
    goodput_mbps: float
    lost_pkts: int = 0
    pauses: int = 0
    ce_pkts: int = 0


@dataclass(slots=True)
class PhaseFigures:
    """One run of one load (``lone``: one flow alone; ``incast``: every sender) under one
    threshold mode. Switch figures are summed over every polled port of every switch over
    the phase: ``pause_frames`` (PFC frames the switches generated, PAUSE and RESUME:
    ``FabricEgress.telemetry.pfc_tx``), ``ecn_marks``, ``switch_drops`` (pipeline drops);
    ``peak_qdepth_pkts``: the receiver's leaf port, the lower edge of its deepest 4-packet
    bin; ``samples``: polled intervals in the phase (0: nothing was measured).

    >>> p = PhaseFigures("static", "incast", [FlowFigures("a", 10, 10, 1.0),
    ...                                       FlowFigures("b", 10, 8, 1.0, lost_pkts=2)])
    >>> p.drops, p.jain, p.delivered
    (2, 1.0, 2)
    """

    mode: str
    load: str
    flows: list[FlowFigures] = field(default_factory=list)
    duration_s: float = 0.0
    pause_frames: int = 0
    ecn_marks: int = 0
    switch_drops: int = 0
    peak_qdepth_pkts: int = 0
    samples: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def lost_pkts(self) -> int:
        """PSNs the receivers found missing (a packet dropped anywhere on the path)."""
        return sum(f.lost_pkts for f in self.flows)

    @property
    def drops(self) -> int:
        """Packets lost: PSNs missing at the receivers plus the switches' pipeline drops."""
        return self.lost_pkts + self.switch_drops

    @property
    def delivered(self) -> int:
        """Flows whose receiver got at least one packet."""
        return sum(1 for f in self.flows if f.recv_pkts > 0)

    @property
    def jain(self) -> Optional[float]:
        """Jain's index over the flows' goodputs."""
        return jain_index([f.goodput_mbps for f in self.flows])

    @property
    def nic_pauses(self) -> int:
        """PAUSE frames the senders' NICs honoured."""
        return sum(f.pauses for f in self.flows)

    def why_unmeasured(self) -> list[str]:
        """Why this phase measured nothing (empty when it measured what it tells)."""
        name = f"{self.mode} {self.load}"
        out = [f"{name}: {e}" for e in self.errors]
        if not self.flows:
            out.append(f"{name}: no flow ran")
        elif self.delivered < len(self.flows):
            out.append(f"{name}: {len(self.flows) - self.delivered} of {len(self.flows)} flows "
                       "delivered nothing")
        if self.samples == 0:
            out.append(f"{name}: no switch counters were polled during the phase")
        return out


def window(samples: Iterable[Any], start_s: float, end_s: float) -> list[Any]:
    """The polled intervals (``LinkSample``: ``t_s`` its end, ``dt_s`` its length) that
    overlap ``(start_s, end_s]``.

    >>> from types import SimpleNamespace as S
    >>> [s.t_s for s in window([S(t_s=1.0, dt_s=0.5), S(t_s=2.0, dt_s=0.5),
    ...                          S(t_s=3.2, dt_s=0.5)], 1.0, 3.0)]
    [2.0, 3.2]
    """
    return [s for s in samples if s.t_s > start_s and s.t_s - s.dt_s < end_s]


def switch_figures(series: Any, start_s: float, end_s: float,
                   port_link: Any) -> tuple[int, int, int, int, int]:
    """(pause frames, ECN marks, pipeline drops, peak queue depth of ``port_link``,
    intervals) over ``series`` (a ``TelemetrySeries``: ``samples`` link → list) between
    ``start_s`` and ``end_s`` (seconds since the poller started)."""
    pfc = marks = drops = n = 0
    peak = 0
    for link, ss in series.samples.items():
        part = window(ss, start_s, end_s)
        n += len(part)
        pfc += sum(s.pfc_tx for s in part)
        marks += sum(s.marks for s in part)
        drops += sum(s.drops for s in part)
        if link == port_link:
            peak = max([peak, *(s.max_qdepth for s in part)])
    return pfc, marks, drops, peak, n


@dataclass(frozen=True, slots=True)
class Prediction:
    """What the thresholds give on this run's buffer, in packets of ``cells_per_pkt``
    cells: the static XOFF; the dynamic XOFF of a group alone and of each of ``groups``
    groups congested together (Choudhury & Hahne's steady state, bit-exact with the
    switch: :func:`p4src.buffermodel.lone_port_xoff_cells`); the buffer (the target's
    queue capacity, ``buffer_pkts``).

    >>> p = predict(32, DynamicThresholds(SharedBuffer(576, 7), {3: PfcAlpha(2)}), 9, 3, 64)
    >>> p.dynamic_lone_xoff_pkts, p.dynamic_incast_xoff_pkts, p.static_total_pkts, p.dynamic_total_pkts
    (43, 19, 96, 57)
    """

    static_xoff_pkts: int
    dynamic_lone_xoff_pkts: int
    dynamic_incast_xoff_pkts: int
    groups: int
    buffer_pkts: int
    cells_per_pkt: int

    @property
    def static_total_pkts(self) -> int:
        """What ``groups`` statically paused groups may hold together."""
        return self.groups * self.static_xoff_pkts

    @property
    def dynamic_total_pkts(self) -> int:
        """What ``groups`` dynamically paused groups hold together."""
        return self.groups * self.dynamic_incast_xoff_pkts


def predict(static_xoff_pkts: int, dyn: DynamicThresholds, cells_per_pkt: int, groups: int,
            buffer_pkts: int, priority: int = 3) -> Prediction:
    """The :class:`Prediction` for static XOFF ``static_xoff_pkts`` and ``dyn``."""
    def pkts(cells: int) -> int:
        return math.ceil(cells / cells_per_pkt)
    return Prediction(static_xoff_pkts, pkts(lone_port_xoff_cells(dyn, priority, 1)),
                      pkts(lone_port_xoff_cells(dyn, priority, max(1, groups))), max(1, groups),
                      buffer_pkts, cells_per_pkt)


@dataclass(frozen=True, slots=True)
class Check:
    """One expectation of the reference against the run: ``ok`` None when the run did not
    measure what it needs, or when the expectation does not apply to the target
    (``not_applicable``: why, e.g. a switch MAC that honours no PAUSE).

    >>> Check("n", "e", "m", None, "no PFC").verdict, Check("n", "e", "m", False).verdict
    ('not applicable (no PFC)', 'DISAGREES')
    """

    name: str
    expected: str
    measured: str
    ok: Optional[bool]
    not_applicable: str = ""

    @property
    def verdict(self) -> str:
        """``agrees`` / ``DISAGREES`` / ``not measured`` / ``not applicable (why)``."""
        if self.not_applicable:
            return f"not applicable ({self.not_applicable})"
        return {True: "agrees", False: "DISAGREES", None: "not measured"}[self.ok]


NO_PFC_REASON = ("the target's switch MAC honours no PAUSE frame: the spines upstream of the "
                 "incast leaf are never paused, so the shared buffer's guarantee cannot hold")
"""Why the checks that need every upstream hop to honour PFC do not apply (BMv2: its MAC
counts PFC frames and pauses nothing; scenarios/README.md, "On BMv2 (issue 29)")."""


def checks(phases: dict[tuple[str, str], PhaseFigures], pred: Prediction,
           pfc_honoured: bool = True) -> list[Check]:
    """The run against the reference (``phases``: (mode, load) → figures).
    ``pfc_honoured`` False (a target whose switches pause nothing, BMv2): the two incast
    checks, which hold only when every upstream hop honours PFC, are "not applicable"
    (:data:`NO_PFC_REASON`) with their figures still shown; the lone port's (its sender is a
    NIC, which honours PAUSE) and the buffer sizes' still apply.

    >>> ph = {("static", "lone"): PhaseFigures("static", "lone", peak_qdepth_pkts=32),
    ...       ("dynamic", "lone"): PhaseFigures("dynamic", "lone", peak_qdepth_pkts=40)}
    >>> [c.ok for c in checks(ph, predict(32, _EXAMPLE, 9, 3, 64))]
    [True, None, None, True]
    >>> [c.verdict[:14] for c in checks(ph, predict(32, _EXAMPLE, 9, 3, 64), pfc_honoured=False)]
    ['agrees', 'not applicable', 'not applicable', 'agrees']
    """
    na = "" if pfc_honoured else NO_PFC_REASON
    out: list[Check] = []
    sl, dl = phases.get(("static", "lone")), phases.get(("dynamic", "lone"))
    si, di = phases.get(("static", "incast")), phases.get(("dynamic", "incast"))
    out.append(Check(
        "a port alone queues deeper with dynamic thresholds",
        f"dynamic lone peak > static lone peak (XOFF {pred.dynamic_lone_xoff_pkts} vs "
        f"{pred.static_xoff_pkts} packets)",
        f"{dl.peak_qdepth_pkts if dl else '-'} vs {sl.peak_qdepth_pkts if sl else '-'} packets",
        None if not (sl and dl) else dl.peak_qdepth_pkts > sl.peak_qdepth_pkts))
    out.append(Check(
        "under incast dynamic thresholds lose no more than static",
        f"dynamic drops <= static drops (dynamic groups hold {pred.dynamic_total_pkts}, "
        f"static up to {pred.static_total_pkts}, of a {pred.buffer_pkts}-packet buffer)",
        f"{di.drops if di else '-'} vs {si.drops if si else '-'}",
        None if not (si and di) or na else di.drops <= si.drops, na))
    out.append(Check(
        "under incast dynamic thresholds keep the incast port's queue within the buffer",
        f"dynamic incast peak under {min(pred.buffer_pkts, QDEPTH_OPEN_BIN_PKTS)} packets "
        f"(the buffer, or the histogram's open last bin) and at most static's",
        f"{_depth(di) if di else '-'} vs {_depth(si) if si else '-'}",
        None if not (si and di) or na else (
            di.peak_qdepth_pkts < min(pred.buffer_pkts, QDEPTH_OPEN_BIN_PKTS)
            and di.peak_qdepth_pkts <= si.peak_qdepth_pkts), na))
    out.append(Check(
        "the buffer sizes make the case",
        f"static groups may overflow ({pred.static_total_pkts} > {pred.buffer_pkts}), "
        f"dynamic ones not ({pred.dynamic_total_pkts} <= {pred.buffer_pkts}), dynamic lone "
        f"XOFF above static",
        f"{pred.groups} ingress groups, {pred.cells_per_pkt} cells a packet",
        pred.static_total_pkts > pred.buffer_pkts >= pred.dynamic_total_pkts
        and pred.dynamic_lone_xoff_pkts > pred.static_xoff_pkts))
    return out


def _depth(p: PhaseFigures) -> str:
    return f"{p.peak_qdepth_pkts}+" if p.peak_qdepth_pkts >= QDEPTH_OPEN_BIN_PKTS \
        else str(p.peak_qdepth_pkts)


def _cell(v: Any) -> str:
    return "-" if v is None else (f"{v:g}" if isinstance(v, float) else str(v))


def render_section(phases: dict[tuple[str, str], PhaseFigures], pred: Prediction,
                   settings: Sequence[str], pfc_honoured: bool = True) -> str:
    """The markdown section: settings, prediction, the side-by-side table, the checks
    (:func:`checks`, with ``pfc_honoured``)."""
    order = [(m, l) for l in LOADS for m in MODES if (m, l) in phases]
    head = " | ".join(f"{m} {l}" for m, l in order)
    rows = [
        ("flows delivered", lambda p: f"{p.delivered}/{len(p.flows)}"),
        ("PFC frames sent by the switches (PAUSE + RESUME)", lambda p: p.pause_frames),
        ("PAUSE frames honoured by the senders' NICs", lambda p: p.nic_pauses),
        ("ECN marks (switches)", lambda p: p.ecn_marks),
        ("drops (PSNs missing at the receivers + pipeline drops)", lambda p: p.drops),
        ("peak queue at the incast port (packets, 4-packet bins)", _depth),
        ("Jain index over the flows' goodput", lambda p: p.jain),
        ("goodput per flow (Mb/s)",
         lambda p: " ".join(f"{f.goodput_mbps:.3g}" for f in p.flows)),
    ]
    lines = ["", "## Incast: static vs dynamic thresholds", "", *settings, "",
             "Prediction (packets; Choudhury & Hahne's steady state on this buffer, "
             "`p4src.buffermodel.lone_port_xoff_cells`): static XOFF "
             f"{pred.static_xoff_pkts} for every group, {pred.groups} groups up to "
             f"{pred.static_total_pkts}; dynamic XOFF {pred.dynamic_lone_xoff_pkts} alone, "
             f"{pred.dynamic_incast_xoff_pkts} each with {pred.groups} groups "
             f"({pred.dynamic_total_pkts} together); buffer {pred.buffer_pkts}.", "",
             f"| | {head} |", "|---|" + "---|" * len(order)]
    for name, get in rows:
        lines.append(f"| {name} | " + " | ".join(_cell(get(phases[k])) for k in order) + " |")
    lines += ["", "Checks against the reference (Choudhury & Hahne, \"Dynamic queue length "
              "thresholds for shared-memory packet switches\", IEEE/ACM ToN 6(2), 1998; vendors' "
              "shared-buffer PFC: scenarios/README.md, \"Incast\"):", ""]
    for c in checks(phases, pred, pfc_honoured):
        lines.append(f"- **{c.verdict}**: {c.name}: expected {c.expected}; measured {c.measured}")
    return "\n".join(lines) + "\n"


def append_incast(run_dir: Path, phases: dict[tuple[str, str], PhaseFigures],
                  pred: Prediction, settings: Sequence[str], pfc_honoured: bool = True) -> Path:
    """Append :func:`render_section` to ``run_dir/report.md``; its path."""
    md = run_dir / "report.md"
    with md.open("a") as fh:
        fh.write(render_section(phases, pred, settings, pfc_honoured))
    return md


_EXAMPLE = DynamicThresholds(SharedBuffer(576, 7), {3: PfcAlpha(2)})    # the doctests'

__all__ = ["Check", "FlowFigures", "LOADS", "MODES", "NO_PFC_REASON", "PhaseFigures", "Prediction",
           "append_incast", "checks", "jain_index", "predict", "render_section",
           "switch_figures", "window"]
