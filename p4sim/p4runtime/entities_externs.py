"""Indexed externs and device-wide entities for :class:`p4sim.p4runtime.entities.EntityStore`:
``CounterEntry``, ``MeterEntry``, ``RegisterEntry``, ``PacketReplicationEngineEntry``
(multicast groups and clone sessions) and ``DigestEntry`` (configuration of a digest).

Codes are BMv2's (simple_switch_grpc + PI, measured; p4sim/README.md "P4Runtime
conformance"): counter/meter INSERT → ``INVALID_ARGUMENT``; a counter DELETE is taken
as a MODIFY (BMv2 accepts it); a counter MODIFY without ``data`` resets the cell to 0;
an index past the end → ``UNKNOWN`` ("Error when writing to counter" / "… meter spec" /
"Error when reading … from target"); CIR > PIR → ``UNKNOWN``; an unset meter ``config``
resets the cell (GREEN); multicast group / clone session id 0 in a write →
``INVALID_ARGUMENT``; a PRE read naming neither → ``INVALID_ARGUMENT``; digest INSERT
of a configured digest → ``ALREADY_EXISTS``, MODIFY/DELETE/read of an unconfigured one
→ ``NOT_FOUND``, INSERT without ``config`` → accepted and ignored (as BMv2).

Refused unless ``extras`` (what BMv2 lacks): register reads and writes
(``UNIMPLEMENTED``), counter/meter writes without an index (``UNIMPLEMENTED``; with
extras they address every cell), clone sessions with ``packet_length_bytes``
(``UNKNOWN``, BMv2's "Error when creating clone session in target"), digest reads
without ``digest_id`` (``UNIMPLEMENTED``) and PRE reads naming neither a group nor a
session (with extras: both kinds).

Example::

    >>> ext = ExternStore(index, program.state, extras=True)           # doctest: +SKIP
    >>> undo = ext.write_register(pb.Update.MODIFY, register_entry)    # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

from p4.v1 import p4runtime_pb2 as pb

from p4sim.p4runtime.entities_index import ExternInfo, ProgramIndex
from p4sim.p4runtime.entities_restore import meter_cells, restore_meter_cells, snapshot
from p4sim.p4runtime.entities_tables import decode_meter_config, encode_meter_config
from p4sim.p4runtime.entities_values import AddWire, NewEntity, decode_bits, decode_p4data_bits, encode_p4data_bits, fail
from p4sim.p4runtime.wirecounters import CounterRun, encode_counter_cells, encode_counter_runs

Undo = Callable[[], None]
_SDN_PORT_BITS = 32


def _noop() -> None:
    return None


def _modify_only(utype: int, kind: str) -> None:
    if utype != pb.Update.MODIFY:
        fail("INVALID_ARGUMENT", f"{kind} entries can only be modified")


def _indices(msg: Any, size: int, what: str, bmv2_error: str = "") -> Sequence[int]:
    """The cells a message addresses: its index, or all of them when unset. An index
    past the end is ``UNKNOWN`` prefixed with BMv2's message ``bmv2_error`` when given
    (PI's generic target error), else ``OUT_OF_RANGE``."""
    if not msg.HasField("index"):
        return range(size)
    i = msg.index.index
    if i < 0:
        fail("INVALID_ARGUMENT", f"{what}: negative index {i}")
    if i >= size:
        if bmv2_error:
            fail("UNKNOWN", f"{bmv2_error}: {what}: index {i} not in [0, {size})")
        fail("OUT_OF_RANGE", f"{what}: index {i} not in [0, {size})")
    return [i]


def _extra(extras: bool, code: str, message: str) -> None:
    """Refuse what BMv2 refuses unless the extras are on."""
    if not extras:
        fail(code, f"{message} (as in BMv2; python -m p4sim switch --p4runtime-extras enables it)")


def _targets(objects: dict[int, ExternInfo], extern_id: int, kind: str) -> list[ExternInfo]:
    if extern_id == 0:
        return list(objects.values())
    return [ProgramIndex.extern(kind, objects, extern_id)]


def _counter_run(ei: ExternInfo, indices: Sequence[int]) -> CounterRun:
    """Cells ``indices`` of counter ``ei`` as :func:`.wirecounters.encode_counter_runs` takes
    them (its columns, as its unit reports them)."""
    arr = ei.obj
    packets, nbytes = arr.columns()
    return CounterRun(ei.extern_id, indices, packets, nbytes,
                      packets_too=arr.unit in ("packets", "packets_and_bytes"),
                      bytes_too=arr.unit in ("bytes", "packets_and_bytes"))


def _add_counter_cells(ei: ExternInfo, indices: Sequence[int], add_wire: AddWire) -> None:
    """Cells ``indices`` of counter ``ei`` encoded in one call and given to ``add_wire``
    (:func:`.wirecounters.encode_counter_cells`: each field's varints as narrow as its
    column allows, as a wildcard Read of every counter needs)."""
    r = _counter_run(ei, indices)
    add_wire(*encode_counter_cells(r.counter_id, r.indices, r.packets, r.nbytes, r.packets_too, r.bytes_too))


class ExternStore:
    """Counters, meters, registers, the PRE and digests of one program."""

    def __init__(self, index: ProgramIndex, state: Any, extras: bool = False) -> None:
        self.index = index
        self.state = state
        self.extras = extras
        # multicast group id → (replicas as written, metadata): read-write symmetry
        self._mc_written: dict[int, tuple[list[bytes], bytes]] = {}
        self._clone_written: dict[int, list[bytes]] = {}

    # ------------------------------------------------------------------ counters
    def write_counter(self, utype: int, msg: pb.CounterEntry) -> Undo:
        ei = ProgramIndex.extern("counter", self.index.counters, msg.counter_id)
        if utype == pb.Update.INSERT:
            fail("INVALID_ARGUMENT", "INSERT update type not supported for counters")
        _modify_only(pb.Update.MODIFY if utype == pb.Update.DELETE else utype, "counter")
        arr = ei.obj
        if not msg.HasField("index"):
            _extra(self.extras, "UNIMPLEMENTED", "Wildcard write is not supported for indirect counters yet")
        cells = _indices(msg, arr.size, f"counter {ei.name}", "Error when writing to counter")
        packets, nbytes = msg.data.packet_count, msg.data.byte_count   # no data: reset to 0
        if packets < 0 or nbytes < 0:
            fail("INVALID_ARGUMENT", f"counter {ei.name}: values must be non-negative")
        old = [(i, *arr.read(i)) for i in cells]
        for i in cells:
            arr.write(i, packets, nbytes)

        def undo() -> None:
            for i, p, b in old:
                arr.write(i, p, b)
        return undo

    def read_counters(self, msg: pb.CounterEntry, new_entity: NewEntity = pb.Entity) -> Iterator[pb.Entity]:
        for ei in _targets(self.index.counters, msg.counter_id, "counter"):
            arr, counter_id = ei.obj, ei.extern_id
            # encode_counter's choice, made once per counter (the hot path of GOR's and the
            # monitor's polls: every cell of a counter in one Read)
            packets_too = arr.unit in ("packets", "packets_and_bytes")
            bytes_too = arr.unit in ("bytes", "packets_and_bytes")
            for i in _indices(msg, arr.size, f"counter {ei.name}", "Error when reading counter from target"):
                packets, nbytes = arr.read(i)
                ent = new_entity()
                out = ent.counter_entry
                out.counter_id = counter_id
                out.index.index = i
                data = out.data
                data.SetInParent()
                if packets_too:
                    data.packet_count = packets
                if bytes_too:
                    data.byte_count = nbytes
                yield ent

    def read_counters_wire(self, msg: pb.CounterEntry, add_wire: AddWire) -> None:
        """:meth:`read_counters`'s entities, encoded (:func:`.wirecounters.encode_counter_cells`)
        and given to ``add_wire``: every counter is checked before any is encoded."""
        cells = [(ei, _indices(msg, ei.obj.size, f"counter {ei.name}", "Error when reading counter from target"))
                 for ei in _targets(self.index.counters, msg.counter_id, "counter")]
        for ei, indices in cells:
            _add_counter_cells(ei, indices, add_wire)

    def read_counter_runs_wire(self, runs: Sequence[Sequence[pb.CounterEntry]], add_wire: AddWire) -> None:
        """Indexed reads of counters (``runs``: consecutive entities of a Read, each run
        with one non-zero ``counter_id`` and every entity an ``index``), encoded in one
        call: the same entities (decoded), in the same order, as :meth:`read_counters_wire`
        of each in turn (a varint may take more bytes: one width for them all, as a
        wildcard read), and the same first error, but numpy's per-call cost is paid once
        per Read, not per cell or per counter (GOR's poller asks for ~116 cells of 7
        counters a switch every 0.1 s: 6.4 ms of the switch's CPU a poll when each cell was
        a call, ~0.4 ms when each counter was)."""
        out = []
        for msgs in runs:
            ei = ProgramIndex.extern("counter", self.index.counters, msgs[0].counter_id)
            arr = ei.obj
            indices = [m.index.index for m in msgs]
            if min(indices) < 0 or max(indices) >= arr.size:     # the first bad one's error
                for m in msgs:
                    _indices(m, arr.size, f"counter {ei.name}", "Error when reading counter from target")
            out.append(_counter_run(ei, indices))
        add_wire(*encode_counter_runs(out))

    # ------------------------------------------------------------------ meters
    def write_meter(self, utype: int, msg: pb.MeterEntry) -> Undo:
        ei = ProgramIndex.extern("meter", self.index.meters, msg.meter_id)
        if utype == pb.Update.INSERT:
            fail("INVALID_ARGUMENT", "INSERT update type not supported for meters")
        _modify_only(utype, "meter")
        if msg.HasField("counter_data"):
            fail("UNIMPLEMENTED", "per-colour meter counters are not supported")
        arr = ei.obj
        if not msg.HasField("index"):
            _extra(self.extras, "UNIMPLEMENTED", "Wildcard write is not supported for indirect meters yet")
        cells = _indices(msg, arr.size, f"meter {ei.name}", "Error when writing meter spec")
        cfg = (decode_meter_config(msg.config, f"meter {ei.name}", "Error when writing meter spec").config
               if msg.HasField("config") else None)
        saved = meter_cells(arr)
        for i in cells:
            if cfg is None:
                arr.reset_config(i)
            else:
                arr.set_config(i, cfg.cir, cfg.cburst, cfg.pir, cfg.pburst)
        return lambda: restore_meter_cells(arr, saved)

    def read_meters(self, msg: pb.MeterEntry, new_entity: NewEntity = pb.Entity) -> Iterator[pb.Entity]:
        if msg.HasField("counter_data"):
            fail("UNIMPLEMENTED", "per-colour meter counters are not supported")
        for ei in _targets(self.index.meters, msg.meter_id, "meter"):
            arr = ei.obj
            for i in _indices(msg, arr.size, f"meter {ei.name}", "Error when reading meter spec from target"):
                ent = new_entity()
                out = ent.meter_entry
                out.meter_id = ei.extern_id
                out.index.index = i
                cfg = arr.get_config(i)
                if cfg is not None:
                    encode_meter_config(cfg, out.config)
                yield ent

    # ------------------------------------------------------------------ registers
    def write_register(self, utype: int, msg: pb.RegisterEntry) -> Undo:
        _extra(self.extras, "UNIMPLEMENTED", "Register writes are not supported yet")
        ei = ProgramIndex.extern("register", self.index.registers, msg.register_id)
        _modify_only(utype, "register")
        reg = ei.obj
        cells = _indices(msg, reg.size, f"register {ei.name}")
        if not msg.HasField("data"):
            fail("INVALID_ARGUMENT", f"register {ei.name}: data is required")
        value = decode_p4data_bits(msg.data, reg.width, f"register {ei.name}")
        old = [(i, reg.get(i)) for i in cells]
        for i in cells:
            reg.set(i, value)

        def undo() -> None:
            for i, v in old:
                reg.set(i, v)
        return undo

    def read_registers(self, msg: pb.RegisterEntry, new_entity: NewEntity = pb.Entity) -> Iterator[pb.Entity]:
        _extra(self.extras, "UNIMPLEMENTED", "Register reads are not supported yet")
        for ei in _targets(self.index.registers, msg.register_id, "register"):
            reg = ei.obj
            for i in _indices(msg, reg.size, f"register {ei.name}"):
                ent = new_entity()
                out = ent.register_entry
                out.register_id = ei.extern_id
                out.index.index = i
                out.data.CopyFrom(encode_p4data_bits(reg.get(i)))
                yield ent

    # ------------------------------------------------------------------ packet replication engine
    @staticmethod
    def _replicas(replicas: Any, what: str) -> list[tuple[int, int]]:
        out = []
        for r in replicas:
            if r.WhichOneof("port_kind") == "port":
                port = decode_bits(r.port, _SDN_PORT_BITS, f"{what} replica port")
            else:
                port = r.egress_port
            out.append((port, r.instance))
        return out

    def write_pre(self, utype: int, msg: pb.PacketReplicationEngineEntry) -> Undo:
        pre = self.state.pre
        which = msg.WhichOneof("type")
        if which is None:
            fail("INVALID_ARGUMENT", "packet replication engine entry without a multicast group or clone session")
        if utype not in (pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE):
            fail("INVALID_ARGUMENT", f"unknown update type {utype}")
        undo_pre = snapshot(pre)
        if which == "multicast_group_entry":
            mg = msg.multicast_group_entry
            gid = mg.multicast_group_id
            if gid == 0:
                fail("INVALID_ARGUMENT", "multicast group id 0 is reserved for wildcard reads")
            old = self._mc_written.get(gid)
            if utype == pb.Update.DELETE:
                pre.delete_multicast_group(gid)
                self._mc_written.pop(gid, None)
            else:
                replicas = self._replicas(mg.replicas, f"multicast group {gid}")
                if utype == pb.Update.INSERT:
                    pre.insert_multicast_group(gid, replicas)
                else:
                    pre.modify_multicast_group(gid, replicas)
                self._mc_written[gid] = ([r.SerializeToString() for r in mg.replicas], mg.metadata)

            def undo_mc() -> None:
                undo_pre()
                if old is None:
                    self._mc_written.pop(gid, None)
                else:
                    self._mc_written[gid] = old
            return undo_mc
        cs = msg.clone_session_entry
        sid = cs.session_id
        if sid == 0:
            fail("INVALID_ARGUMENT", "clone session id 0 is reserved for wildcard reads")
        old_cs = self._clone_written.get(sid)
        if utype == pb.Update.DELETE:
            pre.delete_clone_session(sid)
            self._clone_written.pop(sid, None)
        else:
            if cs.packet_length_bytes:
                _extra(self.extras, "UNKNOWN", f"Error when creating clone session in target: clone session {sid}: "
                                               f"packet_length_bytes (truncation) is not supported")
            replicas = self._replicas(cs.replicas, f"clone session {sid}")
            fn = pre.insert_clone_session if utype == pb.Update.INSERT else pre.modify_clone_session
            fn(sid, replicas, cs.class_of_service, cs.packet_length_bytes)
            self._clone_written[sid] = [r.SerializeToString() for r in cs.replicas]

        def undo_cs() -> None:
            undo_pre()
            if old_cs is None:
                self._clone_written.pop(sid, None)
            else:
                self._clone_written[sid] = old_cs
        return undo_cs

    @staticmethod
    def _add_replicas(out: Any, state: list[tuple[int, int]], written: list[bytes] | None) -> None:
        """Replicas as written when they still describe the state, else from the state."""
        if written is not None:
            msgs = [pb.Replica.FromString(b) for b in written]
            as_written = sorted(ExternStore._replicas(msgs, "stored"))
            if as_written == sorted(state):
                out.extend(msgs)
                return
        for port, instance in state:
            out.add(egress_port=port, instance=instance)

    def read_pre(self, msg: pb.PacketReplicationEngineEntry, new_entity: NewEntity = pb.Entity) -> Iterator[pb.Entity]:
        pre = self.state.pre
        which = msg.WhichOneof("type")
        if which is None:
            _extra(self.extras, "INVALID_ARGUMENT", "Invalid PRE operation: the entry names neither a multicast "
                                                    "group nor a clone session")
        if which in (None, "multicast_group_entry"):
            gid = msg.multicast_group_entry.multicast_group_id if which else 0
            ids = [gid] if gid else pre.multicast_group_ids()
            for g in ids:
                if g not in pre.multicast_group_ids():
                    continue
                ent = new_entity()
                out = ent.packet_replication_engine_entry.multicast_group_entry
                out.multicast_group_id = g
                written = self._mc_written.get(g)
                self._add_replicas(out.replicas, pre.get_multicast_group(g), written[0] if written else None)
                out.metadata = written[1] if written else b""
                yield ent
        if which in (None, "clone_session_entry"):
            sid = msg.clone_session_entry.session_id if which else 0
            ids = [sid] if sid else pre.clone_session_ids()
            for s in ids:
                session = pre.get_clone_session(s)
                if session is None or s not in pre.clone_session_ids():
                    continue
                ent = new_entity()
                out = ent.packet_replication_engine_entry.clone_session_entry
                out.session_id = s
                self._add_replicas(out.replicas, list(session.replicas), self._clone_written.get(s))
                out.class_of_service = session.class_of_service
                out.packet_length_bytes = session.packet_length_bytes
                yield ent

    # ------------------------------------------------------------------ digests
    def write_digest(self, utype: int, msg: pb.DigestEntry) -> Undo:
        ei = ProgramIndex.extern("digest", self.index.digests, msg.digest_id)
        q = self.state.digests
        name = ei.obj
        configured = q.get_config(name) is not None
        if utype == pb.Update.DELETE:
            if not configured:
                fail("NOT_FOUND", f"digest {name} is not configured")
            undo = snapshot(q)
            q.delete_config(name)
            return undo
        if utype not in (pb.Update.INSERT, pb.Update.MODIFY):
            fail("INVALID_ARGUMENT", f"unknown update type {utype}")
        if utype == pb.Update.INSERT and configured:
            fail("ALREADY_EXISTS", f"digest {name} is already configured")
        if utype == pb.Update.MODIFY and not configured:
            fail("NOT_FOUND", f"digest {name} is not configured")
        if not msg.HasField("config"):
            if utype == pb.Update.INSERT:
                return _noop     # BMv2 accepts it and configures nothing
            fail("INVALID_ARGUMENT", f"digest {name}: config is required")
        c = msg.config
        undo = snapshot(q)
        q.set_config(name, c.max_timeout_ns, c.max_list_size, c.ack_timeout_ns)
        return undo

    def read_digests(self, msg: pb.DigestEntry, new_entity: NewEntity = pb.Entity) -> Iterator[pb.Entity]:
        q = self.state.digests
        if msg.digest_id == 0:
            _extra(self.extras, "UNIMPLEMENTED", "digest_id must be set when reading DigestEntry")
        for ei in _targets(self.index.digests, msg.digest_id, "digest"):
            cfg = q.get_config(ei.obj)
            if cfg is None:
                if msg.digest_id:
                    fail("NOT_FOUND", f"Digest {ei.extern_id} not configured (digest {ei.name})")
                continue
            ent = new_entity()
            out = ent.digest_entry
            out.digest_id = ei.extern_id
            out.config.max_timeout_ns = cfg.max_timeout_ns
            out.config.max_list_size = cfg.max_list_size
            out.config.ack_timeout_ns = cfg.ack_timeout_ns
            yield ent
