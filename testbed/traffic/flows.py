"""The flows of a testbed run: NIC pairs (elephants between blocks, a collective's
transfers), their UDP source ports (seeded random or TCCL-planned on the programmed hash
model), QPNs and the leaf uplink the hash model predicts for each (in the group the leaf
routes the destination to: its uplink group, or a detour group when a spine has lost its
links to the destination's leaf).

>>> from topo.model import build_fabric
>>> fab = build_fabric()
>>> elephant_pairs(fab, rail=0, count=3)
[('10.0.0.1', '10.1.0.1'), ('10.0.0.2', '10.1.0.1'), ('10.0.0.1', '10.1.0.2')]
>>> choose_ports(fab, elephant_pairs(fab, 0, 3), "random", seed=7) == \\
...     choose_ports(fab, elephant_pairs(fab, 0, 3), "random", seed=7)
True
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from host.nic.affinity import FlowKey, TxAffinity
from host.tccl.dualport import plan_dualport
from host.tccl.planner import Planner
from host.tccl.ports import PortPlanner, flows_from_fabric
from p4src.hashmodel import FabricHashModel, predict_member, route_group

ROCE_DPORT = 4791
LEAF_UPLINK_GROUP = 1
SPORT_RANGE = (49152, 65535)
PORT_MODES = ("random", "tccl")
FIRST_QPN = 0x100
QPNS_PER_PAIR = 64


@dataclass(frozen=True, slots=True)
class NicFlow:
    """One RDMA WRITE flow between two NICs of the fabric, its port, QPN and predicted uplink.

    >>> NicFlow("f0", "b0s0", "10.0.0.1", "b0s0-eth0", "b1s0", "10.1.0.1", "b1s0-eth0",
    ...         "b0r0l0", "02:00:00:00:01:00", 49152, 256).label
    'b0s0:49152->b1s0'
    """

    name: str
    src_host: str
    src_ip: str
    src_intf: str
    dst_host: str
    dst_ip: str
    dst_intf: str
    leaf: str
    gateway_mac: str
    sport: int
    qpn: int
    predicted_uplink: Optional[str] = None
    dst_intfs: tuple[str, ...] = ()      # every port of a dual-port destination NIC
    src_intfs: tuple[str, ...] = ()      # every port of a dual-port source NIC (port order)
    gateway_macs: tuple[str, ...] = ()   # each source port's leaf router MAC (port order)
    nic_port: int = 0                    # the source port the QP is bound to (its leaf: ``leaf``)

    @property
    def send_iface(self) -> str:
        """The sender's ``--iface``: both ports of a dual-port NIC (the bond transmits each
        QP on its bound port and receives ACK/NAK/CNP/PAUSE on either), else ``src_intf``.

        >>> NicFlow("f0", "a", "10.0.0.1", "a-eth0", "b", "10.1.0.1", "b-eth0", "l1", "m1", 1, 256,
        ...         src_intfs=("a-eth0", "a-eth0p1"), gateway_macs=("m0", "m1"),
        ...         nic_port=1).send_iface
        'a-eth0,a-eth0p1'
        """
        return ",".join(self.src_intfs) if len(self.src_intfs) > 1 else self.src_intf

    @property
    def send_macs(self) -> str:
        """The sender's ``--dst-mac``: one next hop per port of a dual-port NIC, else
        ``gateway_mac``."""
        return ",".join(self.gateway_macs) if len(self.gateway_macs) > 1 else self.gateway_mac

    @property
    def recv_iface(self) -> str:
        """The receiver's ``--iface``: both ports of a dual-port NIC (a spine delivers to
        the NIC through either of its leaves), else ``dst_intf``.

        >>> NicFlow("f0", "a", "10.0.0.1", "a-eth0", "b", "10.1.0.1", "b-eth0", "l", "m", 1, 256,
        ...         dst_intfs=("b-eth0", "b-eth0p1")).recv_iface
        'b-eth0,b-eth0p1'
        """
        return ",".join(self.dst_intfs) if len(self.dst_intfs) > 1 else self.dst_intf

    @property
    def label(self) -> str:
        """Short name for narratives: ``src_host:sport->dst_host``."""
        return f"{self.src_host}:{self.sport}->{self.dst_host}"


def _nics_by_ip(fabric: Any) -> dict[str, tuple[Any, Any]]:
    return {n.ip: (h, n) for h in fabric.hosts for n in h.nics}


def elephant_pairs(fabric: Any, rail: int = 0, count: int = 8,
                   src_block: Optional[int] = None, dst_block: Optional[int] = None
                   ) -> list[tuple[str, str]]:
    """``count`` (src IP, dst IP) pairs from ``src_block``'s servers (default: the first
    block) to ``dst_block``'s (default: the next) on ``rail``, round robin over sources
    then destinations. In a fabric of several pods the default pair is block 0 of pod 0
    to block 0 of pod 1 (cross-pod elephants: their paths cross the core tier), as
    ``(pod, block)`` groups sort.

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> elephant_pairs(build_fabric(FabricSpec(pods=2, blocks=1, cores=2, ports_per_nic=2,
    ...                                        leaves_per_rail=2)), count=2)
    [('10.0.0.1', '10.0.2.1'), ('10.0.0.2', '10.0.2.1')]
    """
    def group(h: Any) -> tuple[int, int]:
        return (0 if src_block is not None or dst_block is not None else getattr(h, "pod", 0) or 0,
                h.block)

    groups = sorted({group(h) for h in fabric.hosts})
    if len(groups) < 2:
        raise ValueError("elephants between blocks need at least two blocks (or two pods)")
    sb = groups[0] if src_block is None else (0, src_block)
    db = groups[(groups.index(sb) + 1) % len(groups)] if dst_block is None else (0, dst_block)
    srcs = [n.ip for h in fabric.hosts if group(h) == sb for n in h.nics if n.rail == rail]
    dsts = [n.ip for h in fabric.hosts if group(h) == db for n in h.nics if n.rail == rail]
    if not srcs or not dsts:
        raise ValueError(f"no NIC on rail {rail} in block {sb[1]} or {db[1]}")
    return [(srcs[i % len(srcs)], dsts[(i // len(srcs)) % len(dsts)]) for i in range(count)]


def collective_pairs(fabric: Any, collective: str = "allreduce", order: str = "tccl",
                     algorithm: str = "ring") -> list[tuple[str, str]]:
    """The distinct (src IP, dst IP) NIC pairs of a collective planned by
    :class:`host.tccl.planner.Planner` over every GPU of ``fabric``: transfers between
    servers on the same rail (NVLink transfers need no network flow; rails are separate
    networks, so a cross-rail transfer has no path on the testbed and is left out).

    >>> from topo.model import build_fabric
    >>> len(collective_pairs(build_fabric())) > 0
    True
    """
    planner = Planner(fabric)
    plan = planner.plan(collective, 1 << 20, algorithm=algorithm, order=order)
    hosts = {h.name: h for h in fabric.hosts}
    out: list[tuple[str, str]] = []
    for a, b, _ in plan.edges:
        ra, rb = planner.rank(a), planner.rank(b)
        if ra.server == rb.server or ra.rail != rb.rail:
            continue
        pair = (hosts[ra.server].nics[ra.gpu].ip, hosts[rb.server].nics[rb.gpu].ip)
        if pair not in out:
            out.append(pair)
    return out


@dataclass(frozen=True, slots=True)
class PortChoice:
    """Each flow's UDP source port and the NIC port its QP is bound to (request order);
    pass both on: ``build_flows(fabric, pairs, c.sports, model, member_ports, c.nic_ports)``."""

    sports: list[int]
    nic_ports: list[int]


def plan_ports(fabric: Any, pairs: Sequence[tuple[str, str]], mode: str,
               seed: int = 0, model: Optional[FabricHashModel] = None) -> PortChoice:
    """Source port and NIC port of every pair.

    * ``random``: distinct source ports, 49152–65535, from ``seed``; each QP on the NIC
      port the bond's documented layer3+4 hash picks (:func:`hashed_nic_ports`: what a
      dual-port NIC does when nothing overrides it; port 0 on a NIC of one port).
    * ``tccl``, single-port NICs: :class:`host.tccl.ports.PortPlanner` on ``model``, port 0.
    * ``tccl``, dual-port source NICs: :func:`host.tccl.dualport.plan_dualport` plans the NIC
      port and the source port together — each NIC's QPs even over its ports, the ports'
      leaves even, every leaf's uplinks even — with source ports whose layer3+4 tx hash
      picks the planned port (a plain bond agrees with ``--lag-port``); pairs across pods
      (a core tier) by :class:`host.tccl.crosspod.CrossPodPlanner` inside it.
    * ``tccl`` with a pair across pods, NICs of one port too: :func:`plan_dualport` (every
      QP on port 0 there).

    Pairs whose NICs share a leaf cross no ECMP hop: they keep the seeded random port, on
    the NIC port the bond's hash gives it (port 0 for a single-port NIC).

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> from controller.fabric.detours import fabric_hash_model
    >>> fab = build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1, ports_per_nic=2,
    ...                               leaves_per_rail=2, spines=2))
    >>> plan_ports(fab, [("10.0.0.1", "10.1.0.1")] * 4, "tccl", 0, fabric_hash_model(fab)).nic_ports
    [0, 1, 0, 1]
    """
    rng = random.Random(seed)
    ports = rng.sample(range(SPORT_RANGE[0], SPORT_RANGE[1] + 1), len(pairs))
    if mode == "random":
        return PortChoice(ports, hashed_nic_ports(fabric, pairs, ports))
    if mode != "tccl":
        raise ValueError(f"unknown port mode {mode!r} (known: {', '.join(PORT_MODES)})")
    if model is None:
        raise ValueError("tccl ports need the programmed hash model")
    nics = _nics_by_ip(fabric)
    routed = [i for i, (s, d) in enumerate(pairs)
              if not set(nics[s][1].leaves) & set(nics[d][1].leaves)]
    across = any(nics[s][0].pod != nics[d][0].pod for s, d in pairs)
    if all(len(nics[s][1].ports) < 2 for s, _d in pairs) and not across:
        plan = PortPlanner(model).plan(flows_from_fabric(fabric, [pairs[i] for i in routed]))
        for i, fp in zip(routed, plan.flows):
            ports[i] = fp.sport
        return PortChoice(ports, [0] * len(pairs))
    nic_ports = hashed_nic_ports(fabric, pairs, ports)
    dual = plan_dualport(fabric, model, [pairs[i] for i in routed])
    for i, f in zip(routed, dual.flows):
        ports[i], nic_ports[i] = f.sport, f.nic_port
    return PortChoice(ports, nic_ports)


def choose_ports(fabric: Any, pairs: Sequence[tuple[str, str]], mode: str,
                 seed: int = 0, model: Optional[FabricHashModel] = None) -> list[int]:
    """One UDP source port per pair: ``random`` (distinct, 49152–65535, from ``seed``) or
    ``tccl`` (:class:`host.tccl.ports.PortPlanner` on ``model``; pairs behind one leaf,
    which cross no ECMP hop, keep a seeded random port): :func:`plan_ports`'s source
    ports. On dual-port NICs a TCCL port is planned for a NIC port: use
    :func:`plan_ports` and pass its ``nic_ports`` to :func:`build_flows`."""
    return plan_ports(fabric, pairs, mode, seed, model).sports


def uplink_port_of(leaf: Any, member: str) -> int:
    """The uplink port of ``leaf`` (a ``topo.model`` switch) behind an ECMP member name:
    ``"s0#5"`` is port 5, ``"s0"`` the leaf's uplink to ``s0`` (the lowest-numbered one
    should the leaf have several: a plain name then means its siblings are down, and it
    leads to the same spine). ``KeyError`` when no uplink matches.

    >>> from topo.model import build_fabric
    >>> leaf = build_fabric().switch("b1r0l0")
    >>> uplink_port_of(leaf, "s1"), uplink_port_of(leaf, "s0#3")
    (4, 3)
    """
    peer, _, port = member.partition("#")
    uplinks = sorted(p for p, info in leaf.ports.items()
                     if info.kind == "uplink" and info.peer_node == peer)
    if port:
        if int(port) in uplinks:
            return int(port)
    elif uplinks:
        return uplinks[0]
    raise KeyError(f"leaf {leaf.name} has no uplink for ECMP member {member!r}")


def predict_uplink(fabric: Any, model: FabricHashModel,
                   member_ports: Callable[[str, int], Mapping[str, int]],
                   src_ip: str, dst_ip: str, sport: int,
                   src_leaf: Optional[str] = None) -> Optional[str]:
    """The leaf uplink (``"b0r0l0->s1"``) the hash model predicts for a flow; None when
    source and destination share a leaf. ``src_leaf``: the leaf of the source NIC port the
    flow leaves by (a dual-port NIC's port 1), default the NIC's port 0 leaf. The leaf's group is the one its published routes
    pick for ``dst_ip`` (:func:`p4src.hashmodel.route_group`), else the uplink group;
    ``member_ports`` maps the uplink group's members to ports, a detour group's members
    are mapped through the topology (:func:`uplink_port_of`)."""
    nics = _nics_by_ip(fabric)
    snic, dnic = nics[src_ip][1], nics[dst_ip][1]
    leaf_name = src_leaf or snic.leaf
    if leaf_name in {p.leaf for p in getattr(dnic, "ports", ())} | {dnic.leaf}:
        return None
    sw = model.switch(leaf_name)
    gid = route_group(sw, dst_ip, LEAF_UPLINK_GROUP)
    group = LEAF_UPLINK_GROUP if gid is None else gid
    member = predict_member(sw, group, src_ip, dst_ip, 17, sport, ROCE_DPORT)
    leaf = next(s for s in fabric.switches if s.name == leaf_name)
    if group == LEAF_UPLINK_GROUP:
        port = member_ports(leaf_name, LEAF_UPLINK_GROUP)[member]
    else:
        port = uplink_port_of(leaf, member)
    return f"{leaf_name}->{leaf.ports[port].peer_node}"


def hashed_nic_ports(fabric: Any, pairs: Sequence[tuple[str, str]],
                     sports: Sequence[int]) -> list[int]:
    """The source NIC port each flow's QP is bound to by the bond's documented layer3+4
    hash (:func:`host.nic.affinity.l34_hash`, modulo the NIC's ports): what a dual-port
    NIC picks when nothing overrides it; 0 for a single-port NIC.

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> fab = build_fabric(FabricSpec(pods=2, blocks=1, cores=2, ports_per_nic=2, leaves_per_rail=2))
    >>> hashed_nic_ports(fab, [("10.0.0.1", "10.0.2.1")] * 4, [49152, 49153, 49154, 49155])
    [1, 1, 0, 0]
    """
    nics = _nics_by_ip(fabric)
    out = []
    for (src, dst), sport in zip(pairs, sports):
        n = len(getattr(nics[src][1], "ports", ())) or 1
        out.append(TxAffinity(ports=n).port_of(FlowKey.of(src, dst, sport, ROCE_DPORT)) if n > 1 else 0)
    return out


def build_flows(fabric: Any, pairs: Sequence[tuple[str, str]], sports: Sequence[int],
                model: Optional[FabricHashModel] = None,
                member_ports: Optional[Callable[[str, int], Mapping[str, int]]] = None,
                nic_ports: Sequence[int] = ()) -> list[NicFlow]:
    """:class:`NicFlow` records with the predicted uplink when a model is given. QPNs are
    unique: :data:`FIRST_QPN` + 64 × (index of the NIC pair) + (index within the pair), so
    the flows of one sender process have consecutive QPNs.

    A dual-port source NIC sends over both ports (``src_intfs``, one next hop each), and
    each flow's QP is bound to ``nic_ports[i]`` (the sender's ``--lag-port``); ``leaf``,
    ``gateway_mac`` and the prediction are that port's. Without ``nic_ports`` every QP is
    bound to port 0; :func:`plan_ports` gives the NIC ports of both modes (``random``: the
    bond's own hash choice, :func:`hashed_nic_ports`; ``tccl``: TCCL's plan). ValueError
    for a port the NIC lacks.

    >>> from topo.model import build_fabric
    >>> f = build_flows(build_fabric(), [("10.0.0.1", "10.1.0.1")], [50000])[0]
    >>> (f.src_intf, f.dst_intf, f.leaf, f.qpn)
    ('b0s0-eth0', 'b1s0-eth0', 'b0r0l0', 256)
    """
    nics = _nics_by_ip(fabric)
    routers = {s.name: s.router_mac for s in fabric.switches}
    out = []
    groups: dict[tuple[str, str], int] = {}
    if nic_ports and len(nic_ports) != len(pairs):
        raise ValueError(f"nic_ports: {len(nic_ports)} entries for {len(pairs)} flows")
    for i, ((src, dst), sport) in enumerate(zip(pairs, sports)):
        (sh, sn), (dh, dn) = nics[src], nics[dst]
        sports_of = list(getattr(sn, "ports", ())) or [None]
        bound = nic_ports[i] if nic_ports else 0
        if not 0 <= bound < len(sports_of):
            raise ValueError(f"nic_ports[{i}]: port {bound}; NIC {sn.intf} has ports "
                             f"0..{len(sports_of) - 1}")
        leaf = sports_of[bound].leaf if sports_of[0] is not None else sn.leaf
        g = groups.setdefault((src, dst), len(groups))
        qpn = FIRST_QPN + QPNS_PER_PAIR * g + sum(1 for f in out if (f.src_ip, f.dst_ip) == (src, dst))
        up = (predict_uplink(fabric, model, member_ports, src, dst, sport, leaf)
              if model is not None and member_ports is not None else None)
        dual = len(sports_of) > 1
        out.append(NicFlow(f"f{i}", sh.name, src, sn.intf, dh.name, dst, dn.intf, leaf,
                           routers[leaf], sport, qpn, up,
                           tuple(p.intf for p in getattr(dn, "ports", ())),
                           tuple(p.intf for p in sports_of) if dual else (),
                           tuple(routers[p.leaf] for p in sports_of) if dual else (), bound))
    return out


__all__ = ["FIRST_QPN", "LEAF_UPLINK_GROUP", "NicFlow", "PORT_MODES", "PortChoice", "QPNS_PER_PAIR",
           "ROCE_DPORT", "SPORT_RANGE", "build_flows", "choose_ports", "collective_pairs", "elephant_pairs",
           "hashed_nic_ports", "plan_ports", "predict_uplink", "uplink_port_of"]
