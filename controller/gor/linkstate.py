"""GOR's view of the fabric's links: capacity, telemetry load and down cables of every
link direction ``(switch, egress port)``.

The telemetry loop writes loads (:meth:`LinkState.set_util`) and GOR's link-failure
handling marks cables down and up; the path engine (:mod:`controller.gor.paths`) reads
both live. Also importable from :mod:`controller.gor.paths` and :mod:`controller.gor`.

Example::

    >>> from topo.model import build_fabric
    >>> ls = LinkState.from_fabric(build_fabric())
    >>> ls.set_util(("b0r0l0", 3), 0.5); ls.util(("b0r0l0", 3))
    0.5
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from controller.gor.decisions import LinkKey
from topo.model import Fabric


@dataclass(slots=True)
class LinkState:
    """Live state of every fabric link direction: capacity, telemetry load, down links.

    >>> from topo.model import build_fabric
    >>> ls = LinkState.from_fabric(build_fabric())
    >>> ls.capacity_bps[("b0r0l0", 3)], ls.peer[("b0r0l0", 3)]
    (100000000000.0, ('s0', 1))
    >>> ls.link_down("s0", 1); ls.is_up(("b0r0l0", 3))
    False
    """

    capacity_bps: dict[LinkKey, float]
    peer: dict[LinkKey, LinkKey]
    load_bps: dict[LinkKey, float] = field(default_factory=dict)
    down: set[LinkKey] = field(default_factory=set)
    capacity_pps: dict[LinkKey, float] = field(default_factory=dict)

    @classmethod
    def from_fabric(cls, fabric: Fabric) -> "LinkState":
        """Both directions of every leaf–spine link, capacity from the topology's gbps."""
        cap: dict[LinkKey, float] = {}
        peer: dict[LinkKey, LinkKey] = {}
        for sw in fabric.switches:
            for p, info in sw.ports.items():
                if info.kind in ("uplink", "downlink"):
                    cap[(sw.name, p)] = info.gbps * 1e9
                    peer[(sw.name, p)] = (info.peer_node, info.peer_port)
        return cls(cap, peer)

    def is_up(self, link: LinkKey) -> bool:
        """``False`` when the link (either end) is down."""
        return link not in self.down

    def link_down(self, switch: str, port: int) -> None:
        """Mark the cable at ``switch:port`` down (both directions)."""
        self.down.add((switch, port))
        other = self.peer.get((switch, port))
        if other is not None:
            self.down.add(other)

    def link_up(self, switch: str, port: int) -> None:
        """Mark the cable at ``switch:port`` up again (both directions)."""
        self.down.discard((switch, port))
        other = self.peer.get((switch, port))
        if other is not None:
            self.down.discard(other)

    def set_util(self, link: LinkKey, util: float) -> None:
        """Telemetry: ``link`` runs at ``util`` (0..1) of its capacity."""
        self.load_bps[link] = util * self.capacity_bps[link]

    def observe_rate(self, link: LinkKey, pps: float, util: float) -> None:
        """Telemetry: ``link`` sent ``pps`` packets/s at utilisation ``util``; the link's
        capacity in packets/s follows (its queue rate when one shapes it: utilisation is
        packets/s over it). Intervals under 5 % say too little and are ignored.

        >>> ls = LinkState({("l", 1): 1e9}, {}); ls.observe_rate(("l", 1), 240.0, 0.7)
        >>> round(ls.capacity_pps[("l", 1)], 1), ls.bps_of_pps(("l", 1), 34.3)
        (342.9, 100041666.667)
        """
        if util > 0.05 and pps > 0:
            self.capacity_pps[link] = pps / util

    def set_queue_rate(self, link: LinkKey, rate_pps: float) -> None:
        """Telemetry: ``link``'s utilisation is relative to a queue rate of ``rate_pps``
        packets/s — its capacity in packets/s, known from the first poll, idle or not
        (what :meth:`observe_rate` would find once the link carries traffic).

        >>> ls = LinkState({("l", 1): 1e9}, {}); ls.set_queue_rate(("l", 1), 343.0)
        >>> ls.bps_of_pps(("l", 1), 34.3)
        100000000.0
        """
        if rate_pps > 0:
            self.capacity_pps[link] = float(rate_pps)

    def bps_of_pps(self, link: LinkKey, pps: float) -> Optional[float]:
        """``pps`` packets/s on ``link`` in the loads' basis (bits/s of its capacity), or
        None before the link's capacity in packets/s is known."""
        cap = self.capacity_pps.get(link)
        if not cap:
            return None
        return round(pps / cap * self.capacity_bps[link], 3)

    def util(self, link: LinkKey, extra_bps: float = 0.0) -> float:
        """Utilisation of ``link`` with ``extra_bps`` more traffic."""
        return (self.load_bps.get(link, 0.0) + extra_bps) / self.capacity_bps[link]

    def name(self, link: LinkKey) -> str:
        """The telemetry's name of ``link``, as the decision log and metrics write it:
        ``"b0r0l0->s0"``, ``"b0r0l0:3->s0"`` when two links join the same pair,
        ``"b0r0l0:9"`` for a port that is no fabric link.

        >>> from topo.model import build_fabric
        >>> LinkState.from_fabric(build_fabric()).name(("b0r0l0", 3))
        'b0r0l0->s0'
        """
        sw, port = link
        peer = self.peer.get(link)
        if peer is None:
            return f"{sw}:{port}"
        twins = [k for k, v in self.peer.items() if k[0] == sw and v[0] == peer[0]]
        return f"{sw}->{peer[0]}" if len(twins) < 2 else f"{sw}:{port}->{peer[0]}"

    def utils_pct(self, links: Iterable[LinkKey]) -> dict[str, float]:
        """Name → utilisation in percent (two decimals) of each of ``links``.

        >>> from topo.model import build_fabric
        >>> ls = LinkState.from_fabric(build_fabric()); ls.set_util(("b0r0l0", 3), 0.123456)
        >>> ls.utils_pct([("b0r0l0", 3)])
        {'b0r0l0->s0': 12.35}
        """
        return {self.name(l): round(100 * self.util(l), 2) for l in links}


__all__ = ["LinkState"]
