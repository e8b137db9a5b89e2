"""Shared pieces of the P4Runtime server tests: a small program with a table, a digest
and @controller_header headers, an in-process device running it through
:class:`p4sim.v1model.switch.V1ModelSwitch`, a minimal entity store, and a client
helper for a real gRPC channel on 127.0.0.1.

Example::

    >>> dev = FakeDevice(device_id=1, cpu_port=255)
    >>> dev.program is None
    True
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Iterator, Optional

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4sim.device import DeviceConfig
from p4sim.engine.program import CompiledProgram
from p4sim.runtime.errors import RuntimeStateError
from p4sim.v1model.switch import V1ModelSwitch

CPU_PORT = 255

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>

@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> _pad; }
@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> _pad; }
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
struct learn_t { bit<48> src; bit<9> port; }
struct headers { packet_out_t packet_out; packet_in_t packet_in; ethernet_t eth; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata m, inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) { 255: parse_po; default: parse_eth; }
    }
    state parse_po { pkt.extract(hdr.packet_out); transition parse_eth; }
    state parse_eth { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers h, inout metadata m) { apply { } }
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action to_cpu() { sm.egress_spec = 255; }
    table dmac {
        key = { hdr.eth.dst: exact; }
        actions = { fwd; to_cpu; drop; NoAction; }
        default_action = NoAction();
        size = 1024;
    }
    apply {
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            digest<learn_t>(1, {hdr.eth.src, sm.ingress_port});
            dmac.apply();
        }
    }
}
control E(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == 255) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
        }
    }
}
control CC(inout headers h, inout metadata m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.packet_in); pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def device_config() -> bytes:
    """The program as p4sim's ``p4_device_config``."""
    return DeviceConfig("server_test.p4", PROGRAM).to_json().encode()


class FakeDevice:
    """A :class:`p4sim.device.Device` that runs frames synchronously (no ports, no queues).

    Frames the pipeline sends to the CPU port go to ``on_packet_in``; the others are
    appended to ``sent``.
    """

    def __init__(self, device_id: int = 1, cpu_port: Optional[int] = CPU_PORT) -> None:
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.lock = threading.RLock()
        self.program: Optional[CompiledProgram] = None
        self.on_packet_in: Optional[Callable[[bytes], None]] = None
        self.digest_event = threading.Event()
        self.sent: list[tuple[int, bytes]] = []
        self.injected: list[bytes] = []
        self._switch: Optional[V1ModelSwitch] = None
        start = time.monotonic_ns()
        # the switch clock (µs), shared with the server (table hits, idle timeouts)
        self.clock_us: Callable[[], int] = lambda: (time.monotonic_ns() - start) // 1000

    def set_program(self, program: Optional[CompiledProgram]) -> None:
        with self.lock:
            self.program = program
            self._switch = (V1ModelSwitch(program, cpu_port=self.cpu_port, on_digest=self.digest_event.set,
                                          clock=self.clock_us)
                            if program is not None else None)

    def inject_cpu(self, frame: bytes) -> None:
        self.injected.append(frame)
        assert self.cpu_port is not None
        self.receive(self.cpu_port, frame)

    def receive(self, port: int, frame: bytes) -> None:
        """A frame arrives on ``port``."""
        with self.lock:
            if self._switch is None:
                return
            out = self._switch.process_packet(port, frame)
        for p, f in out:
            if p == self.cpu_port and self.on_packet_in is not None:
                self.on_packet_in(f)
            else:
                self.sent.append((p, f))

    def port_status(self) -> dict[int, Any]:
        return {}


class FakeStore:
    """A tiny entity store: exact-match table entries (kept, not applied to the
    program) and digest configuration, enough to exercise the server's batch logic."""

    def __init__(self, program: CompiledProgram, p4info: p4info_pb2.P4Info) -> None:
        self.program = program
        self.p4info = p4info
        self.tables = {t.preamble.id for t in p4info.tables}
        self.digests = {d.preamble.id: d.preamble.name for d in p4info.digests}
        self.entries: dict[tuple[int, bytes], p4runtime_pb2.TableEntry] = {}

    def write(self, update: p4runtime_pb2.Update) -> Callable[[], None]:
        U = p4runtime_pb2.Update
        kind = update.entity.WhichOneof("entity")
        if kind == "digest_entry":
            d = update.entity.digest_entry
            name = self.digests.get(d.digest_id)
            if name is None:
                raise RuntimeStateError("NOT_FOUND", f"no digest {d.digest_id}")
            q = self.program.state.digests
            q.set_config(name, d.config.max_timeout_ns, d.config.max_list_size, d.config.ack_timeout_ns)
            return lambda: q.delete_config(name)
        if kind != "table_entry":
            raise RuntimeStateError("UNIMPLEMENTED", f"{kind}")
        te = update.entity.table_entry
        if te.table_id not in self.tables:
            raise RuntimeStateError("NOT_FOUND", f"no table {te.table_id}")
        key = (te.table_id, b"".join(m.exact.value for m in te.match))
        old = self.entries.get(key)
        if update.type == U.INSERT:
            if old is not None:
                raise RuntimeStateError("ALREADY_EXISTS", "entry exists")
            self.entries[key] = te
            return lambda: self.entries.pop(key)
        if old is None:
            raise RuntimeStateError("NOT_FOUND", "no such entry")
        if update.type == U.DELETE:
            del self.entries[key]
        else:
            self.entries[key] = te
        return lambda: self.entries.__setitem__(key, old)

    def read(self, entity: p4runtime_pb2.Entity,
             new_entity: Callable[[], p4runtime_pb2.Entity] = p4runtime_pb2.Entity,
             add_wire: Optional[Callable[[bytes, int], None]] = None
             ) -> Iterator[p4runtime_pb2.Entity]:
        te = entity.table_entry
        if entity.WhichOneof("entity") != "table_entry":
            raise RuntimeStateError("UNIMPLEMENTED", "only table entries")
        if te.table_id and te.table_id not in self.tables:
            raise RuntimeStateError("NOT_FOUND", f"no table {te.table_id}")
        for (tid, _), e in sorted(self.entries.items()):
            if te.table_id in (0, tid):
                ent = new_entity()
                ent.table_entry.CopyFrom(e)
                yield ent


class Client:
    """A P4Runtime client on a real channel: stubs plus a StreamChannel with a queue of
    received messages."""

    def __init__(self, port: int, device_id: int = 1) -> None:
        self.device_id = device_id
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._out: "queue.Queue[Optional[p4runtime_pb2.StreamMessageRequest]]" = queue.Queue()
        self.received: "queue.Queue[Any]" = queue.Queue()
        self.stream_error: Optional[grpc.RpcError] = None
        self._stream = self.stub.StreamChannel(iter(self._out.get, None))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for msg in self._stream:
                self.received.put(msg)
        except grpc.RpcError as e:
            self.stream_error = e
        self.received.put(None)

    def send(self, msg: p4runtime_pb2.StreamMessageRequest) -> None:
        self._out.put(msg)

    def arbitrate(self, election_id: Optional[int], role: str = "", device_id: Optional[int] = None) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id if device_id is None else device_id
        if role:
            req.arbitration.role.name = role
        if election_id is not None:
            req.arbitration.election_id.low = election_id
        self.send(req)

    def next(self, kind: str, timeout: float = 5.0) -> Any:
        """The next received stream message of ``kind`` (others are skipped); None at end."""
        while True:
            msg = self.received.get(timeout=timeout)
            if msg is None:
                return None
            if msg.WhichOneof("update") == kind:
                return msg

    def close(self) -> None:
        self._out.put(None)
        self.channel.close()
