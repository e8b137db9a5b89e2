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

**A stalled switch is not a dead link.** An interval is no evidence (``None``) when either
end's switch is stale (does not answer its counter reads) or answered again less than
``stale_grace_s`` (1 s) ago: a switch whose reads stall has usually stalled whole (a
paused or CPU-starved process), and for a moment after it resumes its counters describe a
data plane catching up, not a link (``stale`` of :func:`link_evidence`).

**A frozen switch is stalled too** (:func:`frozen_switches`). A switch can answer its
reads while its data plane stands still (BMv2 under CPU load: the gRPC thread answers,
the packet threads do not run): every counter it has stays where it was. An interval in
which none of a switch's polled ports counted a packet either way, while a neighbour
sent it at least ``pkts_needed`` packets, is a stall, not ``min_intervals`` of evidence
against one link: a dead link stops one port's rx counter, never every counter of the
switch. Such a switch counts as stale for that interval (and ``stale_grace_s`` after
it), for at most ``freeze_max_s`` (3 s) of one unbroken freeze: a longer one (a peer
whose only traffic came over the dead link) is evidence again, so a dead link is still
found, at most ``freeze_max_s + stale_grace_s`` later.

**Re-testing a direction declared dead** (:class:`LinkRetests`). A direction the counters
declared dead is out of every ECMP group, so nothing is offered to it and the ``ALIVE``
rule alone could never bring it back: one false declaration (a peer whose data plane
paused for half a second under load) would be permanent. As BFD does for a session that is
down (RFC 5880 §6.8.3: control packets keep going at no less than one second's interval
and the session comes up when they arrive) and as LLDP link discovery does in ONOS
(a probe out of each port, the link known from where it arrives), GOR keeps testing it
while it is out: every ``retest_every_s`` (1 s) it sends ``retest_frames`` (3) probe
frames (:func:`probe_frame`, a P4Runtime PacketOut with ``egress_port`` = the port) out of
the sending end, and reads the peer port's rx counter. A re-test *passes* when the peer
counted at least ``retest_frames`` frames in from the port within ``retest_wait_s``
(1 s) of the send, *fails* otherwise; ``retest_passes`` (3) passes in a row bring the
direction back (``link_up``, reason ``probes: …``), a failure starts the count again. No
traffic is ever re-admitted to test it: a dead direction swallows 3 probe frames a second
and nothing else (under the monitor's 5 frames/s floor for counter loss, so the probes
of a dead link are never taken for traffic lost on it).

**Bound:** a direction declared dead while it works is back within
``retest_every_s × retest_passes + retest_wait_s`` = 4 s of the declaration
(:attr:`DeadLinkThresholds.heal_bound_s`) when the counters are read on time. The bursts
go out on telemetry ticks and are judged on the peer's next reading, so each of the three
re-tests slips by however late that reading comes — at most the poller's read timeout
(2 s) — giving at most 10 s while the peer answers reads at all (measured on BMv2 at load
25–35: 4.86 s); a stale peer holds the re-test until it answers again. A dead direction
stays out for as long as it is dead.

Defaults (:class:`DeadLinkThresholds`): ``min_pkts`` 20, ``probe_samples`` 1,
``min_intervals`` 3, ``dead_after_s`` 0.3 s, ``freeze_max_s`` 3 s. ``min_pkts`` is for an interval of
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
from typing import Any, Mapping, Optional

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
    stale_grace_s: float = 1.0
    retest_every_s: float = 1.0
    retest_frames: int = 3
    retest_wait_s: float = 1.0
    retest_passes: int = 3
    freeze_max_s: float = 3.0

    def __post_init__(self) -> None:
        if self.min_pkts < 1 or self.probe_samples < 1 or self.min_intervals < 1:
            raise ValueError("min_pkts, probe_samples and min_intervals must be at least 1")
        if self.ref_interval_s <= 0 or not 1 <= self.min_pkts_floor <= self.min_pkts:
            raise ValueError("ref_interval_s > 0 and 1 <= min_pkts_floor <= min_pkts are required")
        if self.stale_grace_s < 0 or self.retest_every_s <= 0 or self.retest_wait_s <= 0:
            raise ValueError("stale_grace_s >= 0, retest_every_s > 0 and retest_wait_s > 0 are required")
        if self.retest_frames < 1 or self.retest_passes < 1:
            raise ValueError("retest_frames and retest_passes must be at least 1")
        if self.freeze_max_s < 0:
            raise ValueError("freeze_max_s >= 0 is required")

    @property
    def heal_bound_s(self) -> float:
        """Longest time from a false declaration (or its peer answering reads again) to
        the direction back up: ``retest_every_s × retest_passes + retest_wait_s``.

        >>> DeadLinkThresholds().heal_bound_s
        4.0
        """
        return self.retest_every_s * self.retest_passes + self.retest_wait_s

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
                  th: DeadLinkThresholds, stale: bool = False) -> Optional[Evidence]:
    """One interval's evidence for a direction from its sample at the sending end ``tx``
    and the peer port's sample ``peer`` (``LinkSample``-like, either may be None);
    ``rx_armed``: the peer's rx counter has moved before; ``forwarded``: digests sampled
    with this port as egress port in the interval; ``stale``: either end's switch is
    stale or answered again within ``stale_grace_s`` (no evidence then).

    >>> from types import SimpleNamespace as S
    >>> th = DeadLinkThresholds()
    >>> link_evidence(S(tx_pkts=500, pfc_rx=0, reset=False), S(rx_pkts=0, reset=False),
    ...               rx_armed=True, forwarded=0, th=th)
    <Evidence.LOST: 'sent but not received at the peer'>
    >>> link_evidence(S(tx_pkts=0, pfc_rx=0, reset=False), S(rx_pkts=0, reset=False),
    ...               rx_armed=True, forwarded=0, th=th) is None          # idle
    True
    >>> link_evidence(S(tx_pkts=500, pfc_rx=0, reset=False), S(rx_pkts=0, reset=False),
    ...               rx_armed=True, forwarded=0, th=th, stale=True) is None  # stalled peer
    True
    """
    if stale or tx is None or peer is None or getattr(tx, "reset", False) or getattr(peer, "reset", False):
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


def frozen_switches(samples: Mapping[LinkKey, Any], peers: Mapping[LinkKey, LinkKey],
                    th: DeadLinkThresholds) -> set[str]:
    """The switches frozen in one interval: every polled port of the switch counted no
    packet either way (``tx_pkts`` and ``rx_pkts`` 0) while a neighbour's sample toward it
    counted at least ``th.pkts_needed`` packets sent. ``samples``: (switch, port) →
    ``LinkSample``-like; ``peers``: (switch, port) → the peer port. A switch with no
    sample (it did not answer) is not listed: it is stale already.

    >>> from types import SimpleNamespace as S
    >>> busy, idle = S(tx_pkts=500, rx_pkts=500, dt_s=0.1), S(tx_pkts=0, rx_pkts=0, dt_s=0.1)
    >>> peers = {("l0", 1): ("s0", 1), ("s0", 1): ("l0", 1), ("l1", 1): ("s0", 2), ("s0", 2): ("l1", 1)}
    >>> sorted(frozen_switches({("l0", 1): busy, ("l1", 1): busy, ("s0", 1): idle, ("s0", 2): idle},
    ...                        peers, DeadLinkThresholds()))
    ['s0']
    >>> frozen_switches({("l0", 1): busy, ("l1", 1): busy, ("s0", 1): idle, ("s0", 2): busy},
    ...                 peers, DeadLinkThresholds())                  # one port works: a dead link
    set()
    """
    moved: dict[str, bool] = {}
    for (sw, _), s in samples.items():
        moved[sw] = moved.get(sw, False) or bool(s.tx_pkts or getattr(s, "rx_pkts", 0))
    out = set()
    for key, s in samples.items():
        peer = peers.get(key)
        if peer is None or moved.get(peer[0], True) or getattr(s, "reset", False):
            continue
        dt = float(getattr(s, "dt_s", th.ref_interval_s) or th.ref_interval_s)
        if s.tx_pkts >= th.pkts_needed(dt):
            out.add(peer[0])
    return out


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


PROBE_DST_MAC = bytes.fromhex("0180c200000e")
"""Where a probe frame goes: the IEEE 802.1Q nearest-bridge group address (LLDP's), which
no bridge forwards."""
PROBE_ETHERTYPE = 0x88B5
"""IEEE Std 802 local experimental EtherType 1: fabric.p4 parses no such frame, so the
peer counts it in ``FabricIngress.telemetry.rx`` (and in ``drops``: unknown EtherType) and
forwards it nowhere."""
PROBE_TAG = b"astral-gor-linkprobe"


def probe_frame(link: LinkKey, seq: int) -> bytes:
    """The Ethernet frame a re-test sends out of ``link`` (60 bytes: the minimum frame
    without its FCS): nearest-bridge destination, a locally administered source, the local
    experimental EtherType, and ``astral-gor-linkprobe <switch>:<port> <seq>``.

    >>> f = probe_frame(("b0r0l0", 3), 7)
    >>> len(f), f[12:14].hex(), f[14:45]
    (60, '88b5', b'astral-gor-linkprobe b0r0l0:3 7')
    """
    body = PROBE_TAG + f" {link[0]}:{link[1]} {seq}".encode()
    frame = PROBE_DST_MAC + bytes.fromhex("020000000000") + PROBE_ETHERTYPE.to_bytes(2, "big") + body
    return frame[:60].ljust(60, b"\0")


class RetestResult(enum.Enum):
    """What a re-test step concluded (:meth:`LinkRetests.observe`)."""

    PASSED = "probe frames arrived at the peer"
    FAILED = "probe frames did not arrive at the peer"
    HEALED = "re-tests in a row arrived at the peer"


@dataclass(slots=True)
class _Retest:
    next_s: float                                     # when the next burst is due
    sent_s: Optional[float] = None                    # the burst in flight, sent then
    arrived: int = 0                                  # peer rx counted since that send
    passes: int = 0
    failures: int = 0
    seq: int = 0


class LinkRetests:
    """Re-tests of the directions declared dead from the counters (the rule and its bound
    are in the module docstring). The caller sends the bursts and reads the counters:

    >>> r = LinkRetests(DeadLinkThresholds())
    >>> r.start(("b0r0l0", 3), 10.0); r.due(10.5), r.due(11.0)
    ([], [('b0r0l0', 3)])
    >>> r.sent(("b0r0l0", 3), 11.0)
    1
    >>> r.observe(("b0r0l0", 3), 11.25, 5).name
    'PASSED'
    >>> r.sent(("b0r0l0", 3), 12.0); r.observe(("b0r0l0", 3), 13.0, 0).name   # lost: again
    2
    'FAILED'
    >>> for t in (13.0, 14.0):
    ...     _ = r.sent(("b0r0l0", 3), t); _ = r.observe(("b0r0l0", 3), t + 0.25, 5)
    >>> r.sent(("b0r0l0", 3), 15.0); r.observe(("b0r0l0", 3), 15.25, 5).name
    5
    'HEALED'
    """

    def __init__(self, thresholds: DeadLinkThresholds) -> None:
        self.thresholds = thresholds
        self.tests: dict[LinkKey, _Retest] = {}

    def start(self, link: LinkKey, t_s: float) -> None:
        """``link`` was declared dead at ``t_s``: its first re-test is due
        ``retest_every_s`` later."""
        self.tests[link] = _Retest(t_s + self.thresholds.retest_every_s)

    def stop(self, link: LinkKey) -> None:
        """``link`` is up again (or no longer ours to test)."""
        self.tests.pop(link, None)

    def due(self, t_s: float) -> list[LinkKey]:
        """Directions whose next burst is due at ``t_s`` (none in flight), sorted."""
        return sorted(k for k, r in self.tests.items() if r.sent_s is None and t_s >= r.next_s - 1e-9)

    def sent(self, link: LinkKey, t_s: float) -> int:
        """A burst went out of ``link`` at ``t_s``; returns its sequence number (its frames
        count from the peer's next reading on)."""
        r = self.tests[link]
        r.sent_s, r.arrived, r.seq = t_s, 0, r.seq + 1
        return r.seq

    def not_sent(self, link: LinkKey, t_s: float) -> None:
        """The burst could not be sent (the switch did not take it): try again later."""
        r = self.tests.get(link)
        if r is not None:
            r.sent_s, r.next_s = None, t_s + self.thresholds.retest_every_s

    def observe(self, link: LinkKey, t_s: float, peer_rx_pkts: Optional[int]) -> Optional[RetestResult]:
        """The peer port's rx packets in an interval ending at ``t_s`` after the burst
        (None: no reading of the peer); the result once the burst is judged."""
        r = self.tests.get(link)
        if r is None or r.sent_s is None or t_s <= r.sent_s:
            return None
        th = self.thresholds
        r.arrived += max(0, int(peer_rx_pkts or 0))
        if r.arrived >= th.retest_frames:
            r.passes, r.sent_s, r.next_s = r.passes + 1, None, r.sent_s + th.retest_every_s
            if r.passes >= th.retest_passes:
                del self.tests[link]
                return RetestResult.HEALED
            return RetestResult.PASSED
        if t_s - r.sent_s >= th.retest_wait_s - 1e-9 and peer_rx_pkts is not None:
            r.passes, r.failures, r.next_s, r.sent_s = 0, r.failures + 1, r.sent_s + th.retest_every_s, None
            return RetestResult.FAILED
        return None


__all__ = ["DeadLinkDetector", "DeadLinkEvent", "DeadLinkThresholds", "Evidence", "LinkRetests",
           "PROBE_DST_MAC", "PROBE_ETHERTYPE", "RetestResult", "frozen_switches", "link_evidence", "probe_frame"]
