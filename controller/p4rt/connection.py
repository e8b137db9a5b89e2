"""One P4Runtime connection to one switch: arbitration, pipeline push, writes, reads,
packet I/O and digests. Any number of connections can live in one process (no
module-level state); each owns a background thread reading its stream, stopped by
:meth:`SwitchConnection.close`.

The parts live beside it: the stream and arbitration in :mod:`controller.p4rt.stream`,
the records and stream codecs in :mod:`controller.p4rt.messages`, the pipeline RPCs in
:mod:`controller.p4rt.pipeline`, Write requests and errors in :mod:`controller.p4rt.writes`
(``CounterData``, ``PacketIn``, ``DigestList`` and ``ATOMICITY`` are importable from here too).

The channel is plaintext unless ``tls=`` gives a :class:`controller.p4rt.tls.ClientTls`
(a switch started with ``--grpc-server-ssl``; with ``--grpc-server-with-client-auth`` the
ClientTls must carry the client's certificate and key).

Example::

    >>> with SwitchConnection("127.0.0.1:9559", device_id=0,
    ...                       election_id=(0, 1)) as sw:           # doctest: +SKIP
    ...     sw.push_pipeline("build/fabric.p4info.txtpb", "build/fabric.json")
    ...     sw.insert(sw.table_entry("FabricIngress.forwarding.routes",
    ...                              {"hdr.ipv4.dst_addr": ("10.0.0.0", 8)},
    ...                              "FabricIngress.forwarding.set_nexthop", {"nexthop_id": 1}))
    ...     sw.read_counter("FabricIngress.telemetry.rx", 1)
    {1: CounterData(packets=0, bytes=0)}
"""
from __future__ import annotations

import logging
import queue
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

import grpc
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller.p4rt import entities as ent
from controller.p4rt.codec import Value
from controller.p4rt.errors import P4RuntimeClientError, WriteError
from controller.p4rt.messages import (CounterData, DigestList, PacketIn, decode_digest_list,
                                      decode_packet_in, digest_ack_request, flatten_p4data,
                                      packet_out_request)
from controller.p4rt.p4info import P4InfoHelper, load_p4info
from controller.p4rt.pipeline import (PUSH_TIMEOUT_MIN_S, read_p4info, read_pipeline_cookie,
                                      set_pipeline_request)
from controller.p4rt.stream import StreamChannel, election_uint128
from controller.p4rt.tls import ClientTls, open_channel
from controller.p4rt.writes import ATOMICITY, write_error, write_request

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MAX_PACKET_INS = 65_536
"""PacketIns a connection keeps unread (its own ``packets`` queue); the rest are dropped
and counted in :attr:`SwitchConnection.packet_ins_dropped`. GOR reads none of them: before
this bound a host flooding punted ARP grew the controller by every PacketIn its leaf sent
(sec-punt-s46: 49,201 from one 3-second flood; at the ARP policer's 100/s per port, the
bound is reached in 11 minutes and holds ~21 MiB of 64-byte ARP PacketIns)."""
log = logging.getLogger("controller.p4rt")


def _uint128(v: p4runtime_pb2.Uint128) -> int:
    return (v.high << 64) | v.low


class SwitchConnection:
    """A P4Runtime client for one device; becomes primary on construction (``arbitrate``).

    ``p4info`` (a :class:`P4InfoHelper`) is set by :meth:`push_pipeline`, by the
    ``p4info=`` argument, or fetched from the switch with :meth:`fetch_pipeline`.
    ``auto_ack_digests`` acknowledges every DigestList as it arrives. ``tls``: connect
    over TLS with these credentials (plaintext when None). PacketIns, DigestLists and
    IdleTimeoutNotifications (raw messages) arrive on the queues ``packets``, ``digests``
    and ``idle_timeouts``; ``events``: one queue for all three instead, in arrival order.
    ``packets`` (without ``events``) keeps at most ``max_packet_ins`` unread; a PacketIn
    arriving to a full queue is dropped and counted in :attr:`packet_ins_dropped`.

    Mastership is watched after :meth:`arbitrate`: when the switch says another client is
    primary now, :attr:`is_primary` turns False, :attr:`mastership_lost_to` holds that
    client's election id, :attr:`mastership_losses` counts it, a warning is logged and
    ``on_mastership(connection)`` is called (the switch's later word that this client is
    primary again turns :attr:`is_primary` back on). Writes keep failing
    ``PERMISSION_DENIED`` meanwhile: the switch decides.
    """

    def __init__(self, addr: str, device_id: int = 0,
                 election_id: Union[int, tuple[int, int]] = (0, 1), *,
                 p4info: Optional[Union[str, Path, p4info_pb2.P4Info]] = None,
                 arbitrate: bool = True, auto_ack_digests: bool = True,
                 timeout_s: float = DEFAULT_TIMEOUT_S, tls: Optional[ClientTls] = None,
                 events: "Optional[queue.Queue[Any]]" = None,
                 on_mastership: Optional[Callable[["SwitchConnection"], None]] = None,
                 max_packet_ins: int = DEFAULT_MAX_PACKET_INS) -> None:
        if max_packet_ins < 1:
            raise ValueError(f"max_packet_ins: {max_packet_ins} (must be >= 1)")
        self.addr, self.device_id, self.timeout_s = addr, device_id, timeout_s
        self.tls = tls
        self.election_id = election_uint128(election_id)
        self.auto_ack_digests = auto_ack_digests
        self.p4info: Optional[P4InfoHelper] = P4InfoHelper(load_p4info(p4info)) \
            if p4info is not None else None
        self.channel = open_channel(addr, tls)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.packets: "queue.Queue[PacketIn]" = events if events is not None else \
            queue.Queue(maxsize=max_packet_ins)
        self.packet_ins_dropped = 0
        """PacketIns dropped because :attr:`packets` was full (nobody read them)."""
        self.digests: "queue.Queue[DigestList]" = events if events is not None else queue.Queue()
        self.idle_timeouts: "queue.Queue[p4runtime_pb2.IdleTimeoutNotification]" = \
            events if events is not None else queue.Queue()
        self.stream_errors: "queue.Queue[p4runtime_pb2.StreamError]" = queue.Queue()
        self._stream: Optional[StreamChannel] = None
        self.is_primary = False
        self.mastership_lost_to: Optional[int] = None
        self.mastership_losses = 0
        self.on_mastership = on_mastership
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout_s)
            self._stream = StreamChannel(addr, on_packet=self._on_packet,
                                         on_digest=self._on_digest,
                                         on_error=self.stream_errors.put,
                                         on_idle=self.idle_timeouts.put,
                                         on_mastership=self._on_mastership)
            self._stream.start(self.stub)
            if arbitrate:
                self.arbitrate()
        except BaseException:
            self.close()
            raise

    # ---------------------------------------------------------------- stream
    def _on_packet(self, pkt: p4runtime_pb2.PacketIn) -> None:
        if self.packets.full():                    # unread: dropped before it is decoded
            self.packet_ins_dropped += 1
            if self.packet_ins_dropped == 1:
                log.warning("%s device %d: %d PacketIns unread, dropping the next ones "
                            "(counted in packet_ins_dropped)", self.addr, self.device_id,
                            self.packets.maxsize)
            return
        self.packets.put(decode_packet_in(self.p4info, pkt))

    def _on_digest(self, dl: p4runtime_pb2.DigestList) -> None:
        decoded = decode_digest_list(self.p4info, dl)
        if self.auto_ack_digests:
            self.ack_digest(dl.digest_id, dl.list_id)
        self.digests.put(decoded)

    def _on_mastership(self, upd: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        if upd.status.code == code_pb2.OK:
            self.is_primary, self.mastership_lost_to = True, None
            log.warning("%s device %d: primary again (election id %d)", self.addr, self.device_id,
                        _uint128(upd.election_id))
        else:
            self.is_primary = False
            self.mastership_losses += 1
            self.mastership_lost_to = _uint128(upd.election_id) if upd.HasField("election_id") else None
            log.warning("%s device %d: mastership lost: %s (primary's election id %s, ours %d)",
                        self.addr, self.device_id, upd.status.message or code_pb2.Code.Name(upd.status.code),
                        self.mastership_lost_to, _uint128(self.election_id))
        if self.on_mastership is not None:
            self.on_mastership(self)

    def _send(self, req: p4runtime_pb2.StreamMessageRequest) -> None:
        if self._stream is None:
            raise P4RuntimeClientError(f"{self.addr}: the stream is closed")
        self._stream.send(req)

    def arbitrate(self) -> None:
        """Send the arbitration request and wait for the answer; raises NotPrimaryError
        unless this connection is now the primary controller."""
        if self._stream is None:
            raise P4RuntimeClientError(f"{self.addr}: the stream is closed")
        self._stream.arbitrate(self.device_id, self.election_id, self.timeout_s)
        self.is_primary = True

    def packet_out(self, payload: bytes, metadata: Optional[Mapping[str, Value]] = None) -> None:
        """Send a PacketOut with ``packet_out`` controller metadata given by name (fields
        left out are sent as 0, since P4Runtime requires every one)."""
        cpm = self._info().packet_metadata("packet_out")
        self._send(packet_out_request(cpm, payload, metadata))

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
        self._send(digest_ack_request(digest_id, list_id))

    @property
    def stream_alive(self) -> bool:
        """False once the stream channel ended (the switch went away or :meth:`close`)."""
        return self._stream is not None and self._stream.alive

    # ---------------------------------------------------------------- pipeline
    def _info(self) -> P4InfoHelper:
        if self.p4info is None:
            raise P4RuntimeClientError("no P4Info: push_pipeline() or fetch_pipeline() first")
        return self.p4info

    def push_pipeline(self, p4info: Union[str, Path, bytes, p4info_pb2.P4Info],
                      device_config: Union[str, Path, bytes], cookie: Optional[int] = None) -> None:
        """SetForwardingPipelineConfig (VERIFY_AND_COMMIT) and keep the P4Info (a P4Info
        message is copied first: see :func:`controller.p4rt.pipeline.set_pipeline_request`)."""
        req, info = set_pipeline_request(self.device_id, self.election_id, p4info,
                                         device_config, cookie)
        self.stub.SetForwardingPipelineConfig(req, timeout=max(self.timeout_s, PUSH_TIMEOUT_MIN_S))
        self.p4info = P4InfoHelper(info)

    def pipeline_cookie(self) -> tuple[bool, Optional[int]]:
        """(whether the switch runs a pipeline, its cookie or None) from
        GetForwardingPipelineConfig(COOKIE_ONLY): a restarted switch answers ``(False, None)``.

        >>> conn.pipeline_cookie()                     # doctest: +SKIP
        (True, 4242)
        """
        return read_pipeline_cookie(self.stub, self.device_id, self.timeout_s)

    def fetch_pipeline(self) -> P4InfoHelper:
        """Read the switch's P4Info (GetForwardingPipelineConfig) and keep it."""
        self.p4info = P4InfoHelper(read_p4info(self.stub, self.device_id, self.timeout_s))
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
        req = write_request(self.device_id, self.election_id, updates, atomicity)
        try:
            self.stub.Write(req, timeout=self.timeout_s)
        except grpc.RpcError as exc:
            raise write_error(exc) from None

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
        yield from self.send_read(self.read_request(*msgs))

    def read_request(self, *msgs: Any) -> p4runtime_pb2.ReadRequest:
        """The ReadRequest :meth:`read` sends for ``msgs``: build it once and give it to
        :meth:`send_read` at each poll (a request of hundreds of counter cells costs more
        to build than to answer, with protobuf's pure-Python runtime)."""
        return p4runtime_pb2.ReadRequest(device_id=self.device_id,
                                         entities=[ent.entity(m) for m in msgs])

    def send_read(self, req: p4runtime_pb2.ReadRequest) -> Iterator[p4runtime_pb2.Entity]:
        """Send a ReadRequest built by :meth:`read_request`; yields every Entity returned."""
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
            vals = flatten_p4data(re_.data)
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

    def meter_entry(self, meter: str, index: Optional[int] = None,
                    config: Optional[tuple[int, int, int, int]] = None) -> p4runtime_pb2.MeterEntry:
        """See :func:`controller.p4rt.entities.meter_entry`."""
        return ent.meter_entry(self._info(), meter, index, config)

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
        if self._stream is not None:
            self._stream.close()
        self.channel.close()
        self.is_primary = False

    def __enter__(self) -> "SwitchConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["ATOMICITY", "ClientTls", "CounterData", "DEFAULT_MAX_PACKET_INS", "DEFAULT_TIMEOUT_S", "DigestList", "PacketIn",
           "SwitchConnection"]
