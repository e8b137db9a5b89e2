"""Lab 03 — PFC: the plugin ``labs.labkit`` loads. The student generates, in ``pfc.p4``,
one 802.1Qbb PAUSE when a (port, priority) occupancy reaches XOFF and one RESUME (time 0)
when it falls to XON, as ``p4src/include/control/pfc.p4`` does; the checker compares the
frames bit for bit with ``host.nic.pfc.build_pause`` (the format of reference-facts.md).

Switch ports: 1 = sender A (10.0.0.1), 2 = receiver (10.0.0.2), 3 = host 10.0.0.3.
"""
from __future__ import annotations

import time
from pathlib import Path

from host.nic.pfc import ETHERTYPE_PFC, PfcState, build_pause, parse_pause
from labs.labkit import LabSwitch, Report
from labs.labkit.congestion import SlowQueue
from labs.labkit.packets import udp_fields, udp_frame

TITLE = "PFC: PAUSE at XOFF, RESUME at XON"
FILES = ("pfc.p4",)
LAB = "03-pfc"
PORTS = (1, 2, 3)
SESSION_BASE = 100
DSCP_ROCE, PRIO_ROCE = 26, 3
XOFF, XON, QUANTA = 4, 2, 0x1234
QUIET_S = 0.3
PORT_MACS = "MyEgress.port_macs"


def port_mac(port: int) -> str:
    return f"02:00:00:00:01:{port:02x}"


def host_ip(port: int) -> str:
    return f"10.0.0.{port}"


def program(sw: LabSwitch) -> bool:
    """Routes to the three hosts, DSCP 26 -> priority 3, port MACs, clone sessions 100+p.

    False when the program has no ``MyEgress.port_macs`` (the skeleton: the compiler
    removes a table nobody applies, and TODO 3 applies it): the rest is programmed, so
    forwarding and the queue checks still run."""
    c = sw.connection
    has_macs = sw.p4info.has("table", PORT_MACS)
    c.insert(*[c.table_entry("MyIngress.routes", {"hdr.ipv4.dst_addr": f"{host_ip(p)}/32"},
                             "MyIngress.set_port", {"port": p}) for p in PORTS],
             c.table_entry("MyIngress.dscp_to_priority", {"hdr.ipv4.dscp": DSCP_ROCE},
                           "MyIngress.set_priority", {"prio": PRIO_ROCE}),
             *[c.table_entry(PORT_MACS, {"standard_metadata.egress_port": p},
                             "MyEgress.set_port_mac", {"mac": port_mac(p)})
               for p in PORTS if has_macs])
    for p in PORTS:
        c.insert_clone_session(SESSION_BASE + p, [p])
    return has_macs


def set_thresholds(sw: LabSwitch, port: int, xoff: int, xon: int, quanta: int,
                   first: bool) -> None:
    c = sw.connection
    entry = c.table_entry("MyIngress.pfc_thresholds", {"standard_metadata.ingress_port": port},
                          "MyIngress.set_thresholds",
                          {"xoff_pkts": xoff, "xon_pkts": xon, "pause_quanta": quanta})
    (c.insert if first else c.modify)(entry)


def is_pfc(frame: bytes) -> bool:
    return len(frame) >= 14 and int.from_bytes(frame[12:14], "big") == ETHERTYPE_PFC


def data(src_port: int, dst_port: int, n: int, dscp: int = DSCP_ROCE, sport0: int = 40000
         ) -> list[bytes]:
    return [udp_frame(host_ip(src_port), host_ip(dst_port), sport0 + i, 4791, dscp=dscp)
            for i in range(n)]


def split(got: list[tuple[int, bytes]]) -> tuple[dict[int, list[bytes]], dict[int, int]]:
    """PFC frames per port, and the number of data packets per port."""
    pfc: dict[int, list[bytes]] = {}
    pkts: dict[int, int] = {}
    for port, f in got:
        if is_pfc(f):
            pfc.setdefault(port, []).append(f)
        elif udp_fields(f) is not None:
            pkts[port] = pkts.get(port, 0) + 1
    return pfc, pkts


def describe(frame: bytes) -> str:
    entries = parse_pause(frame)
    return f"{len(frame)} bytes, {entries}: {frame.hex()}"


# ------------------------------------------------------------------------------ check
def check_frames(r: Report, sw: LabSwitch, dscp: int, prio: int, first: bool) -> None:
    """XOFF 1 / XON 0: one packet makes a PAUSE (ingress) and a RESUME (egress)."""
    set_thresholds(sw, 1, 1, 0, QUANTA, first)
    sw.send(1, data(1, 2, 1, dscp)[0])
    pfc, pkts = split(sw.receive_all(QUIET_S))
    frames = pfc.get(1, [])
    want = [build_pause(port_mac(1), {prio: QUANTA}), build_pause(port_mac(1), {prio: 0})]
    r.expect(pkts.get(2) == 1, f"priority {prio}: the data packet was forwarded to port 2",
             "PFC frames are clones: the original packet must still leave on its port")
    if frames == want:
        r.ok(f"priority {prio}: PAUSE ({QUANTA:#x} quanta) then RESUME (0) out of port 1, "
             "bit-exact 802.1Qbb frames")
        return
    if not frames:
        r.fail(f"priority {prio}: PAUSE and RESUME out of port 1 (XOFF 1, XON 0)",
               "no PFC frame came out of port 1. TODO 1: at XOFF clone the packet (I2E, session "
               "100 + ingress port) with meta.pfc_gen = 1; TODO 2: the RESUME in egress.")
        return
    if frames == want[:1]:
        r.fail(f"priority {prio}: PAUSE then RESUME out of port 1 (XOFF 1, XON 0)",
               "the PAUSE is bit-exact, but no RESUME followed when the packet left. TODO 2: "
               "in egress, when the count is <= meta.pfc_xon while paused, clear paused and "
               "clone (E2E) a RESUME with meta.pfc_time = 0.")
        return
    lines = [f"got {len(frames)} frame(s) on port 1:"] + [f"  {describe(f)}" for f in frames]
    lines += ["expected:"] + [f"  {describe(f)}" for f in want]
    lines.append("60 bytes: dst 0180c2000001, src = port MAC, 8808, 0101, vector 1 << prio, "
                 "eight pause times (priority 0 first), zeros. Check TODO 3.")
    r.fail(f"priority {prio}: PAUSE then RESUME out of port 1, bit-exact", "\n".join(lines))


def check_xoff_xon(r: Report, sw: LabSwitch) -> None:
    """Port 2 (priority 3) drains slowly: no PAUSE below XOFF, one at XOFF, one RESUME
    after the drain, nothing lost."""
    set_thresholds(sw, 1, XOFF, XON, QUANTA, False)
    primer = data(1, 2, 1, sport0=40999)[0]
    delivered = 0
    with SlowQueue(sw, 2, PRIO_ROCE, primer=primer, primer_port=1) as q:
        for f in data(1, 2, XOFF - 1, sport0=41000):
            sw.send(1, f)
        early = sw.receive(1, q.gap_s / 2)          # a PAUSE would leave at once
        r.expect(early is None or not is_pfc(early),
                 f"no PAUSE while {XOFF - 1} packets wait (XOFF is {XOFF})",
                 f"a PFC frame left before XOFF: {describe(early) if early else ''}. "
                 "Pause when the count is >= meta.pfc_xoff, not before.")
        for f in data(1, 2, 8 - (XOFF - 1), sport0=41100):
            sw.send(1, f)
        at_xoff: list[bytes] = []
        deadline = time.monotonic() + q.gap_s
        while time.monotonic() < deadline:
            f = sw.receive(1, max(0.01, deadline - time.monotonic()))
            if f is not None and is_pfc(f):
                at_xoff.append(f)
        r.expect(at_xoff == [build_pause(port_mac(1), {PRIO_ROCE: QUANTA})],
                 f"exactly one PAUSE once {XOFF} packets wait (8 sent)",
                 f"port 1 sent {[describe(f) for f in at_xoff]}: one PAUSE, and no second one "
                 "while already paused (the paused register)." if at_xoff else
                 "no PAUSE came out of port 1. If a check above says no RESUME followed, the "
                 "(port, priority) is still marked paused from it: do TODO 2 first. Otherwise "
                 "TODO 1: pause when the count is >= meta.pfc_xoff and the port is not paused.")
        drain_s = q.drain_s(8)
    pfc, pkts = split(sw.receive_all(QUIET_S + drain_s))
    delivered += pkts.get(2, 0)
    r.expect(delivered == 8, "all 8 queued packets delivered as the queue drained",
             f"port 2 got {delivered}: PFC must not lose packets")
    r.expect(pfc.get(1) == [build_pause(port_mac(1), {PRIO_ROCE: 0})],
             f"exactly one RESUME once the count fell to XON ({XON})",
             f"port 1 sent {[describe(f) for f in pfc.get(1, [])]}. TODO 2: in egress, when the "
             "count is <= meta.pfc_xon while paused, clear paused and clone a RESUME (time 0).")


def check(files_dir: Path, target: str) -> Report:
    """``make check``: frames bit-exact, XOFF/XON timing (both targets)."""
    r = Report(TITLE)
    with LabSwitch(files_dir / "pfc.p4", lab=LAB, ports=PORTS, target=target) as sw:
        r.note(sw.banner())
        if not program(sw):
            r.fail(f"{PORT_MACS} is applied",
                   f"the compiled program has no {PORT_MACS}: a table nobody applies is removed "
                   "by the compiler (p4c-bm2-ss does the same). TODO 3 applies it, to take the "
                   "PAUSE frame's source MAC from it.")
        check_frames(r, sw, DSCP_ROCE, PRIO_ROCE, first=True)
        check_frames(r, sw, 0, 0, first=False)
        check_xoff_xon(r, sw)
    return r


# -------------------------------------------------------------------------------- run
def hol_blocking(sw: LabSwitch) -> None:
    """Sender on port 1 honours PFC; flow A to the held port 2, flow B to idle port 3."""
    print("\n1. Head-of-line blocking. Host 1 sends two RoCE flows of priority 3, alternately:\n"
          "   A to host 2 (its port is congested: held) and B to host 3 (idle). Host 1 obeys PFC.")
    nic = PfcState(line_rate_bps=1e6)    # 0x1234 quanta = 2.4 s at 1 Mb/s: RESUME ends it
    a, b = data(1, 2, 20, sport0=42000), data(1, 3, 20, sport0=43000)
    sent = {"A": 0, "B": 0}
    delivered_b = 0
    with SlowQueue(sw, 2, PRIO_ROCE, rate_pps=1) as q:     # host 2 all but stops draining
        for i in range(40):
            now = time.monotonic()
            if nic.is_paused(PRIO_ROCE, now):
                break
            flow, frames = ("A", a) if i % 2 == 0 else ("B", b)
            sw.send(1, frames[sent[flow]])
            sent[flow] += 1
            for port, f in sw.receive_all(0.05):
                if port == 1 and is_pfc(f):
                    nic.on_frame(f, time.monotonic())
                    print(f"   PAUSE arrived at host 1 after {sent['A']} A + {sent['B']} B "
                          f"packets: {parse_pause(f)}")
                elif port == 3:
                    delivered_b += 1
        if nic.is_paused(PRIO_ROCE, time.monotonic()):
            print(f"   host 1 stops ALL priority-3 traffic: B delivered {delivered_b}, "
                  f"{20 - sent['B']} B packets wait although port 3 is idle.")
        else:
            print(f"   no PAUSE reached host 1 (B delivered {delivered_b}): your pfc.p4 sends "
                  "none yet (TODO 1), so nothing stops host 1 and port 2's queue just grows.")
    # The A packets already queued keep their departure times (one a second): the RESUME
    # leaves once enough of them have, so wait for it up to their drain time. Without it
    # port 1 would stay marked paused and the pause storm below could not pause it again.
    deadline = time.monotonic() + QUIET_S + q.drain_s(sent["A"])
    while time.monotonic() < deadline:
        f = sw.receive(1, max(0.01, deadline - time.monotonic()))
        if f is not None and is_pfc(f):
            nic.on_frame(f, time.monotonic())
            print(f"   queue released -> RESUME: {parse_pause(f)}; host 1 paused now: "
                  f"{nic.is_paused(PRIO_ROCE, time.monotonic())}")
            if not any((parse_pause(f) or {}).values()):
                break
    sw.receive_all(QUIET_S)      # the rest of A, delivered to port 2


def pause_storm(sw: LabSwitch) -> None:
    """The receiver on port 2 never drains: every sender feeding it is paused."""
    print("\n2. Pause storm. Host 2 stops draining (its queue stays held). Hosts 1 and 3 both\n"
          "   send priority-3 traffic to it; both have PFC thresholds.")
    set_thresholds(sw, 3, XOFF, XON, 0xFFFF, True)
    set_thresholds(sw, 1, XOFF, XON, 0xFFFF, False)
    with SlowQueue(sw, 2, PRIO_ROCE, rate_pps=1):     # host 2 all but stops draining
        for i in range(6):
            sw.send(1, data(1, 2, 1, sport0=44000 + i)[0])
            sw.send(3, data(3, 2, 1, sport0=45000 + i)[0])
        pfc, pkts = split(sw.receive_all(QUIET_S))
        for port in (1, 3):
            print(f"   port {port}: {len(pfc.get(port, []))} PAUSE "
                  f"{[parse_pause(f) for f in pfc.get(port, [])]}")
        print(f"   delivered to host 2 meanwhile: {pkts.get(2, 0)}")
    paused = [port for port in (1, 3) if pfc.get(port)]
    if paused == [1, 3]:
        print("   One stuck receiver paused both senders. In a fabric each paused switch's own "
              "queues\n   then fill and it pauses ITS upstream ports: the pause spreads hop by hop "
              "(a storm),\n   and with a cycle of buffers it can deadlock. Real switches run a PFC "
              "watchdog that\n   stops honouring PAUSE from a queue stuck too long.")
    else:
        print(f"   Only {len(paused)} of the 2 senders paused: with the three TODOs done both are "
              "(make check says which part is missing).")
    sw.receive_all(QUIET_S)


def run(files_dir: Path, target: str) -> int:
    """``make run``: head-of-line blocking, then a pause storm (both targets)."""
    with LabSwitch(files_dir / "pfc.p4", lab=LAB, ports=PORTS, target=target) as sw:
        print(sw.banner())
        program(sw)
        set_thresholds(sw, 1, XOFF, XON, QUANTA, True)
        hol_blocking(sw)
        pause_storm(sw)
    return 0
