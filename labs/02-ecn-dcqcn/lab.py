"""Lab 02 — ECN marking and DCQCN: the plugin ``labs.labkit`` loads. The student marks CE
in ``ecn.p4`` (egress, ECN-capable packets only, when the queue depth reaches the
threshold); the checker judges it with real packets, the demo closes the loop with the
project's DCQCN sender (``host.nic.dcqcn``).

Switch ports: 1 = sender, 2 = receiver. Congestion is built exactly with
:class:`labs.labkit.congestion.SlowQueue` (p4sim and BMv2): a burst sent while port 2's
queue drains slowly, right after a primer packet left, sees depths 0, 1, 2, ….
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from host.nic.dcqcn import DcqcnParams, NotificationPoint, ReactionPoint
from labs.labkit import LabSwitch, Report
from labs.labkit.congestion import SlowQueue
from labs.labkit.packets import ipv4_checksum_ok, udp_fields, udp_frame

TITLE = "ECN marking and DCQCN"
FILES = ("ecn.p4",)
LAB = "02-ecn-dcqcn"
SENDER, RECEIVER = 1, 2
K_PKTS = 4
BURST = 12
NAMES = {0: "Not-ECT", 1: "ECT(1)", 2: "ECT(0)", 3: "CE"}
QUIET_S = 0.3
ROUND_S = 0.005           # one DCQCN round of the demo (the CNP interval, emulation scale)
ROUNDS = 40


def program(sw: LabSwitch, kmin_pkts: int) -> None:
    """1 <-> 2, threshold ``kmin_pkts`` on port 2."""
    c = sw.connection
    c.insert(c.table_entry("MyIngress.ports", {"standard_metadata.ingress_port": SENDER},
                           "MyIngress.set_port", {"port": RECEIVER}),
             c.table_entry("MyIngress.ports", {"standard_metadata.ingress_port": RECEIVER},
                           "MyIngress.set_port", {"port": SENDER}),
             c.table_entry("MyEgress.ecn_thresholds", {"standard_metadata.egress_port": RECEIVER},
                           "MyEgress.set_ecn_threshold", {"kmin_pkts": kmin_pkts}))


def set_threshold(sw: LabSwitch, kmin_pkts: int) -> None:
    c = sw.connection
    c.modify(c.table_entry("MyEgress.ecn_thresholds", {"standard_metadata.egress_port": RECEIVER},
                           "MyEgress.set_ecn_threshold", {"kmin_pkts": kmin_pkts}))


def frames(ecn: int, n: int, sport0: int = 40000) -> list[bytes]:
    return [udp_frame("10.0.0.1", "10.0.0.2", sport0 + i, 4791, ecn=ecn) for i in range(n)]


def received(sw: LabSwitch, n: int, gap_s: float = 0.0) -> list[bytes]:
    """Up to ``n`` frames out of the receiver port, in order (``gap_s``: the time between
    two departures of a slow queue)."""
    out = []
    while len(out) < n:
        f = sw.receive(RECEIVER, QUIET_S * 3 + gap_s)
        if f is None:
            break
        if udp_fields(f) is not None:
            out.append(f)
    return out


def held_burst(sw: LabSwitch, ecn: int, n: int, rate_pps: int = 5) -> list[int]:
    """Port 2 drains slowly; after a primer, ``n`` packets at once: the ECN field of each
    one received (they found 0, 1, …, n-1 packets ahead of them)."""
    primer = frames(0, 1, sport0=39999)[0]            # Not-ECT: never marked
    with SlowQueue(sw, RECEIVER, rate_pps=rate_pps, primer=primer, primer_port=SENDER) as q:
        for f in frames(ecn, n):
            sw.send(SENDER, f)
        got = received(sw, n, q.gap_s)
    return [udp_fields(f).ecn for f in got]  # type: ignore[union-attr]


def held_burst_frames(sw: LabSwitch, n: int, sport0: int) -> list[bytes]:
    """One DCQCN round of the demo: ``n`` ECT(0) packets into a fast-draining queue (50
    packets/s, so a round of up to 2 × BURST takes under a second); the frames received."""
    primer = frames(0, 1, sport0=39999)[0]
    with SlowQueue(sw, RECEIVER, rate_pps=50, primer=primer, primer_port=SENDER) as q:
        for f in frames(2, n, sport0):
            sw.send(SENDER, f)
        return received(sw, n, q.gap_s)


def _codes(values: list[int]) -> str:
    return " ".join(str(v) for v in values)


# ------------------------------------------------------------------------------ check
def check_without_queue(r: Report, sw: LabSwitch) -> None:
    """Threshold 0 (every ECT packet is at or above it) and a high one (none is)."""
    for kmin, name in ((0, "threshold 0"), (1000, "threshold 1000")):
        set_threshold(sw, kmin)
        want = {ecn: (3 if kmin == 0 and ecn in (1, 2) else ecn) for ecn in range(4)}
        got: dict[int, Optional[int]] = {}
        checksums = True
        for ecn in range(4):
            sw.send(SENDER, frames(ecn, 1)[0])
            out = received(sw, 1)
            got[ecn] = udp_fields(out[0]).ecn if out else None  # type: ignore[union-attr]
            checksums = checksums and (not out or ipv4_checksum_ok(out[0]))
        bad = [e for e in range(4) if got[e] != want[e]]
        if not bad:
            r.ok(f"{name}, empty queue: " + ", ".join(f"{NAMES[e]} -> {NAMES[want[e]]}"
                                                      for e in range(4)))
        else:
            e = bad[0]
            r.fail(f"{name}, empty queue: {NAMES[e]} packets",
                   f"a packet sent as {NAMES[e]} left as "
                   f"{'nothing (dropped)' if got[e] is None else NAMES[got[e]]}, expected "
                   f"{NAMES[want[e]]}. Mark only ECT(0) (2) and ECT(1) (1), and "
                   "only when standard_metadata.enq_qdepth >= meta.kmin_pkts (>=, not >).")
        r.expect(checksums, f"{name}: IPv4 checksums are valid after marking",
                 "keep MyComputeChecksum's update_checksum: ECN is inside the checksummed header")


def check_with_queue(r: Report, sw: LabSwitch) -> None:
    """Held queue, threshold K: packets 0..K-1 keep their codepoint, K.. become CE."""
    set_threshold(sw, K_PKTS)
    for ecn in (2, 1, 0):
        got = held_burst(sw, ecn, BURST)
        want = [ecn] * BURST if ecn == 0 else [ecn] * K_PKTS + [3] * (BURST - K_PKTS)
        what = (f"{NAMES[ecn]} burst of {BURST} into a queue (depths 0..{BURST - 1}), threshold "
                f"{K_PKTS}: {'never marked' if ecn == 0 else f'the first {K_PKTS} unmarked, the rest CE'}")
        r.expect(got == want, what,
                 f"got ECN {_codes(got)}, expected {_codes(want)}. "
                 + ("Not-ECT packets must never be marked." if ecn == 0 else
                    "The packet that found exactly kmin_pkts packets ahead of it must be marked "
                    "(>=); the ones that found fewer must not."))


def check(files_dir: Path, target: str) -> Report:
    """``make check``: marking rule with an empty queue and with a real queue (both
    targets)."""
    r = Report(TITLE)
    with LabSwitch(files_dir / "ecn.p4", lab=LAB, ports=[SENDER, RECEIVER], target=target) as sw:
        r.note(sw.banner())
        program(sw, 0)
        check_without_queue(r, sw)
        check_with_queue(r, sw)
    return r


# -------------------------------------------------------------------------------- run
def demo_marking(sw: LabSwitch) -> None:
    print(f"\n1. A queue that builds: port {RECEIVER} drains slowly, {BURST} ECT(0) packets "
          f"arrive at once, threshold {K_PKTS} packets.")
    got = held_burst(sw, 2, BURST)
    for i, ecn in enumerate(got):
        print(f"   packet {i:2d} found {i:2d} ahead of it -> {NAMES[ecn]}")


def demo_dcqcn(sw: LabSwitch) -> None:
    """Closed loop, one round per CNP interval: the sender's packets of a round arrive as
    one burst (a held queue), the switch marks, the receiver sends CNPs, DCQCN reacts."""
    params = DcqcnParams(line_rate_pps=5000.0)
    rp, np_ = ReactionPoint(params), NotificationPoint(params.cnp_interval_s)
    print(f"\n2. DCQCN (host/nic/dcqcn.py) against this switch: every {ROUND_S * 1000:.0f} ms "
          f"round the sender's packets arrive together, so the packets beyond the first {K_PKTS} of a round get "
          "CE;\n   the receiver answers CE with at most one CNP per 5 ms; the sender cuts "
          "its rate on each CNP and recovers without.")
    print("   round   time_ms   rate_pps   sent   CE   CNP")
    sport = 50000
    for rnd in range(ROUNDS):
        now = rnd * ROUND_S
        rp.advance(now)
        n = max(1, min(BURST * 2, round(rp.rate_pps * ROUND_S)))
        rate = rp.rate_pps
        got = held_burst_frames(sw, n, sport)
        sport += n
        marks = [udp_fields(f).ecn == 3 for f in got]  # type: ignore[union-attr]
        cnp = any([np_.on_packet("flow", ce, now + i * ROUND_S / n) for i, ce in enumerate(marks)])
        if cnp:
            rp.on_cnp(now + ROUND_S / 2)
        rp.on_sent(now + ROUND_S, n)
        print(f"   {rnd:5d}   {now * 1000:7.1f}   {rate:8.0f}   {n:4d}   {sum(marks):2d}   "
              f"{'yes' if cnp else ''}")
    print("   The rate settles where a round's burst stays near the threshold: ECN turns the "
          "queue into a rate signal.")


def run(files_dir: Path, target: str) -> int:
    """``make run``: marking in a held queue, then DCQCN reacting to the marks."""
    with LabSwitch(files_dir / "ecn.p4", lab=LAB, ports=[SENDER, RECEIVER], target=target) as sw:
        print(sw.banner())
        program(sw, K_PKTS)
        demo_marking(sw)
        demo_dcqcn(sw)
    return 0
