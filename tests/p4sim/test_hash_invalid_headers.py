"""What a field of an invalid header contributes to a BMv2 calculation, as p4sim runs it.

* ``hash()`` with a field list: p4c-bm2-ss copies the list into temporaries before the
  call, so the field is hashed with the value a read of it yields: for a header never
  extracted, what the packet that used the PHV before left there (0 on a fresh switch),
  the old value after ``setInvalid()``. Not skipped.
* ``hash()`` whose data is a header (not a list), a whole header inside the list, and
  checksum field lists: BMv2 sees the header (fields) named directly and skips an
  invalid one.
(Selector keys, also skipped: ``test_action_selector.py``.)
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from p4sim.engine import load_program
from p4sim.runtime.hashes import compute_hash, get_algorithm, pack_fields
from p4sim.v1model.switch import V1ModelSwitch

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<16> a; bit<32> in_list; bit<32> as_data; bit<32> whole; bit<16> csum; }
header opt_t { bit<16> v; }
struct headers_t { h_t h; opt_t opt; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.k) { 1: parse_opt; 3: parse_opt; default: accept; }
    }
    state parse_opt { pkt.extract(hdr.opt); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.k == 3) { hdr.opt.setInvalid(); }
        hash(hdr.h.in_list, HashAlgorithm.crc32, 32w0, { hdr.h.a, hdr.opt.v }, 32w0xFFFFFFFF);
        hash(hdr.h.as_data, HashAlgorithm.crc32, 32w0, hdr.opt, 32w0xFFFFFFFF);
        hash(hdr.h.whole, HashAlgorithm.crc32, 32w0, { hdr.h.a, hdr.opt }, 32w0xFFFFFFFF);
        sm.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(true, { hdr.h.a, hdr.opt.v }, hdr.h.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.opt); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

A = 0x1234
V = 0xBEEF


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Any:
    src = tmp_path_factory.mktemp("hash_invalid") / "p.p4"
    src.write_text(PROGRAM)
    return load_program(str(src))


@pytest.fixture
def switch(program: Any) -> V1ModelSwitch:
    return V1ModelSwitch(program)


def crc32_of(fields: list[tuple[int, int]]) -> int:
    return compute_hash("crc32", fields, 0, 0xFFFFFFFF)


def run(switch: V1ModelSwitch, k: int) -> dict[str, int]:
    frame = bytes([k]) + A.to_bytes(2, "big") + bytes(14) + V.to_bytes(2, "big")
    out = switch.process_packet(0, frame)
    assert len(out) == 1 and out[0][0] == 1
    data = out[0][1]
    return {"in_list": int.from_bytes(data[3:7], "big"),
            "as_data": int.from_bytes(data[7:11], "big"),
            "whole": int.from_bytes(data[11:15], "big"),
            "csum": int.from_bytes(data[15:17], "big"),
            "len": len(data)}


def test_valid_header_is_hashed_everywhere(switch: V1ModelSwitch) -> None:
    got = run(switch, 1)
    assert got["in_list"] == crc32_of([(A, 16), (V, 16)])
    assert got["as_data"] == crc32_of([(V, 16)])
    assert got["whole"] == crc32_of([(A, 16), (V, 16)])
    assert got["csum"] == get_algorithm("csum16")(pack_fields([(A, 16), (V, 16)]))


def test_never_extracted_header_field_in_a_hash_list_hashes_as_zero(switch: V1ModelSwitch) -> None:
    got = run(switch, 0)
    assert got["in_list"] == crc32_of([(A, 16), (0, 16)])
    assert got["in_list"] != crc32_of([(A, 16)])              # the old, skipping rule
    assert got["len"] == 17 + 2                               # opt's bytes stay payload


def test_never_extracted_header_field_keeps_the_previous_packets_value(program: Any) -> None:
    """BMv2 reuses a packet's PHV for the next one and only clears its valid bits (issue
    35, class 14): sent one at a time, a packet without ``opt`` hashes the previous
    packet's ``opt.v``. Packets that arrive together (``reuse_headers=False``, as p4c's
    STF runner feeds them) each start from fresh headers."""
    sw = V1ModelSwitch(program)
    run(sw, 1)
    assert run(sw, 0)["in_list"] == crc32_of([(A, 16), (V, 16)])
    burst = V1ModelSwitch(program, reuse_headers=False)
    run(burst, 1)
    assert run(burst, 0)["in_list"] == crc32_of([(A, 16), (0, 16)])


def test_set_invalid_header_field_in_a_hash_list_keeps_its_old_value(switch: V1ModelSwitch) -> None:
    got = run(switch, 3)
    assert got["in_list"] == crc32_of([(A, 16), (V, 16)])
    assert got["len"] == 17                                   # opt is no longer emitted


@pytest.mark.parametrize("k", [0, 3])
def test_headers_named_directly_are_skipped_when_invalid(switch: V1ModelSwitch, k: int) -> None:
    got = run(switch, k)
    assert got["as_data"] == crc32_of([])                     # hash(..., hdr.opt, ...)
    assert got["whole"] == crc32_of([(A, 16)])                # { hdr.h.a, hdr.opt }
    assert got["csum"] == get_algorithm("csum16")(pack_fields([(A, 16)]))   # checksum list
