"""TCCL on dual-port NICs: the NIC port and the UDP source port of every flow, planned together.

A flow from a dual-port NIC leaves on the port its QP is bound to — the NIC's tx-port hash
of its 5-tuple (:mod:`host.nic.bond`: the bonding driver's layer3+4 hash, modulo 2) — and
its source leaf (that port's leaf) then picks an uplink with its own ECMP hash. Both are
functions of the source port, so collisions happen at two levels: two QPs of a NIC on one
port while the other idles, and two flows of a leaf on one uplink. TCCL removes both:

1. **NIC ports** (:func:`split_nic_ports`). Each NIC's flows are split evenly over its
   ports: ``floor(flows / ports)`` on every port, and a NIC with a remainder puts its
   extra flows on the ports whose leaves carry the fewest flows so far (NICs in order of
   their first flow, ties to the lower port). The busiest NIC port carries
   ``ceil(flows / ports)`` and the leaves of a pair differ by at most one flow — so eight
   NICs with one QP each send four on port 0 and four on port 1, not eight on port 0.
   Flow k of a NIC (request order) takes its k-th port of the sequence "extra ports
   first, then the others" (port order within each); a NIC with an even split alternates
   0, 1, 0, 1.
2. **Source ports.** :class:`host.tccl.ports.PortPlanner` solves the uplinks (and the
   spine hops) with each flow's source leaf = its port's leaf, and accepts only source
   ports whose tx-port hash gives the planned NIC port — so a plain bond, with no
   per-QP override, sends each QP where TCCL planned it. (``nic_port`` is also in the
   plan: a NIC whose QPs can be bound explicitly, ``--lag-port``, may use it instead.)
3. **Across pods** (a fabric with a core tier): pairs whose NICs are in different pods
   get their source ports from :class:`host.tccl.crosspod.CrossPodPlanner` (every tier's
   links least loaded, the path the hash model walks), after the in-pod pairs, whose links
   it counts. With no such pair step 2 runs alone, unchanged.

:func:`dualport_loads` measures a plan (or random source ports, :func:`random_plan`): the
flows on every port of the sending NICs and on every uplink of their leaves, and
``max_over_mean`` = the busiest NIC port or uplink over its tier's mean (goal 1.00). The
receiving NIC ports (the leaf of the destination's pair each spine's hash picks) are
counted too (``rx_port_max_over_mean``) but not planned per NIC: the colouring balances the
spines' choice per leaf pair, so a NIC receiving few flows may get them on one port
(2 QPs per NIC: measured 2.0 in ``tests/host/test_tccl_dualport.py``'s fabric; 4 QPs per
NIC in the bench's: 1.0).

Example::

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> from controller.fabric.detours import fabric_hash_model
    >>> fab = build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1,
    ...                               ports_per_nic=2, leaves_per_rail=2, spines=2))
    >>> pairs = [("10.0.0.1", "10.1.0.1")] * 4 + [("10.0.0.2", "10.1.0.2")] * 4
    >>> plan = plan_dualport(fab, fabric_hash_model(fab), pairs)
    >>> [f.nic_port for f in plan.flows[:4]], dualport_loads(fab, fabric_hash_model(fab), plan.flows).max_over_mean
    ([0, 1, 0, 1], 1.0)
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from host.nic.affinity import FlowKey, TxAffinity
from host.tccl.crosspod import CrossPodPlanner, CrossPodRequest
from host.tccl.portplan import LEAF_UPLINK_GROUP, PROTO_UDP, ROCE_DPORT, FlowRequest, PortPlanError
from host.tccl.ports import PortPlanner
from p4src.hashmodel import FabricHashModel, predict_member


@dataclass(frozen=True, slots=True)
class DualPortFlow:
    """One flow's plan: ``DualPortFlow("f0", "10.0.0.1", "10.1.0.1", 1, 49160)`` leaves on
    NIC port 1 with UDP source port 49160."""

    name: str
    src: str
    dst: str
    nic_port: int
    sport: int


@dataclass(slots=True)
class DualPortPlan:
    """The flows' NIC ports and source ports (request order)."""

    flows: list[DualPortFlow]

    def sports(self) -> list[int]:
        """The source ports, request order."""
        return [f.sport for f in self.flows]


@dataclass(slots=True)
class DualPortLoads:
    """Flows per sending NIC port ``(nic ip, port)``, per receiving NIC port (the leaf of
    the pair the spine's hash delivers through) and per uplink ``(leaf, member)``, zeros
    included for every port of a NIC that sends or receives and every uplink of the
    sending NICs' leaves."""

    nic_ports: dict[tuple[str, int], int] = field(default_factory=dict)
    rx_ports: dict[tuple[str, int], int] = field(default_factory=dict)
    uplinks: dict[tuple[str, str], int] = field(default_factory=dict)

    @staticmethod
    def _ratio(loads: dict[Any, int]) -> float:
        if not loads or not sum(loads.values()):
            return 0.0
        return max(loads.values()) / (sum(loads.values()) / len(loads))

    @property
    def nic_port_max_over_mean(self) -> float:
        """The busiest sending NIC port over the mean sending port."""
        return self._ratio(self.nic_ports)

    @property
    def rx_port_max_over_mean(self) -> float:
        """The busiest receiving NIC port over the mean (not in :attr:`max_over_mean`: the
        planner balances the spines' choice of leaf per leaf pair, not per NIC)."""
        return self._ratio(self.rx_ports)

    @property
    def uplink_max_over_mean(self) -> float:
        """The busiest leaf uplink over the mean uplink."""
        return self._ratio(self.uplinks)

    @property
    def max_over_mean(self) -> float:
        """The busiest sending NIC port or uplink over its tier's mean (1.0: even)."""
        return max(self.nic_port_max_over_mean, self.uplink_max_over_mean)


def _nics(fabric: Any) -> dict[str, Any]:
    return {n.ip: n for h in fabric.hosts for n in h.nics}


def _check(fabric: Any, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    nics = _nics(fabric)
    for i, (src, dst) in enumerate(pairs):
        for ip in (src, dst):
            if ip not in nics:
                raise PortPlanError(f"flow f{i}: no NIC has address {ip}")
        if set(nics[src].leaves) & set(nics[dst].leaves):
            raise PortPlanError(f"flow f{i}: {src} and {dst} share a leaf: no ECMP hop")
    return nics


def plan_dualport(fabric: Any, model: FabricHashModel, pairs: Sequence[tuple[str, str]],
                  affinity: Optional[TxAffinity] = None) -> DualPortPlan:
    """NIC port and source port of every ``(src_ip, dst_ip)`` flow (module docstring);
    ``affinity``: the NICs' tx-port rule (default the layer3+4 hash, 2 ports).
    ``PortPlanError`` for an unknown address or two NICs sharing a leaf."""
    nics = _check(fabric, pairs)
    affinity = affinity or TxAffinity()
    wanted: dict[str, int] = {}
    requests = []
    for i, ((src, dst), port) in enumerate(zip(pairs, split_nic_ports(fabric, pairs))):
        wanted[f"f{i}"] = port
        requests.append(FlowRequest(f"f{i}", src, dst, nics[src].ports[port].leaf,
                                    LEAF_UPLINK_GROUP, nics[dst].ports[0].leaf))
    single = {ip for ip, n in nics.items() if len(n.ports) < 2}

    def port_ok(req: FlowRequest, sport: int) -> bool:
        if req.src in single:        # one port: the tx hash has nothing to choose
            return True
        return affinity.port_of(FlowKey.of(req.src, req.dst, sport, req.dport)) == wanted[req.name]

    pod = {n.ip: h.pod for h in fabric.hosts for n in h.nics}
    if all(pod[s] == pod[d] for s, d in pairs):      # two tiers: the pod's planner alone
        planned = PortPlanner(model, port_ok=port_ok).plan(requests)
        return DualPortPlan([DualPortFlow(f.name, f.src, f.dst, wanted[f.name], f.sport)
                             for f in planned.flows])
    return _plan_with_core(fabric, model, requests, wanted, pod, port_ok)


def _plan_with_core(fabric: Any, model: FabricHashModel, requests: Sequence[FlowRequest],
                    wanted: dict[str, int], pod: dict[str, int],
                    port_ok: Callable[[FlowRequest, int], bool]) -> DualPortPlan:
    """In-pod flows by :class:`PortPlanner`, then cross-pod flows by
    :class:`host.tccl.crosspod.CrossPodPlanner` over the links the in-pod ones load."""
    inside = [r for r in requests if pod[r.src] == pod[r.dst]]
    across = [CrossPodRequest(r.name, r.src, r.dst, wanted[r.name], r.dport)
              for r in requests if pod[r.src] != pod[r.dst]]
    by_name = {r.name: r for r in requests}
    cross = CrossPodPlanner(fabric, model, port_ok=lambda q, sp: port_ok(by_name[q.name], sp))
    sport: dict[str, int] = {}
    base: dict[tuple[str, int], int] = {}
    if inside:
        for f in PortPlanner(model, port_ok=port_ok).plan(inside).flows:
            sport[f.name] = f.sport
            for link in cross.links_of(f.src, wanted[f.name], f.dst, f.sport, f.dport):
                base[link] = base.get(link, 0) + 1
    for c in cross.plan(across, base):
        sport[c.name] = c.sport
    return DualPortPlan([DualPortFlow(r.name, r.src, r.dst, wanted[r.name], sport[r.name])
                         for r in requests])


def split_nic_ports(fabric: Any, pairs: Sequence[tuple[str, str]]) -> list[int]:
    """The NIC port of every ``(src_ip, dst_ip)`` flow, request order (module docstring,
    step 1): each NIC's flows even over its ports, the remainders even over the leaves.
    ``PortPlanError`` for an address no NIC has.

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> fab = build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1,
    ...                               ports_per_nic=2, leaves_per_rail=2, spines=2))
    >>> split_nic_ports(fab, [("10.0.0.1", "10.1.0.1"), ("10.0.0.2", "10.1.0.2")] * 2 +
    ...                 [("10.0.0.1", "10.1.0.2"), ("10.0.0.2", "10.1.0.1")])
    [0, 1, 1, 0, 0, 1]
    """
    nics = _nics(fabric)
    flows_of: dict[str, list[int]] = {}
    for i, (src, _dst) in enumerate(pairs):
        if src not in nics:
            raise PortPlanError(f"flow f{i}: no NIC has address {src}")
        flows_of.setdefault(src, []).append(i)
    leaf_load: dict[str, int] = {}
    order: dict[str, list[int]] = {}
    for src, idx in flows_of.items():              # NICs in order of their first flow
        leaves = nics[src].leaves
        even, extra = divmod(len(idx), len(leaves))
        for leaf in leaves:
            leaf_load[leaf] = leaf_load.get(leaf, 0) + even
        extras = sorted(range(len(leaves)), key=lambda p: (leaf_load[leaves[p]], p))[:extra]
        for p in extras:
            leaf_load[leaves[p]] += 1
        order[src] = sorted(extras) + [p for p in range(len(leaves)) if p not in extras]
    out = [0] * len(pairs)
    for src, idx in flows_of.items():
        for k, i in enumerate(idx):
            out[i] = order[src][k % len(order[src])]
    return out


def random_plan(fabric: Any, pairs: Sequence[tuple[str, str]], seed: int,
                affinity: Optional[TxAffinity] = None) -> DualPortPlan:
    """Random source ports (49152–65535, from ``seed``), each QP on the port the NICs'
    tx-port rule gives it: what a dual-port NIC does without TCCL."""
    _check(fabric, pairs)
    affinity = affinity or TxAffinity()
    rng = random.Random(seed)
    out = []
    for i, (src, dst) in enumerate(pairs):
        sport = rng.randint(49152, 65535)
        out.append(DualPortFlow(f"f{i}", src, dst,
                                affinity.port_of(FlowKey.of(src, dst, sport, ROCE_DPORT)), sport))
    return DualPortPlan(out)


def dualport_loads(fabric: Any, model: FabricHashModel,
                   flows: Sequence[DualPortFlow]) -> DualPortLoads:
    """Flows per NIC port and per uplink of the source leaves, as the NIC (``nic_port``)
    and the published hash model (each leaf's uplink group) place them."""
    nics = _nics(fabric)
    loads = DualPortLoads()
    for f in flows:
        for p, port in enumerate(nics[f.src].ports):
            loads.nic_ports.setdefault((f.src, p), 0)
            for member in model.switch(port.leaf).group(LEAF_UPLINK_GROUP).members:
                loads.uplinks.setdefault((port.leaf, member), 0)
        for p in range(len(nics[f.dst].ports)):
            loads.rx_ports.setdefault((f.dst, p), 0)
    for f in flows:
        loads.nic_ports[(f.src, f.nic_port)] += 1
        leaf = nics[f.src].ports[f.nic_port].leaf
        member = predict_member(model.switch(leaf), LEAF_UPLINK_GROUP, f.src, f.dst, PROTO_UDP,
                                f.sport, ROCE_DPORT)
        loads.uplinks[(leaf, member)] += 1
        loads.rx_ports[(f.dst, _rx_port(model, member.partition("#")[0], nics[f.dst], f))] += 1
    return loads


def _rx_port(model: FabricHashModel, spine: str, dst: Any, f: DualPortFlow) -> int:
    """The destination NIC's port the flow arrives on: the leaf the spine's group towards
    the NIC's leaves picks (its only leaf when the spine has one link there)."""
    leaves = [p.leaf for p in dst.ports]
    for group_id, group in sorted(model.switch(spine).groups.items()):
        peers = [m.partition("#")[0] for m in group.members]
        if set(peers) & set(leaves):
            peer = predict_member(model.switch(spine), group_id, f.src, f.dst, PROTO_UDP,
                                  f.sport, ROCE_DPORT).partition("#")[0]
            return leaves.index(peer)
    return 0           # no group there: the spine reaches one leaf, taken as the first


__all__ = ["DualPortFlow", "DualPortLoads", "DualPortPlan", "dualport_loads", "plan_dualport",
           "random_plan", "split_nic_ports"]
