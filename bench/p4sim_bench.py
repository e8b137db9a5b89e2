"""The p4sim benchmarks: packets/s through two v1model programs, and program load time.

Each packet benchmark loads its program from ``bench/programs/`` with the trace off
(``load_program(..., trace=False)`` and ``V1ModelSwitch(..., log=None)``), installs
~100 LPM prefixes, checks every pre-built packet against an independent Python model of
the program (so a broken pipeline cannot be timed), warms up, then times
``process_packet`` in-process on one core and reports the median of the runs.

Figures:

* ``p4sim.pps.ipv4_lpm``  — packets/s, ``programs/ipv4_lpm.p4`` (LPM, TTL, checksum, MACs)
* ``p4sim.pps.ecmp_ecn``  — packets/s, ``programs/ecmp_ecn.p4`` (+ crc16 ECMP, ECN, counter)
* ``p4sim.load_s.ecmp_ecn`` — seconds to parse, check and generate code for ecmp_ecn.p4

Example::

    >>> from bench.results import BenchConfig
    >>> figs = bench_ipv4_lpm(BenchConfig(duration_s=0.05, runs=1, warmup_s=0))  # doctest: +SKIP
    >>> figs["p4sim.pps.ipv4_lpm"].unit                                          # doctest: +SKIP
    'pps'
"""
from __future__ import annotations

import ipaddress
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from p4sim.engine import load_program
from p4sim.runtime.tables import ActionCall, Exact, Lpm
from p4sim.v1model.switch import V1ModelSwitch

PROGRAMS = Path(__file__).resolve().parent / "programs"
IPV4_LPM_P4 = PROGRAMS / "ipv4_lpm.p4"
ECMP_ECN_P4 = PROGRAMS / "ecmp_ecn.p4"

N_PACKETS = 300          # distinct pre-built frames per benchmark
N_PORTS = 8              # egress ports 1..N_PORTS
ECMP_WAYS = 4            # next hops per ECMP group
HASH_SEED = 0x5EED1234
IN_PORT = 0
SWITCH_MAC = 0x00AA00000001
HOST_MAC = 0x001122334455
CHECK_BATCH = 32         # packets between two clock reads while timing


# --------------------------------------------------------------------------- routes
@dataclass(frozen=True, slots=True)
class Route:
    """One LPM prefix and where it goes: ``Route(0x0A000000, 8, 3)`` (index = port/group)."""

    prefix: int
    length: int
    index: int

    def matches(self, addr: int) -> bool:
        mask = ((1 << self.length) - 1) << (32 - self.length) if self.length else 0
        return (addr & mask) == self.prefix


def make_routes() -> list[Route]:
    """100 nested prefixes: 20 /8 (11-30.0.0.0), 40 /16 (10.1-40.0.0), 40 /24 (10.0.0-39.0).

    ``index`` cycles over 0..N_PORTS-1 so that the traffic spreads over every port.
    """
    routes: list[Route] = []
    for i in range(20):
        routes.append(Route((11 + i) << 24, 8, len(routes) % N_PORTS))
    for i in range(40):
        routes.append(Route((10 << 24) | ((1 + i) << 16), 16, len(routes) % N_PORTS))
    for i in range(40):
        routes.append(Route((10 << 24) | (i << 8), 24, len(routes) % N_PORTS))
    return routes


def longest_match(routes: Sequence[Route], addr: int) -> Optional[Route]:
    """The reference LPM lookup (linear scan, longest prefix wins)."""
    best: Optional[Route] = None
    for r in routes:
        if r.matches(addr) and (best is None or r.length > best.length):
            best = r
    return best


def port_mac(port: int) -> int:
    """The next-hop MAC the programs write for ``port``: 02:00:00:00:00:<port>."""
    return 0x020000000000 | port


# --------------------------------------------------------------------------- packets
@dataclass(frozen=True, slots=True)
class Flow:
    """The fields of one pre-built UDP frame the checks need."""

    src: int
    dst: int
    sport: int
    dport: int
    ttl: int
    ecn: int


def make_flows(routes: Sequence[Route], count: int = N_PACKETS, seed: int = 7) -> list[Flow]:
    """``count`` distinct flows whose destinations all hit one of ``routes``."""
    rng = random.Random(seed)
    flows: list[Flow] = []
    seen: set[tuple[int, int, int, int]] = set()
    while len(flows) < count:
        r = routes[len(flows) % len(routes)]
        host_bits = 32 - r.length
        dst = r.prefix | rng.getrandbits(host_bits) if host_bits else r.prefix
        if longest_match(routes, dst) is None:
            continue
        src = (192 << 24) | (168 << 16) | rng.getrandbits(16)
        sport, dport = rng.randrange(1024, 65536), rng.choice((4791, 53, 80, 443, 9000))
        key = (src, dst, sport, dport)
        if key in seen:
            continue
        seen.add(key)
        flows.append(Flow(src, dst, sport, dport, ttl=rng.randrange(8, 65), ecn=len(flows) % 4))
    return flows


def build_frames(flows: Sequence[Flow], payload_len: int = 64) -> list[bytes]:
    """The flows as Ethernet/IPv4/UDP frames (scapy builds them once, bytes are sent)."""
    from scapy.layers.inet import IP, UDP  # noqa: PLC0415 — heavy: scapy
    from scapy.layers.l2 import Ether  # noqa: PLC0415 — heavy: scapy

    out = []
    for i, f in enumerate(flows):
        pkt = (Ether(dst=_mac_str(SWITCH_MAC), src=_mac_str(HOST_MAC))
               / IP(src=str(ipaddress.IPv4Address(f.src)), dst=str(ipaddress.IPv4Address(f.dst)),
                    ttl=f.ttl, tos=f.ecn, id=i)
               / UDP(sport=f.sport, dport=f.dport)
               / bytes(payload_len))
        out.append(bytes(pkt))
    return out


def _mac_str(mac: int) -> str:
    return ":".join(f"{b:02x}" for b in mac.to_bytes(6, "big"))


# --------------------------------------------------------------------------- reference model
def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC, written here independently of p4sim: ``crc16_arc(b"123456789") == 0xBB3D``."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def ecmp_member(flow: Flow, seed: int = HASH_SEED, ways: int = ECMP_WAYS) -> int:
    """Which of the ``ways`` next hops ``ecmp_ecn.p4`` picks for ``flow`` (0-based)."""
    data = (seed.to_bytes(4, "big") + flow.src.to_bytes(4, "big") + flow.dst.to_bytes(4, "big")
            + bytes([17]) + flow.sport.to_bytes(2, "big") + flow.dport.to_bytes(2, "big"))
    return crc16_arc(data) % ways


def ipv4_checksum(header: bytes) -> int:
    """RFC 1071 checksum of an IPv4 header whose checksum field is zero."""
    total = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, len(header), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@dataclass(frozen=True, slots=True)
class Expected:
    """What must come out for one frame."""

    port: int
    ttl: int
    ecn: int


def check_output(frame_in: bytes, out: list[tuple[int, bytes]], exp: Expected, what: str) -> None:
    """Raise :class:`BenchCheckError` unless ``out`` is exactly the expected rewrite of
    ``frame_in``: one frame on ``exp.port``, MACs rewritten, TTL and ECN as expected,
    a valid IPv4 checksum and the rest of the bytes untouched."""
    if len(out) != 1:
        raise BenchCheckError(f"{what}: expected one frame out, got {len(out)}")
    port, frame = out[0]
    if port != exp.port:
        raise BenchCheckError(f"{what}: egress port {port}, expected {exp.port}")
    if len(frame) != len(frame_in):
        raise BenchCheckError(f"{what}: frame length {len(frame)}, expected {len(frame_in)}")
    dmac, smac = int.from_bytes(frame[0:6], "big"), int.from_bytes(frame[6:12], "big")
    if dmac != port_mac(exp.port) or smac != SWITCH_MAC:
        raise BenchCheckError(f"{what}: MACs {dmac:012x}/{smac:012x} not rewritten")
    ip = frame[14:34]
    if ip[8] != exp.ttl:
        raise BenchCheckError(f"{what}: TTL {ip[8]}, expected {exp.ttl}")
    if ip[1] & 3 != exp.ecn or ip[1] >> 2 != frame_in[15] >> 2:
        raise BenchCheckError(f"{what}: TOS {ip[1]:#04x}, expected ECN {exp.ecn}")
    if ipv4_checksum(ip[:10] + b"\0\0" + ip[12:]) != int.from_bytes(ip[10:12], "big"):
        raise BenchCheckError(f"{what}: bad IPv4 header checksum {ip[10:12].hex()}")
    same_in = frame_in[12:15] + frame_in[16:22] + frame_in[23:24] + frame_in[26:]
    same_out = frame[12:15] + frame[16:22] + frame[23:24] + frame[26:]
    if same_in != same_out:
        raise BenchCheckError(f"{what}: bytes changed that the program must not touch")


# --------------------------------------------------------------------------- setups
@dataclass
class Setup:
    """A loaded switch with its traffic and the expected result of every frame."""

    switch: V1ModelSwitch
    frames: list[bytes]
    expected: list[Expected]
    after_check: Callable[[int], None]   # called with the number of frames sent once


def setup_ipv4_lpm() -> Setup:
    """Load ``ipv4_lpm.p4`` with 100 routes to ports 1..8."""
    prog = load_program(str(IPV4_LPM_P4), trace=False)
    routes = make_routes()
    table = prog.state.tables["LpmIngress.ipv4_lpm"]
    for r in routes:
        port = 1 + r.index
        table.add_entry([Lpm(r.prefix, r.length)],
                        ActionCall("LpmIngress.ipv4_forward", (port_mac(port), port)))
    flows = make_flows(routes)
    expected = []
    for f in flows:
        route = longest_match(routes, f.dst)
        assert route is not None
        expected.append(Expected(port=1 + route.index, ttl=f.ttl - 1, ecn=f.ecn))
    return Setup(V1ModelSwitch(prog, log=None), build_frames(flows), expected, lambda n: None)


def setup_ecmp_ecn() -> Setup:
    """Load ``ecmp_ecn.p4``: 100 routes to ECMP groups of 4 next hops, ECN threshold 0.

    p4sim's ``enq_qdepth`` is always 0 (no queue builds up in run-to-completion mode), so
    the threshold register is left at 0: every ECT packet is marked CE, which exercises
    the marking path on every ECT packet.
    """
    prog = load_program(str(ECMP_ECN_P4), trace=False)
    state = prog.state
    state.registers["EcmpIngress.hash_seed"].set(0, HASH_SEED)
    state.registers["EcmpEgress.ecn_threshold"].set(0, 0)
    routes = make_routes()
    lpm = state.tables["EcmpIngress.ipv4_lpm"]
    nhop = state.tables["EcmpIngress.ecmp_nhop"]
    groups = N_PORTS  # group g: next hops g*ways .. g*ways+ways-1
    for g in range(groups):
        for k in range(ECMP_WAYS):
            port = 1 + (g + k) % N_PORTS
            nhop.add_entry([Exact(g * ECMP_WAYS + k)],
                           ActionCall("EcmpIngress.set_nhop", (port_mac(port), port)))
    for r in routes:
        lpm.add_entry([Lpm(r.prefix, r.length)],
                      ActionCall("EcmpIngress.set_ecmp_group", (r.index * ECMP_WAYS, ECMP_WAYS)))
    flows = make_flows(routes)
    expected = []
    for f in flows:
        route = longest_match(routes, f.dst)
        assert route is not None
        port = 1 + (route.index + ecmp_member(f)) % N_PORTS
        ecn = 3 if f.ecn in (1, 2) else f.ecn
        expected.append(Expected(port=port, ttl=f.ttl - 1, ecn=ecn))
    counter = state.counters["EcmpEgress.port_counter"]
    want_per_port = [0] * (N_PORTS + 1)
    for e in expected:
        want_per_port[e.port] += 1

    def check_counter(n_sent: int) -> None:
        got = [counter.read(p)[0] for p in range(N_PORTS + 1)]
        if sum(got) != n_sent or got != want_per_port:
            raise BenchCheckError(f"ecmp_ecn: port counters {got}, expected {want_per_port}")

    return Setup(V1ModelSwitch(prog, log=None), build_frames(flows), expected, check_counter)


# --------------------------------------------------------------------------- timing
def verify(setup: Setup, name: str) -> None:
    """Send every frame once and check each output (also warms the caches)."""
    sw = setup.switch
    for i, (frame, exp) in enumerate(zip(setup.frames, setup.expected)):
        check_output(frame, sw.process_packet(IN_PORT, frame), exp, f"{name} packet {i}")
    if sw.stats.errors:
        raise BenchCheckError(f"{name}: switch errors {sw.stats.errors[:3]}")
    setup.after_check(len(setup.frames))


def time_pps(switch: V1ModelSwitch, frames: Sequence[bytes], duration_s: float) -> float:
    """Packets/s of ``switch.process_packet`` over ``frames`` (cycled) for ~``duration_s``."""
    process = switch.process_packet
    n_frames = len(frames)
    sent = 0
    i = 0
    start = time.perf_counter()
    deadline = start + duration_s
    while True:
        for _ in range(CHECK_BATCH):
            process(IN_PORT, frames[i])
            i += 1
            if i == n_frames:
                i = 0
        sent += CHECK_BATCH
        now = time.perf_counter()
        if now >= deadline:
            return sent / (now - start)


def measure_pps(setup: Setup, name: str, config: BenchConfig) -> float:
    """Check, warm up, then the median packets/s of ``config.runs`` timed runs."""
    verify(setup, name)
    if config.warmup_s > 0:
        time_pps(setup.switch, setup.frames, config.warmup_s)
    rates = [time_pps(setup.switch, setup.frames, config.duration_s) for _ in range(config.runs)]
    if setup.switch.stats.errors:
        raise BenchCheckError(f"{name}: switch errors while timing {setup.switch.stats.errors[:3]}")
    return median(rates)


def bench_ipv4_lpm(config: BenchConfig) -> dict[str, Figure]:
    """``p4sim.pps.ipv4_lpm``."""
    pps = measure_pps(setup_ipv4_lpm(), "ipv4_lpm", config)
    return {"p4sim.pps.ipv4_lpm": Figure(round(pps, 1), "pps")}


def bench_ecmp_ecn(config: BenchConfig) -> dict[str, Figure]:
    """``p4sim.pps.ecmp_ecn``."""
    pps = measure_pps(setup_ecmp_ecn(), "ecmp_ecn", config)
    return {"p4sim.pps.ecmp_ecn": Figure(round(pps, 1), "pps")}


def bench_load_ecmp_ecn(config: BenchConfig) -> dict[str, Figure]:
    """``p4sim.load_s.ecmp_ecn``: median wall time of ``load_program`` (parse+check+codegen)."""
    times = []
    for _ in range(max(1, config.runs)):
        start = time.perf_counter()
        load_program(str(ECMP_ECN_P4), trace=False)
        times.append(time.perf_counter() - start)
    return {"p4sim.load_s.ecmp_ecn": Figure(round(median(times), 4), "s")}


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("ipv4_lpm", "p4sim", bench_ipv4_lpm),
    Benchmark("ecmp_ecn", "p4sim", bench_ecmp_ecn),
    Benchmark("load_ecmp_ecn", "p4sim", bench_load_ecmp_ecn),
)
