"""Pieces the P4Runtime store tests share (test_entities_fast.py, test_wire_writes.py,
test_wire_writes_multi.py, test_write_run.py): the v1model program around a test's
ingress control, an entity store of a program with a counting clock, and a batch Write
that answers with its per-update errors. ``conftest.py`` makes the ``p4info``
fixture of a test module's ``PROGRAM`` from them.

Example::

    >>> prog = v1model_program("control Ing(inout headers_t hdr, inout meta_t meta, "
    ...                        "inout standard_metadata_t sm) { apply { } }")
    >>> prog.startswith("#include <core.p4>") and prog.endswith("main;\\n")
    True
"""
from __future__ import annotations

import itertools
from typing import Sequence

import grpc
from p4.v1 import p4runtime_pb2 as pb

from p4sim.engine.program import load_program_text
from p4sim.p4info import build_p4info
from p4sim.p4runtime.entities import EntityStore
from test_server_rpc import details
from test_server_support import Client

V1MODEL_HEAD = r"""#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
struct headers_t { ethernet_t eth; }
struct meta_t { bit<2> color; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

"""
"""Everything of the program before the ingress control ``Ing`` (Ethernet only)."""
V1MODEL_TAIL = "\nV1Switch(P(), VC(), Ing(), E(), CC(), D()) main;\n"


def v1model_program(ingress: str) -> str:
    """The v1model program whose ingress is ``ingress`` (the text of ``control Ing``)."""
    return V1MODEL_HEAD + ingress.strip("\n") + "\n" + V1MODEL_TAIL


def clocked_store(program: str, file_name: str, fast: bool, extras: bool = False) -> EntityStore:
    """An entity store of ``program`` (compiled as ``file_name``) whose clock counts
    1000, 1007, 1014… so that two stores fed the same writes stamp the same times."""
    prog = load_program_text(program, file_name)
    clock = itertools.count(1000, 7)
    return EntityStore(prog, build_p4info(prog), clock_ns=lambda: next(clock), extras=extras, fast=fast)


def batch_write(client: Client, updates: Sequence[pb.Update],
                atomicity: int = pb.WriteRequest.CONTINUE_ON_ERROR) -> list[tuple[int, str]]:
    """Write ``updates`` in one request as the primary (election id 1, device 1): [] when
    all succeed, else (code, message) of each update from the ``UNKNOWN`` status's details."""
    req = pb.WriteRequest(device_id=1, atomicity=atomicity)
    req.election_id.low = 1
    req.updates.extend(updates)
    try:
        client.stub.Write(req)
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.UNKNOWN, e
        return [(d.canonical_code, d.message) for d in details(e)]
    return []
