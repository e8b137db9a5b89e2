"""One NIC's view of the policy: the ids it gives VMs (next hops, policy scopes), the
configuration tables it writes (ports, VPCs, next hops, the load balancer's reverse map),
what a policy change touches (the scopes whose decisions may differ), and the session
data of a decision — for the FORNAX manager (one entry per connection) and the
software-centric one (one per direction) alike.

Ids are stable across policy reloads (a VM keeps its next hop and scope for as long as it
exists), so a change touches only the scopes it affects.

Example::

    >>> from fornax.policy import EXAMPLE, parse_policy
    >>> view = NicView("nicA")
    >>> view.load(parse_policy(EXAMPLE))
    set()
    >>> view.scope_of_vm["a1"], sorted(view.nexthops)
    (1, [1, 2])
    >>> view.nexthops[2]                 # b1, behind nicB's VTEP
    NextHop(port=1, vm_mac=2199023256065, vtep=3232235522)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from fornax.policy import Conn, Decision, Policy
from fornax.softpath import NextHop, Packet, Translation
from p4src.smartnic.model import (NAT_HI, NAT_LO, NAT_NONE, UPLINK_PORT, VERDICT_ALLOW,
                                  VERDICT_DENY, NicIdentity, SessionData, SessionKey)

PAIR_SCOPE_BASE = 0x8000
"""Scopes of sessions between two VMs behind this NIC: one per VPC, from here up."""


@dataclass(frozen=True, slots=True)
class Built:
    """A decision made into what the NIC needs: the action data of the session entry (no
    check code yet, no slot), the next hop of this packet and its translation, the
    decision itself."""

    data: SessionData
    hop: Optional[NextHop]
    nat: Optional[Translation]
    decision: Decision


class NicView:
    """The policy as NIC ``nic`` enforces it (:meth:`load` a policy, then ask)."""

    def __init__(self, nic: str) -> None:
        self.nic = nic
        self.policy: Optional[Policy] = None
        self.identity: Optional[NicIdentity] = None
        self.nh_of_vm: dict[str, int] = {}
        self.scope_of_vm: dict[str, int] = {}
        self.pair_scope_of_vpc: dict[str, int] = {}
        self.versions: dict[int, int] = {}
        self.nexthops: dict[int, NextHop] = {}
        self.vm_ports: dict[int, int] = {}               # port -> VNI
        self.vpcs: set[int] = set()
        self.lb_reverse: dict[tuple[int, int, int, int], tuple[int, int]] = {}
        self._fp: tuple[dict[str, str], dict[str, str]] = ({}, {})

    # ------------------------------------------------------------------ loading
    def load(self, policy: Policy) -> set[int]:
        """Take ``policy``; the scopes whose version must be bumped (their sessions may
        decide otherwise now; none at the first load). Versions are bumped here."""
        if self.nic not in policy.nics:
            raise ValueError(f"the policy has no nic named {self.nic!r} "
                             f"(it has: {', '.join(sorted(policy.nics)) or 'none'})")
        n = policy.nics[self.nic]
        self.identity = NicIdentity(n.vtep, n.uplink_mac, n.underlay_mac, n.gateway_mac)
        for vm in policy.vms.values():
            self.nh_of_vm.setdefault(vm.name, len(self.nh_of_vm) + 1)
        local = policy.vms_of_nic(self.nic)
        for vm in local:
            if vm.name not in self.scope_of_vm:
                self.scope_of_vm[vm.name] = len(self.scope_of_vm) + 1
        for name in policy.vpcs:
            self.pair_scope_of_vpc.setdefault(name, PAIR_SCOPE_BASE + len(self.pair_scope_of_vpc))
        served = {vm.vpc for vm in local}
        self.vpcs = {policy.vpcs[v].vni for v in served}
        self.vm_ports = {vm.port: policy.vpcs[vm.vpc].vni for vm in local}
        self.nexthops = {}
        for vm in policy.vms.values():
            if vm.vpc not in served:
                continue
            nh = self.nh_of_vm[vm.name]
            self.nexthops[nh] = NextHop.local(vm.port, vm.mac) if vm.nic == self.nic else \
                NextHop.remote(policy.nics[vm.nic].vtep, vm.mac)
        self.lb_reverse = {}
        for lb in policy.lbs:
            if lb.vpc not in served:
                continue
            vni = policy.vpcs[lb.vpc].vni
            for b_ip, b_port in lb.backends:
                vm = policy.vm_by_addr.get((lb.vpc, b_ip))
                if vm is not None and vm.nic == self.nic:
                    self.lb_reverse[(vni, lb.proto, b_ip, b_port)] = (lb.vip, lb.port)
        vm_fp, vpc_fp = policy.fingerprints()
        old_vm, old_vpc = self._fp
        changed: set[int] = set()
        if self.policy is not None:
            for vm in local:
                if vm_fp.get(vm.name) != old_vm.get(vm.name) or \
                        vpc_fp.get(vm.vpc) != old_vpc.get(vm.vpc):
                    changed.add(self.scope_of_vm[vm.name])
                    changed.add(self.pair_scope_of_vpc[vm.vpc])
            for name, scope in self.scope_of_vm.items():   # VMs gone from this NIC
                if name not in policy.vms or policy.vms[name].nic != self.nic:
                    changed.add(scope)
        for vm in local:
            self.versions.setdefault(self.scope_of_vm[vm.name], 1)
        for name in served:
            self.versions.setdefault(self.pair_scope_of_vpc[name], 1)
        for scope in changed:
            self.versions[scope] = (self.versions.get(scope, 0) % 0xFFFF) + 1
        self.policy, self._fp = policy, (vm_fp, vpc_fp)
        return changed

    def config_entries(self) -> dict[tuple[Any, ...], tuple[Any, ...]]:
        """The configuration tables this NIC needs, as ``{(table, key): params}``:
        ``("nic",)``, ``("uplink", port)``, ``("port", port)``, ``("vpc", vni)``,
        ``("nh", id)``, ``("lb", (vni, proto, ip, port))`` (see
        :meth:`fornax.pipeline.SmartNic.apply_config`)."""
        assert self.identity is not None
        out: dict[tuple[Any, ...], tuple[Any, ...]] = {
            ("nic",): (self.identity.vtep_ip, self.identity.uplink_mac,
                       self.identity.underlay_gw_mac, self.identity.vm_gw_mac),
            ("uplink", UPLINK_PORT): ()}
        out.update({("port", p): (vni,) for p, vni in self.vm_ports.items()})
        out.update({("vpc", vni): () for vni in self.vpcs})
        out.update({("nh", nh): (hop.port, hop.vm_mac, hop.vtep)
                    for nh, hop in self.nexthops.items()})
        out.update({("lb", k): v for k, v in self.lb_reverse.items()})
        return out

    # ------------------------------------------------------------------ decisions
    def decide(self, conn: Conn, in_vm: Optional[str], tcp_flags: int = -1,
               keep_backend: Optional[tuple[int, int]] = None) -> Decision:
        """The policy's decision for a connection whose packet is ``conn`` (from VM
        ``in_vm``, None: from the uplink). A TCP packet that is not a pure SYN (a SYN+ACK,
        data, a FIN) may belong to a connection opened the other way (picked up
        mid-stream, e.g. after the hardware path came back): that orientation is tried
        too, and allows if it does."""
        assert self.policy is not None
        d = self.policy.evaluate(self.nic, conn, in_vm, keep_backend)
        if d.allowed or tcp_flags < 0 or (tcp_flags & 0x12) == 0x02:
            return d
        rev = self.policy.evaluate(self.nic, conn.reversed(), None, keep_backend)
        if rev.allowed and (in_vm is None or rev.dst_vm == in_vm):
            return Decision(True, f"reply of: {rev.reason}", rev.dst_vm, rev.src_vm,
                            rev.backend, rev.lb)
        return d

    def build(self, key: SessionKey, direction: int, conn: Conn, decision: Decision,
              from_backend: Optional[tuple[int, int]] = None) -> Built:
        """The session data of ``decision`` for the packet ``conn`` (``direction`` 0: its
        source is the key's lo end) — scope and version included, slot and check code not.
        ``from_backend``: the packet's own source when the data plane keyed it by its VIP.
        """
        assert self.policy is not None
        if not decision.allowed or decision.src_vm is None or decision.dst_vm is None:
            return Built(SessionData(VERDICT_DENY, scope=self._scope(decision),
                                     version=self.versions.get(self._scope(decision), 0)),
                         None, None, decision)
        nh_src, nh_dst = self.nh_of_vm[decision.src_vm], self.nh_of_vm[decision.dst_vm]
        nh_lo, nh_hi = (nh_src, nh_dst) if direction == 0 else (nh_dst, nh_src)
        nat_side, nat_ip, nat_port, nat = NAT_NONE, 0, 0, None
        pol = self.policy
        if from_backend is not None:
            # the packet comes from the backend behind this NIC, keyed by the VIP (source side)
            nat_side = NAT_LO if direction == 0 else NAT_HI
            nat_ip, nat_port = from_backend
            nat = Translation("src", conn.src_ip, conn.src_port)
        elif decision.lb is not None and decision.backend is not None:
            backend_vm = pol.vm_by_addr.get((decision.lb.vpc, decision.backend[0]))
            vip_is_dst = (conn.dst_ip, conn.dst_port) == (decision.lb.vip, decision.lb.port)
            if backend_vm is not None and backend_vm.nic == self.nic:
                nat_side = (NAT_HI if direction == 0 else NAT_LO) if vip_is_dst else \
                    (NAT_LO if direction == 0 else NAT_HI)
                nat_ip, nat_port = decision.backend
                if vip_is_dst:
                    nat = Translation("dst", nat_ip, nat_port)
        scope = self._scope(decision)
        data = SessionData(VERDICT_ALLOW, scope=scope, version=self.versions.get(scope, 0),
                           nh_lo=nh_lo, nh_hi=nh_hi, nat_side=nat_side, nat_ip=nat_ip,
                           nat_port=nat_port)
        hop = self.nexthops.get(nh_dst)
        return Built(data, hop, nat, decision)

    def _scope(self, decision: Decision) -> int:
        pol = self.policy
        assert pol is not None
        local = [v for v in (decision.src_vm, decision.dst_vm)
                 if v is not None and pol.vms[v].nic == self.nic]
        if len(local) == 2:
            return self.pair_scope_of_vpc[pol.vms[local[0]].vpc]
        if local:
            return self.scope_of_vm[local[0]]
        return 0

    def conn_of(self, pkt: Packet, vni: int) -> tuple[Conn, Optional[tuple[int, int]]]:
        """The connection a packet shows, as the data plane keys it: a backend's packet
        from a VM port is seen as from its VIP; (conn, the packet's real source or None)."""
        rev = self.lb_reverse.get((vni, pkt.proto, pkt.src_ip, pkt.src_port)) \
            if pkt.in_port in self.vm_ports else None
        if rev is not None:
            return Conn(vni, pkt.proto, rev[0], rev[1], pkt.dst_ip, pkt.dst_port), \
                (pkt.src_ip, pkt.src_port)
        return Conn(vni, pkt.proto, pkt.src_ip, pkt.src_port, pkt.dst_ip, pkt.dst_port), None

    def vm_on_port(self, port: int) -> Optional[str]:
        """The VM on ``port`` of this NIC."""
        assert self.policy is not None
        vm = self.policy.vm_on_port(self.nic, port)
        return vm.name if vm is not None else None

    def backend_of_entry(self, decision: Decision, data: SessionData,
                         direction: int) -> Optional[tuple[int, int]]:
        """The backend a session entry sends its VIP side to (from its translation, or
        from the next hop towards the VIP), to keep it across a policy change."""
        if decision.lb is None:
            return None
        if data.nat_side != NAT_NONE:
            return data.nat_ip, data.nat_port
        nh_vip = data.nh_hi if direction == 0 else data.nh_lo
        vm = next((n for n, nh in self.nh_of_vm.items() if nh == nh_vip), None)
        if vm is None or self.policy is None or vm not in self.policy.vms:
            return None
        vm_ip = self.policy.vms[vm].ip
        return next((b for b in decision.lb.backends if b[0] == vm_ip), None)


__all__ = ["Built", "NicView", "PAIR_SCOPE_BASE"]
