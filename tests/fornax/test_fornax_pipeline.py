"""``p4src/smartnic/smartnic.p4`` on p4sim, through P4Runtime (the in-process switch of
``nicrig``), against its bit-exact model (``p4src.smartnic.model``): one session entry
matches both directions, VXLAN encap/decap, ARP answered, a miss / stale / corrupt entry
punted with its reason and the frame unchanged, the TCP state reported by digest as the
model's machine says, the check code accepted for every entry the model codes and
refused when one bit of the action data changes, the load-balancer translation with a
correct TCP checksum, overlapping VPCs, the software-centric build's one-way entries.
"""
from __future__ import annotations

import queue
import random
from typing import Any, Iterator, Optional

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.layers.vxlan import VXLAN

from p4.v1 import p4runtime_pb2

from controller.p4rt import DigestList, PacketIn
from controller.p4rt.codec import encode
from controller.p4rt.entities import update
from controller.p4rt.p4info import P4InfoHelper, load_p4info
from fornax.pipeline import SessionCodec, SmartNic, punt_of, tcp_events
from nicrig import NicRig
from p4src.hashmodel import crc32, pack_fields
from p4src.smartnic import model as M

VTEP_A, VTEP_B = "192.168.0.1", "192.168.0.2"
UPLINK_MAC, PEER_MAC = "02:fa:00:00:00:01", "02:fa:00:00:00:02"
GW_MAC = "02:fe:00:00:00:01"
A1_MAC, B1_MAC, A2_MAC = "02:00:00:00:01:01", "02:00:00:00:02:01", "02:00:00:00:01:02"
A1, B1, VIP = "10.0.0.1", "10.0.0.2", "10.0.0.100"
NH_A1, NH_B1, NH_A2 = 1, 2, 3
SCOPE = 1


def mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def nic_identity() -> M.NicIdentity:
    return M.NicIdentity(M.ip(VTEP_A), mac(UPLINK_MAC), mac(PEER_MAC), mac(GW_MAC))


class Nic:
    """A programmed in-process SmartNIC ``A``: uplink 1, VM a1 (VPC 100) on port 2, VM a2
    (VPC 200) on port 3; VM b1 of both VPCs behind VTEP B."""

    def __init__(self, build: tuple[Any, Any]) -> None:
        self.rig = NicRig(ports=(1, 2, 3, 4))
        self.nic = SmartNic(self.rig.addr, device_id=1, election_id=(0, 10))
        self.nic.push(*build)
        n = self.nic
        n.set_identity(nic_identity())
        n.set_uplink()
        n.set_vm_port(2, vni=100)
        n.set_vm_port(3, vni=200)
        n.set_vpc(100)
        n.set_vpc(200)
        n.set_nexthop_vm(NH_A1, 2, mac(A1_MAC))
        n.set_nexthop_remote(NH_B1, M.ip(VTEP_B), mac(B1_MAC))
        n.set_nexthop_vm(NH_A2, 3, mac(A2_MAC))
        if n.has_tcp_state:                  # the FORNAX build (the baseline has no scopes)
            n.set_scope_version(SCOPE, 1)
        self.kept: list[Any] = []

    def close(self) -> None:
        self.nic.close()
        self.rig.stop()

    def next_event(self, kind: type, timeout_s: float = 3.0) -> Any:
        """The next event of ``kind`` (PacketIn, DigestList) on the NIC's queue; events of
        other kinds are kept for :meth:`drain_events`."""
        for i, ev in enumerate(self.kept):
            if isinstance(ev, kind):
                return self.kept.pop(i)
        while True:
            try:
                ev = self.nic.events.get(timeout=timeout_s)
            except queue.Empty:
                return None
            if isinstance(ev, kind):
                return ev
            self.kept.append(ev)

    def tcp_transitions(self, count: int, timeout_s: float = 3.0) -> list[tuple[int, int]]:
        """(old, new) of the TCP digests, waiting until ``count`` arrived (or the time
        is up), then for any further one for a short while."""
        got: list[tuple[int, int]] = []
        wait = timeout_s
        while True:
            dl = self.next_event(DigestList, wait)
            if dl is None:
                return got
            got += [(e.old_state, e.new_state) for e in tcp_events(dl)]
            if len(got) >= count:
                wait = 0.2

    def no_event(self, kind: type, timeout_s: float = 0.3) -> bool:
        return self.next_event(kind, timeout_s) is None

    def drain_events(self) -> list[Any]:
        out, self.kept = self.kept, []
        while True:
            try:
                out.append(self.nic.events.get_nowait())
            except queue.Empty:
                return out


@pytest.fixture()
def nic(fornax_build: tuple[Any, Any]) -> Iterator[Nic]:
    n = Nic(fornax_build)
    try:
        yield n
    finally:
        n.close()


def vm_tcp(flags: str = "S", src: str = A1, dst: str = B1, sport: int = 40000,
           dport: int = 80, payload: bytes = b"", src_mac: str = A1_MAC) -> bytes:
    return bytes(Ether(src=src_mac, dst=GW_MAC) / IP(src=src, dst=dst)
                 / TCP(sport=sport, dport=dport, flags=flags, seq=1000) / payload)


def from_uplink(inner: bytes, vni: int = 100, dst_vtep: str = VTEP_A) -> bytes:
    return bytes(Ether(src=PEER_MAC, dst=UPLINK_MAC) / IP(src=VTEP_B, dst=dst_vtep)
                 / UDP(sport=50000, dport=M.VXLAN_UDP_PORT) / VXLAN(vni=vni, flags=0x08)
                 / inner)


def b1_tcp(flags: str, sport: int = 80, dport: int = 40000, payload: bytes = b"") -> bytes:
    return bytes(Ether(src=B1_MAC, dst=GW_MAC) / IP(src=B1, dst=A1)
                 / TCP(sport=sport, dport=dport, flags=flags, seq=5000) / payload)


def a1_b1_key(vni: int = 100, sport: int = 40000) -> M.SessionKey:
    return M.canonical_key(vni, M.IP_PROTO_TCP, M.ip(A1), sport, M.ip(B1), 80)[0]


def a1_b1_data(slot: int = 5, gen: int = 1, version: int = 1) -> M.SessionData:
    # a1 (10.0.0.1) is the lo endpoint, b1 the hi one
    return M.SessionData(M.VERDICT_ALLOW, scope=SCOPE, version=version, slot=slot, gen=gen,
                         nh_lo=NH_A1, nh_hi=NH_B1)


def install(n: Nic, key: M.SessionKey, data: M.SessionData, op: str = "INSERT",
            coded: bool = True) -> None:
    failures = n.nic.write_sessions([(op, key, data.with_check(key) if coded else data, 0)])
    assert failures == [], failures


# ---------------------------------------------------------------- the model alone
def test_canonical_key_is_the_same_both_ways() -> None:
    rng = random.Random(1)
    for _ in range(200):
        a, b = rng.getrandbits(32), rng.getrandbits(32)
        pa, pb = rng.getrandbits(16), rng.getrandbits(16)
        k1, d1 = M.canonical_key(7, 6, a, pa, b, pb)
        k2, d2 = M.canonical_key(7, 6, b, pb, a, pa)
        assert k1 == k2
        assert (a, pa) == (b, pb) or d1 != d2
        assert (k1.ip_lo, k1.port_lo) <= (k1.ip_hi, k1.port_hi)


def test_check_code_changes_with_every_field() -> None:
    key, data = a1_b1_key(), a1_b1_data()
    base = M.check_code(key, data)
    for name, _ in M.CHECK_FIELDS:
        if hasattr(data, name):
            other = M.SessionData(**{**data.params(), name: getattr(data, name) ^ 1})
            assert M.check_code(key, other) != base, name


def _random_session(rnd: random.Random) -> tuple[M.SessionKey, M.SessionData]:
    def w(bits: int) -> int:
        return rnd.choice([0, 1, 255, 256, 65535, 65536, (1 << bits) - 1,
                           rnd.getrandbits(bits)]) & ((1 << bits) - 1)
    return (M.SessionKey(w(24), w(8), w(32), w(32), w(16), w(16)),
            M.SessionData(w(8), w(16), w(16), w(32), w(8), w(16), w(16), w(8), w(32), w(16),
                          w(32)))


def test_check_code_is_the_pack_fields_crc_for_any_values() -> None:
    """The one-struct check code equals crc32 over :func:`pack_fields` (the pipeline's
    packing), in range and out of range (the fields keep their low bits)."""
    rnd = random.Random(30)
    widths = [w for _, w in M.CHECK_FIELDS]
    for i in range(3000):
        key, data = _random_session(rnd)
        if i % 10 == 0:                                      # out of range, negative
            key = M.SessionKey(key.vni | (rnd.getrandbits(4) << 24), key.proto + 256 * (i % 3),
                               key.ip_lo, key.ip_hi, -key.port_lo, key.port_hi)
        values = [key.vni, key.proto, key.ip_lo, key.ip_hi, key.port_lo, key.port_hi,
                  data.verdict, data.scope, data.version, data.slot, data.gen, data.nh_lo,
                  data.nh_hi, data.nat_side, data.nat_ip, data.nat_port]
        want = crc32(pack_fields(list(zip(values, widths)))) % M.CHECK_MAX
        assert M.check_code(key, data) == want, (key, data)
        assert data.placed(key, data.slot, data.gen).check == want
        assert data.with_check(key).check == want


def test_session_codec_bytes_are_the_field_by_field_message(fornax_build: Any) -> None:
    """The session codec's wire-format entries equal, byte for byte, the TableEntry built
    field by field with the P4Runtime codec (canonical values), and decode back; a value
    too wide for its field is refused with the codec's ValueError."""
    info = P4InfoHelper(load_p4info(fornax_build[0]))
    codec = SessionCodec(info)

    def by_fields(key: M.SessionKey, data: Optional[M.SessionData], idle: int) -> Any:
        te = p4runtime_pb2.TableEntry(table_id=codec.table_id)
        for fid, width, v in zip(codec.field_ids, codec.field_widths,
                                 (key.vni, key.proto, key.ip_lo, key.ip_hi, key.port_lo,
                                  key.port_hi)):
            te.match.add(field_id=fid).exact.value = encode(v, width)
        if data is not None:
            te.action.action.action_id = codec.action_id
            for pid, name, width in codec.params:
                te.action.action.params.add(param_id=pid,
                                            value=encode(data.params()[name], width))
            te.idle_timeout_ns = idle
        return te

    rnd = random.Random(31)
    for i in range(2000):
        key, data = _random_session(rnd)
        idle = rnd.choice([0, 1, 30_000_000_000, rnd.getrandbits(62)])
        op = ("INSERT", "MODIFY", "DELETE")[i % 3]
        held = None if op == "DELETE" else data
        got = codec.update(op, key, held, idle)
        want = update(by_fields(key, held, idle), op)
        assert got.SerializeToString() == want.SerializeToString(), (op, key, held, idle)
        assert codec.decode(got.entity.table_entry) == (key, held)
    for bad in (M.SessionKey(1 << 24, 6, 1, 2, 3, 4), M.SessionKey(1, -6, 1, 2, 3, 4)):
        with pytest.raises(ValueError, match="does not fit"):
            codec.update("DELETE", bad, None)
    with pytest.raises(ValueError, match="does not fit"):
        codec.entry(a1_b1_key(), M.SessionData(M.VERDICT_ALLOW, slot=1 << 32))


# ---------------------------------------------------------------- on p4sim
def test_arp_is_answered_with_the_gateway_mac(nic: Nic) -> None:
    req = bytes(Ether(src=A1_MAC, dst="ff:ff:ff:ff:ff:ff")
                / ARP(op=1, hwsrc=A1_MAC, psrc=A1, pdst=B1))
    nic.rig.port(2).inject(req)
    rep = Ether(nic.rig.take(2))
    assert rep[ARP].op == 2 and rep[ARP].hwsrc == GW_MAC and rep[ARP].psrc == B1
    assert rep[ARP].pdst == A1 and rep.dst == A1_MAC
    gratuitous = bytes(Ether(src=A1_MAC, dst="ff:ff:ff:ff:ff:ff")
                       / ARP(op=1, hwsrc=A1_MAC, psrc=A1, pdst=A1))
    nic.rig.port(2).inject(gratuitous)
    assert nic.rig.take(2, 0.3) is None


def test_miss_is_punted_unchanged_then_both_directions_hit_one_entry(nic: Nic) -> None:
    syn = vm_tcp("S")
    nic.rig.port(2).inject(syn)
    pin = nic.next_event(PacketIn)
    assert pin is not None
    p = punt_of(pin)
    assert (p.reason, p.in_port, p.vni, p.frame) == (M.PUNT_MISS, 2, 100, syn)
    key = a1_b1_key()
    install(nic, key, a1_b1_data())
    nic.nic.reinject(p.frame, in_port=2)
    out = Ether(nic.rig.take(1))
    assert out.src == UPLINK_MAC and out.dst == PEER_MAC
    assert out[IP].src == VTEP_A and out[IP].dst == VTEP_B and out[IP].ttl == 64
    assert out[UDP].dport == M.VXLAN_UDP_PORT and out[UDP].sport == M.vxlan_source_port(key)
    assert out[UDP].len == len(syn) + 16 and out[IP].len == len(syn) + 36
    assert out[VXLAN].vni == 100 and out[VXLAN].flags == 0x08
    inner = out[VXLAN].payload
    assert inner.dst == B1_MAC and inner.src == GW_MAC
    assert bytes(inner[IP]) == bytes(Ether(syn)[IP])
    assert len(bytes(out)) == len(syn) + M.VXLAN_OVERHEAD
    # the reply, from the uplink: the same entry, decapsulated to a1
    nic.rig.port(1).inject(from_uplink(b1_tcp("SA")))
    back = Ether(nic.rig.take(2))
    assert back.dst == A1_MAC and back.src == GW_MAC and back[TCP].flags == "SA"
    assert not back.haslayer(VXLAN)
    assert nic.no_event(PacketIn)
    # one entry, two packets
    got = nic.nic.read_session(key)
    assert got is not None and got[1] == 2
    events = []
    while len(events) < 2 and (dl := nic.next_event(DigestList)) is not None:
        events += tcp_events(dl)
    assert [(e.old_state, e.new_state) for e in events] == [(M.TCP_NONE, M.TCP_SYN),
                                                            (M.TCP_SYN, M.TCP_SYNACK)]
    assert all(e.key == key and e.slot == 5 for e in events)


def test_overlapping_vpcs_have_their_own_sessions(nic: Nic) -> None:
    install(nic, a1_b1_key(vni=100), a1_b1_data())
    same_tuple_other_vpc = vm_tcp("S", src_mac=A2_MAC)
    nic.rig.port(3).inject(same_tuple_other_vpc)
    p = punt_of(nic.next_event(PacketIn))
    assert (p.reason, p.vni, p.in_port) == (M.PUNT_MISS, 200, 3)


def test_corrupt_entry_is_caught_on_its_next_packet(nic: Nic) -> None:
    key = a1_b1_key()
    install(nic, key, a1_b1_data())
    nic.rig.port(2).inject(vm_tcp("S"))
    assert nic.rig.take(1) is not None
    good = a1_b1_data().with_check(key)
    # a memory fault: the next hop changes, the check code does not
    bad = M.SessionData(**{**good.params(), "nh_hi": NH_A2})
    install(nic, key, bad, op="MODIFY", coded=False)
    frame = vm_tcp("A", payload=b"hello")
    nic.rig.port(2).inject(frame)
    p = punt_of(nic.next_event(PacketIn))
    assert (p.reason, p.frame) == (M.PUNT_CORRUPT, frame)
    assert nic.rig.take(3, 0.3) is None          # never to the wrong VM
    install(nic, key, a1_b1_data(), op="MODIFY")  # rebuilt
    nic.nic.reinject(p.frame, in_port=2)
    assert Ether(nic.rig.take(1))[VXLAN].payload[TCP].payload.load == b"hello"


def test_stale_version_is_caught_on_the_next_packet(nic: Nic) -> None:
    key = a1_b1_key()
    install(nic, key, a1_b1_data(version=1))
    nic.rig.port(2).inject(vm_tcp("S"))
    assert nic.rig.take(1) is not None
    nic.nic.set_scope_version(SCOPE, 2)
    nic.rig.port(2).inject(vm_tcp("A"))
    assert punt_of(nic.next_event(PacketIn)).reason == M.PUNT_STALE
    install(nic, key, a1_b1_data(version=2), op="MODIFY")
    nic.rig.port(2).inject(vm_tcp("A"))
    assert nic.rig.take(1) is not None
    # an entry whose scope has no version at all is stale too
    install(nic, key, M.SessionData(**{**a1_b1_data().params(), "scope": 77}), op="MODIFY")
    nic.rig.port(2).inject(vm_tcp("A"))
    assert punt_of(nic.next_event(PacketIn)).reason == M.PUNT_STALE


def test_check_codes_of_the_model_are_accepted_and_one_bit_flips_are_not(nic: Nic) -> None:
    """Random keys and action data, 24 entries: each coded by the model passes the
    pipeline's check; the same entry with one bit of one field flipped is refused."""
    rng = random.Random(30)
    for i in range(24):
        sport = 1024 + i
        key = a1_b1_key(sport=sport)
        data = M.SessionData(M.VERDICT_ALLOW, scope=SCOPE, version=1,
                             slot=rng.randrange(M.DEFAULT_SESSION_TABLE_SIZE),
                             gen=rng.getrandbits(8), nh_lo=NH_A1, nh_hi=NH_B1,
                             nat_side=M.NAT_NONE, nat_ip=rng.getrandbits(32),
                             nat_port=rng.getrandbits(16))
        install(nic, key, data)
        nic.rig.port(2).inject(vm_tcp("A", sport=sport))
        assert nic.rig.take(1) is not None, f"entry {i} refused"
        name, width = rng.choice([f for f in M.CHECK_FIELDS if f[0] in ("slot", "gen", "nat_ip",
                                                                      "nat_port", "version")])
        flipped = M.SessionData(**{**data.with_check(key).params(),
                                   name: getattr(data, name) ^ (1 << rng.randrange(width))})
        install(nic, key, flipped, op="MODIFY", coded=False)
        nic.rig.port(2).inject(vm_tcp("A", sport=sport))
        assert punt_of(nic.next_event(PacketIn)).reason == M.PUNT_CORRUPT, name


def test_tcp_state_digests_follow_the_model(nic: Nic) -> None:
    """A connection's packets in both directions: the digests are exactly the model's
    transitions (open, data, half close, close; then the 5-tuple reused)."""
    key = a1_b1_key()
    install(nic, key, a1_b1_data(slot=9, gen=3))
    steps = [("S", 0), ("SA", 1), ("A", 0), ("PA", 1), ("FA", 0), ("A", 1), ("FA", 1),
             ("A", 0), ("S", 0), ("R", 1)]
    state, fin_dir, want = M.TCP_NONE, 0, []
    for flags, d in steps:
        frame = vm_tcp(flags) if d == 0 else from_uplink(b1_tcp(flags))
        nic.rig.port(2 if d == 0 else 1).inject(frame)
        assert nic.rig.take(1 if d == 0 else 2) is not None
        tcp_flags = int(TCP(flags=flags).flags)
        nxt, fin_dir = M.tcp_next(state, fin_dir, tcp_flags, d)
        if nxt != state:
            want.append((state, nxt))
        state = nxt
    assert nic.tcp_transitions(len(want)) == want
    assert want[-1] == (M.TCP_SYN, M.TCP_CLOSED) and (M.TCP_FIN1, M.TCP_CLOSED) in want


def test_other_traffic_and_bad_ports(nic: Nic) -> None:
    ping = bytes(Ether(src=A1_MAC, dst=GW_MAC) / IP(src=A1, dst=B1) / ICMP())
    nic.rig.port(2).inject(ping)
    assert punt_of(nic.next_event(PacketIn)).reason == M.PUNT_OTHER
    nic.rig.port(4).inject(vm_tcp("S"))                       # port 4 is not configured
    nic.rig.port(1).inject(vm_tcp("S"))                       # not VXLAN on the uplink
    nic.rig.port(1).inject(from_uplink(b1_tcp("S"), dst_vtep="192.168.0.9"))
    nic.rig.port(1).inject(from_uplink(b1_tcp("S"), vni=999))  # a VNI this NIC does not serve
    for p in (1, 2, 3, 4):
        assert nic.rig.take(p, 0.2) is None
    assert nic.no_event(PacketIn)
    ev = nic.nic.read_events()
    assert ev["unknown-port"] == 1 and ev["not-vxlan"] == 2 and ev["unknown-vni"] == 1
    assert ev["other"] == 1


def test_heartbeat_comes_back_through_the_pipeline(nic: Nic) -> None:
    nic.nic.heartbeat(b"\x00" * 14 + b"hb-1")
    p = punt_of(nic.next_event(PacketIn))
    assert p.reason == M.PUNT_HEARTBEAT and p.frame.endswith(b"hb-1")


def test_deny_drops_and_software_punts(nic: Nic) -> None:
    key = a1_b1_key()
    install(nic, key, M.SessionData(M.VERDICT_DENY, scope=SCOPE, version=1, slot=1))
    nic.rig.port(2).inject(vm_tcp("S"))
    assert nic.rig.take(1, 0.3) is None and nic.no_event(PacketIn)
    install(nic, key, M.SessionData(M.VERDICT_SOFTWARE, scope=SCOPE, version=1, slot=1),
            op="MODIFY")
    nic.rig.port(2).inject(vm_tcp("S"))
    assert punt_of(nic.next_event(PacketIn)).reason == M.PUNT_SOFTWARE
    nic.nic.set_vm_port(2, vni=100, software=True)            # the whole port to software
    nic.rig.port(2).inject(vm_tcp("S", sport=1))
    assert punt_of(nic.next_event(PacketIn)).reason == M.PUNT_SOFTWARE
    assert nic.nic.read_events()["denied"] == 1


def test_load_balancer_translates_at_the_backend_nic(nic: Nic) -> None:
    """b1 (remote) connects to VIP:80, whose chosen backend is a1:8080 behind this NIC:
    the request gets a1:8080 as destination, the reply gets VIP:80 back as source, both
    with correct TCP checksums, both on one entry."""
    n = nic.nic
    n.set_lb_reverse(100, M.IP_PROTO_TCP, M.ip(A1), 8080, M.ip(VIP), 80)
    key, d = M.canonical_key(100, M.IP_PROTO_TCP, M.ip(B1), 50000, M.ip(VIP), 80)
    assert (key.ip_lo, d) == (M.ip(B1), 0)           # b1 < VIP: the VIP is the hi endpoint
    data = M.SessionData(M.VERDICT_ALLOW, scope=SCOPE, version=1, slot=3, gen=1,
                         nh_lo=NH_B1, nh_hi=NH_A1, nat_side=M.NAT_HI, nat_ip=M.ip(A1),
                         nat_port=8080)
    install(nic, key, data)
    req = bytes(Ether(src=B1_MAC, dst=GW_MAC) / IP(src=B1, dst=VIP)
                / TCP(sport=50000, dport=80, flags="S") / b"req")
    nic.rig.port(1).inject(from_uplink(req))
    got = Ether(nic.rig.take(2))
    assert got[IP].dst == A1 and got[TCP].dport == 8080 and got.dst == A1_MAC
    assert _checksums_ok(got)
    rep = bytes(Ether(src=A1_MAC, dst=GW_MAC) / IP(src=A1, dst=B1)
                / TCP(sport=8080, dport=50000, flags="SA") / b"rep")
    nic.rig.port(2).inject(rep)
    out = Ether(nic.rig.take(1))
    inner = out[VXLAN].payload
    assert inner[IP].src == VIP and inner[TCP].sport == 80 and inner[IP].dst == B1
    assert _checksums_ok(inner)
    assert nic.no_event(PacketIn)
    assert n.read_session(key)[1] == 2


def _checksums_ok(frame: Any) -> bool:
    ip_got, tcp_got = frame[IP].chksum, frame[TCP].chksum
    clean = frame.copy()
    del clean[IP].chksum
    del clean[TCP].chksum
    clean = Ether(bytes(clean))
    return clean[IP].chksum == ip_got and clean[TCP].chksum == tcp_got


def test_session_table_full_is_refused_with_resource_exhausted(small_build: Any) -> None:
    n = Nic(small_build)
    try:
        writes = [("INSERT", a1_b1_key(sport=s), a1_b1_data().with_check(a1_b1_key(sport=s)), 0)
                  for s in range(1, 11)]
        failures = n.nic.write_sessions(writes)
        assert [f.code for f in failures] == ["RESOURCE_EXHAUSTED"] * 2
        assert [f.index for f in failures] == [8, 9]
    finally:
        n.close()


def test_baseline_build_keeps_one_entry_per_direction(baseline_build: Any) -> None:
    n = Nic(baseline_build)
    try:
        assert not n.nic.has_tcp_state
        fwd, d = M.canonical_key(100, M.IP_PROTO_TCP, M.ip(B1), 80, M.ip(A1), 40000,
                                 baseline=True)
        assert d == 0 and fwd.ip_lo == M.ip(B1)
        # the b1 -> a1 flow only, no check code: the baseline program does not verify
        install(n, fwd, M.SessionData(M.VERDICT_ALLOW, nh_hi=NH_A1), coded=False)
        n.rig.port(1).inject(from_uplink(b1_tcp("SA")))
        assert Ether(n.rig.take(2)).dst == A1_MAC
        n.rig.port(2).inject(vm_tcp("A"))           # the other direction has no entry
        assert punt_of(n.next_event(PacketIn)).reason == M.PUNT_MISS
    finally:
        n.close()
