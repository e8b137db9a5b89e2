"""Pieces the P4Runtime store tests share (test_entities_fast.py, test_wire_writes.py,
test_wire_writes_multi.py, test_write_run.py): the v1model program around a test's
ingress control (``v1model_text.v1model_program``, shared with the native engine's
table tests), an entity store of a program with a counting clock, and a batch Write
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
from v1model_text import v1model_program

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
