"""The testbed's giant guard (testbed/giantguard.py) against a real BMv2 (simple_switch
1.15.5 of /tmp/ref, compiled with its own p4c-bm2-ss): a host that raised its own MTU to
1504 sends a 1518-byte frame, then a 1514-byte one. Unguarded, BMv2 forwards the giant
(it reached the far host over a 9000-byte link; on the fabric the next 1500-byte link
refuses it after the egress counted it: GOR's "sent but not received"). With the guard
on the switch side of the host's link the giant never reaches BMv2 and the 1514-byte
frame is forwarded as before; tagged frames keep their 4 bytes; a GSO super-frame the
host's kernel builds is dropped whole.

Needs root and iproute2, and /tmp/ref for the BMv2 case (skipped otherwise; the GSO case
reads the switch side with a packet socket, as BMv2 does); creates only its own veths and
switch process; run under ``flock /tmp/astral-net.lock``."""
from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from testbed.giantguard import guard_interface, interface_mtu, unguard_interface
from veths import ip, veth_pairs

REF = Path("/tmp/ref")
SIMPLE_SWITCH = REF / "bin" / "simple_switch"
P4C = REF / "bin" / "p4c-bm2-ss"
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2 to create veth pairs")
needs_bmv2 = pytest.mark.skipif(not SIMPLE_SWITCH.exists() or not P4C.exists(),
                                reason="needs the reference BMv2 and p4c at /tmp/ref")

# every frame from port 1 goes out of port 2 and back: no table, no control plane
CROSS_P4 = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct h_t { eth_t eth; }
struct m_t { }
parser P(packet_in p, out h_t h, inout m_t m, inout standard_metadata_t sm) {
    state start { p.extract(h.eth); transition accept; }
}
control VC(inout h_t h, inout m_t m) { apply { } }
control I(inout h_t h, inout m_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = sm.ingress_port == 1 ? 9w2 : 9w1; }
}
control E(inout h_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout h_t h, inout m_t m) { apply { } }
control D(packet_out p, in h_t h) { apply { p.emit(h.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
ETH_TEST = b"\x88\xb5"
SENDER_MTU = 1504                 # the host raised its own MTU (root in its namespace)
WIDE_MTU = 9000                   # the far link: a forwarded giant arrives there
READY_TIMEOUT_S = 30.0


@pytest.fixture
def veths() -> Iterator[tuple[str, str, str, str]]:
    """Two veth pairs named after this process (deleted after, only they;
    ``veths.veth_pairs``): switch side 1 and 2, host side 1 and 2."""
    with veth_pairs(f"gg{os.getpid() % 100000}", sides=("s", "h")) as [(s0, h0), (s1, h1)]:
        yield s0, s1, h0, h1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def bmv2(veths, tmp_path: Path) -> Iterator[tuple[str, str, str, str]]:
    """simple_switch forwarding port 1 <-> 2 over the veths (host 1 at MTU 1504, the far
    link at 9000); yields the veths once a frame crosses it."""
    sw1, sw2, host1, host2 = veths
    ip("link", "set", host1, "mtu", str(SENDER_MTU))
    for ifc in (sw2, host2):
        ip("link", "set", ifc, "mtu", str(WIDE_MTU))
    src = tmp_path / "cross.p4"
    src.write_text(CROSS_P4)
    env = {**os.environ, "LD_LIBRARY_PATH": str(REF / "lib")}
    subprocess.run([str(P4C), "--p4v", "16", "-I", str(REF / "share" / "p4c" / "p4include"),
                    "-o", str(tmp_path / "cross.json"), str(src)],
                   check=True, capture_output=True, timeout=120, env=env)
    log = open(tmp_path / "bmv2.log", "wb")  # noqa: SIM115 — closed below
    proc = subprocess.Popen([str(SIMPLE_SWITCH), "-i", f"1@{sw1}", "-i", f"2@{sw2}",
                             "--device-id", str(100 + os.getpid() % 1000),
                             "--thrift-port", str(_free_port()),
                             "--notifications-addr", f"ipc://{tmp_path}/notifications.ipc",
                             str(tmp_path / "cross.json")],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        with _open(host1) as tx, _open(host2) as rx:
            deadline = time.monotonic() + READY_TIMEOUT_S
            while not _frames(rx, 1, 0.2, tx, _frame(0, 64)):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"BMv2 forwarded nothing in {READY_TIMEOUT_S} s: "
                                f"{(tmp_path / 'bmv2.log').read_text()[-2000:]}")
        yield veths
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def _open(iface: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((iface, 3))
    return s


def _frame(seq: int, length: int, tag: bool = False) -> bytes:
    head = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01"
    head += (b"\x81\x00\x00\x07" if tag else b"") + ETH_TEST + seq.to_bytes(4, "big")
    return head + bytes(length - len(head))


def _frames(rx: socket.socket, n: int, timeout_s: float, tx: socket.socket | None = None,
            send: bytes = b"") -> list[tuple[int, int]]:
    """(seq, length) of up to ``n`` test frames arriving on ``rx`` (``send`` sent first)."""
    if tx is not None:
        tx.send(send)
    out: list[tuple[int, int]] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([rx], [], [], left)
        if not ready:
            break
        data, addr = rx.recvfrom(70000)
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        at = 16 if data[12:14] == b"\x81\x00" else 12
        if data[at:at + 2] == ETH_TEST:
            out.append((int.from_bytes(data[at + 2:at + 6], "big"), len(data)))
    return out


def _drain(rx: socket.socket) -> None:
    while _frames(rx, 100, 0.05):
        pass


@needs_bmv2
def test_bmv2_forwards_a_giant_unless_the_host_link_is_guarded(bmv2) -> None:
    sw1, _, host1, host2 = bmv2
    with _open(host1) as tx, _open(host2) as rx:
        _drain(rx)
        tx.send(_frame(1, 1518))
        got = _frames(rx, 2, 5.0, tx, _frame(2, 1514))
        assert got == [(1, 1518), (2, 1514)], f"unguarded, BMv2 forwarded: {got}"
        assert guard_interface(sw1) == interface_mtu(sw1) + 14 == 1514
        try:
            _drain(rx)
            tx.send(_frame(3, 1518))
            tx.send(_frame(4, 1518, tag=True))          # tagged: 1514 + 4 is not a giant
            # the giant went first: once the frames after it are out, its fate is known
            got = _frames(rx, 2, 5.0, tx, _frame(5, 1514))
            # (the tagged frame arrives with its tag in the socket's auxiliary data: 1514 bytes read)
            assert [seq for seq, _ in got] == [4, 5], f"guarded: {got}"
        finally:
            unguard_interface(sw1)
        _drain(rx)
        tx.send(_frame(6, 1518))                        # the guard is gone with its detach
        assert _frames(rx, 2, 5.0, tx, _frame(7, 64)) == [(6, 1518), (7, 64)]


UDP_SEGMENT = 103                 # setsockopt(SOL_UDP, UDP_SEGMENT): the kernel's UDP GSO


def _seen_lengths(seen: socket.socket, timeout_s: float) -> list[int]:
    """Lengths of the frames a packet socket on the switch side receives (BMv2's view)."""
    out = []
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([seen], [], [], left)
        if not ready:
            break
        data, addr = seen.recvfrom(70000)
        if addr[2] != socket.PACKET_OUTGOING:
            out.append(len(data))
    return out


def test_a_gso_super_frame_is_dropped_whole(veths) -> None:
    """The host (its link at MTU 1500, offloads on as a fresh veth has them: a host may
    turn them back on) sends one 8,000-byte UDP datagram with UDP GSO (1,400-byte
    segments): its kernel hands the link one super-frame, which a packet socket on the
    switch side, as BMv2's, receives whole (8,042 bytes measured). Guarded, no frame
    longer than 1514 bytes reaches it."""
    sw1, _, host1, _ = veths
    ip("addr", "add", "10.250.77.1/30", "dev", host1)
    ip("neigh", "replace", "10.250.77.2", "lladdr", "02:00:00:00:00:09", "dev", host1)

    def send_super_frame() -> list[int]:
        with _open(sw1) as seen, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, host1.encode())
            udp.setsockopt(socket.IPPROTO_UDP, UDP_SEGMENT, 1400)
            udp.sendto(bytes(8000), ("10.250.77.2", 9999))
            return _seen_lengths(seen, 1.0)

    assert max(send_super_frame()) > 8000, "no GSO super-frame: nothing to guard against"
    guard_interface(sw1)
    try:
        lengths = send_super_frame()
        assert not lengths or max(lengths) <= 1514, lengths
    finally:
        unguard_interface(sw1)
