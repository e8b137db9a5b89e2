"""Dead links from the counters: a link direction that swallows the traffic offered to it is
declared dead (GOR then takes the cable down as for an administrative event), and an idle
link never is.

A link direction L = switch A, port a → peer B, port b. Each telemetry interval gives
L's sample at A (``tx_pkts``, ``pfc_rx``) and the peer port's sample at B (``rx_pkts``:
what arrived from A). :func:`link_evidence` turns one interval into one of:

* ``LOST`` — **sent but not received**: A counted at least ``min_pkts`` packets out of
  ``a`` while B counted none in on ``b``. Only once B's rx counter on ``b`` has been seen
  moving at least once (a pipeline without the rx counter reads 0 and proves nothing).
* ``SILENT`` — **forwarded but not sent**: A's forwarding chose ``a`` for packets (the
  loop's sampling probe on ``a`` returned at least ``probe_samples`` digests with egress
  port ``a`` this interval) yet A sent nothing out of ``a`` and B received nothing, and
  ``a`` received no PFC frame (a paused port legitimately sends nothing). The loop turns
  the probe on only while ``a`` sends nothing and another member of one of A's ECMP
  groups with ``a`` sent at least ``min_pkts``: traffic that should hash onto ``a``.
* ``ALIVE`` — B received at least ``min_pkts`` from A: the direction carries traffic.
* ``None`` — no evidence: an idle link (nothing sent, nothing forwarded to it), a
  missing or reset sample at either end, or a partial loss.

**Why an idle link is never declared dead.** Both dead rules need evidence that traffic
*was offered* to the link in the interval: packets counted leaving A (``LOST``) or
packets sampled in A's ingress with ``a`` as their egress port (``SILENT``). An idle link
offers neither; its intervals give ``None``, which resets the clock.

**Hysteresis** (:class:`DeadLinkDetector`): a direction is dead after an unbroken run of
dead evidence (``LOST`` or ``SILENT``) of at least ``min_intervals`` intervals spanning
at least ``dead_after_s``; any other interval resets the run. A direction the detector
declared dead is alive again after an unbroken run of ``ALIVE`` of the same length.

Defaults (:class:`DeadLinkThresholds`): ``min_pkts`` 20, ``probe_samples`` 1,
``min_intervals`` 3, ``dead_after_s`` 0.3 s. ``min_pkts`` is for an interval of
``ref_interval_s`` (0.25 s) or more; a shorter interval (a caller polling faster while
busy) needs proportionally fewer packets, never fewer than ``min_pkts_floor`` (5)
(:meth:`DeadLinkThresholds.pkts_needed`): the same traffic rate is evidence however
fast the counters are read, and the run still has to last ``dead_after_s``.
:meth:`DeadLinkDetector.suspects` lists the directions with dead evidence running.

Example::

    >>> d = DeadLinkDetector()
    >>> [d.observe(("b0r0l0", 3), 0.1 * i, Evidence.LOST) for i in range(3)][-1] is None
    True
    >>> d.observe(("b0r0l0", 3), 0.3, Evidence.LOST).dead
    True
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any, Optional

from controller.gor.decisions import LinkKey


class Evidence(enum.Enum):
    """What one interval says about a link direction (see the module docstring)."""

    LOST = "sent but not received at the peer"
    SILENT = "forwarded to the port but nothing sent"
    ALIVE = "traffic received at the peer"


@dataclass(frozen=True, slots=True)
class DeadLinkThresholds:
    """Evidence and hysteresis settings.

    >>> DeadLinkThresholds().dead_after_s
    0.3
    """

    min_pkts: int = 20
    probe_samples: int = 1
    min_intervals: int = 3
    dead_after_s: float = 0.3
    ref_interval_s: float = 0.25
    min_pkts_floor: int = 5

    def __post_init__(self) -> None:
        if self.min_pkts < 1 or self.probe_samples < 1 or self.min_intervals < 1:
            raise ValueError("min_pkts, probe_samples and min_intervals must be at least 1")
        if self.ref_interval_s <= 0 or not 1 <= self.min_pkts_floor <= self.min_pkts:
            raise ValueError("ref_interval_s > 0 and 1 <= min_pkts_floor <= min_pkts are required")

    def pkts_needed(self, dt_s: float) -> int:
        """Packets an interval of ``dt_s`` must count to be evidence.

        >>> th = DeadLinkThresholds()
        >>> th.pkts_needed(0.25), th.pkts_needed(1.0), th.pkts_needed(0.1), th.pkts_needed(0.01)
        (20, 20, 8, 5)
        """
        scaled = math.ceil(self.min_pkts * dt_s / self.ref_interval_s - 1e-9)
        return max(self.min_pkts_floor, min(self.min_pkts, scaled))


@dataclass(frozen=True, slots=True)
class DeadLinkEvent:
    """``link`` was declared dead (``dead``) or alive again at ``t_s``, after ``held_s``
    seconds of ``evidence``.

    >>> DeadLinkEvent(("s0", 1), 1.0, True, Evidence.LOST, 0.3).reason
    'counters: sent but not received at the peer for 0.3 s'
    """

    link: LinkKey
    t_s: float
    dead: bool
    evidence: Evidence
    held_s: float

    @property
    def reason(self) -> str:
        """The reason written in the decision log's ``link_down`` / ``link_up``."""
        return f"counters: {self.evidence.value} for {self.held_s:g} s"


def link_evidence(tx: Any, peer: Any, *, rx_armed: bool, forwarded: int,
                  th: DeadLinkThresholds) -> Optional[Evidence]:
    """One interval's evidence for a direction from its sample at the sending end ``tx``
    and the peer port's sample ``peer`` (``LinkSample``-like, either may be None);
    ``rx_armed``: the peer's rx counter has moved before; ``forwarded``: digests sampled
    with this port as egress port in the interval.

    >>> from types import SimpleNamespace as S
    >>> th = DeadLinkThresholds()
    >>> link_evidence(S(tx_pkts=500, pfc_rx=0, reset=False), S(rx_pkts=0, reset=False),
    ...               rx_armed=True, forwarded=0, th=th)
    <Evidence.LOST: 'sent but not received at the peer'>
    >>> link_evidence(S(tx_pkts=0, pfc_rx=0, reset=False), S(rx_pkts=0, reset=False),
    ...               rx_armed=True, forwarded=0, th=th) is None          # idle
    True
    """
    if tx is None or peer is None or getattr(tx, "reset", False) or getattr(peer, "reset", False):
        return None
    need = th.pkts_needed(float(getattr(tx, "dt_s", th.ref_interval_s) or th.ref_interval_s))
    if peer.rx_pkts >= need:
        return Evidence.ALIVE
    if peer.rx_pkts > 0:
        return None                                   # some traffic crosses: not dead
    if tx.tx_pkts >= need and rx_armed:
        return Evidence.LOST
    if tx.tx_pkts == 0 and forwarded >= th.probe_samples and not getattr(tx, "pfc_rx", 0):
        return Evidence.SILENT
    return None


@dataclass(slots=True)
class _Run:
    kind: Optional[bool] = None                       # True: dead evidence, False: alive
    since_s: float = 0.0
    intervals: int = 0
    evidence: Optional[Evidence] = None


class DeadLinkDetector:
    """Per-direction runs of evidence, and the directions it declared dead."""

    def __init__(self, thresholds: Optional[DeadLinkThresholds] = None) -> None:
        self.thresholds = thresholds or DeadLinkThresholds()
        self.runs: dict[LinkKey, _Run] = {}
        self.dead: set[LinkKey] = set()

    def observe(self, link: LinkKey, t_s: float, evidence: Optional[Evidence]) -> Optional[DeadLinkEvent]:
        """One interval's evidence for ``link`` ending at ``t_s``; an event when it changes
        state."""
        run = self.runs.setdefault(link, _Run())
        kind = None if evidence is None else evidence is not Evidence.ALIVE
        if kind is None or kind == (link in self.dead):
            self.runs[link] = _Run()                  # no evidence, or nothing to change
            return None
        if run.kind is not kind:
            run.kind, run.since_s, run.intervals, run.evidence = kind, t_s, 0, evidence
        run.intervals += 1
        held = t_s - run.since_s
        th = self.thresholds
        if run.intervals < th.min_intervals or held < th.dead_after_s - 1e-9:
            return None
        self.runs[link] = _Run()
        if kind:
            self.dead.add(link)
        else:
            self.dead.discard(link)
        assert run.evidence is not None
        return DeadLinkEvent(link, t_s, kind, run.evidence, round(held, 3))

    def suspects(self) -> list[LinkKey]:
        """Directions with a run of dead evidence going on (not yet declared), sorted."""
        return sorted(k for k, r in self.runs.items() if r.kind and k not in self.dead)

    def forget(self, link: LinkKey) -> None:
        """Forget ``link`` (it was brought back up by other means)."""
        self.runs.pop(link, None)
        self.dead.discard(link)


__all__ = ["DeadLinkDetector", "DeadLinkEvent", "DeadLinkThresholds", "Evidence", "link_evidence"]
