"""A switch's queue model for the simulator: PFC and ECN on per-port queues, with the
testbed's static thresholds or ``fabric.p4``'s dynamic (shared-buffer) ones.

Dynamic mode *is* :class:`p4src.buffermodel.SharedBufferModel` (the bit-exact model of
``buffer.p4``, ``pfc.p4`` and ``ecn.p4``: Choudhury & Hahne's alpha rule on the free
buffer); this module only gives it and the static mode one interface, so that
:mod:`sim.pfcnet` runs either. Static mode is ``pfc.p4``'s and ``ecn.p4``'s other
tables: an ingress port's packets in the switch against XOFF/XON packets
(``controller.fabric.qos.PfcConfig``), RED on the egress queue's depth at enqueue between
kmin and kmax packets (``EcnConfig``).

What the switch does with a packet its egress queue tail-drops is kept: the pipeline
already counted it on the way in, nothing counts it out (p4src/README.md; the incast
scenario clears the counts before every run for that reason), so :meth:`SwitchQueues.drop`
leaves every count as it is.

:func:`steady_state_cells` fills ``n`` ingress groups of one switch round robin with no
drain until each is paused: the dynamic-threshold steady state, which Choudhury & Hahne
give in closed form (:func:`closed_form_cells`: each of ``n`` congested queues holds
``alpha * B / (1 + n * alpha)``).

Example::

    >>> from p4src.buffermodel import DynamicThresholds, PfcAlpha, SharedBuffer
    >>> cfg = DynamicThresholds(SharedBuffer(576, 7), {3: PfcAlpha(2)})
    >>> steady_state_cells(cfg, 3, groups=3, packet_bytes=1082), round(closed_form_cells(cfg, 3, 3), 1)
    (171, 164.6)
    >>> q = SwitchQueues.static(StaticThresholds(xoff_pkts=2, xon_pkts=1))
    >>> [q.admit(1, 9, 1082).pause for _ in range(3)]
    [False, True, False]
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Optional, Union

from p4src.buffermodel import Arrival, DynamicThresholds, SharedBufferModel, alpha_of

PRIORITY = 3
RED_DRAWS = 255          # ecn.p4 draws r in 0..254


@dataclass(frozen=True, slots=True)
class StaticThresholds:
    """The testbed's static mode (``controller.fabric.qos``'s defaults): PAUSE at
    ``xoff_pkts`` packets of an ingress port in the switch, RESUME at ``xon_pkts``; RED
    between ``kmin_pkts`` and ``kmax_pkts`` of the egress queue with ``pmax_per_255``.

    >>> StaticThresholds().xoff_pkts, StaticThresholds().kmax_pkts
    (32, 32)
    """

    xoff_pkts: int = 32
    xon_pkts: int = 16
    kmin_pkts: int = 8
    kmax_pkts: int = 32
    pmax_per_255: int = 51

    def __post_init__(self) -> None:
        if not 0 <= self.xon_pkts < self.xoff_pkts:
            raise ValueError(f"static thresholds: need 0 <= xon_pkts < xoff_pkts, got "
                             f"{self.xon_pkts} / {self.xoff_pkts}")
        if not 0 < self.kmin_pkts <= self.kmax_pkts:
            raise ValueError(f"static thresholds: need 0 < kmin_pkts <= kmax_pkts, got "
                             f"{self.kmin_pkts} / {self.kmax_pkts}")


def red_probability(q: int, kmin: int, kmax: int, pmax_per_255: int) -> float:
    """What ``ecn.p4`` marks with at depth ``q``: 1 at ``q >= kmax``, else the share of
    draws ``r`` in 0..254 with ``r * (kmax - kmin) < pmax * (q - kmin)`` (0 under kmin).

    >>> red_probability(40, 8, 32, 51), red_probability(20, 8, 32, 51), red_probability(3, 8, 32, 51)
    (1.0, 0.102, 0.0)
    """
    if q >= kmax:
        return 1.0
    if q < kmin:
        return 0.0
    hits = sum(1 for r in range(RED_DRAWS) if r * (kmax - kmin) < pmax_per_255 * (q - kmin))
    return round(hits / RED_DRAWS, 3)


@dataclass(slots=True)
class Admission:
    """A packet the switch admitted: ``pause`` when its ingress port just crossed XOFF
    (a PAUSE leaves that port); ``token`` is what :meth:`SwitchQueues.leave` needs."""

    pause: bool
    token: Union[Arrival, tuple[int, int]]


@dataclass(slots=True)
class Leave:
    """A packet left its egress queue: ``marked`` (ECN CE), ``resume`` (its ingress port
    fell to XON: a RESUME leaves that port)."""

    marked: bool
    resume: bool


class SwitchQueues:
    """One switch's PFC counts and ECN decisions, static or dynamic (build with
    :meth:`static` or :meth:`dynamic`). Ports are any integers; one priority.

    >>> from p4src.buffermodel import DEFAULT_DYNAMIC
    >>> q = SwitchQueues.dynamic(DEFAULT_DYNAMIC)
    >>> a = q.admit(1, 2, 1082); q.leave(a, enq_depth_pkts=0).marked
    False
    """

    def __init__(self, static: Optional[StaticThresholds], dynamic: Optional[DynamicThresholds],
                 seed: int = 0, priority: int = PRIORITY) -> None:
        self.static_cfg = static
        self.model = SharedBufferModel(dynamic) if dynamic is not None else None
        self.priority = priority
        self.rng = random.Random(seed)
        self.occupancy: dict[int, int] = {}
        self.paused: dict[int, bool] = {}

    @classmethod
    def static(cls, cfg: StaticThresholds, seed: int = 0) -> "SwitchQueues":
        """The static mode."""
        return cls(cfg, None, seed)

    @classmethod
    def dynamic(cls, cfg: DynamicThresholds, seed: int = 0) -> "SwitchQueues":
        """The dynamic mode (:class:`p4src.buffermodel.SharedBufferModel`)."""
        return cls(None, cfg, seed)

    @property
    def mode(self) -> str:
        """``"static"`` or ``"dynamic"``."""
        return "dynamic" if self.model is not None else "static"

    def admit(self, ingress: int, egress: int, length: int) -> Admission:
        """The pipeline admits a frame of ``length`` bytes from ``ingress`` to ``egress``."""
        if self.model is not None:
            a = self.model.arrive(ingress, egress, self.priority, length)
            return Admission(a.pause, a)
        cfg = self.static_cfg
        assert cfg is not None
        occ = self.occupancy[ingress] = self.occupancy.get(ingress, 0) + 1
        pause = False
        if not self.paused.get(ingress) and occ >= cfg.xoff_pkts:
            self.paused[ingress] = pause = True
        return Admission(pause, (ingress, egress))

    def leave(self, adm: Admission, enq_depth_pkts: int) -> Leave:
        """The packet of ``adm`` leaves its egress queue; ``enq_depth_pkts``: the queue's
        depth when it was enqueued (static RED reads ``enq_qdepth``)."""
        if self.model is not None:
            assert isinstance(adm.token, Arrival)
            d = self.model.depart(adm.token)
            marked = bool(d.marked) if d.marked is not None else self.rng.random() < d.mark_probability
            return Leave(marked, d.resume)
        cfg = self.static_cfg
        assert cfg is not None and isinstance(adm.token, tuple)
        ingress = adm.token[0]
        p = red_probability(enq_depth_pkts, cfg.kmin_pkts, cfg.kmax_pkts, cfg.pmax_per_255)
        marked = p >= 1.0 or (p > 0 and self.rng.random() < p)
        occ = self.occupancy[ingress] = max(0, self.occupancy.get(ingress, 0) - 1)
        resume = False
        if self.paused.get(ingress) and occ <= cfg.xon_pkts:
            self.paused[ingress] = False
            resume = True
        return Leave(marked, resume)

    def drop(self, adm: Admission) -> None:
        """The egress queue tail-dropped the packet: the switch counts nothing out."""

    def ingress_count(self, ingress: int) -> int:
        """Packets (static) or cells (dynamic) the switch holds for ``ingress``."""
        if self.model is not None:
            return self.model.ingress_cells.get(ingress * 8 + self.priority, 0)
        return self.occupancy.get(ingress, 0)


def steady_state_cells(cfg: DynamicThresholds, priority: int, groups: int, packet_bytes: int) -> int:
    """Cells each of ``groups`` ingress groups holds once every one is paused, packets of
    ``packet_bytes`` arriving round robin with nothing leaving, the switch being
    :class:`SwitchQueues` in dynamic mode (the mean over the groups, rounded down).

    >>> from p4src.buffermodel import PfcAlpha, SharedBuffer
    >>> steady_state_cells(DynamicThresholds(SharedBuffer(1000, 0), {3: PfcAlpha(1)}), 3, 4, 1)
    200
    """
    q = SwitchQueues.dynamic(cfg)
    q.priority = priority
    paused = [False] * groups
    while not all(paused):
        for g in range(groups):
            if not paused[g]:
                paused[g] = q.admit(g, 1000, packet_bytes).pause
        if q.model is not None and q.model.used >= cfg.buffer.size_cells:
            break
    return sum(q.ingress_count(g) for g in range(groups)) // groups


def closed_form_cells(cfg: DynamicThresholds, priority: int, groups: int) -> float:
    """Choudhury & Hahne's steady state: each of ``groups`` congested queues holds
    ``alpha * B / (1 + groups * alpha)`` of a buffer of ``B`` cells.

    >>> from p4src.buffermodel import PfcAlpha, SharedBuffer
    >>> closed_form_cells(DynamicThresholds(SharedBuffer(1000, 0), {3: PfcAlpha(1)}), 3, 4)
    200.0
    """
    alpha = float(alpha_of(cfg.pfc[priority].code))
    return alpha * cfg.buffer.size_cells / (1 + groups * alpha)


__all__ = ["Admission", "Leave", "PRIORITY", "StaticThresholds", "SwitchQueues", "closed_form_cells",
           "red_probability", "steady_state_cells"]
