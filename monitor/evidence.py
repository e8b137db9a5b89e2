"""The records monitoring's parts exchange: link directions, probe paths and their
statistics, the evidence snapshot the localiser reads, and its verdicts.

This module is the contract between the probe planner and prober
(:mod:`monitor.probes`, :mod:`monitor.prober`), the tomography
(:mod:`monitor.tomography`), the localiser (:mod:`monitor.localiser`) and the monitor
service. The names it shares with the testbed's fault injector — :data:`FAULT_KINDS`,
:func:`component`, :class:`LinkDir` — belong to ``topo.components`` (the testbed never
imports the monitor) and are re-exported here.

Nodes, link directions and component names are described in ``topo.components``.

>>> LinkDir.parse("b0r0l0->s0").reverse()
LinkDir(src='s0', dst='b0r0l0', src_port=None)
>>> component("cable", "s0", "b0r0l0")
'cable b0r0l0<->s0'
>>> Verdict("gray_link", component("link", "b0r0l0", "s0"), 0.9, ("probe loss 20%",), 12.5).component
'link b0r0l0->s0'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from topo.components import FAULT_KINDS, KIND_COMPONENT, LinkDir, component


@dataclass(frozen=True, slots=True)
class ProbePath:
    """One probe stream: from NIC ``src_nic`` to NIC ``dst_nic`` with UDP source port
    ``sport`` (destination port 4791, RoCEv2), and the link directions the hash model puts
    it on, in order (``links``: NIC->leaf, …, leaf->NIC).

    >>> p = ProbePath("p0", "b0s0-eth0", "b1s0-eth0", "10.0.0.1", "10.1.0.1", 49152,
    ...               (LinkDir("b0s0-eth0", "b0r0l0"), LinkDir("b0r0l0", "s0")))
    >>> [str(l) for l in p.links]
    ['b0s0-eth0->b0r0l0', 'b0r0l0->s0']
    """

    name: str
    src_nic: str
    dst_nic: str
    src_ip: str
    dst_ip: str
    sport: int
    links: tuple[LinkDir, ...]
    switches: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PathStats:
    """What one probe path measured over a window: probes sent, received (good ICRC),
    received with a bad ICRC (``corrupted``), one-way latency median in ms (``None`` with
    nothing received).

    >>> PathStats("p0", 10.0, sent=100, received=80).loss
    0.2
    """

    path: str
    window_s: float
    sent: int
    received: int
    corrupted: int = 0
    latency_ms_p50: Optional[float] = None

    @property
    def loss(self) -> float:
        """Fraction of probes not received with a good ICRC (0 when nothing was sent)."""
        if self.sent <= 0:
            return 0.0
        return max(0.0, min(1.0, (self.sent - self.received) / self.sent))

    @property
    def corrupt_ratio(self) -> float:
        """Fraction of sent probes that arrived with a bad ICRC."""
        return self.corrupted / self.sent if self.sent > 0 else 0.0


@dataclass(frozen=True, slots=True)
class EpochCount:
    """One probe path's counts over one step of closed send epochs (normally one epoch of
    1 s; longer when a snapshot was missed): probes sent and received with a good ICRC
    between the end of the previous step and ``end_s`` (monotonic seconds, the epoch's
    end, on the probers' clock).

    >>> EpochCount(12, 12.0, 10, 3).loss
    0.7
    """

    epoch: int
    end_s: float
    sent: int
    received: int

    @property
    def loss(self) -> float:
        """Fraction of the step's probes not received (0 when none was sent)."""
        return max(0.0, min(1.0, (self.sent - self.received) / self.sent)) if self.sent > 0 else 0.0


#: States a link direction can be in, from the probes (:mod:`monitor.tomography`).
LINK_STATES = ("ok", "lossy", "dead", "corrupting", "unknown")


@dataclass(frozen=True, slots=True)
class LinkEstimate:
    """The tomography's estimate of one link direction: its loss and corruption ratios,
    the probe paths that cross it (``paths``) and how many of them saw trouble
    (``paths_bad``), and a state from :data:`LINK_STATES`.

    >>> LinkEstimate(LinkDir("b0r0l0", "s0"), "lossy", 0.2, 0.0, 4, 4).state
    'lossy'
    """

    link: LinkDir
    state: str
    loss: float
    corrupt: float
    paths: int
    paths_bad: int


@dataclass(frozen=True, slots=True)
class PortRates:
    """One switch port's counters as rates over the evidence window (per second), from
    the switch exporter: frames sent and received, ingress drops, CE marks, PFC frames
    sent and received, and the deepest egress queue seen (packets, 4-packet bins).

    >>> PortRates("b0r0l0", 3, tx_pps=60.0, ecn_marks_pps=30.0).mark_ratio
    0.5
    """

    switch: str
    port: int
    tx_pps: float = 0.0
    rx_pps: float = 0.0
    drops_pps: float = 0.0
    ecn_marks_pps: float = 0.0
    pfc_tx_fps: float = 0.0
    pfc_rx_fps: float = 0.0
    max_qdepth_pkts: int = 0

    @property
    def mark_ratio(self) -> float:
        """CE marks per packet sent (0 with nothing sent)."""
        return self.ecn_marks_pps / self.tx_pps if self.tx_pps > 0 else 0.0


@dataclass(frozen=True, slots=True)
class NicRates:
    """One NIC emulator's counters as rates over the evidence window: delivered goodput,
    PFC PAUSE frames it sent and honoured, frames with a bad ICRC, NAKs and CNPs.

    >>> NicRates("b1s0-eth0", pause_tx_fps=40.0).pause_tx_fps
    40.0
    """

    nic: str
    goodput_mbps: float = 0.0
    pause_tx_fps: float = 0.0
    pause_rx_fps: float = 0.0
    icrc_errors_ps: float = 0.0
    naks_ps: float = 0.0
    cnps_ps: float = 0.0


@dataclass(slots=True)
class Evidence:
    """Everything the localiser sees at one instant ``t_s`` (monotonic seconds).

    * ``links``: the tomography's estimate per link direction (``str(LinkDir)``);
    * ``paths``: each probe path's statistics, ``path_links`` the links each crosses;
    * ``path_epochs``: each path's counts epoch by epoch over the last few epochs, oldest
      first (:class:`EpochCount`; empty where the source has no epochs);
    * ``switch_up``: whether each switch answered its P4Runtime liveness probe;
    * ``ports``: per ``(switch, port)`` counter rates; ``port_peer``: the node behind
      each port (so counters can be tied to link directions);
    * ``nics``: per NIC counter rates;
    * ``agent_age_s``: seconds since each host's agent last reported to GOR (``None``:
      not known);
    * ``controller_up``: whether GOR's metrics endpoint answers (``None``: no GOR);
    * ``ecn_threshold_pkts``: the fabric's configured ECN threshold (for comparisons).

    >>> Evidence(0.0).switch_up
    {}
    """

    t_s: float
    links: dict[str, LinkEstimate] = field(default_factory=dict)
    paths: dict[str, PathStats] = field(default_factory=dict)
    path_links: dict[str, tuple[LinkDir, ...]] = field(default_factory=dict)
    path_dst_prefix: dict[str, str] = field(default_factory=dict)
    path_epochs: dict[str, tuple[EpochCount, ...]] = field(default_factory=dict)
    switch_up: dict[str, bool] = field(default_factory=dict)
    ports: dict[tuple[str, int], PortRates] = field(default_factory=dict)
    port_peer: dict[tuple[str, int], str] = field(default_factory=dict)
    nics: dict[str, NicRates] = field(default_factory=dict)
    agent_age_s: dict[str, Optional[float]] = field(default_factory=dict)
    controller_up: Optional[bool] = None
    ecn_threshold_pkts: Optional[int] = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """The localiser's answer: a fault ``kind`` (:data:`FAULT_KINDS`), the ``component``
    it names (:func:`component`), a ``confidence`` in [0, 1], the ``evidence`` in words
    (which probes, which counters), and when it was first named (``t_s``).

    >>> Verdict("hung_switch", "switch s1", 0.95, ("P4Runtime silent 2.1 s",), 3.0).to_dict()["kind"]
    'hung_switch'
    """

    kind: str
    component: str
    confidence: float
    evidence: tuple[str, ...]
    t_s: float

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r} (one of {', '.join(FAULT_KINDS)})")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence {self.confidence} is not in [0, 1]")

    def to_dict(self) -> dict[str, object]:
        """The JSON form (one line of the verdict log)."""
        return {"kind": self.kind, "component": self.component, "confidence": self.confidence,
                "evidence": list(self.evidence), "t_s": self.t_s}


__all__ = ["EpochCount", "Evidence", "FAULT_KINDS", "KIND_COMPONENT", "LINK_STATES", "LinkDir", "LinkEstimate",
           "NicRates", "PathStats", "PortRates", "ProbePath", "Verdict", "component"]
