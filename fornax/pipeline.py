"""The SmartNIC as the manager sees it: one P4Runtime connection
(:class:`controller.p4rt.SwitchConnection`) and typed operations on the tables of
``p4src/smartnic/smartnic.p4`` — the NIC's identity, ports, VPCs, next hops, the
load-balancer reverse map, policy scopes, session entries (built and decoded by a codec
that knows the table's ids), packet I/O with the op header, heartbeats — and the events
that come back (PacketIn punts, TCP digests, idle timeouts) decoded with
:mod:`p4src.smartnic.model`.

Only what BMv2's P4Runtime serves is used: table writes and reads, direct counters,
digests, idle-timeout notifications, PacketIn/PacketOut; never a register.

Example::

    >>> nic = SmartNic("127.0.0.1:9559", device_id=1)                 # doctest: +SKIP
    >>> nic.push("build/fornax/smartnic.p4info.txtpb", "build/fornax/smartnic.json")  # doctest: +SKIP
    >>> nic.set_vm_port(2, vni=100)                                   # doctest: +SKIP
    >>> nic.write_sessions([("INSERT", key, data, 10_000_000_000)])   # doctest: +SKIP
    []
"""
from __future__ import annotations

import queue
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

from p4.v1 import p4runtime_pb2

from controller.p4rt import SwitchConnection, WriteError
from controller.p4rt.codec import decode, encode
from controller.p4rt.entities import update
from controller.p4rt.p4info import P4InfoHelper
from controller.p4rt.tls import ClientTls
from p4src.smartnic import model as M

SessionWrite = tuple[str, M.SessionKey, Optional[M.SessionData], int]
"""(``INSERT``/``MODIFY``/``DELETE``, key, data (None for DELETE), idle timeout in ns)."""

WRITE_GAP_S = 0.01
"""The least time between the starts of two session Writes of a manager's event loop:
the first event after a quiet spell is written at once; the later ones of a burst wait
for the rest of the gap and share one Write. Each Write RPC costs ~0.2 ms of gRPC-Python
CPU in the manager whatever its size; at 10^5 sessions, written as they came, a policy
change's burst of 5,000 re-evaluations went out in 300-870 Writes."""


@dataclass(frozen=True, slots=True)
class WriteFailure:
    """One session update the switch refused: its index in the batch, the canonical code
    (``RESOURCE_EXHAUSTED`` when the table is full) and the switch's message."""

    index: int
    code: str
    message: str


_ONE_BYTE = [bytes((i,)) for i in range(0x80)]


def _varint(n: int) -> bytes:
    """Protobuf's base-128 varint of ``n`` >= 0."""
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _tag(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


# wire types and field numbers of p4runtime.proto (p4.v1) the session codec writes
_LEN, _VARINT = 2, 0
_UPDATE_TYPE = {op: _tag(1, _VARINT) + _varint(n)                     # Update.type
                for op, n in (("INSERT", 1), ("MODIFY", 2), ("DELETE", 3))}
_UPDATE_ENTITY = _tag(2, _LEN)                                        # Update.entity
_ENTITY_TABLE_ENTRY = _tag(2, _LEN)                                   # Entity.table_entry
_ENTRY_ACTION = _tag(3, _LEN)                                         # TableEntry.action
_TABLE_ACTION_ACTION = _tag(1, _LEN)                                  # TableAction.action
_ENTRY_IDLE_TIMEOUT = _tag(9, _VARINT)                                # TableEntry.idle_timeout_ns


class _FieldCodec:
    """One match field or action parameter in wire format: the bytes before a value of
    each length n (1..bytes of the width), and the whole encoding of each value below
    256 (most parameters: verdicts, versions, generations)."""

    __slots__ = ("width", "prefixes", "small")

    def __init__(self, head: bytes, width: int, exact: bool) -> None:
        self.width = width
        self.prefixes = [b""]
        for n in range(1, max(1, (width + 7) // 8) + 1):
            if exact:       # TableEntry.match (2): FieldMatch{field_id, exact (2): {value (1)}}
                inner = head + _tag(2, _LEN) + _varint(n + 2) + _tag(1, _LEN) + _varint(n)
                outer = _tag(2, _LEN)
            else:           # Action.params (4): Param{param_id, value (3)}
                inner = head + _tag(3, _LEN) + _varint(n)
                outer = _tag(4, _LEN)
            self.prefixes.append(outer + _varint(len(inner) + n) + inner)
        self.small = [self.prefixes[1] + bytes((v,)) for v in range(min(256, 1 << width))]

    def encode(self, v: int) -> bytes:
        """The field with value ``v`` (canonical bytes); ValueError when it does not fit."""
        if 0 <= v < len(self.small):
            return self.small[v]
        if v < 0 or v >> self.width:
            encode(v, self.width)               # raises the P4Runtime codec's ValueError
        n = (v.bit_length() + 7) >> 3
        return self.prefixes[n] + v.to_bytes(n, "big")


class SessionCodec:
    """Session entries to and from P4Runtime ``TableEntry`` messages, with the ids of the
    session table read once from the P4Info (building one through names costs more than
    the write; the bench installs 10^5 of them).

    An entry is encoded straight to protobuf's wire format from prefixes computed here
    (field ids, widths), then parsed once by protobuf: filling the message field by field
    through the Python API cost ~3x more per entry. Values are canonical (shortest)
    P4Runtime bytestrings, as :func:`controller.p4rt.codec.encode` gives; a value too wide
    for its field raises the same ValueError. ``tests/fornax/test_fornax_pipeline.py``
    checks the bytes against the message built field by field.

    >>> codec = SessionCodec(info)                                       # doctest: +SKIP
    >>> codec.decode(codec.entry(key, data, 0))[0] == key                # doctest: +SKIP
    True
    """

    def __init__(self, info: P4InfoHelper) -> None:
        self.table_id = info.table_id(M.SESSIONS_TABLE)
        self.field_ids = [info.match_field_id(M.SESSIONS_TABLE, f) for f in M.SESSION_KEY_FIELDS]
        self.field_widths = [info.match_field(M.SESSIONS_TABLE, f).bitwidth
                             for f in M.SESSION_KEY_FIELDS]
        self.action_id = info.action_id(M.SESSION_HIT_ACTION)
        action = info.get("action", M.SESSION_HIT_ACTION)
        self.params = [(p.id, p.name, p.bitwidth) for p in action.params]
        self._param_names = {p.id: p.name for p in action.params}
        self._field_pos = {fid: i for i, fid in enumerate(self.field_ids)}
        names = list(M.SessionData.__slots__)
        if sorted(n for _, n, _ in self.params) != sorted(names):
            raise ValueError(f"{M.SESSION_HIT_ACTION}: parameters "
                             f"{sorted(n for _, n, _ in self.params)}, the model has {names}")
        self._table = _tag(1, _VARINT) + _varint(self.table_id)      # TableEntry.table_id
        self._match = [_FieldCodec(_tag(1, _VARINT) + _varint(fid), width, exact=True)
                       for fid, width in zip(self.field_ids, self.field_widths)]
        # the parameters in the P4Info's order, each with its SessionData field's position
        self._param = [(_FieldCodec(_tag(2, _VARINT) + _varint(pid), width, exact=False),
                        names.index(name)) for pid, name, width in self.params]
        self._action_id = _tag(1, _VARINT) + _varint(self.action_id)  # Action.action_id

    def key_bytes(self, key: M.SessionKey) -> bytes:
        """The wire format of the TableEntry holding only the match of ``key``."""
        m = self._match
        return b"".join((self._table, m[0].encode(key.vni), m[1].encode(key.proto),
                         m[2].encode(key.ip_lo), m[3].encode(key.ip_hi),
                         m[4].encode(key.port_lo), m[5].encode(key.port_hi)))

    def entry_bytes(self, key: M.SessionKey, data: M.SessionData,
                    idle_timeout_ns: int = 0) -> bytes:
        """The wire format of the full entry (see :meth:`entry`)."""
        values = (data.verdict, data.scope, data.version, data.slot, data.gen, data.nh_lo,
                  data.nh_hi, data.nat_side, data.nat_ip, data.nat_port, data.check)
        act = self._action_id + b"".join([f.encode(values[i]) for f, i in self._param])
        table_action = _TABLE_ACTION_ACTION + _varint(len(act)) + act
        out = self.key_bytes(key) + _ENTRY_ACTION + _varint(len(table_action)) + table_action
        if idle_timeout_ns:
            out += _ENTRY_IDLE_TIMEOUT + _varint(idle_timeout_ns)
        return out

    def key_entry(self, key: M.SessionKey) -> p4runtime_pb2.TableEntry:
        """A TableEntry holding only the match of ``key`` (a DELETE or a Read)."""
        return p4runtime_pb2.TableEntry.FromString(self.key_bytes(key))

    def entry(self, key: M.SessionKey, data: M.SessionData,
              idle_timeout_ns: int = 0) -> p4runtime_pb2.TableEntry:
        """The full entry (``data`` must carry its check code: :meth:`SessionData.with_check`)."""
        return p4runtime_pb2.TableEntry.FromString(self.entry_bytes(key, data, idle_timeout_ns))

    def update(self, op: str, key: M.SessionKey, data: Optional[M.SessionData],
               idle_timeout_ns: int = 0) -> p4runtime_pb2.Update:
        """The Update ``op`` (INSERT/MODIFY/DELETE) of one session entry (``data`` None:
        the key only)."""
        te = self.key_bytes(key) if data is None else self.entry_bytes(key, data,
                                                                       idle_timeout_ns)
        entity = _ENTITY_TABLE_ENTRY + _varint(len(te)) + te
        return p4runtime_pb2.Update.FromString(
            _UPDATE_TYPE[op.upper()] + _UPDATE_ENTITY + _varint(len(entity)) + entity)

    def decode(self, te: p4runtime_pb2.TableEntry) -> tuple[M.SessionKey, Optional[M.SessionData]]:
        """(key, action data or None when the entry carries no action) of a read-back or
        notified entry; ValueError for an entry of another table or a partial key."""
        if te.table_id != self.table_id:
            raise ValueError(f"table id {te.table_id} is not the session table's")
        values = [0] * len(self.field_ids)
        seen = 0
        for fm in te.match:
            pos = self._field_pos.get(fm.field_id)
            if pos is None:
                raise ValueError(f"unknown match field id {fm.field_id}")
            values[pos] = decode(fm.exact.value)
            seen += 1
        if seen != len(self.field_ids):
            raise ValueError(f"session key with {seen} of {len(self.field_ids)} fields")
        key = M.SessionKey(*values)
        if not te.HasField("action"):
            return key, None
        params = {self._param_names[p.param_id]: decode(p.value)
                  for p in te.action.action.params if p.param_id in self._param_names}
        return key, M.SessionData.from_params(params)


class SmartNic:
    """One SmartNIC over P4Runtime (the primary controller of its device).

    ``events``: a queue that receives, in arrival order, every PacketIn
    (:class:`controller.p4rt.PacketIn`), DigestList and raw ``IdleTimeoutNotification``
    (default: a queue of its own, :attr:`events`). ``tls``: the switch's TLS credentials.
    ``digest_timeout_ns`` and ``digest_list_size``: the TCP digest's ``max_timeout_ns``
    and ``max_list_size`` (default 0 and 1: each event a list of its own, sent at once;
    the manager lets the NIC gather the transitions of a few ms into one list).
    """

    def __init__(self, addr: str, device_id: int = 0,
                 election_id: Union[int, tuple[int, int]] = (0, 1), *,
                 tls: Optional[ClientTls] = None, events: "Optional[queue.Queue[Any]]" = None,
                 timeout_s: float = 10.0, digest_timeout_ns: int = 0,
                 digest_list_size: int = 1) -> None:
        self.digest_timeout_ns, self.digest_list_size = digest_timeout_ns, digest_list_size
        self.events: "queue.Queue[Any]" = events if events is not None else queue.Queue()
        self.conn = SwitchConnection(addr, device_id, election_id, tls=tls, events=self.events,
                                     timeout_s=timeout_s)
        self.addr = addr
        self.codec: Optional[SessionCodec] = None

    # ---------------------------------------------------------------- pipeline
    def push(self, p4info: Union[str, Path, bytes], device_config: Union[str, Path, bytes],
             cookie: Optional[int] = None) -> None:
        """Push the program and enable the TCP digest (lists as the constructor says)."""
        self.conn.push_pipeline(p4info, device_config, cookie)
        self._ready()

    def attach(self) -> None:
        """Use the pipeline the switch already runs (a restarted manager)."""
        self.conn.fetch_pipeline()
        self._ready()

    def _ready(self) -> None:
        info = self.info
        self.codec = SessionCodec(info)
        if info.has("digest", M.TCP_DIGEST):
            self.conn.enable_digest(M.TCP_DIGEST, max_timeout_ns=self.digest_timeout_ns,
                                    max_list_size=self.digest_list_size)

    @property
    def info(self) -> P4InfoHelper:
        """The P4Info of the running program."""
        assert self.conn.p4info is not None, "push() or attach() first"
        return self.conn.p4info

    @property
    def has_tcp_state(self) -> bool:
        """True for the FORNAX build (the software-centric build has no TCP digest)."""
        return self.info.has("digest", M.TCP_DIGEST)

    # ---------------------------------------------------------------- configuration
    def _put(self, table: str, match: Optional[dict[str, Any]], action: str,
             params: dict[str, Any], default: bool = False) -> None:
        te = self.conn.table_entry(table, match, action, params, is_default=default)
        if default:
            self.conn.modify(te)
            return
        try:
            self.conn.insert(te)
        except WriteError as exc:
            if exc.codes() != ["ALREADY_EXISTS"]:
                raise
            self.conn.modify(te)

    def set_identity(self, nic: M.NicIdentity) -> None:
        """``nic_info.config``: VTEP, uplink MAC, underlay next hop MAC, VM gateway MAC."""
        self._put(M.NIC_TABLE, None, M.NIC_ACTION, nic.params(), default=True)

    def set_vm_port(self, port: int, vni: int, software: bool = False) -> None:
        """Port ``port`` faces a VM of VPC ``vni`` (``software``: pinned to software)."""
        self._put(M.PORTS_TABLE, {"meta.in_port": port}, M.VM_PORT_ACTION,
                  {"vni": vni, "software": int(software)})

    def set_uplink(self, port: int = M.UPLINK_PORT) -> None:
        """Port ``port`` (1) is the uplink."""
        self._put(M.PORTS_TABLE, {"meta.in_port": port}, M.UPLINK_ACTION, {})

    def set_vpc(self, vni: int, software: bool = False) -> None:
        """This NIC serves VPC ``vni`` (``software``: the whole VPC pinned to software)."""
        self._put(M.VPCS_TABLE, {"meta.vni": vni}, M.VPC_ACTION, {"software": int(software)})

    def set_nexthop_vm(self, nexthop: int, port: int, vm_mac: int) -> None:
        """Next hop ``nexthop``: the local VM on ``port``."""
        self._put(M.NEXTHOPS_TABLE, {"meta.nexthop": nexthop}, M.TO_VM_ACTION,
                  {"port": port, "vm_mac": vm_mac})

    def set_nexthop_remote(self, nexthop: int, vtep_ip: int, vm_mac: int) -> None:
        """Next hop ``nexthop``: a VM behind the NIC whose VTEP is ``vtep_ip``."""
        self._put(M.NEXTHOPS_TABLE, {"meta.nexthop": nexthop}, M.TO_REMOTE_ACTION,
                  {"vtep_ip": vtep_ip, "vm_mac": vm_mac})

    def delete_nexthop(self, nexthop: int) -> None:
        """Remove next hop ``nexthop`` (a VM gone from the policy)."""
        self.conn.delete(self.conn.table_entry(M.NEXTHOPS_TABLE, {"meta.nexthop": nexthop}))

    def set_lb_reverse(self, vni: int, proto: int, backend_ip: int, backend_port: int,
                       vip: int, vip_port: int) -> None:
        """A packet from ``backend_ip:backend_port`` of a local VM is keyed as from the VIP."""
        self._put(M.LB_REVERSE_TABLE, {"meta.vni": vni, "hdr.ipv4.protocol": proto,
                                        "hdr.ipv4.src_addr": backend_ip,
                                        "meta.l4_src": backend_port},
                  M.FROM_BACKEND_ACTION, {"vip": vip, "vip_port": vip_port})

    def apply_config(self, want: dict[tuple[Any, ...], tuple[Any, ...]],
                     written: dict[tuple[Any, ...], tuple[Any, ...]]
                     ) -> dict[tuple[Any, ...], tuple[Any, ...]]:
        """Bring the configuration tables from ``written`` (what this connection wrote
        before; empty at the start) to ``want`` (:meth:`fornax.nicview.NicView.config_entries`):
        only what changed is written, what went is deleted. Returns ``want``."""
        for key, params in want.items():
            if written.get(key) == params and key in written:
                continue
            kind = key[0]
            if kind == "nic":
                self.set_identity(M.NicIdentity(*params))
            elif kind == "uplink":
                self.set_uplink(key[1])
            elif kind == "port":
                self.set_vm_port(key[1], params[0])
            elif kind == "vpc":
                self.set_vpc(key[1])
            elif kind == "nh":
                port, mac, vtep = params
                if vtep:
                    self.set_nexthop_remote(key[1], vtep, mac)
                else:
                    self.set_nexthop_vm(key[1], port, mac)
            elif kind == "lb":
                self.set_lb_reverse(*key[1], *params)
        gone = {
            "port": (M.PORTS_TABLE, "meta.in_port"), "vpc": (M.VPCS_TABLE, "meta.vni"),
            "nh": (M.NEXTHOPS_TABLE, "meta.nexthop")}
        for key in written.keys() - want.keys():
            if key[0] in gone:
                table, fld = gone[key[0]]
                self.conn.delete(self.conn.table_entry(table, {fld: key[1]}))
            elif key[0] == "lb":
                vni, proto, ip, port = key[1]
                self.conn.delete(self.conn.table_entry(M.LB_REVERSE_TABLE, {
                    "meta.vni": vni, "hdr.ipv4.protocol": proto, "hdr.ipv4.src_addr": ip,
                    "meta.l4_src": port}))
        return dict(want)

    def set_scope_version(self, scope: int, version: int) -> None:
        """The current policy version of ``scope`` (entries of another version: stale)."""
        self._put(M.SCOPES_TABLE, {"meta.scope": scope}, M.SCOPE_ACTION, {"version": version})

    def set_scope_versions(self, versions: dict[int, int]) -> None:
        """Several scopes in one Write (MODIFY; INSERT for the ones that do not exist)."""
        if not versions:
            return
        entries = [self.conn.table_entry(M.SCOPES_TABLE, {"meta.scope": s}, M.SCOPE_ACTION,
                                         {"version": v}) for s, v in sorted(versions.items())]
        try:
            self.conn.write([update(e, "MODIFY") for e in entries])
        except WriteError as exc:
            missing = [entries[e.index] for e in exc.errors if e.code == "NOT_FOUND"]
            if len(missing) != len(exc.errors):
                raise
            self.conn.insert(*missing)

    # ---------------------------------------------------------------- sessions
    def write_sessions(self, writes: Sequence[SessionWrite]) -> list[WriteFailure]:
        """One Write (CONTINUE_ON_ERROR) of session updates; the ones that failed."""
        if not writes:
            return []
        codec = self._codec()
        updates = [codec.update(op, key, data, idle_ns) for op, key, data, idle_ns in writes]
        try:
            self.conn.write(updates)
        except WriteError as exc:
            if not exc.errors:
                raise
            return [WriteFailure(e.index, e.code, e.message) for e in exc.errors]
        return []

    def read_session(self, key: M.SessionKey) -> Optional[tuple[M.SessionData, int, int]]:
        """The entry of ``key`` as the switch holds it: (action data, packets, bytes), or
        None when it has none."""
        codec = self._codec()
        te = codec.key_entry(key)
        te.counter_data.SetInParent()
        try:
            found = list(self.conn.read(te))
        except Exception as exc:                         # noqa: BLE001 - NOT_FOUND on BMv2
            if "NOT_FOUND" in str(exc) or "not found" in str(exc).lower():
                return None
            raise
        for ent in found:
            _, data = codec.decode(ent.table_entry)
            if data is not None:
                cd = ent.table_entry.counter_data
                return data, cd.packet_count, cd.byte_count
        return None

    def read_all_sessions(self) -> list[tuple[M.SessionKey, M.SessionData, int, int]]:
        """Every session entry with its counters (the software-centric manager's walk)."""
        codec = self._codec()
        wildcard = p4runtime_pb2.TableEntry(table_id=codec.table_id)
        wildcard.counter_data.SetInParent()
        out = []
        for ent in self.conn.read(wildcard):
            key, data = codec.decode(ent.table_entry)
            if data is not None:
                cd = ent.table_entry.counter_data
                out.append((key, data, cd.packet_count, cd.byte_count))
        return out

    def decode_idle(self, note: p4runtime_pb2.IdleTimeoutNotification
                    ) -> list[tuple[M.SessionKey, Optional[M.SessionData]]]:
        """The session entries an idle-timeout notification names (others skipped)."""
        codec = self._codec()
        return [codec.decode(te) for te in note.table_entry if te.table_id == codec.table_id]

    def _codec(self) -> SessionCodec:
        if self.codec is None:
            raise RuntimeError("push() or attach() first")
        return self.codec

    def read_events(self) -> dict[str, int]:
        """``SmartNicIngress.events`` by name (packets): punts and drops of each kind."""
        cells = self.conn.read_counter(M.EVENTS_COUNTER)
        return {M.EVENT_NAMES.get(i, str(i)): c.packets for i, c in sorted(cells.items())
                if c.packets}

    # ---------------------------------------------------------------- packet I/O
    def packet_out(self, frame: bytes, op: int, *, egress_port: int = 0,
                   in_port: int = 0) -> None:
        """A PacketOut: ``OP_EMIT`` leaves on ``egress_port``; ``OP_PIPELINE`` is processed
        as received on ``in_port``; ``OP_HEARTBEAT`` comes back as a PacketIn."""
        self.conn.packet_out(frame, M.packet_out_metadata(op, egress_port, in_port))

    def emit(self, frame: bytes, port: int) -> None:
        """Send ``frame`` out of ``port`` as it is (software forwarding)."""
        self.packet_out(frame, M.OP_EMIT, egress_port=port)

    def reinject(self, frame: bytes, in_port: int) -> None:
        """Process ``frame`` again as received on ``in_port`` (after its session is in)."""
        self.packet_out(frame, M.OP_PIPELINE, in_port=in_port)

    def heartbeat(self, payload: bytes) -> None:
        """Send a heartbeat through the pipeline."""
        self.packet_out(payload, M.OP_HEARTBEAT)

    @property
    def stream_alive(self) -> bool:
        """False once the P4Runtime stream ended."""
        return self.conn.stream_alive

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self.conn.close()


def punt_of(pin: Any) -> M.Punt:
    """A PacketIn record (``controller.p4rt.PacketIn``) as a :class:`model.Punt`."""
    return M.punt(pin.metadata, pin.payload)


def tcp_events(dl: Any) -> Iterable[M.TcpEvent]:
    """The TCP events of a DigestList record (its other digests skipped)."""
    if dl.name != M.TCP_DIGEST:
        return []
    return [M.tcp_event(row) for row in dl.data]


__all__ = ["WRITE_GAP_S", "SessionCodec", "SessionWrite", "SmartNic", "WriteFailure", "punt_of",
           "tcp_events"]
