"""The software-centric baseline FORNAX is measured against: flows, not sessions; one-way
writes; a periodic walk of the whole table.

Same policy, same decisions (:class:`fornax.nicview.NicView`), same software path, on the
``FORNAX_BASELINE`` build of the SmartNIC program (each direction of a connection is a
flow with an entry of its own; the hardware checks nothing and reports nothing but
first packets). The manager keeps every flow's full record in software. Every
``walk_period_s`` it reads the whole table with its counters and:

* ages the flows whose counters did not move for ``idle_timeout_s`` (both directions);
* compares each entry with its record: a difference (a memory fault) is rewritten;
* after a policy change, evaluates every flow again and rewrites those that differ.

There is no heartbeat, so a hung hardware path is not detected, and a corrupt entry
forwards wrongly until the next walk.

Example::

    >>> BaselineConfig(nic="nicA", grpc_addr="127.0.0.1:9559", device_id=1,
    ...                policy_path=Path("vpc.policy")).walk_period_s
    5.0
"""
from __future__ import annotations

import json
import queue
import resource
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from controller.p4rt import PacketIn
from fornax.fallback import SoftSwitch
from fornax.nicview import NicView
from fornax.options import NicManagerOptions
from fornax.pipeline import SmartNic, punt_of
from fornax.policy import Conn, Decision, Policy, load_policy
from fornax.softpath import parse_frame, session_key_of
from p4src.smartnic import model as M


@dataclass(slots=True)
class BaselineConfig(NicManagerOptions):
    """How one baseline manager runs: the options every NIC manager takes
    (:class:`fornax.options.NicManagerOptions`), the walk's period, and a longer Write
    deadline (a walk's rewrite of a whole table is one long burst)."""

    walk_period_s: float = 5.0
    write_timeout_s: float = 30.0


@dataclass(slots=True)
class FlowRecord:
    """Everything the baseline keeps of one flow (one direction of a connection): its
    key, the entry it wrote, the connection and decision it came from, its peer flow, the
    last counters the walk saw and when they last moved."""

    key: M.SessionKey
    data: M.SessionData
    conn: Conn
    decision: Decision
    peer: M.SessionKey
    from_backend: Optional[tuple[int, int]]
    created_s: float
    packets: int = 0
    moved_s: float = 0.0
    policy_gen: int = 0


class BaselineManager:
    """The software-centric manager (see the module docstring); the same interface as
    :class:`fornax.manager.FornaxManager` for the scenario, the admin socket and the
    bench."""

    def __init__(self, config: BaselineConfig, policy: Optional[Policy] = None,
                 nic: Optional[SmartNic] = None) -> None:
        self.cfg = config
        self.view = NicView(config.nic)
        self.view.load(policy if policy is not None else load_policy(config.policy_path))
        self.soft = SoftSwitch(self.view, idle_s=config.idle_timeout_s)
        self.events: queue.Queue[Any] = queue.Queue()
        self.nic = nic if nic is not None else SmartNic(
            config.grpc_addr, config.device_id, config.election_id, tls=config.tls,
            events=self.events, timeout_s=config.write_timeout_s)
        if nic is not None:
            nic.conn.packets = nic.conn.digests = nic.conn.idle_timeouts = self.events
            nic.events = self.events
        self.flows: dict[M.SessionKey, FlowRecord] = {}
        self.policy_gen = 0
        self.counters: dict[str, int] = {}
        self.timeline: deque[dict[str, Any]] = deque(maxlen=10000)
        self.walks: deque[dict[str, float]] = deque(maxlen=1000)
        self._log_file = open(config.event_log, "a") if config.event_log else None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.started_at = time.time()
        self._written: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self.store = self                  # the admin socket's "sessions" reads keys()

    # ------------------------------------------------------------------ lifecycle
    def start(self, push: bool = True) -> None:
        if push and self.cfg.p4info is not None and self.cfg.device_config is not None:
            self.nic.push(self.cfg.p4info, self.cfg.device_config)
        else:
            self.nic.attach()
        self._write_config()
        for target, name in ((self._loop, "baseline-events"), (self._walker, "baseline-walk")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        self.note("started", nic=self.cfg.nic, mode="baseline")

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(5.0)
        self.nic.close()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _write_config(self) -> None:
        """The configuration tables as the view wants them (only what changed)."""
        self._written = self.nic.apply_config(self.view.config_entries(), self._written)

    # ------------------------------------------------------------------ observability
    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n

    def note(self, kind: str, **fields: Any) -> None:
        rec = {"t": round(time.time(), 6), "event": kind, **fields}
        self.timeline.append(rec)
        if self._log_file is not None:
            self._log_file.write(json.dumps(rec) + "\n")
            self._log_file.flush()

    def __len__(self) -> int:
        return len(self.flows) // 2

    def keys(self) -> Any:
        return iter(list(self.flows))

    def stats(self) -> dict[str, Any]:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        last = self.walks[-1] if self.walks else {}
        return {"nic": self.cfg.nic, "mode": "baseline", "sessions": len(self.flows) // 2,
                "flows": len(self.flows), "counters": dict(self.counters),
                "cpu_s": ru.ru_utime + ru.ru_stime, "hung": False, "fallback": False,
                "last_walk": last, "uptime_s": round(time.time() - self.started_at, 1)}

    # ------------------------------------------------------------------ policy
    def reload(self, policy: Optional[Policy] = None) -> dict[str, Any]:
        """Take a new policy: the configuration tables at once; the flows at the next walk."""
        new = policy if policy is not None else load_policy(self.cfg.policy_path)
        with self._lock:
            self.view.load(new)
            self.soft.clear()
            self._write_config()
            self.policy_gen += 1
        self.count("policy_changes")
        self.note("policy-change", generation=self.policy_gen)
        return {"generation": self.policy_gen}

    # ------------------------------------------------------------------ first packets
    def _loop(self) -> None:
        """First packets as they come; a burst's wait for the rest of ``write_gap_s``
        after the last Write and share one (as the FORNAX manager's)."""
        last_write = float("-inf")
        while not self._stop.is_set():
            try:
                first = self.events.get(timeout=0.05)
            except queue.Empty:
                continue
            wait = last_write + self.cfg.write_gap_s - time.monotonic()
            if wait > 0 and self._stop.wait(wait):
                break
            last_write = time.monotonic()
            batch = [first]
            while len(batch) < self.cfg.batch:
                try:
                    batch.append(self.events.get_nowait())
                except queue.Empty:
                    break
            self.handle(batch)

    def handle(self, batch: list[Any]) -> None:
        """First packets: install both flows of each new connection, re-inject."""
        writes: list[Any] = []
        after: list[Any] = []
        with self._lock:
            for ev in batch:
                if not isinstance(ev, PacketIn):
                    continue
                p = punt_of(ev)
                self.count(f"punt_{p.reason_name}")
                pkt = parse_frame(p.frame, p.in_port)
                if pkt is None:
                    continue
                if p.reason != M.PUNT_MISS or not pkt.l4:
                    after.append(("soft", p))
                    continue
                conn, from_backend = self.view.conn_of(pkt, p.vni)
                key, _ = session_key_of(pkt, p.vni, (conn.src_ip, conn.src_port)
                                        if from_backend else None, baseline=True)
                if key in self.flows:
                    after.append(("reinject", p))
                    continue
                in_vm = self.view.vm_on_port(p.in_port) if p.in_port != M.UPLINK_PORT else None
                flags = pkt.tcp_flags if pkt.proto == M.IP_PROTO_TCP else -1
                decision = self.view.decide(conn, in_vm, flags)
                if decision.spoofed:          # the key is another connection's: no entry
                    self.count("spoofed_dropped")
                    continue
                for rec in self._flows_of(key, conn, decision, from_backend):
                    self.flows[rec.key] = rec
                    writes.append(("INSERT", rec.key, rec.data, 0))
                self.count("sessions_installed" if decision.allowed else "sessions_denied")
                if decision.allowed:
                    after.append(("reinject", p))
            failures = self.nic.write_sessions(writes)
        for f in failures:
            op, key, data, _ = writes[f.index]
            if f.code == "RESOURCE_EXHAUSTED":
                self.flows.pop(key, None)
                self.count("table_full_software")
            elif f.code == "ALREADY_EXISTS":
                self.nic.write_sessions([("MODIFY", key, data, 0)])
            else:
                self.count("write_errors")
        for kind, p in after:
            if kind == "reinject":
                self.nic.reinject(p.frame, p.in_port)
            else:
                for port, frame in self.soft.process(p.frame, p.in_port):
                    self.nic.emit(frame, port)

    def _flows_of(self, key: M.SessionKey, conn: Conn, decision: Decision,
                  from_backend: Optional[tuple[int, int]]) -> list[FlowRecord]:
        """The two flow records of a connection (the packet's direction, then the other)."""
        now = time.monotonic()
        rev_conn = conn.reversed()
        rev_key = M.canonical_key(conn.vni, conn.proto, rev_conn.src_ip, rev_conn.src_port,
                                  rev_conn.dst_ip, rev_conn.dst_port, baseline=True)[0]
        rev_decision = Decision(decision.allowed, decision.reason, decision.dst_vm,
                                decision.src_vm, decision.backend or from_backend, decision.lb)
        rev_from_backend = None
        if decision.lb is not None and decision.backend is not None:
            bvm = self.view.policy.vm_by_addr.get((decision.lb.vpc, decision.backend[0])) \
                if self.view.policy else None
            if bvm is not None and bvm.nic == self.cfg.nic:
                rev_from_backend = decision.backend
        out = []
        for k, c, d, fb, peer in ((key, conn, decision, from_backend, rev_key),
                                  (rev_key, rev_conn, rev_decision, rev_from_backend, key)):
            data = self.view.build(k, 0, c, d, fb).data
            data = M.SessionData(**{**data.params(), "scope": 0, "version": 0})
            out.append(FlowRecord(k, data, c, d, peer, fb, now, 0, now, self.policy_gen))
        return out

    # ------------------------------------------------------------------ the walk
    def _walker(self) -> None:
        while not self._stop.wait(self.cfg.walk_period_s):
            try:
                self.walk()
            except Exception as exc:                  # noqa: BLE001 - the next walk retries
                self.count("walk_errors")
                self.note("walk-error", error=str(exc))

    def walk(self) -> dict[str, float]:
        """One walk of the whole table: age, verify, apply a policy change."""
        t0 = time.monotonic()
        c0 = time.thread_time()
        held = {k: (d, pkts) for k, d, pkts, _ in self.nic.read_all_sessions()}
        now = time.monotonic()
        writes: list[Any] = []
        aged = fixed = changed = 0
        with self._lock:
            gen = self.policy_gen
            for key, rec in list(self.flows.items()):
                got = held.get(key)
                if got is None:
                    continue
                data, pkts = got
                if pkts != rec.packets:
                    rec.packets, rec.moved_s = pkts, now
                if data != rec.data:
                    writes.append(("MODIFY", key, rec.data, 0))
                    fixed += 1
                    self.note("corrupt", key=str(key), found="walk")
            for key, rec in list(self.flows.items()):
                peer = self.flows.get(rec.peer)
                idle = now - max(rec.moved_s, peer.moved_s if peer else 0.0)
                if idle >= self.cfg.idle_timeout_s and key < rec.peer:
                    for k in (key, rec.peer):
                        if self.flows.pop(k, None) is not None:
                            writes.append(("DELETE", k, None, 0))
                    aged += 1
            if gen != 0:
                for key, rec in list(self.flows.items()):
                    if rec.policy_gen == gen or key > rec.peer:
                        continue
                    in_vm = None
                    d = self.view.decide(rec.conn, in_vm, 0x10 if rec.conn.proto == 6 else -1)
                    for new in self._flows_of(key, rec.conn, d, rec.from_backend):
                        old = self.flows.get(new.key)
                        new.packets, new.moved_s = (old.packets, old.moved_s) if old else (0, now)
                        if old is None or old.data != new.data:
                            writes.append(("MODIFY", new.key, new.data, 0))
                            changed += 1
                        self.flows[new.key] = new
            self.nic.write_sessions(writes)
        stats = {"t": time.time(), "walk_s": time.monotonic() - t0,
                 "walk_cpu_s": time.thread_time() - c0, "entries": float(len(held)),
                 "aged": float(aged), "fixed": float(fixed), "rewritten": float(changed)}
        self.walks.append(stats)
        self.count("walks")
        self.count("sessions_aged", aged)
        self.count("corrupt_rebuilt", fixed)
        self.count("policy_rewrites", changed)
        return stats

    # ------------------------------------------------------------------ on demand / tests
    def session_detail(self, key: M.SessionKey) -> Optional[dict[str, Any]]:
        rec = self.flows.get(key)
        held = self.nic.read_session(key)
        if rec is None and held is None:
            return None
        out: dict[str, Any] = {"key": str(key), "known": rec is not None}
        if rec is not None:
            out["record"] = rec.data.params()
        if held is not None:
            out.update(entry=held[0].params(), packets=held[1], bytes=held[2])
        return out

    def inject_corruption(self, key: Optional[M.SessionKey] = None) -> Optional[str]:
        """Test hook: swap a flow entry's next hops in the NIC (its record unchanged)."""
        with self._lock:
            if key is None:
                key = next(iter(self.flows), None)
            if key is None:
                return None
            rec = self.flows[key]
            bad = M.SessionData(**{**rec.data.params(), "nh_hi": rec.data.nh_lo or 0xFFFF})
            self.nic.write_sessions([("MODIFY", key, bad, 0)])
        self.note("corruption-injected", key=str(key))
        return str(key)

    def pin_to_software(self, port: Optional[int] = None, vni: Optional[int] = None,
                        on: bool = True) -> None:
        with self._lock:
            if port is not None:
                self.nic.set_vm_port(port, self.view.vm_ports[port], software=on)
            if vni is not None:
                self.nic.set_vpc(vni, software=on)


__all__ = ["BaselineConfig", "BaselineManager", "FlowRecord"]
