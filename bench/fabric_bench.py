"""The fabric benchmarks: ECMP uniformity of the published hash model, and packets/s of
``p4src/fabric.p4`` on p4sim in the leaf and spine roles.

The module also holds the small "program a fabric switch through p4sim's runtime objects"
helpers (contract names of ``p4src/fabric.p4``: ``FabricIngress.switch_info.config``,
``forwarding.routes``/``nexthops``, ``ecmp.groups``/``members``) that the hash-model tests
reuse, so the bench and the tests program switches the same way.

Figures:

* ``fabric.ecmp_uniformity.max_over_mean`` — busiest member / mean member over a full
  65,536 source-port sweep (``p4src.hashmodel.port_to_member_table``), for groups of 4 and
  8 members and 16 random (seed, src, dst, dport) flows each; the worst is reported.
* ``fabric.pps.leaf`` / ``fabric.pps.spine`` — packets/s of ``p4src/fabric.p4``
  in-process (``V1ModelSwitch.process_packet``, trace off) with leaf / spine entries;
  every frame's egress port is checked against the hash model before timing. Skipped,
  with a message, while ``p4src/fabric.p4`` does not exist.

Example::

    >>> from bench.results import BenchConfig
    >>> bench_uniformity(BenchConfig())["fabric.ecmp_uniformity.max_over_mean"].value
    1.0
"""
from __future__ import annotations

import random
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from p4sim.engine import load_program
from p4sim.runtime.tables import ActionCall, Exact, Lpm
from p4sim.v1model.switch import V1ModelSwitch
from p4src.hashmodel import (
    PROTO_UDP,
    GroupModel,
    SwitchHashModel,
    member_index,
    port_to_member_table,
)

REPO = Path(__file__).resolve().parent.parent
FABRIC_P4 = REPO / "p4src" / "fabric.p4"
INCLUDE_DIRS = (str(REPO / "p4src"), str(REPO / "p4src" / "include"))

ROLE_LEAF = 0
ROLE_SPINE = 1
LEAF_HOSTS = 8            # leaf downlinks: ports 1..8, hosts 10.0.0.1 .. 10.0.0.8
LEAF_UPLINKS = 4          # leaf uplinks: ports 9..12, one per spine (ECMP group 1)
SPINE_LEAVES = 8          # spine: 8 leaves ...
SPINE_LINKS_PER_LEAF = 2  # ... with 2 links each: ports 1..16, ECMP group per leaf
IN_PORT_LEAF = 1          # leaf traffic arrives from host 1
IN_PORT_SPINE = 1
N_FRAMES = 300
CHECK_BATCH = 32
ROUTER_MAC = 0x020000000001


# --------------------------------------------------------------------------- programming
def action_name(table: Any, short: str) -> str:
    """The fully qualified name of ``table``'s action ending in ``short``
    (``action_name(t, "select_member") == "FabricIngress.ecmp.select_member"``)."""
    hits = [a for a in table.actions if a == short or a.endswith("." + short)]
    if len(hits) != 1:
        raise KeyError(f"table {table.name} has no single action {short!r}: {sorted(table.actions)}")
    return hits[0]


def port_mac(port: int) -> int:
    """The next-hop MAC the bench installs for ``port``: 02:00:00:00:01:<port>."""
    return 0x020000000100 | port


@dataclass
class FabricSwitch:
    """A fabric program's runtime state plus the hash model of what was installed.

    Example::

        >>> sw = FabricSwitch(prog.state, "leaf0")        # doctest: +SKIP
        >>> sw.set_switch(1, ROLE_LEAF, seed=0x1234)      # doctest: +SKIP
    """

    state: Any
    name: str
    model: SwitchHashModel = field(init=False)
    nexthop_port: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.model = SwitchHashModel(self.name)

    def _table(self, short: str) -> Any:
        return self.state.tables[f"FabricIngress.{short}"]

    def set_switch(self, switch_id: int, role: int, seed: int) -> None:
        """``FabricIngress.switch_info.config`` default action ``set_switch``."""
        t = self._table("switch_info.config")
        t.set_default_action(ActionCall(action_name(t, "set_switch"), (switch_id, role, seed)))
        self.model.seed = seed

    def add_nexthop(self, nexthop_id: int, port: int) -> None:
        """``forwarding.nexthops``: ``route_to(port, ROUTER_MAC, port_mac(port))``."""
        t = self._table("forwarding.nexthops")
        t.add_entry([Exact(nexthop_id)],
                    ActionCall(action_name(t, "route_to"), (port, ROUTER_MAC, port_mac(port))))
        self.nexthop_port[nexthop_id] = port

    def add_route(self, prefix: int, length: int, *, nexthop: Optional[int] = None,
                  group: Optional[int] = None) -> None:
        """``forwarding.routes``: ``set_nexthop`` or ``set_ecmp_group`` for a prefix."""
        t = self._table("forwarding.routes")
        if group is not None:
            call = ActionCall(action_name(t, "set_ecmp_group"), (group,))
        else:
            assert nexthop is not None
            call = ActionCall(action_name(t, "set_nexthop"), (nexthop,))
        t.add_entry([Lpm(prefix, length)], call)

    def add_group(self, group_id: int, base: int, ports: Sequence[int], nexthop_base: int) -> None:
        """An ECMP group over ``ports``: ``ecmp.groups`` → ``select_member(base, size)``,
        ``ecmp.members`` base+i → next hop ``nexthop_base+i`` → port; recorded in the model
        with member names ``"port<N>"``."""
        groups, members = self._table("ecmp.groups"), self._table("ecmp.members")
        groups.add_entry([Exact(group_id)],
                         ActionCall(action_name(groups, "select_member"), (base, len(ports))))
        for i, port in enumerate(ports):
            self.add_nexthop(nexthop_base + i, port)
            members.add_entry([Exact(base + i)],
                              ActionCall(action_name(members, "set_nexthop"), (nexthop_base + i,)))
        self.model.groups[group_id] = GroupModel(base, tuple(f"port{p}" for p in ports))


def setup_leaf(state: Any, seed: int = 0x1EAF5EED) -> FabricSwitch:
    """Leaf: host routes 10.0.0.<h>/32 → port h (1..8); everything else (0.0.0.0/0) →
    ECMP group 1 over uplinks 9..12."""
    sw = FabricSwitch(state, "leaf0")
    sw.set_switch(1, ROLE_LEAF, seed)
    for h in range(1, LEAF_HOSTS + 1):
        sw.add_nexthop(h, h)
        sw.add_route(0x0A000000 | h, 32, nexthop=h)
    uplinks = [LEAF_HOSTS + 1 + k for k in range(LEAF_UPLINKS)]
    sw.add_group(1, 0, uplinks, nexthop_base=100)
    sw.add_route(0, 0, group=1)
    return sw


def setup_spine(state: Any, seed: int = 0x5B17E5ED) -> FabricSwitch:
    """Spine: leaf L's subnet 10.L.0.0/16 → ECMP group L+1 over ports 2L+1, 2L+2."""
    sw = FabricSwitch(state, "spine0")
    sw.set_switch(101, ROLE_SPINE, seed)
    k = SPINE_LINKS_PER_LEAF
    for leaf in range(SPINE_LEAVES):
        ports = [1 + leaf * k + j for j in range(k)]
        sw.add_group(leaf + 1, leaf * k, ports, nexthop_base=200 + leaf * k)
        sw.add_route(0x0A000000 | (leaf << 16), 16, group=leaf + 1)
    return sw


# --------------------------------------------------------------------------- frames
def ipv4_checksum(header: bytes) -> int:
    """RFC 1071 checksum of a header whose checksum field is zero."""
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def build_frame(src: int, dst: int, proto: int, sport: int = 0, dport: int = 0, ttl: int = 64,
                payload_len: int = 32, ecn: int = 0) -> bytes:
    """An Ethernet/IPv4 frame to ROUTER_MAC; UDP header when ``proto == 17``, otherwise
    ``payload_len`` zero bytes after the IPv4 header. Valid IPv4 checksum, UDP checksum 0.

    Example::

        >>> len(build_frame(0x0A000001, 0x0A000102, 17, 1000, 4791))
        74
    """
    l4 = (struct.pack("!HHHH", sport, dport, 8 + payload_len, 0) if proto == PROTO_UDP else b"")
    l4 += bytes(payload_len)
    ip = struct.pack("!BBHHHBBHII", 0x45, ecn, 20 + len(l4), 0, 0x4000, ttl, proto, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", ipv4_checksum(ip)) + ip[12:]
    eth = ROUTER_MAC.to_bytes(6, "big") + (0x001122334455).to_bytes(6, "big") + b"\x08\x00"
    return eth + ip + l4


@dataclass(frozen=True, slots=True)
class RoutedFlow:
    """One 5-tuple and the egress port the model says it leaves on."""

    src: int
    dst: int
    proto: int
    sport: int
    dport: int
    port: int


def expected_port(sw: FabricSwitch, group_id: int, src: int, dst: int, proto: int,
                  sport: int, dport: int) -> int:
    """The port the hash model predicts for a flow routed to ECMP group ``group_id``."""
    group = sw.model.groups[group_id]
    idx = member_index(sw.model, group_id, src, dst, proto, sport, dport)
    return int(group.members[idx - group.base].removeprefix("port"))


def leaf_flows(sw: FabricSwitch, count: int, rng: random.Random) -> list[RoutedFlow]:
    """Leaf traffic: 1 in 4 to a local host (host route), the rest over the uplinks;
    1 in 8 of those is TCP (ports not hashed)."""
    out = []
    for i in range(count):
        src = 0x0A000001
        sport, dport = rng.randrange(1024, 65536), rng.choice((4791, 4791, 9000, 53))
        if i % 4 == 0:
            host = rng.randrange(1, LEAF_HOSTS + 1)
            out.append(RoutedFlow(src, 0x0A000000 | host, PROTO_UDP, sport, dport, host))
            continue
        dst = (10 << 24) | (rng.randrange(1, 256) << 16) | rng.getrandbits(16)
        proto = 6 if i % 8 == 1 else PROTO_UDP
        port = expected_port(sw, 1, src, dst, proto, sport, dport)
        out.append(RoutedFlow(src, dst, proto, sport, dport, port))
    return out


def spine_flows(sw: FabricSwitch, count: int, rng: random.Random) -> list[RoutedFlow]:
    """Spine traffic: random sources and destinations in the 8 leaves' /16 subnets."""
    out = []
    for i in range(count):
        leaf = rng.randrange(SPINE_LEAVES)
        src = (10 << 24) | (rng.randrange(SPINE_LEAVES) << 16) | rng.getrandbits(16)
        dst = (10 << 24) | (leaf << 16) | rng.getrandbits(16)
        proto = 6 if i % 8 == 1 else PROTO_UDP
        sport, dport = rng.randrange(1024, 65536), 4791
        out.append(RoutedFlow(src, dst, proto, sport, dport,
                            expected_port(sw, leaf + 1, src, dst, proto, sport, dport)))
    return out


def check_forwarding(switch: Any, in_port: int, flows: Sequence[RoutedFlow],
                     frames: Sequence[bytes], what: str, routed: bool = True) -> None:
    """Every frame leaves once, on the predicted port, with the next hop's MAC; when
    ``routed`` (the real fabric program) also with TTL - 1 and a valid IPv4 checksum."""
    for i, (f, frame) in enumerate(zip(flows, frames)):
        out = switch.process_packet(in_port, frame)
        if len(out) != 1:
            raise BenchCheckError(f"{what} frame {i}: {len(out)} frames out, expected 1")
        port, data = out[0]
        if port != f.port:
            raise BenchCheckError(f"{what} frame {i}: egress port {port}, hash model says {f.port}")
        if int.from_bytes(data[:6], "big") != port_mac(port):
            raise BenchCheckError(f"{what} frame {i}: destination MAC not rewritten")
        if routed:
            ip = data[14:34]
            if ip[8] != frame[22] - 1:
                raise BenchCheckError(f"{what} frame {i}: TTL {ip[8]}, expected {frame[22] - 1}")
            if ipv4_checksum(ip[:10] + b"\0\0" + ip[12:]) != int.from_bytes(ip[10:12], "big"):
                raise BenchCheckError(f"{what} frame {i}: bad IPv4 checksum {ip[10:12].hex()}")


# --------------------------------------------------------------------------- benchmarks
def bench_uniformity(config: BenchConfig, flows_per_size: int = 16) -> dict[str, Figure]:
    """``fabric.ecmp_uniformity.max_over_mean`` over full source-port sweeps."""
    rng = random.Random(4791)
    worst = 0.0
    for size in (4, 8):
        for _ in range(flows_per_size):
            model = SwitchHashModel("s", seed=rng.getrandbits(32),
                                    groups={1: GroupModel(0, tuple(f"m{i}" for i in range(size)))})
            table = port_to_member_table(model, 1, rng.getrandbits(32), rng.getrandbits(32),
                                         PROTO_UDP, rng.choice((4791, 9000)))
            counts = [0] * size
            for m in table:
                counts[m] += 1
            worst = max(worst, max(counts) / (len(table) / size))
    return {"fabric.ecmp_uniformity.max_over_mean": Figure(round(worst, 6), "ratio")}


def _skip_reason() -> Optional[str]:
    if not FABRIC_P4.exists():
        return f"{FABRIC_P4} does not exist yet"
    return None


def _time_pps(switch: Any, in_port: int, frames: Sequence[bytes], duration_s: float) -> float:
    process = switch.process_packet
    n = len(frames)
    sent = i = 0
    start = time.perf_counter()
    deadline = start + duration_s
    while True:
        for _ in range(CHECK_BATCH):
            process(in_port, frames[i])
            i = i + 1 if i + 1 < n else 0
        sent += CHECK_BATCH
        now = time.perf_counter()
        if now >= deadline:
            return sent / (now - start)


def load_fabric(path: Path = FABRIC_P4) -> Any:
    """``load_program`` of the fabric program with the trace off."""
    return load_program(str(path), list(INCLUDE_DIRS), trace=False)


def measure_role(role: str, config: BenchConfig, path: Path = FABRIC_P4,
                 routed: bool = True) -> float:
    """Packets/s of the fabric program in ``role`` ("leaf" or "spine"), after checking
    every frame's egress port against the hash model (``routed``: TTL and checksum too;
    off for a program that only has the fabric's forwarding tables)."""
    prog = load_fabric(path)
    rng = random.Random(7)
    if role == "leaf":
        sw, in_port = setup_leaf(prog.state), IN_PORT_LEAF
        flows = leaf_flows(sw, N_FRAMES, rng)
    else:
        sw, in_port = setup_spine(prog.state), IN_PORT_SPINE
        flows = spine_flows(sw, N_FRAMES, rng)
    frames = [build_frame(f.src, f.dst, f.proto, f.sport, f.dport) for f in flows]
    switch = V1ModelSwitch(prog, cpu_port=255, log=None)
    check_forwarding(switch, in_port, flows, frames, f"fabric {role}", routed)
    if switch.stats.errors:
        raise BenchCheckError(f"fabric {role}: switch errors {switch.stats.errors[:3]}")
    if config.warmup_s > 0:
        _time_pps(switch, in_port, frames, config.warmup_s)
    rates = [_time_pps(switch, in_port, frames, config.duration_s) for _ in range(config.runs)]
    if switch.stats.errors:
        raise BenchCheckError(f"fabric {role}: switch errors while timing {switch.stats.errors[:3]}")
    return median(rates)


def _bench_role(role: str, config: BenchConfig) -> dict[str, Figure]:
    why = _skip_reason()
    if why is not None:
        print(f"fabric.pps_{role}: skipped, {why}; fabric.pps.{role} not written",
              file=sys.stderr, flush=True)
        return {}
    return {f"fabric.pps.{role}": Figure(round(measure_role(role, config), 1), "pps")}


def bench_pps_leaf(config: BenchConfig) -> dict[str, Figure]:
    """``fabric.pps.leaf`` (nothing, with a message, until p4src/fabric.p4 exists)."""
    return _bench_role("leaf", config)


def bench_pps_spine(config: BenchConfig) -> dict[str, Figure]:
    """``fabric.pps.spine`` (nothing, with a message, until p4src/fabric.p4 exists)."""
    return _bench_role("spine", config)


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("ecmp_uniformity", "fabric", bench_uniformity),
    Benchmark("pps_leaf", "fabric", bench_pps_leaf),
    Benchmark("pps_spine", "fabric", bench_pps_spine),
)
