"""The FORNAX manager against the SmartNIC program on p4sim (in-process switch, real
P4Runtime, no root): sessions installed on a miss and re-injected, removed when TCP
closes or when they age, re-evaluated only when their scope's policy changes, rebuilt
after a corruption, a full table served in software, unknown-session events removed, a
punt storm and a digest storm rate-limited; and the software path byte for byte the pipeline's.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterator

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.layers.vxlan import VXLAN

from controller.p4rt.entities import digest_entry
from fornax.fallback import SoftSwitch
from fornax.manager import TIMER_SLACK_S, FornaxManager, HeartbeatMonitor, ManagerConfig
from fornax.policy import parse_policy
from nicrig import NicRig
from p4src.smartnic import model as M

POLICY = """\
nic nicA vtep 192.168.0.1 uplink-mac 02:fa:00:00:00:01 underlay-mac 02:fa:00:00:00:02 gateway-mac 02:fe:00:00:00:01
nic nicB vtep 192.168.0.2 uplink-mac 02:fa:00:00:00:02 underlay-mac 02:fa:00:00:00:01 gateway-mac 02:fe:00:00:00:02
vpc blue vni 100
vpc red vni 200
vm a1 vpc blue nic nicA port 2 ip 10.0.0.1 mac 02:00:00:00:01:01 groups web
vm a3 vpc blue nic nicA port 4 ip 10.0.0.3 mac 02:00:00:00:01:03 groups db
vm b1 vpc blue nic nicB port 2 ip 10.0.0.2 mac 02:00:00:00:02:01 groups web
vm a2 vpc red nic nicA port 3 ip 10.0.0.1 mac 02:00:00:00:01:02 groups web
vm b2 vpc red nic nicB port 3 ip 10.0.0.2 mac 02:00:00:00:02:02 groups web
rule web egress allow any to 0.0.0.0/0
rule web ingress allow tcp 80 from 10.0.0.0/24
rule web ingress allow tcp 8080 from 10.0.0.0/24
rule web ingress allow icmp from 10.0.0.0/24
rule db egress allow any to 0.0.0.0/0
rule db ingress allow tcp 5432 from 10.0.0.0/24
route blue 10.0.0.0/24 direct
route red 10.0.0.0/24 direct
lb blue 10.0.0.100:80 tcp 10.0.0.1:8080
"""
GW_A, UPLINK_A, PEER = "02:fe:00:00:00:01", "02:fa:00:00:00:01", "02:fa:00:00:00:02"
A1_MAC, A2_MAC, A3_MAC = "02:00:00:00:01:01", "02:00:00:00:01:02", "02:00:00:00:01:03"
B1_MAC = "02:00:00:00:02:01"


def until(fn: Callable[[], Any], timeout_s: float = 5.0) -> Any:
    end = time.monotonic() + timeout_s
    while True:
        got = fn()
        if got or time.monotonic() > end:
            return got
        time.sleep(0.02)


class Rig:
    def __init__(self, build: tuple[Any, Any], policy: str = POLICY, table_size: int = 1024,
                 **cfg: Any) -> None:
        self.nic = NicRig(ports=(1, 2, 3, 4))
        self.cfg = ManagerConfig(nic="nicA", grpc_addr=self.nic.addr, device_id=1,
                                 policy_path=None,  # type: ignore[arg-type]
                                 p4info=build[0], device_config=build[1], table_size=table_size,
                                 **cfg)
        self.mgr = FornaxManager(self.cfg, policy=parse_policy(policy, "test.policy"))
        self.mgr.start()

    def close(self) -> None:
        self.mgr.stop()
        self.nic.stop()


@pytest.fixture()
def rig(fornax_build: tuple[Any, Any]) -> Iterator[Rig]:
    r = Rig(fornax_build, idle_timeout_s=30.0, closed_linger_s=0.05)
    try:
        yield r
    finally:
        r.close()


def a1_tcp(flags: str, sport: int = 40000, dport: int = 80, dst: str = "10.0.0.2",
           payload: bytes = b"", src: str = "10.0.0.1", mac: str = A1_MAC) -> bytes:
    return bytes(Ether(src=mac, dst=GW_A) / IP(src=src, dst=dst)
                 / TCP(sport=sport, dport=dport, flags=flags) / payload)


def from_b1(flags: str, sport: int = 80, dport: int = 40000, vni: int = 100,
            src: str = "10.0.0.2", dst: str = "10.0.0.1", payload: bytes = b"") -> bytes:
    inner = Ether(src=B1_MAC, dst=GW_A) / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport,
                                                                      flags=flags) / payload
    return bytes(Ether(src=PEER, dst=UPLINK_A) / IP(src="192.168.0.2", dst="192.168.0.1")
                 / UDP(sport=50001, dport=4789) / VXLAN(vni=vni) / inner)


def test_a_connection_installs_one_session_then_closes(rig: Rig) -> None:
    rig.nic.port(2).inject(a1_tcp("S"))
    out = Ether(rig.nic.take(1))                          # the SYN, re-injected and encapsulated
    assert out[VXLAN].vni == 100 and out[VXLAN].payload[TCP].flags == "S"
    assert len(rig.mgr.store) == 1 and rig.mgr.counters["sessions_installed"] == 1
    rig.nic.port(1).inject(from_b1("SA"))
    assert Ether(rig.nic.take(2))[TCP].flags == "SA"      # the hardware, no punt
    for frame, port, out_port in ((a1_tcp("A"), 2, 1), (a1_tcp("FA"), 2, 1),
                                  (from_b1("FA"), 1, 2), (a1_tcp("A"), 2, 1)):
        rig.nic.port(port).inject(frame)
        assert rig.nic.take(out_port) is not None
    assert until(lambda: len(rig.mgr.store) == 0)          # TCP CLOSED -> deleted
    assert rig.mgr.counters["sessions_closed"] == 1
    assert rig.mgr.counters.get("punt_miss") == 1
    assert until(lambda: rig.mgr.nic.read_all_sessions() == [])   # the Delete: next Write


def test_the_event_loop_sleeps_until_its_next_timer(fornax_build: tuple[Any, Any]) -> None:
    """The loop waits for its next timer instead of polling: a closed session is deleted
    once its linger is over (not before) with no later event to wake the loop; an idle
    loop wakes for the once-a-second prune only; stop() ends it."""
    r = Rig(fornax_build, idle_timeout_s=30.0, closed_linger_s=0.4)
    try:
        removed: list[float] = []
        store_remove = r.mgr.store.remove

        def remove(key: M.SessionKey) -> Any:
            removed.append(time.monotonic())
            return store_remove(key)
        r.mgr.store.remove = remove  # type: ignore[method-assign]
        r.nic.port(2).inject(a1_tcp("S"))
        assert r.nic.take(1) is not None and len(r.mgr.store) == 1
        r.nic.port(1).inject(from_b1("SA"))
        assert r.nic.take(2) is not None
        for frame, port, out_port in ((a1_tcp("FA"), 2, 1), (from_b1("FA"), 1, 2),
                                      (a1_tcp("A"), 2, 1)):
            r.nic.port(port).inject(frame)
            assert r.nic.take(out_port) is not None
        assert until(lambda: r.mgr.closing, 5.0)              # the CLOSED digest is in
        due = next(iter(r.mgr.closing.values()))
        assert r.mgr._next_timer_s() <= max(0.0, due - time.monotonic()) + TIMER_SLACK_S + 1e-3
        assert until(lambda: removed, 5.0) and removed[0] >= due
        assert len(r.mgr.store) == 0 and r.mgr.counters["sessions_closed"] == 1
        wakes: list[float] = []
        timers = r.mgr._timers

        def counted() -> None:
            wakes.append(time.monotonic())
            timers()
        r.mgr._timers = counted  # type: ignore[method-assign]
        t0 = time.monotonic()
        until(lambda: time.monotonic() - t0 > 1.5, 5.0)       # idle: no event comes
        assert len(wakes) <= 3, f"{len(wakes)} wake-ups in 1.5 s of idle"
    finally:
        r.close()
    assert r.mgr._thread is not None and not r.mgr._thread.is_alive()


def test_overlapping_vpcs_and_the_policy(rig: Rig) -> None:
    rig.nic.port(3).inject(a1_tcp("S", mac=A2_MAC))       # a2 in red, the same addresses
    assert Ether(rig.nic.take(1))[VXLAN].vni == 200
    # a3 (behind this NIC too) accepts 5432 only; b1's own rules are nicB's to enforce
    rig.nic.port(2).inject(a1_tcp("S", dst="10.0.0.3", dport=22))
    assert rig.nic.take(4, 0.5) is None
    assert until(lambda: rig.mgr.counters.get("sessions_denied") == 1)
    rig.nic.port(2).inject(a1_tcp("S", dst="10.0.0.3", dport=22))  # the deny entry drops it
    assert rig.nic.take(4, 0.3) is None and rig.mgr.counters.get("punt_miss") == 2
    rig.nic.port(2).inject(a1_tcp("S", dst="10.0.0.3", dport=5432))
    assert Ether(rig.nic.take(4)).dst == A3_MAC            # local to local, no VXLAN
    rig.nic.port(2).inject(a1_tcp("S", src="10.0.0.9"))   # spoofed source
    assert rig.nic.take(1, 0.3) is None
    ping = bytes(Ether(src=A1_MAC, dst=GW_A) / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP())
    rig.nic.port(2).inject(ping)                           # not TCP/UDP: software forwards it
    assert Ether(rig.nic.take(1))[VXLAN].payload.haslayer(ICMP)
    assert until(lambda: rig.mgr.counters.get("software_forwarded") == 1)


def test_a_spoofed_frame_writes_no_entry_for_the_connection_it_names(rig: Rig) -> None:
    # a3 sends as a1: the frame's key is a1's connection; a deny entry would cut it
    rig.nic.port(4).inject(a1_tcp("S", sport=45000, mac=A3_MAC))
    assert rig.nic.take(1, 0.3) is None
    assert until(lambda: rig.mgr.counters.get("spoofed_dropped") == 1)
    assert len(rig.mgr.store) == 0 and rig.mgr.nic.read_all_sessions() == []
    rig.nic.port(2).inject(a1_tcp("S", sport=45000))       # a1's own connection opens
    assert Ether(rig.nic.take(1))[VXLAN].vni == 100
    # after a policy change a1's entry is stale: a3's spoofed packet must not rebuild it
    rig.mgr.reload(parse_policy(POLICY.replace("rule web ingress allow icmp",
                                               "rule web ingress allow udp 53 from 10.0.0.0/24\n"
                                               "rule web ingress allow icmp"), "t3.policy"))
    rig.nic.port(4).inject(a1_tcp("A", sport=45000, mac=A3_MAC))
    assert rig.nic.take(1, 0.3) is None
    assert until(lambda: rig.mgr.counters.get("spoofed_dropped") == 2)
    rig.nic.port(2).inject(a1_tcp("A", sport=45000, payload=b"ok"))
    assert bytes(Ether(rig.nic.take(1))[VXLAN].payload[TCP].payload) == b"ok"
    assert rig.mgr.counters.get("stale_rebuilt") == 1 and "sessions_denied" not in rig.mgr.counters


def test_policy_change_touches_only_the_affected_scope(rig: Rig) -> None:
    rig.nic.port(2).inject(a1_tcp("S"))                    # a1 (group web) -> b1:80
    assert rig.nic.take(1) is not None
    rig.nic.port(4).inject(a1_tcp("S", src="10.0.0.3", mac=A3_MAC, sport=41000))  # a3 (db)
    assert rig.nic.take(1) is not None
    before = dict(rig.mgr.view.versions)
    changed = rig.mgr.reload(parse_policy(POLICY.replace(
        "rule db egress allow any to 0.0.0.0/0", "rule db egress deny tcp 80 to 0.0.0.0/0\n"
        "rule db egress allow any to 0.0.0.0/0"), "test2.policy"))
    a1_scope, a3_scope = rig.mgr.view.scope_of_vm["a1"], rig.mgr.view.scope_of_vm["a3"]
    assert a3_scope in changed["scopes"] and a1_scope not in changed["scopes"]
    assert rig.mgr.view.versions[a1_scope] == before[a1_scope]
    rig.nic.port(2).inject(a1_tcp("A"))                    # a1's session: untouched
    assert rig.nic.take(1) is not None
    rig.nic.port(4).inject(a1_tcp("A", src="10.0.0.3", mac=A3_MAC, sport=41000))
    assert rig.nic.take(1, 0.5) is None                    # a3's: stale, now denied
    assert until(lambda: rig.mgr.counters.get("stale_rebuilt") == 1)
    assert rig.mgr.counters.get("punt_stale") == 1


def test_corrupt_entry_is_rebuilt_and_the_packet_delivered(rig: Rig) -> None:
    rig.nic.port(2).inject(a1_tcp("S"))
    assert rig.nic.take(1) is not None
    key = next(rig.mgr.store.keys())
    assert rig.mgr.inject_corruption(key) == str(key)
    assert rig.mgr.session_detail(key)["check_ok"] is False
    rig.nic.port(2).inject(a1_tcp("A", payload=b"data"))
    out = Ether(rig.nic.take(1))
    assert out[IP].dst == "192.168.0.2" and bytes(out[VXLAN].payload[TCP].payload) == b"data"
    assert rig.nic.take(2, 0.2) is None and rig.nic.take(3, 0.1) is None
    detail = rig.mgr.session_detail(key)
    assert detail["check_ok"] is True and rig.mgr.counters["corrupt_rebuilt"] == 1


def test_sessions_age_by_idle_timeout(fornax_build: tuple[Any, Any]) -> None:
    r = Rig(fornax_build, idle_timeout_s=0.3)
    try:
        r.nic.port(2).inject(a1_tcp("S"))
        assert r.nic.take(1) is not None
        assert until(lambda: r.mgr.counters.get("sessions_aged") == 1)
        assert len(r.mgr.store) == 0
        assert until(lambda: r.mgr.nic.read_all_sessions() == [])      # the next Write
    finally:
        r.close()


def test_full_table_takes_the_software_path(small_build: tuple[Any, Any]) -> None:
    r = Rig(small_build, table_size=64)        # the program holds 8; the manager thinks 64
    try:
        for sport in range(10):
            r.nic.port(2).inject(a1_tcp("S", sport=30000 + sport))
        got = [r.nic.take(1) for _ in range(10)]
        assert all(got), "every SYN delivered, in hardware or software"
        assert until(lambda: r.mgr.counters.get("table_full_software") == 2)
        assert len(r.mgr.store) == 8
    finally:
        r.close()


def test_unknown_session_event_is_removed_and_replaced(rig: Rig) -> None:
    key = M.canonical_key(100, 6, M.ip("10.0.0.1"), 40000, M.ip("10.0.0.2"), 80)[0]
    stranger = M.SessionData(M.VERDICT_ALLOW, scope=1, version=1, slot=77, gen=9, nh_lo=5,
                             nh_hi=6)                      # not coded, unknown to the manager
    assert rig.mgr.nic.write_sessions([("INSERT", key, stranger, 0)]) == []
    rig.nic.port(2).inject(a1_tcp("A"))
    assert rig.nic.take(1) is not None                     # removed, installed, delivered
    assert rig.mgr.counters["unknown_session_events"] == 1
    assert rig.mgr.session_detail(key)["check_ok"] is True


def test_a_burst_of_events_shares_one_write_per_gap(fornax_build: tuple[Any, Any]) -> None:
    """A first packet after a quiet spell is written at once (no wait for the gap); 29
    more right after it wait for the rest of the gap and go out together — Writes start
    at least ``write_gap_s`` apart, far fewer than the events — and every frame is
    re-injected once its session is in."""
    gap = 0.3
    r = Rig(fornax_build, idle_timeout_s=30.0, write_gap_s=gap)
    try:
        log: list[tuple[str, float, int]] = []
        write, wait, put = r.mgr.nic.write_sessions, r.mgr._stop.wait, r.mgr.events.put

        def counted_write(writes: Any) -> Any:
            log.append(("write", time.monotonic(), len(writes)))
            return write(writes)

        def counted_wait(timeout: Any = None) -> bool:
            log.append(("gap", time.monotonic(), 0))
            return wait(timeout)

        def counted_put(item: Any, *a: Any, **k: Any) -> None:
            log.append(("event", time.monotonic(), 0))
            put(item, *a, **k)
        r.mgr.nic.write_sessions = counted_write  # type: ignore[method-assign]
        r.mgr._stop.wait = counted_wait  # type: ignore[method-assign]
        r.mgr.events.put = counted_put  # type: ignore[method-assign]
        r.nic.port(2).inject(a1_tcp("S", sport=20000))
        assert r.nic.take(1) is not None              # written and re-injected at once
        assert [k for k, _, _ in log if k != "event"] == ["write"]     # no wait before it
        for sport in range(1, 30):                    # within the gap after that Write
            r.nic.port(2).inject(a1_tcp("S", sport=20000 + sport))
        out = [r.nic.take(1) for _ in range(29)]
        assert all(f is not None for f in out), f"{sum(f is not None for f in out)} of 29"
        assert len(r.mgr.store) == 30 and r.mgr.counters["sessions_installed"] == 30
        writes = [(t, n) for kind, t, n in log if kind == "write"]
        assert sum(n for _, n in writes) == 30 and writes[0][1] == 1
        assert 2 <= len(writes) <= 8, writes
        starts = [t for t, _ in writes]
        assert all(b - a >= gap - 1e-3 for a, b in zip(starts, starts[1:])), starts
        assert r.mgr.counters["session_write_rpcs"] == len(writes)
    finally:
        r.close()


def test_the_nic_gathers_tcp_transitions_into_few_digest_lists(
        fornax_build: tuple[Any, Any]) -> None:
    """The TCP digest is enabled with ``digest_timeout_s``/``digest_list_size``: 10
    connections reset at once are reported in fewer lists than transitions (one gRPC
    message and one ack each), every transition is seen, every session closes."""
    r = Rig(fornax_build, idle_timeout_s=30.0, closed_linger_s=0.05, digest_timeout_s=0.2)
    try:
        for sport in range(10):
            r.nic.port(2).inject(a1_tcp("S", sport=31000 + sport))
        assert until(lambda: r.mgr.counters.get("tcp_events", 0) == 10, 10), r.mgr.counters
        lists: list[int] = []
        put = r.mgr.events.put

        def counted_put(item: Any, *a: Any, **k: Any) -> None:
            if hasattr(item, "list_id"):
                lists.append(len(item.data))
            put(item, *a, **k)
        r.mgr.events.put = counted_put  # type: ignore[method-assign]
        for sport in range(10):
            r.nic.port(2).inject(a1_tcp("R", sport=31000 + sport))
        assert until(lambda: r.mgr.counters.get("sessions_closed", 0) == 10, 10), r.mgr.counters
        assert sum(lists) == 10 and len(lists) < 10, lists
        read = list(r.mgr.nic.conn.read(digest_entry(r.mgr.nic.info, M.TCP_DIGEST)))
        cfg = read[0].digest_entry.config
        assert (cfg.max_timeout_ns, cfg.max_list_size) == (200_000_000, 64)
    finally:
        r.close()


def test_punt_storm_is_rate_limited_and_counted(fornax_build: tuple[Any, Any]) -> None:
    r = Rig(fornax_build, punt_rate_pps=1.0, punt_burst=5)
    try:
        for sport in range(40):
            r.nic.port(2).inject(a1_tcp("S", sport=20000 + sport))
        limited = lambda: r.mgr.counters.get("punts_rate_limited", 0)  # noqa: E731
        assert until(lambda: len(r.mgr.store) + limited() == 40, 10), r.mgr.counters
        assert limited() >= 30
        assert r.mgr.counters["punt_miss"] == len(r.mgr.store)   # only those let in
    finally:
        r.close()


def test_digest_storm_is_rate_limited_and_counted(fornax_build: tuple[Any, Any]) -> None:
    """Many connections opened and reset at once make the data plane report two TCP
    transitions each (distinct digests: the learning filter keeps only repeats away): the
    manager takes ``digest_burst`` of them and counts the rest; the sessions stay (they
    age out instead of closing)."""
    r = Rig(fornax_build, digest_rate_pps=1.0, digest_burst=5, closed_linger_s=60.0)
    try:
        for sport in range(20):
            r.nic.port(2).inject(a1_tcp("S", sport=30000 + sport))
        assert until(lambda: len(r.mgr.store) == 20, 10)
        for sport in range(20):
            r.nic.port(2).inject(a1_tcp("R", sport=30000 + sport))
        seen = lambda: (r.mgr.counters.get("tcp_events", 0)  # noqa: E731
                        + r.mgr.counters.get("digests_rate_limited", 0))
        assert until(lambda: seen() == 40, 10), r.mgr.counters
        assert r.mgr.counters["digests_rate_limited"] >= 30
        assert len(r.mgr.store) == 20
    finally:
        r.close()


def test_software_path_is_byte_for_byte_the_pipeline(rig: Rig) -> None:
    """The same frames through the hardware (after the manager installed their sessions)
    and through SoftSwitch: the same bytes out of the same ports — encapsulation,
    decapsulation, and the load balancer's translation both ways with checksums."""
    soft = SoftSwitch(rig.mgr.view)
    cases = [(2, a1_tcp("S", payload=b"x" * 33)),
             (1, from_b1("SA", payload=b"y" * 7)),
             (1, from_b1("S", sport=51000, dport=80, dst="10.0.0.100", payload=b"req")),
             (2, a1_tcp("SA", sport=8080, dport=51000, payload=b"rep"))]
    for port, frame in cases:
        want = soft.process(frame, port)
        rig.nic.port(port).inject(frame)
        out_port = want[0][0]
        got = rig.nic.take(out_port)
        assert got is not None, (port, want)
        assert got == want[0][1], (Ether(got).show2(dump=True), Ether(want[0][1]).show2(dump=True))
    lb = Ether(soft.process(cases[2][1], 1)[0][1])
    assert lb[IP].dst == "10.0.0.1" and lb[TCP].dport == 8080
    back = Ether(soft.process(cases[3][1], 2)[0][1])[VXLAN].payload
    assert back[IP].src == "10.0.0.100" and back[TCP].sport == 80


def test_heartbeat_monitor_detects_a_silent_path_and_its_return() -> None:
    sent: list[bytes] = []
    events: list[str] = []
    mon = HeartbeatMonitor(sent.append, 0.02, 0.1, lambda t: events.append("hang"),
                           lambda t: events.append("back"))
    mon.start()
    try:
        assert until(lambda: len(sent) >= 2)
        mon.echo(sent[-1])
        assert until(lambda: events == ["hang"], 2)        # nothing echoed since
        mon.echo(sent[-1])
        assert events == ["hang", "back"]
    finally:
        mon.stop()


def test_an_entry_lost_behind_the_managers_back_is_installed_again(rig: Rig) -> None:
    """A frame the manager re-injected that comes back as a miss: the NIC lost the entry;
    installed again once, and a frame that keeps coming back goes to software (no loop)."""
    rig.nic.port(2).inject(a1_tcp("S"))
    assert rig.nic.take(1) is not None
    key = next(rig.mgr.store.keys())
    assert rig.mgr.nic.write_sessions([("DELETE", key, None, 0)]) == []
    rig.nic.port(2).inject(a1_tcp("A"))                    # a new frame: taken for a race
    assert rig.nic.take(1) is not None                     # re-injected, missed, reinstalled
    assert until(lambda: rig.mgr.counters.get("reinstalled") == 1)
    assert rig.mgr.counters["raced_installs"] == 1
    assert rig.mgr.session_detail(key)["check_ok"] is True
    assert "reinject_loops_cut" not in rig.mgr.counters


def test_a_reload_writes_only_what_changed(rig: Rig) -> None:
    """A VM removed: its port and next hop go from the NIC; nothing else is rewritten."""
    from p4src.smartnic.model import NEXTHOPS_TABLE, PORTS_TABLE
    n = rig.mgr.nic
    before_nh = len(n.conn.read_table(NEXTHOPS_TABLE))
    calls: list[str] = []
    for name in ("set_vm_port", "set_vpc", "set_nexthop_vm", "set_nexthop_remote", "set_identity"):
        orig = getattr(n, name)
        setattr(n, name, lambda *a, _o=orig, _n=name, **k: (calls.append(_n), _o(*a, **k)))
    text = "\n".join(l for l in POLICY.splitlines() if not l.startswith("vm a3 "))
    text = text.replace("rule db ", "# rule db ")
    rig.mgr.reload(parse_policy(text + "\n", "p2"))
    assert calls == []                                     # nothing of the others changed
    ports = {e.match[0].exact.value for e in n.conn.read_table(PORTS_TABLE)}
    assert b"\x04" not in ports and len(ports) == 3        # uplink, a1, a2
    assert len(n.conn.read_table(NEXTHOPS_TABLE)) == before_nh - 1
