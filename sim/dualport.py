"""``python -m sim dualport``: one collective step on any topo spec — dual-port NICs, and
pods joined by cores — with QPs placed on NIC ports as the NIC places them, routed over
every tier as the switches route them, and max-min fair rates over every link.

The same description as the testbed (``topo.spec`` / ``topo.model``: sim/ reads no YAML
of its own here) and the same parts:

* **NIC port of a QP**: random source ports, each QP on the port the NIC's tx-port
  affinity hash gives it (:class:`host.nic.affinity.TxAffinity`, the bonding driver's
  layer3+4 hash) — :func:`host.tccl.dualport.random_plan`; or TCCL's dual-port plan, NIC
  port and source port together (:func:`host.tccl.dualport.plan_dualport`, which accepts
  only source ports whose affinity hash gives the planned port);
* **path**: :class:`controller.fabric.tiers.TierModel` (topo's routes and the published
  hash model of every leaf, spine and core: the NIC port's leaf, its uplink, the spine,
  the core and back down, the destination NIC's port the last spine's hash picks);
* **rates**: :func:`sim.engine.max_min_rates` over the directed links: the sending NIC
  port (its ``link_gbps``) and every switch egress port on the way (that port's speed).

The step's time is the slowest flow's ``size / rate``; ``max_over_mean`` per tier (NIC
ports, leaf uplinks, spine-to-core links) is the busiest link's flows over the tier's mean
over the links that the flows' leaves (spines) own — 1.00 is perfectly even.

Example::

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> fab = build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1, ports_per_nic=2,
    ...                               leaves_per_rail=2, spines=2))
    >>> pairs = [("10.0.0.1", "10.1.0.1")] * 4 + [("10.0.0.2", "10.1.0.2")] * 4
    >>> r = simulate_step(fab, pairs, "tccl", 1e6)
    >>> r.max_over_mean["nic_port"], r.max_over_mean["leaf_up"], r.flows
    (1.0, 1.0, 8)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from controller.fabric.tiers import TierModel
from host.nic.affinity import TxAffinity
from host.tccl.dualport import DualPortFlow, plan_dualport, random_plan
from host.tccl.portplan import PortPlanError
from sim.engine import max_min_rates
from sim.topology import SimInputError
from topo.model import Fabric, NicInfo

POLICIES = ("random", "tccl")
TIERS = ("nic_port", "leaf_up", "spine_up")


@dataclass(slots=True)
class StepResult:
    """One step: its time (slowest flow), flows, each tier's flows per link and
    ``max_over_mean``, the NIC ports the QPs use (``(host ip, port)`` → flows)."""

    policy: str
    time_s: float
    flows: int
    max_over_mean: dict[str, float] = field(default_factory=dict)
    tier_loads: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    rates_Bps: Optional[np.ndarray] = None

    def summary(self) -> str:
        """One line: ``tccl: 8 flows, step 0.000160 s, max/mean nic_port 1.00 ...``."""
        tiers = ", ".join(f"{t} {v:.2f}" for t, v in self.max_over_mean.items())
        return f"{self.policy}: {self.flows} flows, step {self.time_s:.6f} s, max/mean {tiers}"


def place(fab: Fabric, tiers: TierModel, pairs: Sequence[tuple[str, str]], policy: str,
          seed: int = 1) -> list[DualPortFlow]:
    """NIC port and source port of every ``(src ip, dst ip)`` flow under ``policy``."""
    try:
        affinity = TxAffinity(ports=fab.spec.ports_per_nic)
        if policy == "random":
            return random_plan(fab, pairs, seed, affinity).flows
        if policy == "tccl":
            return plan_dualport(fab, tiers.model, pairs, affinity).flows
    except PortPlanError as exc:
        raise SimInputError(f"flows: {exc}") from None
    raise SimInputError(f"policy: {policy!r}: one of {', '.join(POLICIES)}")


def simulate_step(fab: Fabric, pairs: Sequence[tuple[str, str]], policy: str, size_bytes: float,
                  seed: int = 1, tiers: Optional[TierModel] = None) -> StepResult:
    """Every flow moves ``size_bytes`` at once (one step of a collective)."""
    tiers = tiers or TierModel.of(fab)
    nics: dict[str, NicInfo] = {n.ip: n for h in fab.hosts for n in h.nics}
    host_of = {n.ip: h.name for h in fab.hosts for n in h.nics}
    flows = place(fab, tiers, pairs, policy, seed)
    link_id: dict[tuple[str, int], int] = {}
    caps: list[float] = []
    tier_of: list[str] = []

    def link(key: tuple[str, int], gbps: float, tier: str) -> int:
        if key not in link_id:
            link_id[key] = len(caps)
            caps.append(gbps * 1e9 / 8)
            tier_of.append(tier)
        return link_id[key]

    # every NIC port of a sender and every uplink of the leaves and spines it can reach
    # counts in its tier's mean, used or not (an idle link is what makes max/mean > 1)
    for f in flows:
        nic = nics[f.src]
        for p in nic.ports:
            link((f"{host_of[f.src]}:{nic.rail}", p.port), nic.gbps, "nic_port")
            leaf = fab.switch(p.leaf)
            for port, info in sorted(leaf.ports.items()):
                if info.kind == "uplink":
                    link((leaf.name, port), info.gbps, "leaf_up")
    rows = []
    for f in flows:
        nic = nics[f.src]
        path = tiers.path(nic, f.nic_port, f.dst, f.sport)
        ids = [link((f"{host_of[f.src]}:{nic.rail}", f.nic_port), nic.gbps, "nic_port")]
        for sw, port in path.hops:
            info = fab.switch(sw).ports[port]
            role = fab.switch(sw).role
            tier = {"leaf": "leaf_up" if info.kind == "uplink" else "leaf_down",
                    "spine": "spine_up" if info.kind == "uplink" else "spine_down"}.get(role, "core_down")
            if tier == "spine_up":
                for p2, i2 in sorted(fab.switch(sw).ports.items()):
                    if i2.kind == "uplink":
                        link((sw, p2), i2.gbps, "spine_up")
            ids.append(link((sw, port), info.gbps, tier))
        rows.append(ids)
    width = max((len(r) for r in rows), default=1)
    mat = np.full((len(rows), width), -1, np.int64)
    for i, r in enumerate(rows):
        mat[i, :len(r)] = r
    rates = max_min_rates(mat, np.asarray(caps, np.float64)) if rows else np.zeros(0)
    time_s = float(size_bytes / rates.min()) if len(rates) else 0.0
    counts = np.bincount(mat[mat >= 0], minlength=len(caps))
    keys = list(link_id)
    loads: dict[str, dict[tuple[str, int], int]] = {}
    mom: dict[str, float] = {}
    for tier in TIERS:
        idx = [i for i, t in enumerate(tier_of) if t == tier]
        if not idx:
            continue
        loads[tier] = {keys[i]: int(counts[i]) for i in idx}
        mean = counts[idx].mean()
        mom[tier] = round(float(counts[idx].max() / mean), 3) if mean else 0.0
    return StepResult(policy, time_s, len(flows), mom, loads, rates)


def cross_pairs(fab: Fabric, qps_per_nic: int = 4) -> list[tuple[str, str]]:
    """A step every NIC takes part in: NIC r of server i sends ``qps_per_nic`` QPs to NIC r
    of the server half the fabric away (another block, or another pod), so every flow
    crosses a spine.

        >>> from topo.model import build_fabric
        >>> cross_pairs(build_fabric(), 1)[:2]
        [('10.0.0.1', '10.1.0.1'), ('10.0.1.1', '10.1.1.1')]
    """
    hosts = fab.hosts
    half = len(hosts) // 2
    if half == 0:
        raise SimInputError("fabric: one server; a step between servers needs two")
    out = []
    for i, h in enumerate(hosts):
        peer = hosts[(i + half) % len(hosts)]
        for n, m in zip(h.nics, peer.nics):
            out += [(n.ip, m.ip)] * qps_per_nic
    return out


__all__ = ["POLICIES", "StepResult", "cross_pairs", "place", "simulate_step"]
