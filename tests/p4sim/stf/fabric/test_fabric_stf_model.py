"""Checks of the fabric STF tests that the plain STF harness cannot make.

* The expected uplink of every packet in ``ecmp.stf`` and ``ecmp_seed.stf`` is recomputed
  from the published hash model (crc16, or crc32 when ``FabricIngress.ecmp.algorithm``
  says ``use_crc32``, over seed ++ src ++ dst ++ protocol ++ UDP ports packed MSB-first,
  the ports as 0 when the parser extracted no UDP header; ``member = H % size + base``),
  so the
  STF files cannot drift from the model the controller publishes.
* ``pfc_priority.stfq`` (DSCP 26 -> priority 3, PAUSE with class-enable bit 3) needs eight
  egress queues (``--priority-queues 8``): BMv2 and p4sim drop a packet whose priority is
  not below the number of queues, and the STF harness runs one queue.

Run: ``.venv/bin/python -m pytest tests/p4sim/stf/fabric -q``
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from p4sim.runtime.hashes import compute_hash
from p4sim.stf import run_stf_text
import p4sim.v1model.switch as v1switch
from p4sim import engine

HERE = Path(__file__).parent
IP_PROTO_UDP = 17


def ecmp_member(algo: str, seed: int, frame: bytes, base: int, size: int, ports_first: bool = False) -> int:
    """The member the fabric pipeline picks for an Ethernet/IPv4 ``frame`` (no options).

    The parser extracts UDP only when the protocol is 17 and the fragment offset 0; the
    hash list always holds the two port fields, and without a UDP header they hash as the
    value a read of them yields on BMv2: 0 (p4c-bm2-ss copies hash() arguments into
    temporaries, so BMv2 does not skip them).

    Example::

        >>> f = bytes(23) + bytes([6]) + bytes(10) + bytes([0x12, 0x34, 0, 0])  # TCP
        >>> ecmp_member("crc16", 0, f, 0, 7) == compute_hash("crc16", [(0, 32)] * 3 + [(6, 8), (0, 32)], 0, 7)
        True
    """
    src = int.from_bytes(frame[26:30], "big")
    dst = int.from_bytes(frame[30:34], "big")
    proto = frame[23]
    frag_offset = int.from_bytes(frame[20:22], "big") & 0x1FFF
    has_udp = proto == IP_PROTO_UDP and frag_offset == 0
    sport = int.from_bytes(frame[34:36], "big") if has_udp else 0
    dport = int.from_bytes(frame[36:38], "big") if has_udp else 0
    fields = [(seed, 32), (src, 32), (dst, 32), (proto, 8), (sport, 16), (dport, 16)]
    if ports_first:      # select_member_ports_first: seed, ports, protocol, addresses
        fields = [fields[0], fields[4], fields[5], fields[3], fields[1], fields[2]]
    return compute_hash(algo, fields, base, size)


def _stf_setup(text: str) -> tuple[str, int, int, int, dict[int, int]]:
    """(algorithm, seed, base, size, member -> port) from an ECMP STF file's entries
    (``ecmp.groups`` by ``select_member`` or ``select_member_ports_first``)."""
    m = re.search(r"set_switch\(switch_id:\d+, role:(\d+), ecmp_seed:(0x[0-9a-fA-F]+)\)", text)
    assert m, "no switch_info default"
    seed = int(m.group(2), 16)
    algo = "crc32" if "FabricIngress.ecmp.use_crc32()" in text else "crc16"
    g = re.search(r"select_member(?:_ports_first)?\(base:(\d+), size:(\d+)\)", text)
    assert g, "no ECMP group"
    members = {int(a): int(b) for a, b in re.findall(
        r"ecmp\.members meta\.ecmp_member:(\d+) FabricIngress\.ecmp\.set_nexthop\(nexthop_id:(\d+)\)", text)}
    ports = {int(a): int(b) for a, b in re.findall(
        r"nexthops meta\.nexthop_id:(\d+) FabricIngress\.forwarding\.route_to\(port:(\d+)", text)}
    return algo, seed, int(g.group(1)), int(g.group(2)), {k: ports[v] for k, v in members.items()}


@pytest.mark.parametrize("name", ["ecmp", "ecmp_seed", "ecmp_ports_first"])
def test_ecmp_expectations_follow_hash_model(name: str) -> None:
    text = (HERE / f"{name}.stf").read_text(encoding="utf-8")
    algo, seed, base, size, member_port = _stf_setup(text)
    ports_first = "select_member_ports_first(" in text
    pairs = re.findall(r"^packet 1 ([0-9A-F]+)\nexpect (\d+) ", text, re.M)
    assert len(pairs) >= 6
    seen = set()
    differs = 0
    for frame_hex, port in pairs:
        member = ecmp_member(algo, seed, bytes.fromhex(frame_hex), base, size, ports_first)
        differs += member != ecmp_member(algo, seed, bytes.fromhex(frame_hex), base, size)
        assert member_port[member] == int(port), f"{name}: frame {frame_hex[:40]}…"
        seen.add(member)
    assert len(seen) > 1, "the test flows should spread over several members"
    assert differs > 0 or not ports_first, "the ports-first flows must tell the two orders apart"


def test_seed_changes_the_mapping() -> None:
    frame = bytearray(bytes.fromhex(
        re.search(r"^packet 1 ([0-9A-F]+)", (HERE / "ecmp.stf").read_text(), re.M).group(1)))
    choices = set()
    for sport in range(64):
        frame[34:36] = (1000 + sport).to_bytes(2, "big")
        choices.add(tuple(ecmp_member("crc16", seed, bytes(frame), 0, 4) for seed in (1, 2, 3)))
    assert any(len(set(c)) > 1 for c in choices)


def test_pfc_pause_with_priority_queues(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(v1switch, "V1ModelSwitch",
                        functools.partial(v1switch.V1ModelSwitch, priority_queues=8))
    program = engine.load_program(str(HERE / "pfc_pause.p4"), [str(HERE)])
    stf = HERE / "pfc_priority.stfq"
    result = run_stf_text(program, stf.read_text(encoding="utf-8"), str(stf))
    assert result.passed, result.report()


def test_same_crc_on_both_tiers_polarises_and_crc32_does_not() -> None:
    """Why FabricIngress.ecmp.algorithm exists: with crc16 on the leaf (4 uplinks) and on
    the spine (2 links), the spine's choice is a function of the leaf's; crc32 on the
    spine makes every (leaf member, spine member) pair occur."""
    frame = bytearray(bytes.fromhex(
        re.search(r"^packet 1 ([0-9A-F]+)", (HERE / "ecmp.stf").read_text(), re.M).group(1)))
    same, mixed = set(), set()
    for sport in range(0, 65536, 97):
        frame[34:36] = sport.to_bytes(2, "big")
        leaf = ecmp_member("crc16", 0x11, bytes(frame), 0, 4)
        same.add((leaf, ecmp_member("crc16", 0x22, bytes(frame), 0, 2)))
        mixed.add((leaf, ecmp_member("crc32", 0x22, bytes(frame), 0, 2)))
    assert len(same) == 4 and len(mixed) == 8
