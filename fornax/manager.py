"""The FORNAX manager of one SmartNIC: light, driven by the hardware's events.

It programs the NIC from the policy (:mod:`fornax.nicview`) and then waits. Per event:

* **miss** (a new connection, ``PUNT_MISS``): evaluate the policy, take a TCP-state slot,
  install the session (one entry, both directions) with its check code and an idle
  timeout, re-inject the packet through the pipeline (PacketOut ``OP_PIPELINE``). A
  denied connection gets a deny entry (the hardware drops and counts what follows). A
  full table (``RESOURCE_EXHAUSTED``): the connection takes the software path, counted.
* **aged** (an idle-timeout notification): delete the entry, free the slot.
* **TCP closed** (digest ``tcp_event_t``, state CLOSED): delete after a short linger; a
  trailing packet of it is forwarded in software, not installed again.
* **stale** (``PUNT_STALE``: the entry's scope has a newer policy version): evaluate
  again (a load-balanced connection keeps its backend, read back from the entry: the
  state restored on demand) and rewrite the entry with the same slot; re-inject.
* **corrupt** (``PUNT_CORRUPT``: the check code does not match): rebuild the entry from
  the policy and the manager's slot; re-inject. A session corrupt three times within a
  minute is pinned to software forwarding.
* **hang** (no heartbeat back through the pipeline for ``hang_after_s``): forward in
  software on the NIC's interfaces (:class:`fornax.fallback.Fallback`) until heartbeats
  return, then hand back to the hardware.
* an event for a session the manager does not know: logged, the entry removed (and the
  packet treated as a miss).
* a frame a VM sent as another VM (``Decision.spoofed``): dropped and counted
  (``spoofed_dropped``), no entry written — its key is the other connection's.

A policy change (:meth:`FornaxManager.reload`) rewrites the small configuration tables
and bumps the version of each affected scope: one write per scope, never a walk of the
sessions; each affected session is re-evaluated when its next packet arrives.

The session updates of the events handled together go out in one Write; a Write that
would start less than ``write_gap_s`` (10 ms) after the last waits for the rest of the
gap, while the burst's further events queue up and join it (the first event after a
quiet spell is written at once; a burst costs one Write per gap).

Per session the manager keeps 16 bytes of key and one integer (:mod:`fornax.sessions`).
Punts are rate-limited (``punt_rate_pps``; the excess is counted and dropped: the sender
retransmits), new-connection punts first per source (``punt_share_pps`` per VM port /
uplink VPC: one VM's flood cannot starve its neighbours' connection setup), and so are TCP
transitions (``digest_rate_pps``; the excess is counted and
skipped: a close not seen leaves its session to age out). Every event goes to the event log (``events.jsonl``) and the counters.

Example::

    >>> cfg = ManagerConfig(nic="nicA", grpc_addr="127.0.0.1:9559", device_id=1,
    ...                     policy_path=Path("vpc.policy"))
    >>> cfg.idle_timeout_ns
    30000000000
    >>> mgr = FornaxManager(cfg)                                   # doctest: +SKIP
    >>> mgr.start(); mgr.stats()["sessions"]                        # doctest: +SKIP
    0
"""
from __future__ import annotations

import heapq
import json
import logging
import queue
import resource
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from controller.p4rt import DigestList, PacketIn
from fornax.fallback import Fallback, SoftSwitch
from fornax.nicview import NicView
from fornax.options import NicManagerOptions
from fornax.pipeline import WRITE_GAP_S, SmartNic, punt_of, tcp_events
from fornax.policy import Policy, load_policy
from fornax.sessions import SessionStore, TableFullError
from fornax.softpath import Packet, parse_frame, session_key_of
from p4src.smartnic import model as M

log = logging.getLogger("fornax.manager")

HEARTBEAT_MAGIC = b"FXHB"
PRUNE_PERIOD_S = 1.0                   # forget old re-injections and closed keys this often
# a closed session is deleted between its linger's end and this much later (as under the
# old 50 ms poll): the deletes of a burst of closes share one Write
TIMER_SLACK_S = 0.05
_WAKE = object()                       # queued by stop(): the loop may be asleep
_PUNT_COUNTERS = {r: f"punt_{n}" for r, n in M.PUNT_NAMES.items()}
HB = struct.Struct("!4sQQ")            # magic, sequence, send time (ns, monotonic)


@dataclass(slots=True)
class ManagerConfig(NicManagerOptions):
    """How one manager runs (see the module docstring): the options every NIC manager
    takes (:class:`fornax.options.NicManagerOptions`) and FORNAX's own. ``interfaces``: port -> the
    switch-side Linux interface, for software forwarding during a hang (empty: none)."""

    closed_linger_s: float = 1.0
    heartbeat_interval_s: float = 0.1
    hang_after_s: float = 1.0
    interfaces: dict[int, str] = field(default_factory=dict)
    punt_rate_pps: float = 5000.0
    punt_burst: int = 2000
    punt_share_pps: float = 1000.0
    punt_share_burst: int = 400
    digest_rate_pps: float = 20000.0
    digest_burst: int = 5000
    digest_timeout_s: float = 0.002
    digest_list_size: int = 64

    @property
    def idle_timeout_ns(self) -> int:
        """The sessions' idle timeout in ns."""
        return int(self.idle_timeout_s * 1e9)


class TokenBucket:
    """``rate`` tokens per second, at most ``burst``: :meth:`take` is False when empty.

    >>> b = TokenBucket(10, 2, clock=lambda: 0.0)
    >>> [b.take() for _ in range(3)]
    [True, True, False]
    """

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens, self.t = float(burst), clock()

    def take(self) -> bool:
        return self.take_n(1) == 1

    def take_n(self, n: int) -> int:
        """Up to ``n`` tokens: how many were taken.

        >>> TokenBucket(10, 3, clock=lambda: 0.0).take_n(5)
        3
        """
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.t) * self.rate)
        self.t = now
        got = min(n, int(self.tokens))
        self.tokens -= got
        return got


class PuntShares:
    """Each source's share of the new-connection punts: one :class:`TokenBucket` per
    (ingress port, VNI) — a VM on a VM port, a VPC on the uplink — taken *before* the
    NIC's whole budget, so one VM flooding new connections spends its own share and
    cannot starve its neighbours' connection setup. At most ``max_sources`` buckets
    (the uplink's VNI is the sender's to choose): past that, sources of a port share
    one bucket.

    >>> shares = PuntShares(1, 2, clock=lambda: 0.0)
    >>> [shares.take(3, 100) for _ in range(3)], shares.take(2, 100), shares.take(3, 200)
    ([True, True, False], True, True)
    """

    def __init__(self, rate: float, burst: int, max_sources: int = 4096,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.max_sources, self.clock = rate, burst, max_sources, clock
        self.buckets: dict[tuple[int, int], TokenBucket] = {}

    def take(self, port: int, vni: int) -> bool:
        """One token from source (``port``, ``vni``)'s bucket."""
        key = (port, vni)
        bucket = self.buckets.get(key)
        if bucket is None:
            if len(self.buckets) >= self.max_sources:
                key = (port, -1)
                bucket = self.buckets.get(key)
            if bucket is None:
                bucket = self.buckets[key] = TokenBucket(self.rate, self.burst, self.clock)
        return bucket.take()


class EventQueue(queue.Queue):  # type: ignore[type-arg]
    """The connection's event queue, fed by the stream's reader thread: a heartbeat's
    echo goes straight to the monitor (a busy event loop never makes a live NIC look
    hung); punts and TCP digests past their token buckets are counted in ``limited`` and
    never queued — the rate is taken as they arrive, not as a backlog is worked off, and
    a storm cannot grow the queue.

    >>> q = EventQueue(lambda payload: None, digests=TokenBucket(10, 1, clock=lambda: 0.0))
    >>> for _ in range(3):
    ...     q.put(DigestList("tcp_event_t", 1, [{}]))
    >>> (q.qsize(), q.limited["digests_rate_limited"])
    (1, 2)

    ``limited``: the dict to count in (the manager's counters: the count is current as
    the messages arrive, not when the event loop next wakes). ``shares``: each source's
    share of the new-connection punts (:class:`PuntShares`), taken first; a punt past its
    source's share counts in ``punts_share_limited`` and ``punts_rate_limited`` (every
    punt a limit dropped).
    """

    def __init__(self, on_heartbeat: Callable[[bytes], None],
                 punts: Optional[TokenBucket] = None,
                 digests: Optional[TokenBucket] = None,
                 limited: Optional[dict[str, int]] = None,
                 shares: Optional[PuntShares] = None) -> None:
        super().__init__()
        self.on_heartbeat = on_heartbeat
        self.punts, self.digests, self.shares = punts, digests, shares
        self.limited = limited if limited is not None else {"punts_rate_limited": 0,
                                                            "digests_rate_limited": 0}

    def put(self, item: Any, block: bool = True, timeout: Optional[float] = None) -> None:
        if isinstance(item, PacketIn):
            md = item.metadata
            reason = md.get("reason")
            if reason == M.PUNT_HEARTBEAT:
                self.on_heartbeat(item.payload)
                return
            if self.shares is not None and reason == M.PUNT_MISS and \
                    not self.shares.take(md.get("ingress_port", 0), md.get("vni", 0)):
                for name in ("punts_share_limited", "punts_rate_limited"):
                    self.limited[name] = self.limited.get(name, 0) + 1
                return
            if self.punts is not None and not self.punts.take():
                n = self.limited.get("punts_rate_limited", 0)   # the sender retransmits
                self.limited["punts_rate_limited"] = n + 1
                return
        elif isinstance(item, DigestList) and self.digests is not None:
            got = self.digests.take_n(len(item.data))   # one token per TCP transition
            if got < len(item.data):
                n = self.limited.get("digests_rate_limited", 0)  # their sessions age out
                self.limited["digests_rate_limited"] = n + len(item.data) - got
                if not got:
                    return
                item = DigestList(item.name, item.list_id, item.data[:got], item.timestamp_ns)
        super().put(item, block, timeout)


class HeartbeatMonitor:
    """Sends a heartbeat through the pipeline every ``interval_s``; calls ``on_hang`` when
    none came back for ``hang_after_s`` and ``on_back`` when they return. Detection bound:
    ``hang_after_s + interval_s`` after the path stopped (plus the scheduling delay of
    this thread)."""

    def __init__(self, send: Callable[[bytes], None], interval_s: float, hang_after_s: float,
                 on_hang: Callable[[float], None], on_back: Callable[[float], None]) -> None:
        self.send, self.interval_s, self.hang_after_s = send, interval_s, hang_after_s
        self.on_hang, self.on_back = on_hang, on_back
        self.seq = 0
        self.last_echo = time.monotonic()
        self.echo_seq = 0
        self.hung = False
        self.rtt_s: deque[float] = deque(maxlen=100)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def echo(self, payload: bytes) -> None:
        """A heartbeat came back (called on the stream's thread)."""
        i = payload.find(HEARTBEAT_MAGIC)
        if i < 0:
            return
        _, seq, sent_ns = HB.unpack_from(payload, i)
        now = time.monotonic()
        self.rtt_s.append(now - sent_ns / 1e9)
        self.last_echo, self.echo_seq = now, seq
        if self.hung:
            self.hung = False
            self.on_back(time.time())

    def start(self) -> None:
        self.last_echo = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="fornax-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.seq += 1
            try:
                self.send(bytes(14) + HB.pack(HEARTBEAT_MAGIC, self.seq, time.monotonic_ns()))
            except Exception:                        # noqa: BLE001 - a dead stream is a hang
                pass
            silent = time.monotonic() - self.last_echo
            if not self.hung and silent > self.hang_after_s:
                self.hung = True
                self.on_hang(time.time())


class FornaxManager:
    """The manager of one SmartNIC (see the module docstring). ``policy``: start from this
    policy instead of reading ``config.policy_path``; ``nic``: an open :class:`SmartNic`
    (default: one is opened from the config)."""

    def __init__(self, config: ManagerConfig, policy: Optional[Policy] = None,
                 nic: Optional[SmartNic] = None) -> None:
        self.cfg = config
        self.view = NicView(config.nic)
        self.view.load(policy if policy is not None else load_policy(config.policy_path))
        self.store = SessionStore(config.table_size)
        self.soft = SoftSwitch(self.view, idle_s=config.idle_timeout_s)
        self.fallback = Fallback(self.soft, config.interfaces)
        self.heartbeat = HeartbeatMonitor(self._send_heartbeat, config.heartbeat_interval_s,
                                          config.hang_after_s, self._on_hang, self._on_back)
        self.counters: dict[str, int] = {}
        self.events = EventQueue(self.heartbeat.echo,
                                 TokenBucket(config.punt_rate_pps, config.punt_burst),
                                 TokenBucket(config.digest_rate_pps, config.digest_burst),
                                 limited=self.counters,
                                 shares=PuntShares(config.punt_share_pps,
                                                   config.punt_share_burst))
        self.nic = nic if nic is not None else SmartNic(
            config.grpc_addr, config.device_id, config.election_id, tls=config.tls,
            events=self.events, timeout_s=config.write_timeout_s,
            digest_timeout_ns=int(config.digest_timeout_s * 1e9),
            digest_list_size=config.digest_list_size)
        if nic is not None:
            nic.conn.packets = nic.conn.digests = nic.conn.idle_timeouts = self.events
            nic.events = self.events
        self.closing: dict[bytes, float] = {}             # key -> delete after (monotonic)
        self._closing_due: list[tuple[float, bytes]] = []  # heap of (delete after, key)
        self.closed_recent: dict[bytes, float] = {}       # key -> forget after
        self.corruptions: dict[bytes, list[float]] = {}
        self.pinned: set[bytes] = set()
        self.reinjected: dict[int, tuple[float, int]] = {}  # frame hash -> (when, how often)
        self.timeline: deque[dict[str, Any]] = deque(maxlen=10000)
        self._log_file = open(config.event_log, "a") if config.event_log else None
        self._lock = threading.RLock()                   # the NIC's writes and the view
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.hung = False
        self._pruned = 0.0
        self.started_at = time.time()
        self._written: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._writes: list[tuple[str, M.SessionKey, Optional[M.SessionData], int]] = []
        self._after: list[tuple[Any, ...]] = []          # once the pending writes are done
        self._last_write = float("-inf")                 # when the last Write started

    # ------------------------------------------------------------------ lifecycle
    def start(self, push: bool = True) -> None:
        """Push the program (or attach to the running one), write the configuration
        tables, start the event loop and the heartbeats."""
        if push and self.cfg.p4info is not None and self.cfg.device_config is not None:
            self.nic.push(self.cfg.p4info, self.cfg.device_config)
        else:
            self.nic.attach()
        self._write_config(set(self.view.versions))
        self._thread = threading.Thread(target=self._loop, name="fornax-events", daemon=True)
        self._thread.start()
        self.heartbeat.start()
        self.note("started", nic=self.cfg.nic, sessions_capacity=self.cfg.table_size)

    def stop(self) -> None:
        """Stop the threads, the fallback and the connection (the entries stay)."""
        self._stop.set()
        self.events.put(_WAKE)                           # the loop may sleep until a timer
        self.heartbeat.stop()
        if self._thread is not None:
            self._thread.join(5.0)
        self.fallback.stop()
        self.nic.close()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _write_config(self, scopes: set[int]) -> None:
        """The configuration tables as the view wants them (only what changed is
        written); the versions of ``scopes``."""
        self._written = self.nic.apply_config(self.view.config_entries(), self._written)
        v = self.view
        self.nic.set_scope_versions({s: v.versions[s] for s in scopes if s in v.versions})

    # ------------------------------------------------------------------ observability
    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n

    def note(self, kind: str, **fields: Any) -> None:
        """Record an event in the timeline and the event log."""
        rec = {"t": round(time.time(), 6), "event": kind, **fields}
        self.timeline.append(rec)
        if self._log_file is not None:
            self._log_file.write(json.dumps(rec) + "\n")
            self._log_file.flush()

    def stats(self) -> dict[str, Any]:
        """Sessions, counters, CPU seconds of this process, heartbeat RTT, hang state."""
        ru = resource.getrusage(resource.RUSAGE_SELF)
        rtts = sorted(self.heartbeat.rtt_s)
        return {"nic": self.cfg.nic, "sessions": len(self.store),
                "software_sessions": len(self.soft.sessions), "free_slots": self.store.free_slots,
                "counters": dict(self.counters), "cpu_s": ru.ru_utime + ru.ru_stime,
                "hung": self.hung, "fallback": self.fallback.running,
                "fallback_frames": [self.fallback.frames_in, self.fallback.frames_out],
                "heartbeat_rtt_ms_p50": round(rtts[len(rtts) // 2] * 1e3, 2) if rtts else None,
                "versions": {str(k): v for k, v in sorted(self.view.versions.items())},
                "mastership_losses": getattr(self.nic.conn, "mastership_losses", 0),
                "uptime_s": round(time.time() - self.started_at, 1)}

    # ------------------------------------------------------------------ hang
    def _send_heartbeat(self, payload: bytes) -> None:
        self.nic.heartbeat(payload)

    def _on_hang(self, t: float) -> None:
        self.hung = True
        self.count("hang_detected")
        self.note("hang", silent_s=round(time.monotonic() - self.heartbeat.last_echo, 3),
                  last_echo_t=round(t - (time.monotonic() - self.heartbeat.last_echo), 6),
                  fallback_ports=sorted(self.cfg.interfaces))
        self.soft.clear()
        self.fallback.start()

    def _on_back(self, t: float) -> None:
        self.fallback.stop()
        self.hung = False
        self.count("hang_recovered")
        self.note("hardware-back", software_frames=self.fallback.frames_in)

    # ------------------------------------------------------------------ policy
    def reload(self, policy: Optional[Policy] = None) -> dict[str, Any]:
        """Take a new policy (default: read the policy file again); returns what changed.
        PolicyError leaves everything as it was."""
        new = policy if policy is not None else load_policy(self.cfg.policy_path)
        t0 = time.monotonic()
        with self._lock:
            changed = self.view.load(new)
            self.soft.clear()
            self._write_config(changed)
        spent = time.monotonic() - t0
        self.count("policy_changes")
        self.note("policy-change", scopes=sorted(changed), write_s=round(spent, 4))
        return {"scopes": sorted(changed), "write_s": spent}

    # ------------------------------------------------------------------ events
    def _loop(self) -> None:
        """Wait for events, or until the next timer is due (a closed session's linger, the
        once-a-second prune): the loop sleeps while nothing happens instead of polling.
        The session updates of what it handled go out in one Write at once, unless a
        Write started less than ``write_gap_s`` ago: then the loop sleeps for the rest
        of the gap while the burst's events queue up, and handles them into the same
        Write (a burst costs one Write per gap, the first event of a burst none)."""
        while not self._stop.is_set():
            try:
                first = self.events.get(timeout=self._next_timer_s())
            except queue.Empty:
                first = None
            if first is not None:
                self._take([first])
            self._timers()
            if not (self._writes or self._after):
                continue
            wait = self._last_write + self.cfg.write_gap_s - time.monotonic()
            if self._writes and wait > 0 and len(self._writes) < self.cfg.batch:
                if self._stop.wait(wait):
                    break
                self._take([])
                self._timers()
            self._flush()
        self._flush()                                    # what was handled is written

    def _take(self, batch: list[Any]) -> None:
        """Handle ``batch`` and what else is queued (``batch`` events in all)."""
        while len(batch) < self.cfg.batch:
            try:
                batch.append(self.events.get_nowait())
            except queue.Empty:
                break
        try:
            self._handle(batch)
        except Exception:                               # noqa: BLE001 - keep serving
            log.exception("fornax: an event batch failed")
            self.count("batch_errors")

    def _next_timer_s(self) -> float:
        """Seconds until the next timer is due: the earliest closed session's linger (plus
        :data:`TIMER_SLACK_S`), or the next prune (:data:`PRUNE_PERIOD_S` after the last)."""
        due = self._pruned + PRUNE_PERIOD_S
        if self._closing_due and self._closing_due[0][0] + TIMER_SLACK_S < due:
            due = self._closing_due[0][0] + TIMER_SLACK_S
        return max(0.0, due - time.monotonic())

    def handle(self, batch: list[Any]) -> None:
        """Handle a batch of events (PacketIns, DigestLists, idle-timeout notifications):
        one Write for every entry they change, then the re-injections."""
        self._handle(batch)
        self._flush()

    def _handle(self, batch: list[Any]) -> None:
        """Handle ``batch``: the session updates and what follows them (re-injections,
        software forwarding) are added to the pending ones, for :meth:`_flush`."""
        writes, after = self._writes, self._after
        for ev in batch:
            if isinstance(ev, PacketIn):
                self._punt(punt_of(ev), writes, after)
            elif isinstance(ev, DigestList):
                for te in tcp_events(ev):
                    self._tcp(te, writes)
            elif ev is _WAKE:
                continue
            elif hasattr(ev, "table_entry"):
                self._aged(ev, writes)

    def _flush(self) -> None:
        """One Write of the pending session updates (if any), then what follows them."""
        writes, after = self._writes, self._after
        if not (writes or after):
            return
        self._writes, self._after = [], []
        try:
            if writes:
                self._last_write = time.monotonic()
                self.count("session_write_rpcs")
                with self._lock:
                    failures = self.nic.write_sessions(writes)
                for f in failures:
                    self._write_failed(writes[f.index], f.code, f.message, after)
            for item in after:
                self._after_write(item)
        except Exception:                               # noqa: BLE001 - keep serving
            log.exception("fornax: a session write failed")
            self.count("batch_errors")

    def _punt(self, p: M.Punt, writes: list, after: list) -> None:
        self.count(_PUNT_COUNTERS.get(p.reason) or f"punt_{p.reason_name}")
        pkt = parse_frame(p.frame, p.in_port)
        if pkt is None:
            self.count("punt_unparsed")
            return
        vni = p.vni
        if p.reason in (M.PUNT_OTHER, M.PUNT_SOFTWARE, M.PUNT_NO_ROUTE) or not pkt.l4:
            if p.reason == M.PUNT_NO_ROUTE:
                self.note("no-route", vni=vni, dst=M.ip_str(pkt.dst_ip))
            after.append(("soft", p))
            return
        conn, from_backend = self.view.conn_of(pkt, vni)
        key, direction = session_key_of(pkt, vni, (conn.src_ip, conn.src_port)
                                        if from_backend else None)
        packed = key.packed()
        if p.reason == M.PUNT_MISS:
            self._miss(p, pkt, key, direction, conn, from_backend, writes, after)
        elif p.reason in (M.PUNT_STALE, M.PUNT_CORRUPT):
            if key not in self.store:
                self.count("unknown_session_events")
                self.note("unknown-session", reason=p.reason_name, key=str(key))
                writes.append(("DELETE", key, None, 0))
                self._miss(p, pkt, key, direction, conn, from_backend, writes, after,
                           replace=True)
                return
            if p.reason == M.PUNT_CORRUPT:
                self._corrupt(key, packed)
            self._rebuild(p, pkt, key, direction, conn, from_backend, writes, after,
                          reason=p.reason)
        else:
            after.append(("soft", p))

    def _miss(self, p: M.Punt, pkt: Packet, key: M.SessionKey, direction: int, conn: Any,
              from_backend: Any, writes: list, after: list, replace: bool = False) -> None:
        packed = key.packed()
        if key in self.store and not replace:
            # A miss for a session the manager installed. A frame it has not seen before
            # raced the install (re-inject it); a frame it re-injected came back: the NIC
            # lost the entry (install it again, once; then the frame goes to software).
            seen = self.reinjected.get(hash(p.frame))
            if seen is None:
                self.count("raced_installs")
                after.append(("reinject", p, key))
                return
            if seen[1] >= 2:
                self.count("reinject_loops_cut")
                self.note("reinject-loop-cut", key=str(key), in_port=p.in_port)
                after.append(("soft", p))
                return
            self.count("reinstalled")
            self.note("reinstalled", key=str(key))
            replace = True
        if packed in self.closed_recent and not (pkt.proto == M.IP_PROTO_TCP and
                                                 pkt.tcp_flags & M.TCP_FLAG_SYN):
            self.count("trailing_packets")
            after.append(("soft", p))
            return
        self.closed_recent.pop(packed, None)
        flags = pkt.tcp_flags if pkt.proto == M.IP_PROTO_TCP else -1
        in_vm = self.view.vm_on_port(p.in_port) if p.in_port != M.UPLINK_PORT else None
        decision = self.view.decide(conn, in_vm, flags)
        if decision.spoofed:
            self._spoofed(key, p, decision)
            return
        built = self.view.build(key, direction, conn, decision, from_backend)
        if replace and key in self.store:
            self.store.remove(key)
        try:
            slot, gen = self.store.add(key)
        except TableFullError:
            self.count("table_full_software")
            after.append(("soft", p))
            return
        data = built.data.placed(key, slot, gen)
        writes.append(("INSERT", key, data, self.cfg.idle_timeout_ns))
        self.count("sessions_installed" if decision.allowed else "sessions_denied")
        if decision.allowed:
            after.append(("reinject", p, key))
        elif self.counters["sessions_denied"] <= 1000:
            self.note("denied", key=str(key), in_port=p.in_port, flags=pkt.tcp_flags,
                      reason=decision.reason)

    def _rebuild(self, p: M.Punt, pkt: Packet, key: M.SessionKey, direction: int, conn: Any,
                 from_backend: Any, writes: list, after: list, reason: int) -> None:
        flags = pkt.tcp_flags if pkt.proto == M.IP_PROTO_TCP else -1
        in_vm = self.view.vm_on_port(p.in_port) if p.in_port != M.UPLINK_PORT else None
        decision = self.view.decide(conn, in_vm, flags)
        if decision.spoofed:                  # the entry stays: its own next packet rebuilds it
            self._spoofed(key, p, decision)
            return
        if reason == M.PUNT_STALE:
            self.count("stale_rebuilt")
        keep = None
        if decision.lb is not None and reason == M.PUNT_STALE:
            held = self.nic.read_session(key)          # restore on demand: the backend it had
            if held is not None:
                keep = self.view.backend_of_entry(decision, held[0], direction)
                if keep is not None:
                    decision = self.view.decide(conn, in_vm, flags, keep_backend=keep)
        built = self.view.build(key, direction, conn, decision, from_backend)
        slot = self.store.slot(key)
        assert slot is not None
        pinned = key.packed() in self.pinned and decision.allowed
        # failing memory (pinned): software forwards
        data = built.data.placed(key, slot, self.store.gen(slot),
                                 M.VERDICT_SOFTWARE if pinned else None)
        writes.append(("MODIFY", key, data, self.cfg.idle_timeout_ns))
        self.note("rebuilt", reason=M.PUNT_NAMES[reason], key=str(key),
                  allowed=decision.allowed, version=data.version, pinned=pinned)
        if pinned:
            after.append(("soft", p))
        elif decision.allowed:
            after.append(("reinject", p, key))

    def _spoofed(self, key: M.SessionKey, p: M.Punt, decision: Any) -> None:
        """A VM sent as another VM (or as a VIP it is no backend of): the key is another
        connection's, so the frame is dropped and nothing is written (a deny entry would
        cut that connection). BMv2 also brings these back after a hang: its pcap capture
        sees the frames the fallback sent out of its ports as received there."""
        n = self.counters.get("spoofed_dropped", 0) + 1
        self.counters["spoofed_dropped"] = n
        if n <= 1000:
            self.note("spoofed", key=str(key), in_port=p.in_port, reason=decision.reason)

    def _corrupt(self, key: M.SessionKey, packed: bytes) -> None:
        now = time.monotonic()
        times = [t for t in self.corruptions.get(packed, []) if now - t < 60.0] + [now]
        self.corruptions[packed] = times
        self.count("corrupt_rebuilt")
        self.note("corrupt", key=str(key), times_in_60s=len(times))
        if len(times) >= 3 and packed not in self.pinned:
            self.pinned.add(packed)
            self.count("sessions_pinned_to_software")
            self.note("pinned-to-software", key=str(key))

    def _tcp(self, ev: M.TcpEvent, writes: list) -> None:
        self.count("tcp_events")
        if not self.store.set_state(ev.key, ev.new_state):
            self.count("unknown_session_events")
            self.note("unknown-session", reason="tcp", key=str(ev.key))
            writes.append(("DELETE", ev.key, None, 0))
            return
        if ev.closed:
            packed, due = ev.key.packed(), time.monotonic() + self.cfg.closed_linger_s
            self.closing[packed] = due
            heapq.heappush(self._closing_due, (due, packed))

    def _aged(self, note: Any, writes: list) -> None:
        for key, _ in self.nic.decode_idle(note):
            packed = key.packed()
            if key in self.store:
                self.count("sessions_aged")
                self.store.remove(key)
                self.closing.pop(packed, None)
            else:
                self.count("unknown_session_events")
            writes.append(("DELETE", key, None, 0))

    def _write_failed(self, w: tuple, code: str, message: str, after: list) -> None:
        op, key, data, idle = w
        if op == "INSERT" and code == "RESOURCE_EXHAUSTED":
            self.store.remove(key)
            self.count("table_full_software")
            self.note("table-full", key=str(key))
            after[:] = [("soft", a[1]) if a[0] == "reinject" and a[2:] == (key,) else a
                        for a in after]
        elif op == "INSERT" and code == "ALREADY_EXISTS":
            self.count("adopted_entries")
            with self._lock:
                self.nic.write_sessions([("MODIFY", key, data, idle)])
        elif op == "DELETE" and code == "NOT_FOUND":
            pass                                          # gone already
        elif op == "MODIFY" and code == "NOT_FOUND":
            with self._lock:
                self.nic.write_sessions([("INSERT", key, data, idle)])
        else:
            self.count("write_errors")
            self.note("write-error", op=op, key=str(key), code=code, message=message)

    def _after_write(self, item: tuple) -> None:
        kind = item[0]
        if kind == "reinject":
            p = item[1]
            h = hash(p.frame)
            self.reinjected[h] = (time.monotonic(), self.reinjected.get(h, (0.0, 0))[1] + 1)
            self.nic.reinject(p.frame, p.in_port)
        elif kind == "soft":
            self._soft(item[1])

    def _soft(self, p: M.Punt) -> None:
        """Forward a punted frame in software (PacketOut OP_EMIT)."""
        outs = self.soft.process(p.frame, p.in_port)
        self.count("software_forwarded" if outs else "software_dropped")
        for port, frame in outs:
            self.nic.emit(frame, port)

    def _timers(self) -> None:
        """Delete the closed sessions whose linger is over; once a second, forget old
        re-injections, recently closed keys and idle software sessions."""
        now = time.monotonic()
        heap = self._closing_due
        if heap and heap[0][0] <= now:
            writes = self._writes                        # written with the next Write
            while heap and heap[0][0] <= now:
                due, packed = heapq.heappop(heap)
                if self.closing.get(packed) != due:      # aged meanwhile, or closed again
                    continue
                del self.closing[packed]
                key = M.SessionKey.unpack(packed)
                if self.store.remove(key) is not None:
                    writes.append(("DELETE", key, None, 0))
                    self.closed_recent[packed] = now + 5.0
                    self.count("sessions_closed")
        if now - self._pruned >= PRUNE_PERIOD_S:
            self._pruned = now
            if self.closed_recent:
                self.closed_recent = {k: t for k, t in self.closed_recent.items() if t > now}
            if self.reinjected:
                self.reinjected = {k: v for k, v in self.reinjected.items() if now - v[0] < 2.0}
            self.soft.expire()

    # ------------------------------------------------------------------ on demand
    def session_detail(self, key: M.SessionKey) -> Optional[dict[str, Any]]:
        """A session in full, restored on demand: the entry the NIC holds (action data,
        counters), whether its check code holds, the policy's decision now, its slot and
        last TCP state. None when neither the manager nor the NIC knows it."""
        with self._lock:
            held = self.nic.read_session(key)
        slot = self.store.slot(key)
        if held is None and slot is None:
            return None
        out: dict[str, Any] = {"key": str(key), "known": slot is not None, "slot": slot,
                               "tcp_state": None}
        if slot is not None:
            st = self.store.state(key)
            out["tcp_state"] = M.TCP_STATE_NAMES[st] if st is not None and st < 6 else st
            out["gen"] = self.store.gen(slot)
        if held is not None:
            data, pkts, octets = held
            out.update(entry=data.params(), packets=pkts, bytes=octets,
                       check_ok=M.check_code(key, data) == data.check,
                       version_current=self.view.versions.get(data.scope) == data.version)
        return out

    def inject_corruption(self, key: Optional[M.SessionKey] = None) -> Optional[str]:
        """Test hook, as a memory fault would: change one session's next hops in the NIC
        (swapped) without its check code; the manager's own state is not told. The key
        (default: any session). Returns the key's text, or None when there is none."""
        with self._lock:
            if key is None:
                key = next(iter(self.store.keys()), None)
            if key is None:
                return None
            held = self.nic.read_session(key)
            if held is None:
                return None
            data = held[0]
            bad = M.SessionData(**{**data.params(), "nh_lo": data.nh_hi, "nh_hi": data.nh_lo,
                                   "nat_port": data.nat_port ^ 1})
            self.nic.write_sessions([("MODIFY", key, bad, self.cfg.idle_timeout_ns)])
        self.note("corruption-injected", key=str(key))
        return str(key)

    def pin_to_software(self, port: Optional[int] = None, vni: Optional[int] = None,
                        on: bool = True) -> None:
        """Fail a port or a whole VPC over to software forwarding (or back)."""
        with self._lock:
            if port is not None:
                self.nic.set_vm_port(port, self.view.vm_ports[port], software=on)
            if vni is not None:
                self.nic.set_vpc(vni, software=on)
        self.note("pinned" if on else "unpinned", port=port, vni=vni)


__all__ = ["PRUNE_PERIOD_S", "TIMER_SLACK_S", "WRITE_GAP_S", "EventQueue", "FornaxManager",
           "HeartbeatMonitor", "ManagerConfig", "PuntShares", "TokenBucket"]
