"""Program a whole fabric from its topology: the install part of GOR.

The plan — every entry ``p4src/fabric.p4`` needs per switch, as pure data — is the
``controller.fabric`` package (what is written on every switch: ``controller.fabric.plan``;
ECMP groups and the published hash model: ``controller.fabric.ecmp``; ECN/PFC/QoS:
``controller.fabric.qos``). This module connects to every switch and writes that plan
through P4Runtime (:class:`FabricProgrammer`), and publishes the ECMP hash model of the
fabric *as programmed* (``hash_model()``), so TCCL predicts exactly what the switches do.
Every name of the plan is re-exported here (``from controller.fabric_setup import
plan_fabric, fabric_hash_model, EcnConfig, T_ROUTES, ...`` keeps working).

Member names of the published hash model: the peer node of the member's link (``"s0"``,
``"b0r1l0"``), with ``"#<port>"`` appended when the group has several links to that
peer. :meth:`FabricProgrammer.member_ports` maps them back to egress ports.

Example::

    >>> from topo.model import load_fabric                            # doctest: +SKIP
    >>> fp = FabricProgrammer(load_fabric("build/topology.json"),
    ...                       "build/fabric.p4info.txtpb", "build/fabric.json")  # doctest: +SKIP
    >>> fp.connect_all(); fp.push_pipelines(); fp.install_all()      # doctest: +SKIP
    >>> fp.hash_model().switch("b0r0l0").groups[1].members           # doctest: +SKIP
    ('s0', 's1')
    >>> fp.close()                                                     # doctest: +SKIP
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence, TypeVar, Union

import grpc
from p4.v1 import p4runtime_pb2

from controller.fabric.detours import fabric_hash_model
from controller.fabric.ecmp import DEFAULT_ALGORITHMS, LEAF_UPLINK_GROUP, EcmpGroup, ecmp_groups
from controller.fabric.entries import (T_ALGORITHM, T_ARP, T_ECN, T_GROUPS, T_MEMBERS,
                                       T_NEXTHOPS, T_PFC, T_PORT_MACS, T_QOS, T_ROUTES,
                                       T_SWITCH, Entry)
from controller.fabric.plan import (CPU_CLONE_SESSION, CPU_PORT, FABRIC_PREFIX,
                                    PFC_CLONE_SESSION_BASE, ROLE_CODES, SwitchPlan,
                                    plan_fabric, switch_id_of)
from controller.fabric.admission import QUEUE_LIMIT_PKTS
from controller.fabric.puntguard import DEFAULT_ARP_PUNT, PuntPolicer
from controller.fabric.qos import DSCP_TO_PRIORITY, EcnConfig, PfcConfig, threshold_updates
from controller.fabric.topology import FabricLike, HostLike, NicLike, PortLike, SwitchLike
from controller.p4rt import (ClientTls, P4RuntimeClientError, SwitchConnection,
                             clone_session, load_p4info, update)
from p4src.buffermodel import DynamicThresholds
from p4src.hashmodel import FabricHashModel

WRITE_BATCH = 500


R = TypeVar("R")


class SwitchSetupError(P4RuntimeClientError):
    """Connecting to, pushing to or writing one switch failed; ``switch`` names it.

    >>> str(SwitchSetupError("s0", TimeoutError("no answer")))
    's0: TimeoutError: no answer'
    """

    def __init__(self, switch: str, cause: BaseException) -> None:
        detail = str(cause) or "(no detail)"
        super().__init__(f"{switch}: {type(cause).__name__}: {detail}")
        self.switch, self.cause = switch, cause


def _chunks(items: Sequence[Any], n: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


def meter_updates(conn: Any, plan: SwitchPlan) -> list[p4runtime_pb2.Update]:
    """The MODIFY of every meter cell of ``plan`` (``plan.meters``) on ``conn``'s P4Info:
    what :meth:`FabricProgrammer.install` and ``controller.switch_restore`` write after
    the entries (BMv2 takes a meter cell only by MODIFY, one index at a time)."""
    return [update(conn.meter_entry(m.meter, m.index, (m.cir, m.cburst, m.pir, m.pburst)), "MODIFY")
            for m in plan.meters]


def _write_ops(conn: SwitchConnection, ops: Iterable[tuple[str, Entry]]) -> int:
    """Write ``(op, entry)`` pairs (``INSERT``/``MODIFY``/``DELETE``) over ``conn`` in
    batches of :data:`WRITE_BATCH` (the pipeline's P4Info fetched first when the
    connection has none); how many were written."""
    if conn.p4info is None:
        conn.fetch_pipeline()
    ups = [update(conn.table_entry(e.table, e.match, e.action, e.params, is_default=e.default), op)
           for op, e in ops]
    for batch in _chunks(ups, WRITE_BATCH):
        conn.write(batch)
    return len(ups)


class FabricProgrammer:
    """Connects to every switch of ``fabric`` and installs its plan.

    ``ecn``/``pfc`` set the defaults written on every port (``None`` writes none);
    ``thresholds`` (dynamic mode) replaces both with the shared-buffer thresholds;
    ``timeout_s`` is each connection's RPC timeout. ``tls``: connect over TLS with these
    credentials (the switches run with ``--grpc-server-ssl``), each switch being
    required to present a certificate naming it (:meth:`ClientTls.for_server`); None:
    plaintext. ``source_guard`` (default on): the leaves' host ports accept only their
    NICs' IPv4 sources (:mod:`controller.fabric.sourceguard`; restarts and GOR's recovery
    re-install it with the rest of the plan). ``arp_punt`` (default
    :data:`~controller.fabric.puntguard.DEFAULT_ARP_PUNT`): every port's ARP punts to the
    controller policed at that rate (None: no meter written, every ARP punt reaches the
    controller). ``queue_limit_pkts`` (default 64): every switch's egress queue limit
    (:mod:`controller.fabric.admission`; None: none written). Connections live until :meth:`close`
    (also a context manager). Switch-parallel steps run in a thread pool.
    """

    def __init__(self, fabric: FabricLike, p4info_path: Union[str, Path],
                 device_config_path: Union[str, Path], *,
                 ecn: Optional[EcnConfig] = EcnConfig(), pfc: Optional[PfcConfig] = PfcConfig(),
                 thresholds: Optional[DynamicThresholds] = None,
                 timeout_s: float = 30.0, tls: Optional[ClientTls] = None,
                 source_guard: bool = True,
                 arp_punt: Optional[PuntPolicer] = DEFAULT_ARP_PUNT,
                 queue_limit_pkts: Optional[int] = QUEUE_LIMIT_PKTS) -> None:
        self.fabric = fabric
        self.source_guard = source_guard
        self.arp_punt = arp_punt
        self.queue_limit_pkts = queue_limit_pkts
        self.tls = tls
        self.p4info_path, self.device_config_path = Path(p4info_path), Path(device_config_path)
        self.timeout_s = timeout_s
        self.ecn, self.pfc, self.thresholds = ecn, pfc, thresholds
        self.plans: dict[str, SwitchPlan] = plan_fabric(fabric, ecn, pfc, thresholds=thresholds,
                                                        source_guard=source_guard,
                                                        arp_punt=arp_punt,
                                                        queue_limit_pkts=queue_limit_pkts)
        self.connections: dict[str, SwitchConnection] = {}
        self.cookie = int.from_bytes(os.urandom(7), "big") or 1
        """Pipeline cookie of :meth:`push_pipelines`: a switch answering another one (or
        none) was restarted or re-programmed by someone else (``controller.switch_restore``)."""
        self.cookies: dict[str, Optional[int]] = {}
        """Switch → the pipeline cookie it is known to run (pushed here, or read on attach)."""

    # ---------------------------------------------------------------- helpers
    def _each(self, fn: Callable[[SwitchLike], R]) -> dict[str, R]:
        """Run ``fn`` on every switch concurrently; a failure is re-raised as a
        :class:`SwitchSetupError` naming the first switch that failed."""
        switches = list(self.fabric.switches)
        with ThreadPoolExecutor(max_workers=max(1, min(16, len(switches)))) as pool:
            futures = {sw.name: pool.submit(fn, sw) for sw in switches}
            out: dict[str, R] = {}
            for name, f in futures.items():
                try:
                    out[name] = f.result()
                except SwitchSetupError:
                    raise
                except Exception as exc:
                    raise SwitchSetupError(name, exc) from exc
            return out

    def _name(self, switch: Union[str, SwitchLike]) -> str:
        return switch if isinstance(switch, str) else switch.name

    def connection(self, switch: Union[str, SwitchLike]) -> SwitchConnection:
        """The open connection of ``switch`` (name or record); KeyError when not connected."""
        name = self._name(switch)
        try:
            return self.connections[name]
        except KeyError:
            raise KeyError(f"{name}: not connected (connect_all() first)") from None

    # ---------------------------------------------------------------- steps
    def connect_switch(self, switch: Union[str, SwitchLike],
                       timeout_s: Optional[float] = None) -> SwitchConnection:
        """A new primary :class:`SwitchConnection` to one switch, with the topology's address,
        device id and election id (not stored in :attr:`connections`)."""
        name = self._name(switch)
        sw = next(s for s in self.fabric.switches if s.name == name)
        t = self.timeout_s if timeout_s is None else timeout_s
        try:
            return SwitchConnection(sw.grpc_addr, device_id=sw.device_id,
                                    election_id=_election(sw.election_id), timeout_s=t,
                                    tls=self.tls.for_server(sw.name) if self.tls else None)
        except grpc.FutureTimeoutError:
            hint = (f"is the switch running, with --grpc-server-ssl, and a certificate for "
                    f"{sw.name!r} from the CA {self.tls.ca_cert}?") if self.tls else \
                "is the switch running? (plaintext: a switch with --grpc-server-ssl refuses it)"
            raise TimeoutError(f"no P4Runtime server answered at {sw.grpc_addr} within "
                               f"{t:g} s ({hint})") from None

    def connect_all(self) -> None:
        """One primary :class:`SwitchConnection` per switch, opened concurrently."""
        try:
            self.connections.update(self._each(self.connect_switch))
        except BaseException:
            self.close()
            raise

    def push_pipelines(self) -> None:
        """SetForwardingPipelineConfig on every switch (fresh, empty tables)."""
        # bytes, parsed by each thread into its own message (see SwitchConnection.push_pipeline)
        p4info = load_p4info(self.p4info_path).SerializeToString()
        config = self.device_config_path.read_bytes()
        self._each(lambda sw: self.connection(sw).push_pipeline(p4info, config, self.cookie))
        self.cookies.update({sw.name: self.cookie for sw in self.fabric.switches})

    def install(self, switch: Union[str, SwitchLike]) -> int:
        """Write the whole plan of one switch (after a fresh ``push_pipelines``: entries
        are INSERTed); returns the number of updates written."""
        name = self._name(switch)
        conn, plan = self.connection(name), self.plans[name]
        if conn.p4info is None:
            conn.fetch_pipeline()
        updates: list[p4runtime_pb2.Update] = [
            update(clone_session(sid, list(ports)), "INSERT")
            for sid, ports in sorted(plan.clone_sessions.items())]
        for e in plan.entries:
            te = conn.table_entry(e.table, e.match, e.action, e.params, is_default=e.default)
            updates.append(update(te, "MODIFY" if e.default else "INSERT"))
        updates.extend(meter_updates(conn, plan))
        for batch in _chunks(updates, WRITE_BATCH):
            conn.write(batch)
        return len(updates)

    def write_updates(self, switch: Union[str, SwitchLike],
                      updates: Sequence[tuple[str, Entry]]) -> int:
        """Write ``(kind, entry)`` updates (``INSERT``/``MODIFY``/``DELETE``) to one switch
        in batches of ``WRITE_BATCH``, e.g. :func:`controller.fabric.dualhoming.failover_updates`; returns
        how many were written."""
        return _write_ops(self.connection(self._name(switch)), updates)

    def install_all(self) -> dict[str, int]:
        """:meth:`install` on every switch concurrently; switch name → updates written."""
        return self._each(self.install)

    def setup(self, push: bool = True) -> dict[str, int]:
        """``connect_all`` (if needed), ``push_pipelines`` (unless ``push=False``) and
        ``install_all``: what ``python -m controller setup`` does."""
        if not self.connections:
            self.connect_all()
        if push:
            self.push_pipelines()
        return self.install_all()

    def apply_thresholds(self, thresholds: Optional[DynamicThresholds]) -> dict[str, int]:
        """Switch every switch, in place, to static thresholds (``None``: the programmer's
        ``ecn``/``pfc``) or to the dynamic ones ``thresholds``: only the PFC, ECN, buffer
        and alpha entries change (:func:`controller.fabric.qos.threshold_updates`), every
        other entry, group and session stays. The plans follow (:attr:`plans`,
        :attr:`thresholds`). Switch name → updates written. Meant for a fabric at rest
        (the ``incast`` scenario between its runs): the data plane's counts are not
        touched, so the caller clears them where it needs to.

        >>> fp.apply_thresholds(DEFAULT_DYNAMIC)                     # doctest: +SKIP
        {'b0r0l0': 14, ...}
        """
        new = plan_fabric(self.fabric, self.ecn, self.pfc, thresholds=thresholds,
                          source_guard=self.source_guard, arp_punt=self.arp_punt,
                          queue_limit_pkts=self.queue_limit_pkts)

        def write(sw: SwitchLike) -> int:
            written = _write_ops(self.connection(sw),
                                 threshold_updates(self.plans[sw.name].entries,
                                                   new[sw.name].entries))
            self.plans[sw.name] = new[sw.name]     # this switch is in the new mode
            return written

        done = self._each(write)        # a switch that failed keeps its old plan
        self.thresholds = thresholds
        return done

    # ---------------------------------------------------------------- published model
    def hash_model(self) -> FabricHashModel:
        """The ECMP hash model of the fabric as programmed (every switch, groups included)."""
        return FabricHashModel({name: plan.hash_model() for name, plan in self.plans.items()})

    def member_ports(self, switch: str, group_id: int) -> dict[str, int]:
        """Member name → egress port of one group, e.g. ``{"s0": 3, "s1": 4}``."""
        g = self.plans[switch].groups[group_id]
        return dict(zip(g.members, g.ports))

    # ---------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Close every connection (idempotent)."""
        for conn in self.connections.values():
            conn.close()
        self.connections.clear()

    def __enter__(self) -> "FabricProgrammer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _election(value: Any) -> Union[int, tuple[int, int]]:
    """An election id from the topology: an int, ``[high, low]`` or ``"high,low"``."""
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        parts = [int(x) for x in value.split(",")]
        return (parts[0], parts[1]) if len(parts) == 2 else parts[0]
    high, low = value
    return (int(high), int(low))


__all__ = [
    # the programmer
    "FabricProgrammer", "SwitchSetupError", "WRITE_BATCH", "meter_updates",
    # the plan, re-exported from controller.fabric (importers of the old single module)
    "CPU_CLONE_SESSION", "CPU_PORT", "DEFAULT_ALGORITHMS", "DSCP_TO_PRIORITY", "EcmpGroup",
    "EcnConfig", "Entry", "FABRIC_PREFIX", "FabricLike", "HostLike", "LEAF_UPLINK_GROUP",
    "NicLike", "PFC_CLONE_SESSION_BASE", "PfcConfig", "PortLike", "ROLE_CODES", "SwitchLike",
    "SwitchPlan", "T_ALGORITHM", "T_ARP", "T_ECN", "T_GROUPS", "T_MEMBERS", "T_NEXTHOPS",
    "T_PFC", "T_PORT_MACS", "T_QOS", "T_ROUTES", "T_SWITCH", "ecmp_groups",
    "fabric_hash_model", "plan_fabric", "switch_id_of",
]
