"""Reconciliation of a restarted switch: reconnect, tell whether it came back empty, push
the pipeline and re-install its plan with the ECMP groups of the *current* link state.

A switch process that restarted keeps its address but has lost everything a controller
gave it: its pipeline (a read then fails with FAILED_PRECONDITION, or
GetForwardingPipelineConfig answers no config), its table entries, its clone sessions,
its mastership. :func:`restore_switch` does, for one switch of a
:class:`~controller.fabric_setup.FabricProgrammer`:

1. a new :class:`~controller.p4rt.SwitchConnection` with the topology's address, device id
   and the **same election id** (arbitration makes it primary again);
2. :func:`check_switch`: the switch is *intact* when it runs a pipeline whose cookie is the
   one it is known to run (``FabricProgrammer.cookies``, when known) and holds every
   planned route; otherwise it is *empty* (a restarted process, or re-programmed by
   someone else);
3. an empty switch gets the pipeline (with the programmer's cookie) and its whole plan
   (:func:`plan_updates`: switch id and hash seed, algorithm, next hops, routes, ECMP
   groups, the source guard, DSCP→priority, port MACs, ECN and PFC thresholds, clone
   sessions, the ARP punt meters) — each ECMP group with the live members given in ``live_groups`` (group id →
   egress ports in member order): a link GOR took down stays out of the group, as in
   :mod:`controller.gor.faults`.

GOR's own entries (overrides, sampling) are not part of the plan: the loop re-installs
them (:mod:`controller.gor.restarts`). The caller swaps the returned connection into
``programmer.connections`` (:class:`controller.gor.recovery.SwitchRecovery` does).

Example::

    >>> conn, rep = restore_switch(prog, "b0r0l0", live_groups={1: (4,)})   # doctest: +SKIP
    >>> rep.pushed, rep.updates                                              # doctest: +SKIP
    (True, 74)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from p4.v1 import p4runtime_pb2

from controller.fabric_setup import T_GROUPS, T_MEMBERS, T_ROUTES, WRITE_BATCH, SwitchPlan, meter_updates
from controller.p4rt import clone_session, update


@dataclass(frozen=True, slots=True)
class SwitchCheck:
    """What a switch holds: a pipeline or not, its cookie, and its routes against the plan.

    >>> SwitchCheck(True, 7, 3, 3).empty, SwitchCheck(False, None, 0, 3).empty
    (False, True)
    >>> SwitchCheck(True, 8, 3, 3, expected_cookie=7).reason
    'pipeline cookie 8, expected 7'
    """

    pipeline: bool
    cookie: Optional[int]
    routes: int
    expected_routes: int
    expected_cookie: Optional[int] = None

    @property
    def reason(self) -> str:
        """Why the switch is empty ('' when intact)."""
        if not self.pipeline:
            return "no pipeline"
        if self.expected_cookie is not None and self.cookie != self.expected_cookie:
            return f"pipeline cookie {self.cookie}, expected {self.expected_cookie}"
        if self.routes < self.expected_routes:
            return f"{self.routes} of {self.expected_routes} routes"
        return ""

    @property
    def empty(self) -> bool:
        """True when the switch must be re-programmed."""
        return bool(self.reason)


@dataclass(slots=True)
class RestoreReport:
    """What :func:`restore_switch` did to one switch.

    >>> RestoreReport("b0r0l0").pushed
    False
    """

    switch: str
    pushed: bool = False
    updates: int = 0
    reason: str = ""
    groups: dict[int, tuple[int, ...]] = field(default_factory=dict)


def check_switch(conn: Any, plan: SwitchPlan, expected_cookie: Optional[int] = None) -> SwitchCheck:
    """Whether ``conn``'s switch still holds ``plan`` (see :class:`SwitchCheck`); raises
    when the switch does not answer."""
    present, cookie = conn.pipeline_cookie()
    if not present:
        return SwitchCheck(False, None, 0, plan.count(T_ROUTES), expected_cookie)
    if conn.p4info is None:
        conn.fetch_pipeline()
    routes = len(conn.read_table(T_ROUTES))
    return SwitchCheck(True, cookie, routes, plan.count(T_ROUTES), expected_cookie)


def plan_updates(conn: Any, plan: SwitchPlan,
                 live_groups: Optional[Mapping[int, Sequence[int]]] = None) -> list[p4runtime_pb2.Update]:
    """Every update of ``plan`` for an empty switch (clone sessions, the entries in plan
    order, then the meter cells: the ARP punt policer), each ECMP group in ``live_groups`` (group id → live egress ports in member
    order) written with those members and that size; a group left out is written as
    planned. A group with no live member is written as planned (no way out either way)."""
    live = {gid: tuple(ports) for gid, ports in (live_groups or {}).items() if ports}
    member_of: dict[int, int] = {}                 # member index → live next hop
    size_of: dict[int, int] = {}
    for gid, ports in live.items():
        g = plan.groups.get(gid)
        if g is None:
            continue
        size_of[gid] = len(ports)
        member_of.update({g.base + i: p for i, p in enumerate(ports)})
    out = [update(clone_session(sid, list(ports)), "INSERT")
           for sid, ports in sorted(plan.clone_sessions.items())]
    for e in plan.entries:
        params = dict(e.params)
        if e.table == T_GROUPS and e.match.get("meta.ecmp_group_id") in size_of:
            params["size"] = size_of[e.match["meta.ecmp_group_id"]]
        elif e.table == T_MEMBERS and e.match.get("meta.ecmp_member") in member_of:
            params["nexthop_id"] = member_of[e.match["meta.ecmp_member"]]
        te = conn.table_entry(e.table, e.match, e.action, params, is_default=e.default)
        out.append(update(te, "MODIFY" if e.default else "INSERT"))
    out.extend(meter_updates(conn, plan))
    return out


def restore_switch(programmer: Any, switch: str,
                   live_groups: Optional[Mapping[int, Sequence[int]]] = None,
                   timeout_s: float = 2.0) -> tuple[Any, RestoreReport]:
    """Reconnect to ``switch`` and re-program it if it came back empty (see the module
    docstring); returns the new primary connection (not yet in ``programmer.connections``)
    and what was done. Raises when the switch does not answer (the connection is closed)."""
    conn = programmer.connect_switch(switch, timeout_s=timeout_s)
    try:
        return conn, reprogram_switch(programmer, switch, conn, live_groups)
    except BaseException:
        conn.close()
        raise


def reprogram_switch(programmer: Any, switch: str, conn: Any,
                     live_groups: Optional[Mapping[int, Sequence[int]]] = None) -> RestoreReport:
    """Steps 2–3 of :func:`restore_switch` on an open primary connection ``conn``: check the
    switch, and push the pipeline and install the plan when it came back empty."""
    plan = programmer.plans[switch]
    chk = check_switch(conn, plan, programmer.cookies.get(switch))
    rep = RestoreReport(switch, reason=chk.reason)
    if not chk.empty:
        return rep
    conn.push_pipeline(programmer.p4info_path, programmer.device_config_path, programmer.cookie)
    programmer.cookies[switch] = programmer.cookie
    ups = plan_updates(conn, plan, live_groups)
    for i in range(0, len(ups), WRITE_BATCH):
        conn.write(ups[i:i + WRITE_BATCH])
    rep.pushed, rep.updates = True, len(ups)
    rep.groups = {gid: tuple(p) for gid, p in (live_groups or {}).items()}
    return rep


__all__ = ["RestoreReport", "SwitchCheck", "check_switch", "plan_updates", "reprogram_switch",
           "restore_switch"]
