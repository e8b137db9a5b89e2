"""One P4Runtime connection to one switch: arbitration, pipeline push, writes, reads,
packet I/O and digests. Any number of connections can live in one process (no
module-level state); each owns a background thread reading its stream, stopped by
:meth:`SwitchConnection.close`.

Example::

    >>> with SwitchConnection("127.0.0.1:50051", device_id=0,
    ...                       election_id=(0, 1)) as sw:           # doctest: +SKIP
    ...     sw.push_pipeline("build/fabric.p4info.txtpb", "build/fabric.json")
    ...     sw.insert(sw.table_entry("FabricIngress.forwarding.routes",
    ...                              {"hdr.ipv4.dst_addr": ("10.0.0.0", 8)},
    ...                              "FabricIngress.forwarding.set_nexthop", {"nexthop_id": 1}))
    ...     sw.read_counter("FabricIngress.telemetry.rx", 1)
    {1: CounterData(packets=0, bytes=0)}
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller.p4rt import entities as ent
from controller.p4rt.codec import Value, decode, encode
from controller.p4rt.errors import NotPrimaryError, P4RuntimeClientError, UpdateError, WriteError
from controller.p4rt.p4info import P4InfoHelper, load_p4info

DEFAULT_TIMEOUT_S = 10.0
ATOMICITY = {
    "CONTINUE_ON_ERROR": p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR,
    "ROLLBACK_ON_ERROR": p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
    "DATAPLANE_ATOMIC": p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC,
}


@dataclass(frozen=True, slots=True)
class CounterData:
    """Packets and bytes of one counter cell.

    >>> CounterData(packets=3, bytes=180).packets
    3
    """

    packets: int
    bytes: int


@dataclass(slots=True)
class PacketIn:
    """A PacketIn: ``payload`` and its ``metadata`` by name (ints).

    >>> PacketIn(b"\\x00", {"ingress_port": 1}).metadata["ingress_port"]
    1
    """

    payload: bytes
    metadata: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class DigestList:
    """One DigestList: the digest's name, list id, and one dict per message (member → int).

    >>> DigestList("flow_sample_t", 1, [{"src_addr": 1}]).data[0]["src_addr"]
    1
    """

    name: str
    list_id: int
    data: list[dict[str, int]]
    timestamp_ns: int = 0


def _election(eid: Union[int, tuple[int, int]]) -> p4runtime_pb2.Uint128:
    high, low = (0, eid) if isinstance(eid, int) else eid
    return p4runtime_pb2.Uint128(high=high, low=low)


def _read_bytes(source: Union[str, Path, bytes]) -> bytes:
    return source if isinstance(source, bytes) else Path(source).read_bytes()


def _flatten_p4data(data: p4runtime_pb2.P4Data) -> list[int]:
    kind = data.WhichOneof("data")
    if kind == "bitstring":
        return [decode(data.bitstring)]
    if kind == "struct":
        return [v for m in data.struct.members for v in _flatten_p4data(m)]
    if kind == "tuple":
        return [v for m in data.tuple.members for v in _flatten_p4data(m)]
    if kind == "bool":
        return [int(data.bool)]
    return [0]


class SwitchConnection:
    """A P4Runtime client for one device; becomes primary on construction (``arbitrate``).

    ``p4info`` (a :class:`P4InfoHelper`) is set by :meth:`push_pipeline`, by the
    ``p4info=`` argument, or fetched from the switch with :meth:`fetch_pipeline`.
    ``auto_ack_digests`` acknowledges every DigestList as it arrives.
    """

    def __init__(self, addr: str, device_id: int = 0,
                 election_id: Union[int, tuple[int, int]] = (0, 1), *,
                 p4info: Optional[Union[str, Path, p4info_pb2.P4Info]] = None,
                 arbitrate: bool = True, auto_ack_digests: bool = True,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.addr, self.device_id, self.timeout_s = addr, device_id, timeout_s
        self.election_id = _election(election_id)
        self.auto_ack_digests = auto_ack_digests
        self.p4info: Optional[P4InfoHelper] = P4InfoHelper(load_p4info(p4info)) \
            if p4info is not None else None
        self.channel = grpc.insecure_channel(addr)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._requests: "queue.Queue[Optional[p4runtime_pb2.StreamMessageRequest]]" = queue.Queue()
        self._arbitration: "queue.Queue[p4runtime_pb2.MasterArbitrationUpdate]" = queue.Queue()
        self.packets: "queue.Queue[PacketIn]" = queue.Queue()
        self.digests: "queue.Queue[DigestList]" = queue.Queue()
        self.stream_errors: "queue.Queue[p4runtime_pb2.StreamError]" = queue.Queue()
        self._closed = threading.Event()
        self._stream: Any = None
        self._reader: Optional[threading.Thread] = None
        self.is_primary = False
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout_s)
            self._stream = self.stub.StreamChannel(iter(self._requests.get, None))
            self._reader = threading.Thread(target=self._read_stream, daemon=True,
                                            name=f"p4rt-stream-{addr}")
            self._reader.start()
            if arbitrate:
                self.arbitrate()
        except BaseException:
            self.close()
            raise

    # ---------------------------------------------------------------- stream
    def _read_stream(self) -> None:
        try:
            for msg in self._stream:
                kind = msg.WhichOneof("update")
                if kind == "arbitration":
                    self._arbitration.put(msg.arbitration)
                elif kind == "packet":
                    self.packets.put(self._decode_packet_in(msg.packet))
                elif kind == "digest":
                    self._on_digest(msg.digest)
                elif kind == "error":
                    self.stream_errors.put(msg.error)
        except grpc.RpcError:
            pass
        finally:
            self._closed.set()

    def _decode_packet_in(self, pkt: p4runtime_pb2.PacketIn) -> PacketIn:
        names: dict[int, str] = {}
        cpm = self.p4info.packet_metadata("packet_in") if self.p4info else None
        if cpm is not None:
            names = {m.id: m.name for m in cpm.metadata}
        md = {names.get(m.metadata_id, str(m.metadata_id)): decode(m.value) for m in pkt.metadata}
        return PacketIn(bytes(pkt.payload), md)

    def _on_digest(self, dl: p4runtime_pb2.DigestList) -> None:
        name, fields = str(dl.digest_id), []
        if self.p4info is not None and self.p4info.has("digest", dl.digest_id):
            name = self.p4info.get_name("digest", dl.digest_id)
            fields = self.p4info.digest_field_names(dl.digest_id)
        rows = []
        for d in dl.data:
            values = _flatten_p4data(d)
            keys = fields if len(fields) == len(values) else \
                [f"field_{i}" for i in range(len(values))]
            rows.append(dict(zip(keys, values)))
        if self.auto_ack_digests:
            self.ack_digest(dl.digest_id, dl.list_id)
        self.digests.put(DigestList(name, dl.list_id, rows, dl.timestamp))

    def _send(self, req: p4runtime_pb2.StreamMessageRequest) -> None:
        if self._closed.is_set():
            raise P4RuntimeClientError(f"{self.addr}: the stream is closed")
        self._requests.put(req)

    def arbitrate(self) -> None:
        """Send the arbitration request and wait for the answer; raises NotPrimaryError
        unless this connection is now the primary controller."""
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.CopyFrom(self.election_id)
        self._send(req)
        try:
            resp = self._arbitration.get(timeout=self.timeout_s)
        except queue.Empty:
            raise NotPrimaryError(self.addr, self.device_id,
                                  "no arbitration answer (stream closed or timed out)") from None
        if resp.status.code != code_pb2.OK:
            raise NotPrimaryError(self.addr, self.device_id,
                                  f"{code_pb2.Code.Name(resp.status.code)} {resp.status.message}")
        self.is_primary = True

    def packet_out(self, payload: bytes, metadata: Optional[Mapping[str, Value]] = None) -> None:
        """Send a PacketOut with ``packet_out`` controller metadata given by name (fields
        left out are sent as 0, since P4Runtime requires every one)."""
        msg = p4runtime_pb2.StreamMessageRequest()
        msg.packet.payload = payload
        cpm = self._info().packet_metadata("packet_out")
        given = dict(metadata or {})
        if cpm is not None:
            for m in cpm.metadata:
                msg.packet.metadata.add(metadata_id=m.id,
                                        value=encode(given.pop(m.name, 0), m.bitwidth))
        if given:
            raise ValueError(f"unknown packet_out metadata {sorted(given)}")
        self._send(msg)

    def get_packet_in(self, timeout_s: Optional[float] = None) -> Optional[PacketIn]:
        """The next PacketIn, or None after ``timeout_s`` (default: the connection's)."""
        try:
            return self.packets.get(timeout=self.timeout_s if timeout_s is None else timeout_s)
        except queue.Empty:
            return None

    def get_digest(self, timeout_s: Optional[float] = None) -> Optional[DigestList]:
        """The next DigestList, or None after ``timeout_s``."""
        try:
            return self.digests.get(timeout=self.timeout_s if timeout_s is None else timeout_s)
        except queue.Empty:
            return None

    def ack_digest(self, digest_id: int, list_id: int) -> None:
        """Acknowledge a DigestList (needed unless ``auto_ack_digests``)."""
        msg = p4runtime_pb2.StreamMessageRequest()
        msg.digest_ack.digest_id, msg.digest_ack.list_id = digest_id, list_id
        self._send(msg)

    # ---------------------------------------------------------------- pipeline
    def _info(self) -> P4InfoHelper:
        if self.p4info is None:
            raise P4RuntimeClientError("no P4Info: push_pipeline() or fetch_pipeline() first")
        return self.p4info

    def push_pipeline(self, p4info: Union[str, Path, bytes, p4info_pb2.P4Info],
                      device_config: Union[str, Path, bytes], cookie: Optional[int] = None) -> None:
        """SetForwardingPipelineConfig (VERIFY_AND_COMMIT) and keep the P4Info.

        A P4Info message is copied first: callers push one message to many switches from
        many threads, and the pure-Python protobuf runtime mutates a message when an unset
        sub-message is merely read (``dictionary changed size during iteration``)."""
        info = load_p4info(p4info)
        if info is p4info:
            own = p4info_pb2.P4Info()
            own.MergeFromString(info.SerializeToString())
            info = own
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, election_id=self.election_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.config.p4info.CopyFrom(info)
        req.config.p4_device_config = _read_bytes(device_config)
        if cookie is not None:
            req.config.cookie.cookie = cookie
        self.stub.SetForwardingPipelineConfig(req, timeout=max(self.timeout_s, 60.0))
        self.p4info = P4InfoHelper(info)

    def pipeline_cookie(self) -> tuple[bool, Optional[int]]:
        """(whether the switch runs a pipeline, its cookie or None) from
        GetForwardingPipelineConfig(COOKIE_ONLY): a restarted switch answers ``(False, None)``.

        >>> conn.pipeline_cookie()                     # doctest: +SKIP
        (True, 4242)
        """
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.COOKIE_ONLY)
        try:
            resp = self.stub.GetForwardingPipelineConfig(req, timeout=self.timeout_s)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.FAILED_PRECONDITION:  # type: ignore[attr-defined]
                return False, None
            raise
        if not resp.HasField("config"):
            return False, None
        cfg = resp.config
        return True, (cfg.cookie.cookie if cfg.HasField("cookie") else None)

    @property
    def stream_alive(self) -> bool:
        """False once the stream channel ended (the switch went away or :meth:`close`)."""
        return not self._closed.is_set()

    def fetch_pipeline(self) -> P4InfoHelper:
        """Read the switch's P4Info (GetForwardingPipelineConfig) and keep it."""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        resp = self.stub.GetForwardingPipelineConfig(req, timeout=self.timeout_s)
        self.p4info = P4InfoHelper(resp.config.p4info)
        return self.p4info

    # ---------------------------------------------------------------- builders
    def table_entry(self, table: str, match: Optional[Mapping[str, ent.MatchValue]] = None,
                    action: Optional[str] = None, params: Optional[Mapping[str, Value]] = None,
                    priority: int = 0, is_default: bool = False) -> p4runtime_pb2.TableEntry:
        """See :func:`controller.p4rt.entities.table_entry`."""
        return ent.table_entry(self._info(), table, match, action, params, priority, is_default)

    # ---------------------------------------------------------------- write / read
    def write(self, updates: Iterable[p4runtime_pb2.Update],
              atomicity: str = "CONTINUE_ON_ERROR") -> None:
        """One Write RPC; raises WriteError with the failed updates."""
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id, election_id=self.election_id,
                                         updates=list(updates), atomicity=ATOMICITY[atomicity])
        try:
            self.stub.Write(req, timeout=self.timeout_s)
        except grpc.RpcError as exc:
            raise self._write_error(exc) from None

    @staticmethod
    def _write_error(exc: grpc.RpcError) -> WriteError:
        errors: list[UpdateError] = []
        for key, value in (exc.trailing_metadata() or ()):  # type: ignore[attr-defined]
            if key == "grpc-status-details-bin":
                st = status_pb2.Status()
                st.ParseFromString(value)
                for i, detail in enumerate(st.details):
                    err = p4runtime_pb2.Error()
                    if detail.Unpack(err) and err.canonical_code != code_pb2.OK:
                        errors.append(UpdateError(i, code_pb2.Code.Name(err.canonical_code),
                                                  err.message))
        return WriteError(f"Write failed ({exc.code().name}: {exc.details()})",  # type: ignore[attr-defined]
                          errors)

    def insert(self, *msgs: Any) -> None:
        """INSERT entities in one batch."""
        self.write([ent.update(m, "INSERT") for m in msgs])

    def modify(self, *msgs: Any) -> None:
        """MODIFY entities in one batch."""
        self.write([ent.update(m, "MODIFY") for m in msgs])

    def delete(self, *msgs: Any) -> None:
        """DELETE entities in one batch."""
        self.write([ent.update(m, "DELETE") for m in msgs])

    def read(self, *msgs: Any) -> Iterator[p4runtime_pb2.Entity]:
        """Read entities (wildcards allowed); yields every Entity returned."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id,
                                        entities=[ent.entity(m) for m in msgs])
        for resp in self.stub.Read(req, timeout=self.timeout_s):
            yield from resp.entities

    def read_table(self, table: str) -> list[p4runtime_pb2.TableEntry]:
        """Every entry of ``table`` (not the default entry)."""
        wildcard = p4runtime_pb2.TableEntry(table_id=self._info().table_id(table))
        return [e.table_entry for e in self.read(wildcard)]

    def clear_table(self, table: str) -> int:
        """Delete every entry of ``table``; returns how many were deleted."""
        entries = self.read_table(table)
        if entries:
            self.delete(*entries)
        return len(entries)

    def read_counter(self, counter: str, index: Optional[int] = None) -> dict[int, CounterData]:
        """Cells of an indirect counter (all with ``index=None``): index → CounterData."""
        out: dict[int, CounterData] = {}
        for e in self.read(ent.counter_entry(self._info(), counter, index)):
            ce = e.counter_entry
            out[ce.index.index] = CounterData(ce.data.packet_count, ce.data.byte_count)
        return out

    def read_register(self, register: str, index: Optional[int] = None) -> dict[int, int]:
        """Cells of a register (all with ``index=None``): index → value."""
        out: dict[int, int] = {}
        for e in self.read(ent.register_entry(self._info(), register, index)):
            re_ = e.register_entry
            vals = _flatten_p4data(re_.data)
            out[re_.index.index] = vals[0] if vals else 0
        return out

    def write_register(self, register: str, index: int, value: Value) -> None:
        """Set one register cell (a MODIFY update)."""
        self.modify(ent.register_entry(self._info(), register, index, value))

    def insert_multicast_group(self, group_id: int,
                               replicas: Sequence[Union[int, tuple[int, int]]]) -> None:
        """Create multicast group ``group_id`` with ports or (port, instance) replicas."""
        self.insert(ent.multicast_group(group_id, replicas))

    def insert_clone_session(self, session_id: int,
                             replicas: Sequence[Union[int, tuple[int, int]]],
                             class_of_service: int = 0, packet_length_bytes: int = 0) -> None:
        """Create clone session ``session_id`` towards the given ports."""
        self.insert(ent.clone_session(session_id, replicas, class_of_service,
                                      packet_length_bytes))

    def enable_digest(self, digest: str, max_timeout_ns: int = 0, max_list_size: int = 1,
                      ack_timeout_ns: int = 1_000_000_000) -> None:
        """Enable a digest (INSERT its DigestEntry; MODIFY if it exists already)."""
        de = ent.digest_entry(self._info(), digest, max_timeout_ns, max_list_size, ack_timeout_ns)
        try:
            self.insert(de)
        except WriteError as exc:
            if "ALREADY_EXISTS" not in exc.codes():
                raise
            self.modify(de)

    # ---------------------------------------------------------------- lifetime
    def close(self) -> None:
        """End the stream, join the reader thread and close the channel (idempotent)."""
        self._requests.put(None)
        if self._stream is not None:
            self._stream.cancel()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=5)
        self._closed.set()
        self.channel.close()
        self.is_primary = False

    def __enter__(self) -> "SwitchConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
