"""The testbed's fault injector: each kind of ``topo.components.FAULT_KINDS`` injected on a
running testbed, recorded by name, and undone exactly by what was recorded.

======================  ==============================  =====================================
kind                    target (component name)         how (undo)
======================  ==============================  =====================================
gray_link               ``link b0r0l0->s0``             nft egress table on the sending
                                                        interface drops ``loss_pct`` %
                                                        (the table deleted by name)
corruption              ``link b0r0l0->s0``             nft egress table flips a byte of
                                                        ``corrupt_pct`` % of RoCEv2 frames:
                                                        bad ICRC at the receiver
flapping_link           ``cable b0r0l0<->s0``           a flapper process takes both ends
                                                        down/up every ``period_s`` (SIGTERM
                                                        by PID; both ends left up); on
                                                        BMv2 it cuts them with an nft
                                                        drop-all egress table instead
                                                        (behavioral-model#1215; deleted)
blackhole               ``route s0 10.1.0.0/24``        the route DELETEd through P4Runtime
                                                        (INSERTed back); without a writer
                                                        nft drops ``ip daddr`` on every
                                                        egress port of the switch
hung_switch             ``switch s1``                   SIGSTOP the switch (SIGCONT)
slow_receiver           ``nic b1s0-eth0``               SIGUSR1 to its ``host.nic recv``:
                                                        stops draining, sends PAUSE
                                                        (SIGUSR2)
wrong_ecn_threshold     ``port b0r0l0:3``               ``ecn.thresholds`` MODIFYed to mark
                                                        from ``kmin_pkts`` (1) through
                                                        P4Runtime (the old entry back)
dead_agent              ``agent b0s0``                  SIGSTOP the host's agent-carrying
                                                        sender processes (SIGCONT)
controller_down         ``controller``                  the controller's stop hook (start)
dead_tor                ``switch b0r0l1`` (a leaf)      p4sim: every interface of the leaf
                                                        ``ip link set down`` (carrier lost
                                                        on every cable: the NICs' bonds and
                                                        the spines see it) (set up again,
                                                        routes back); BMv2: a drop-all
                                                        egress table on each (deleted)
dead_nic_port           ``nic b0s0-eth0p1``             p4sim: the leaf's end of the NIC
                                                        port's cable down (the NIC loses its
                                                        carrier) (up again); BMv2: a
                                                        drop-all egress table on both ends
                                                        (deleted)
======================  ==============================  =====================================

The two cuts of ``dead_tor`` and ``dead_nic_port`` are a flapping cable's
(:func:`testbed.faultnet.cut_for_target`): BMv2 freezes when its own interface goes down,
so there the leaf (or the port) forwards nothing while its links stay up and its
P4Runtime answers — the fault the localiser's ``dead_tor`` / ``dead_nic_port`` rules name
(monitor/README.md).

Every fault is written to the faults file beside the state file
(``build/testbed-state-faults.json`` for ``build/testbed-state.json``: :func:`faults_path_for`)
before :meth:`FaultInjector.inject` returns; ``python -m testbed down`` and a crashed
run's teardown call :func:`undo_recorded`, which undoes what the file holds (the
P4Runtime and controller steps only where a writer/hook is at hand: torn down with the
switches anyway). The agent of a host runs inside its ``host.nic send`` processes
(``host/agent/launch.py``), so a dead agent is that process frozen, like a hung training
process: its flows stop too.

>>> parse_params("gray_link", {"loss_pct": "30"})
{'loss_pct': 30.0}
>>> faults_path_for(Path("build/testbed-state.json")).name
'testbed-state-faults.json'
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from controller.fabric_setup import T_ROUTES, plan_fabric
from testbed.faultbook import (PARAMS, FaultBook, FaultError, FaultRecord, faults_path_for,
                               parse_params)
from testbed.faultnet import (CUT_DROP, CUT_LINK, Endpoint, FaultNetError, TableExists, add_table,
                              blackhole_rule, corrupt_rule, cut_for_target, cut_tables,
                              flapper_command, loss_rule, routes_of, set_link, table_name)
from testbed.faultp4rt import TableWriter
from testbed.faulttargets import FabricNames, TargetError, parse_target
from testbed.faultundo import (SIGNAL_TIMEOUT_S, CallableHooks, ControllerHooks, Undoer,
                               catches, process_state, same_process, signal_step, undo_recorded,
                               wait_for)
from testbed.net import proc_cmdline, record_matches
from topo.components import KIND_COMPONENT

REPO = Path(__file__).resolve().parents[1]
NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")

# ---------------------------------------------------------------------- the injector
PidMap = Mapping[str, Union[int, Sequence[int]]]


class FaultInjector:
    """Injects, lists and undoes faults on a running testbed.

    ``fabric``: the ``topo.Fabric``; ``state``: its ``TestbedState`` (the live object of
    ``LiveTestbed.state`` / ``FabricNet.state``: NIC processes are read from it);
    ``state_path``: where the state file is (the faults file goes beside it);
    ``writer``: a :class:`~testbed.faultp4rt.TableWriter` (the controller's connections:
    ``P4RuntimeWriter(programmer.connections)``) for blackhole and wrong_ecn_threshold;
    ``nic_pids`` (NIC → PID of its ``host.nic recv``) and ``agent_pids`` (host → PIDs of
    its agent-carrying senders) override what the state records; ``controller``: the
    :class:`ControllerHooks` of controller_down; ``routes``: switch → the prefixes it
    routes, for the data-plane blackhole's check (default: the fabric's plan).

    >>> inj = FaultInjector(tb.fabric, tb.state, state_path=path,          # doctest: +SKIP
    ...                     writer=P4RuntimeWriter(tb.programmer.connections))
    >>> rec = inj.inject("gray_link", "link b0r0l0->s0", loss_pct=20)      # doctest: +SKIP
    >>> inj.undo(rec.name); inj.active()                                  # doctest: +SKIP
    []
    """

    def __init__(self, fabric: Any, state: Any, *, state_path: Path,
                 writer: Optional[TableWriter] = None, nic_pids: Optional[PidMap] = None,
                 agent_pids: Optional[PidMap] = None,
                 controller: Optional[ControllerHooks] = None,
                 routes: Optional[Mapping[str, Sequence[str]]] = None) -> None:
        self.names = FabricNames(fabric, state)
        self.target = str(getattr(state, "target", "p4sim"))
        self.routes = routes
        self.book = FaultBook(faults_path_for(state_path))
        self.writer, self.controller = writer, controller
        self.undoer = Undoer(writer, controller)
        self.nic_pids = dict(nic_pids or {})
        self.agent_pids = dict(agent_pids or {})

    # ------------------------------------------------------------------ public
    def active(self) -> list[FaultRecord]:
        """The faults injected and not yet undone (also by other processes)."""
        return self.book.records()

    def inject(self, kind: str, target: str, name: Optional[str] = None,
               **params: Any) -> FaultRecord:
        """Inject fault ``kind`` on ``target`` (a component name); returns its record,
        already in the faults file. FaultError (nothing left behind) when the target does
        not exist, a parameter is wrong or a step fails."""
        values = parse_params(kind, params)
        word, parts = parse_target(target)
        if word != KIND_COMPONENT[kind]:
            raise FaultError(f"{kind} takes a {KIND_COMPONENT[kind]} target, not {target!r}")
        if name is not None and not NAME_RE.match(name):
            raise FaultError(f"fault name {name!r}: letters, digits, '_' and '-' only (≤ 40)")
        target = " ".join((word,) + parts)
        for old in self.active():
            if old.name == name:
                raise FaultError(f"a fault named {name} is active")
            if (old.kind, old.target) == (kind, target):
                raise FaultError(f"{kind} on {target} is active already ({old.name})")
        rec = FaultRecord(name or self.book.new_name(kind), kind, target, values,
                          time.time(), time.monotonic())
        self.book.add(rec)           # recorded first: each undo step is saved before its act
        try:
            getattr(self, f"_inject_{kind}")(rec, parts)
        except BaseException as exc:
            self.undoer.run(rec, strict=False)
            self.book.remove(rec.name)
            if isinstance(exc, TargetError):
                raise FaultError(f"{kind}: {exc}") from None
            if isinstance(exc, FaultNetError):
                raise FaultError(f"{kind} on {target}: {exc}") from None
            raise
        rec.started_at, rec.started_mono = time.time(), time.monotonic()   # in effect now
        self.book.update(rec)
        return rec

    def _step(self, rec: FaultRecord, step: dict[str, Any]) -> None:
        """Add an undo step to ``rec`` and save it (before the act it undoes)."""
        rec.undo.append(step)
        self.book.update(rec)

    def undo(self, name: str) -> FaultRecord:
        """Undo fault ``name`` exactly as recorded and forget it; FaultError naming the
        active faults when there is none of that name (the record is kept when a step
        fails)."""
        recs = {r.name: r for r in self.active()}
        if name not in recs:
            raise FaultError(f"no active fault {name!r} (active: {', '.join(recs) or 'none'})")
        rec = recs[name]
        self.undoer.run(rec, strict=True)
        self.book.remove(name)
        return rec

    def undo_all(self) -> list[str]:
        """Undo every active fault, newest first; one line per fault (errors included)."""
        done = []
        for rec in reversed(self.active()):
            try:
                self.undo(rec.name)
                done.append(f"undid {rec.name} ({rec.kind} on {rec.target})")
            except (FaultError, FaultNetError, OSError) as exc:
                done.append(f"could not undo {rec.name}: {exc}")
        return done

    # ------------------------------------------------------------------ kinds
    def _add_table(self, rec: FaultRecord, table: str, endpoints: Sequence[Endpoint], rule: str) -> None:
        """Record the undo of ``table`` and create it; a table of that name that exists
        already is not ours: its undo step is taken back (the failed inject's undo leaves
        it alone) and TableExists raised."""
        step = {"op": "nft", "table": table, "endpoint": asdict(endpoints[0])}
        self._step(rec, step)
        try:
            add_table(table, endpoints, rule)
        except TableExists:
            rec.undo.remove(step)
            self.book.update(rec)
            raise

    def _nft(self, rec: FaultRecord, endpoints: Sequence[Endpoint], rule: str) -> None:
        table = table_name(rec.name)
        self._add_table(rec, table, endpoints, rule)
        rec.how = (f"nft table {table} on the egress of "
                   f"{', '.join(e.where() for e in endpoints)}: {rule}")

    def _inject_gray_link(self, rec: FaultRecord, parts: tuple[str, ...]) -> None:
        d = self.names.direction(" ".join(parts))
        self._nft(rec, [self.names.endpoint(d)], loss_rule(rec.params["loss_pct"]))

    def _inject_corruption(self, rec: FaultRecord, parts: tuple[str, ...]) -> None:
        d = self.names.direction(" ".join(parts))
        self._nft(rec, [self.names.endpoint(d)],
                  corrupt_rule(rec.params["corrupt_pct"], rec.params["roce_only"]))

    def _inject_flapping_link(self, rec: FaultRecord, parts: tuple[str, ...]) -> None:
        ends = [self.names.endpoint(d) for d in self.names.cable(" ".join(parts))]
        routes = [routes_of(ep) for ep in ends]
        cut = cut_for_target(self.target)
        table = table_name(rec.name) if cut == CUT_DROP else ""
        cmd = flapper_command(ends, rec.params["period_s"], rec.params["down_s"], cut, table)
        child = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
        self.undoer.children[child.pid] = child
        wait_for(lambda: bool(proc_cmdline(child.pid)), SIGNAL_TIMEOUT_S)
        self._step(rec, {"op": "flapper", "pid": child.pid,
                         "cmdline": proc_cmdline(child.pid) or " ".join(cmd),
                         "ends": [asdict(e) for e in ends], "routes": routes,
                         "cut": cut, "table": table})
        if child.poll() is not None:
            raise FaultError(f"the flapper exited at once ({child.returncode}): {' '.join(cmd)}")
        how = ("down" if cut == CUT_LINK else f"cut (nft table {table} drops every frame "
               "leaving them; BMv2 freezes when its own interface goes down)")
        rec.how = (f"flapper pid {child.pid}: {', '.join(e.where() for e in ends)} {how} "
                   f"{rec.params['down_s']:g} s every {rec.params['period_s']:g} s")

    def _inject_blackhole(self, rec: FaultRecord, parts: tuple[str, ...]) -> None:
        if len(parts) != 2:
            raise TargetError("a route target is 'route SWITCH PREFIX'")
        switch, prefix = parts
        if self.writer is not None and not rec.params["data_plane"]:
            net = self.names.route(switch, prefix, ())
            undo = self.writer.delete_route(switch, net)
            self._step(rec, {"op": "p4rt", "undo": undo.to_dict()})
            rec.how = f"P4Runtime DELETE of {switch}'s route {net}"
            return
        net = self.names.route(switch, prefix, self._planned_routes(switch))
        ends = [Endpoint(f"{switch}-eth{p}") for p in sorted(self.names.switch(switch).ports)]
        self._nft(rec, ends, blackhole_rule(net))
        rec.how += " (the data-plane form of the route removed)"

    def _planned_routes(self, switch: str) -> list[str]:
        """The prefixes ``switch`` routes: ``routes`` given, else the fabric's plan."""
        if self.routes is not None:
            return list(self.routes.get(switch, ()))
        plan = plan_fabric(self.names.fabric)[self.names.switch(switch).name]
        return [str(e.match["hdr.ipv4.dst_addr"]) for e in plan.entries if e.table == T_ROUTES]

    def _inject_hung_switch(self, rec: FaultRecord, parts: tuple[str, ...]) -> None:
        proc = self.names.switch_proc(" ".join(parts))
        if not record_matches(proc) or process_state(proc.pid) in ("", "Z"):
            raise FaultError(f"switch {proc.name} (pid {proc.pid}) is not running")
        self._stop_pids(rec, [proc.pid])
        rec.how = f"SIGSTOP to switch {proc.name} (pid {proc.pid})"

    def _stop_pids(self, rec: FaultRecord, pids: Sequence[int]) -> None:
        for pid in pids:
            self._step(rec, signal_step(pid, signal.SIGCONT))
            os.kill(pid, signal.SIGSTOP)
            if not wait_for(lambda: process_state(pid) == "T", SIGNAL_TIMEOUT_S):
                raise FaultError(f"pid {pid} did not stop on SIGSTOP")

    def _inject_slow_receiver(self, rec: FaultRecord, parts: tuple[str, ...]) -> None:
        nic = " ".join(parts)
        host = self.names.nic(nic)
        pid = self._pids(self.nic_pids, nic, f"nic recv {host} {nic}", "host.nic recv")
        if len(pid) != 1:
            raise FaultError(f"slow_receiver: NIC {nic} has {len(pid)} receiver processes")
        (pid,) = pid
        cmd = proc_cmdline(pid) or ""
        if "host.nic" not in cmd or " recv" not in cmd:
            raise FaultError(f"slow_receiver: pid {pid} is not a `host.nic recv` ({cmd!r})")
        if not (catches(pid, signal.SIGUSR1) and catches(pid, signal.SIGUSR2)):
            raise FaultError(f"slow_receiver: pid {pid} has no stall mode yet (SIGUSR1/"
                             "SIGUSR2 not handled: still starting, or an old host.nic)")
        self._step(rec, signal_step(pid, signal.SIGUSR2))
        os.kill(pid, signal.SIGUSR1)
        rec.how = f"SIGUSR1 to host.nic recv pid {pid} ({nic}): stops draining, sends PAUSE"

    def _pids(self, given: PidMap, key: str, record_name: str, what: str) -> list[int]:
        """PIDs for ``key``: the caller's mapping, else the state's traffic records
        named ``record_name`` (exactly, or followed by a space)."""
        if key in given:
            raw = given[key]
            return [int(raw)] if isinstance(raw, int) else [int(p) for p in raw]
        found = [r.pid for r in self.names.procs("traffic")
                 if (r.name == record_name or r.name.startswith(record_name + " "))
                 and same_process(r.pid, proc_cmdline(r.pid) or "")]
        if not found:
            raise FaultError(f"no running {what} process for {key} in the testbed state "
                             "(is traffic running? pass the PIDs: nic_pids=/agent_pids=)")
        return found

    def _inject_wrong_ecn_threshold(self, rec: FaultRecord, parts: tuple[str, ...]) -> None:
        switch, port = self.names.port(" ".join(parts))
        if self.writer is None:
            raise FaultError("wrong_ecn_threshold is written through P4Runtime and needs the "
                             "controller's connection (FaultInjector(writer=P4RuntimeWriter("
                             "programmer.connections))); the command line has none")
        undo = self.writer.set_ecn_threshold(switch, port, rec.params["kmin_pkts"])
        self._step(rec, {"op": "p4rt", "undo": undo.to_dict()})
        rec.how = (f"P4Runtime: {switch} egress port {port} marks CE from "
                   f"{rec.params['kmin_pkts']} packet(s) (set_ecn_threshold)")

    def _inject_dead_agent(self, rec: FaultRecord, parts: tuple[str, ...]) -> None:
        host = self.names.host(" ".join(parts)).name
        pids = self._pids(self.agent_pids, host, f"nic send {host}", "agent (host.nic send)")
        if host not in self.agent_pids:
            pids = [p for p in pids if "--agent-" in (proc_cmdline(p) or "")]
            if not pids:
                raise FaultError(f"dead_agent: the senders of {host} run no agent")
        self._stop_pids(rec, pids)
        rec.how = f"SIGSTOP to {host}'s agent process(es) {', '.join(map(str, pids))}"

    def _cut(self, rec: FaultRecord, link_ends: Sequence[Endpoint],
             drop_ends: Sequence[Endpoint]) -> str:
        """Cut ``link_ends`` (p4sim: ``ip link set down``, each end's routes recorded for
        the undo) or put a drop-all egress table on ``drop_ends`` (BMv2); what was done."""
        if cut_for_target(self.target) == CUT_LINK:
            routes = [routes_of(ep) for ep in link_ends]
            self._step(rec, {"op": "links", "ends": [asdict(e) for e in link_ends],
                             "routes": routes})
            for ep in link_ends:
                set_link(ep, False)
            return f"{', '.join(e.where() for e in link_ends)} set down (carrier lost)"
        for table, eps in cut_tables(table_name(rec.name), drop_ends):
            self._add_table(rec, table, eps, "counter drop")
        return (f"drop-all egress tables on {', '.join(e.where() for e in drop_ends)} "
                "(links left up: BMv2 freezes when its own interface goes down)")

    def _inject_dead_tor(self, rec: FaultRecord, parts: tuple[str, ...]) -> None:
        name = " ".join(parts)
        sw = self.names.switch(name)
        if not any(info.kind == "host" for info in sw.ports.values()):
            raise TargetError(f"dead_tor takes a leaf (a switch with NICs), not {name}")
        ends = [Endpoint(f"{name}-eth{p}") for p in sorted(sw.ports)]
        rec.how = f"leaf {name} dead: " + self._cut(rec, ends, ends)

    def _inject_dead_nic_port(self, rec: FaultRecord, parts: tuple[str, ...]) -> None:
        intf = " ".join(parts)
        self.names.nic(intf)
        to_nic = [d for d in self.names.directions if d.dst == intf and d.host is None]
        from_nic = [d for d in self.names.directions if d.src == intf]
        if len(to_nic) != 1 or len(from_nic) != 1:
            raise TargetError(f"NIC port {intf} has no cable to a leaf in this fabric")
        leaf_end = self.names.endpoint(to_nic[0])
        rec.how = f"NIC port {intf} dead: " + self._cut(
            rec, [leaf_end], [leaf_end, self.names.endpoint(from_nic[0])])

    def _inject_controller_down(self, rec: FaultRecord, parts: tuple[str, ...]) -> None:
        if parts:
            raise TargetError("the controller target is just 'controller'")
        if self.controller is None:
            raise FaultError("controller_down needs the controller's stop/start hooks "
                             "(FaultInjector(controller=...)): GOR runs in the scenario's "
                             "process; the command line has none")
        self._step(rec, {"op": "controller"})
        self.controller.stop()
        rec.how = "controller stopped (its stop hook)"


__all__ = ["CallableHooks", "ControllerHooks", "FaultBook", "FaultError", "FaultInjector",
           "FaultRecord", "PARAMS", "PidMap", "Undoer", "faults_path_for", "parse_params",
           "undo_recorded"]
