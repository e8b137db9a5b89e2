"""The BMv2 ``simple_switch`` pipeline around a compiled v1model program.

:class:`V1ModelSwitch` runs one input frame to completion: parser, verify checksum,
ingress, the after-ingress decisions (I2E clone, digest, resubmit, multicast, drop,
unicast), the egress queue, egress, E2E clone, drop, compute checksum, deparser and
recirculation, exactly in the order simple_switch.cpp takes them. Everything a frame
spawns (clones, multicast copies, resubmitted and recirculated passes) is processed
before :meth:`V1ModelSwitch.process_packet` returns the frames in transmit order.

Headers (as BMv2 keeps them): each packet holds a PHV from a pool, taken when it enters
and given back, its headers invalidated but their fields kept, when it leaves (sent,
dropped, or replaced by its resubmitted or recirculated copy); the last one given back is
taken first. Copies (multicast, clones) take one too and copy the valid headers into it.

Metadata rules (as simple_switch implements them): a resubmitted, recirculated or
cloned packet starts with *all* metadata (user metadata and standard_metadata) zero,
then gets the user metadata fields of the preserved field list and its instance_type;
``packet_length`` is set again for resubmitted/recirculated packets and at the start of
egress; ``ingress_global_timestamp`` is written only for frames arriving from a port.
Multicast copies keep all metadata and get ``egress_rid``. ``truncate`` applies to the
packet instance that called it (a multicast copy or a clone is a new instance).

The pipeline can also run in two halves for a switch with real queues
(:mod:`p4sim.switchd`): :meth:`V1ModelSwitch.run_ingress` takes a received frame through
parser, ingress and the after-ingress decisions and returns the :class:`EgressWork` items
to put in the egress queues (unicast, multicast copies, I2E clones); the traffic manager
later hands each item to :meth:`V1ModelSwitch.run_egress` with the :class:`QueueMeta` it
measured, which returns the frames to transmit and any new work (E2E clones, packets
produced by recirculation). ``process_packet`` is exactly these two halves with a
zero-delay FIFO in between.

Example::

    >>> sw = V1ModelSwitch(program)                       # doctest: +SKIP
    >>> sw.process_packet(1, bytes.fromhex("ffffffffffff..."))  # doctest: +SKIP
    [(2, b'...')]
    >>> work = sw.run_ingress(1, frame)                   # doctest: +SKIP
    >>> sw.run_egress(work[0], QueueMeta(enq_timestamp=5, enq_qdepth=3, deq_qdepth=2)).frames  # doctest: +SKIP
    [(2, b'...')]
"""
from __future__ import annotations

import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from p4sim.engine.context import PacketContext
from p4sim.engine.rt import ExitSignal, ParserErrorSignal
from p4sim.v1model.constants import (
    DROP_PORT,
    EGRESS_SPEC_AT_EGRESS_START,
    MAX_WORK_ITEMS,
    PORT_MASK,
    InstanceType,
)
from p4sim.v1model.sessions import clone_copies, clone_truncation, replicate

LogFn = Callable[[str], None]


def _length_delta(ctx: PacketContext) -> int:
    """Bytes added (setValid) minus bytes removed (setInvalid) during a block: BMv2's
    add_header/remove_header adjust the PACKET_LENGTH register by the header size."""
    return int(getattr(ctx, "packet_length_delta", 0) or 0)


@dataclass
class _IngressItem:
    """A frame waiting for the ingress pipeline (new, resubmitted or recirculated)."""

    pv: Any
    data: bytes
    port: int            # the port the frame arrived on (BMv2's Packet::ingress_port)
    packet_id: int
    copy_id: int
    repasses: int = 0


@dataclass(frozen=True)
class QueueMeta:
    """What the traffic manager measured for one packet (BMv2 queueing metadata):
    ``enq_timestamp`` in microseconds of the switch clock, ``enq_qdepth`` the depth of the
    egress port's queues before the push, ``deq_qdepth`` their depth after the pop
    (packets).

    Example::

        >>> QueueMeta(enq_timestamp=10, enq_qdepth=0, deq_qdepth=0).enq_qdepth
        0
    """

    enq_timestamp: int
    enq_qdepth: int
    deq_qdepth: int


@dataclass
class EgressWork:
    """A packet waiting in an egress queue: parsed headers + the bytes after them.

    ``port`` is the egress port and ``priority`` the queue (``standard_metadata.priority``
    at enqueue); the rest is opaque to the traffic manager.
    """

    pv: Any
    payload: bytes
    port: int
    length_reg: int      # BMv2's PACKET_LENGTH register
    packet_id: int
    copy_id: int
    repasses: int = 0
    in_port: int = 0     # the port the original frame arrived on
    truncate: Optional[int] = None
    recirculate: Optional[int] = None  # flag set in ingress survives into egress
    priority: int = 0
    qmeta: Optional[QueueMeta] = None  # set by run_egress; None in run-to-completion mode

    @property
    def length(self) -> int:
        """Bytes the packet occupies (headers as the length register counts them)."""
        return self.length_reg


_EgressItem = EgressWork


@dataclass
class EgressResult:
    """What one egress pass produced: ``frames`` to transmit as ``(port, bytes)`` and
    ``work``, new packets for the egress queues (E2E clones; packets that a recirculation
    took through ingress again)."""

    frames: list[tuple[int, bytes]] = field(default_factory=list)
    work: list[EgressWork] = field(default_factory=list)


@dataclass
class SwitchStats:
    """Counters of what happened to packets, handy in tests and logs."""

    received: int = 0
    transmitted: int = 0
    dropped: int = 0
    errors: list[str] = field(default_factory=list)


class V1ModelSwitch:
    """simple_switch in run-to-completion mode for one compiled program.

    ``clock`` returns microseconds since the switch started (tests inject a fake one);
    ``priority_queues`` is simple_switch's ``--priority-queues`` (a packet whose
    ``standard_metadata.priority`` is not below it is dropped at enqueue, as in BMv2);
    ``on_digest`` is called (no arguments) after a digest was pushed to the program's
    digest queue; ``max_repasses`` cuts a chain of resubmit/recirculate passes (None, the
    default: no limit, as on BMv2).

    A new packet's headers are those of the last packet that left the switch, all
    invalid (BMv2 reuses its PHVs): a field of a header the parser does not extract reads
    that packet's value (p4sim/README.md, "Fields of invalid headers"). With
    ``reuse_headers=False`` every packet starts with fresh (zero) headers: what BMv2 shows
    when packets arrive together, each taking its PHV before the earlier ones leave (p4c's
    STF runner feeds a file's packets at once; ``p4sim stf`` runs so).

    Example::

        >>> sw = V1ModelSwitch(prog, cpu_port=255, log=print)   # doctest: +SKIP
        >>> out = sw.process_packet(0, frame)                     # doctest: +SKIP
    """

    def __init__(self, program: Any, cpu_port: Optional[int] = None,
                 log: Optional[LogFn] = None, *, clock: Optional[Callable[[], int]] = None,
                 priority_queues: int = 1, max_repasses: Optional[int] = None,
                 on_digest: Optional[Callable[[], None]] = None, reuse_headers: bool = True) -> None:
        self.program = program
        self.on_digest = on_digest
        self.cpu_port = cpu_port
        self.log = log
        self.priority_queues = priority_queues
        self.max_repasses = max_repasses
        self.stats = SwitchStats()
        if clock is None:
            start = time.monotonic_ns()
            clock = lambda: (time.monotonic_ns() - start) // 1000  # noqa: E731
        self.clock = clock
        self._next_packet_id = 0
        self._copy_ids: dict[int, int] = {}
        self._ingress: deque[_IngressItem] = deque()
        self._egress: deque[EgressWork] = deque()
        self._out: list[tuple[int, bytes]] = []
        self._lock = threading.Lock()   # one frame at a time (callers may be threads)
        # BMv2's PHV pool (bm_sim/phv_source.cpp): the headers of packets that left the
        # switch, invalid but with their fields, the last one released taken first
        self._phvs: list[Any] = []
        self.reuse_headers = reuse_headers

    # ------------------------------------------------------------------ public API
    def process_packet(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one frame and everything it spawns; return ``[(port, frame), ...]`` in
        transmit order. Never raises for a frame: problems are logged and counted in
        ``stats.errors`` and the affected packet is dropped."""
        with self._lock:
            return self._process(ingress_port, data)

    def run_ingress(self, ingress_port: int, data: bytes) -> list[EgressWork]:
        """First half: parser, ingress and the after-ingress decisions for one received
        frame (resubmitted passes included). Returns the packets to put in the egress
        queues, in order. Never raises for a frame."""
        with self._lock:
            packet_id = self._start(ingress_port, data)
            if packet_id is not None:
                self._drain(packet_id, with_egress=False)
                self._copy_ids.pop(packet_id, None)
            work = list(self._egress)
            self._egress.clear()
            return work

    def run_egress(self, item: EgressWork, qmeta: Optional[QueueMeta] = None) -> EgressResult:
        """Second half for one dequeued packet: egress, E2E clone, deparser, recirculation
        (whose ingress pass runs here too). ``qmeta`` fills the queueing metadata; without
        it the packet looks as if it never waited."""
        with self._lock:
            item.qmeta = qmeta
            self._out = []
            self._copy_ids.setdefault(item.packet_id, item.copy_id)
            self._guarded(item.packet_id, item.copy_id, self._run_egress, item)
            self._drain(item.packet_id, with_egress=False)
            self._copy_ids.pop(item.packet_id, None)
            result = EgressResult(self._out, list(self._egress))
            self._out = []
            self._egress.clear()
            return result

    def _start(self, ingress_port: int, data: bytes) -> Optional[int]:
        """Queue a received frame for ingress; returns its packet id (None on failure)."""
        packet_id = self._next_packet_id
        self._next_packet_id += 1
        self._copy_ids[packet_id] = 0
        self.stats.received += 1
        try:
            pv = self._new_packet()
            std = pv.std
            std.ingress_port = ingress_port & PORT_MASK
            std.packet_length = len(data)
            std.instance_type = int(InstanceType.NORMAL)
            std.ingress_global_timestamp = self.clock()
        except Exception as exc:  # a broken program object: report, do not raise
            self._error(packet_id, 0, exc)
            self._copy_ids.pop(packet_id, None)
            return None
        self._ingress.append(_IngressItem(pv, bytes(data), ingress_port & PORT_MASK,
                                          packet_id, 0))
        return packet_id

    def _drain(self, packet_id: int, with_egress: bool) -> None:
        """Run pending ingress passes (and egress passes when ``with_egress``)."""
        work = 0
        while self._ingress or (with_egress and self._egress):
            work += 1
            if work > MAX_WORK_ITEMS:
                self._trace(packet_id, 0, f"Too many packets spawned (> {MAX_WORK_ITEMS}),"
                            " dropping the rest")
                self.stats.dropped += len(self._ingress) + len(self._egress)
                self._ingress.clear()
                self._egress.clear()
                break
            if self._ingress:
                item = self._ingress.popleft()
                self._guarded(item.packet_id, item.copy_id, self._run_ingress, item)
            else:
                eitem = self._egress.popleft()
                self._guarded(eitem.packet_id, eitem.copy_id, self._run_egress, eitem)

    def _process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        self._out = []
        packet_id = self._start(ingress_port, data)
        if packet_id is None:
            return []
        self._drain(packet_id, with_egress=True)
        self._copy_ids.pop(packet_id, None)
        out, self._out = self._out, []
        return out

    # ------------------------------------------------------------------ helpers
    def _trace(self, packet_id: int, copy_id: int, msg: str) -> None:
        if self.log is not None:
            self.log(f"[{packet_id}.{copy_id}] [cxt 0] {msg}")

    def _ctx_log(self, packet_id: int, copy_id: int) -> Optional[LogFn]:
        if self.log is None:
            return None
        return lambda msg: self._trace(packet_id, copy_id, msg)

    def _error(self, packet_id: int, copy_id: int, exc: BaseException) -> None:
        text = f"{type(exc).__name__}: {exc}"
        self.stats.errors.append(text)
        self.stats.dropped += 1
        self._trace(packet_id, copy_id, f"Error while processing packet, dropping it: {text}")
        if self.log is not None:
            for line in traceback.format_exception(exc)[-6:]:
                self._trace(packet_id, copy_id, line.rstrip())

    def _guarded(self, packet_id: int, copy_id: int, fn: Callable[[Any], None],
                 item: Any) -> None:
        try:
            fn(item)
        except Exception as exc:
            self._error(packet_id, copy_id, exc)

    def _new_copy_id(self, packet_id: int) -> int:
        self._copy_ids[packet_id] = self._copy_ids.get(packet_id, 0) + 1
        return self._copy_ids[packet_id]

    def _new_packet(self) -> Any:
        """A packet with all metadata zero and the headers of the last packet that left
        the switch, all invalid (BMv2: a PHV from the pool, its metadata reset; fields of
        headers the parser does not extract keep that packet's values)."""
        pv = self.program.new_packet()
        if self._phvs:
            pv.hdr = self._phvs.pop()
        return pv

    def _release(self, pv: Any) -> None:
        """``pv`` left the switch (sent, dropped, or replaced by its resubmitted or
        recirculated copy): its headers go back to the pool, invalid (BMv2's
        ``Packet::~Packet``: ``PHV::reset`` clears only the valid bits)."""
        if self.reuse_headers:
            self.program.invalidate_headers(pv.hdr)
            self._phvs.append(pv.hdr)

    def _copy(self, pv: Any, reset_metadata: bool = False) -> Any:
        """A copy of ``pv`` in a PHV from the pool (BMv2's ``clone_with_phv``: valid
        headers copied, invalid ones keep the pooled fields); with ``reset_metadata`` all
        metadata zero (``clone_with_phv_reset_metadata``)."""
        fresh = self._new_packet()
        self.program.copy_headers(fresh.hdr, pv.hdr)
        if reset_metadata:
            return fresh
        copied = self.program.copy_packet(pv)
        copied.hdr = fresh.hdr
        return copied

    def _headers_only(self, pv: Any) -> Any:
        """A packet with ``pv``'s headers and all metadata zero (BMv2 reset_metadata)."""
        return self._copy(pv, reset_metadata=True)

    def _preserve(self, index: Optional[int], src: Any, dst: Any) -> None:
        # index 0 is a field list like any other (p4c-bm2-ss: `field_list0`; issue 35)
        if index is not None:
            self.program.preserve_field_list(index, src, dst)

    def _enqueue(self, port: int, pv: Any, payload: bytes, length_reg: int, packet_id: int,
                 copy_id: int, repasses: int, in_port: int, truncate: Optional[int] = None,
                 recirculate: Optional[int] = None) -> None:
        std = pv.std
        priority = int(getattr(std, "priority", 0) or 0)
        if priority >= self.priority_queues:
            self._trace(packet_id, copy_id, "Priority out of range, dropping packet")
            self.stats.dropped += 1
            self._release(pv)
            return
        std.enq_timestamp = self.clock()
        std.enq_qdepth = 0
        self._egress.append(EgressWork(pv, payload, port & PORT_MASK, length_reg, packet_id,
                                       copy_id, repasses, in_port, truncate, recirculate,
                                       priority))

    def _clone(self, where: str, session: int, field_list: Optional[int], src_pv: Any,
               clone_pv: Any, payload: bytes, length_reg: int, packet_id: int,
               copy_id: int, repasses: int, in_port: int, itype: InstanceType) -> None:
        """Make the copies of a clone into ``session`` (I2E or E2E)."""
        copies = clone_copies(self.program.state.pre, session)
        if copies is None:
            self._trace(packet_id, copy_id, f"Clone session {session} is not configured,"
                        " no clone made")
            return
        self._trace(packet_id, copy_id, f"Cloning packet at {where}")
        self._preserve(field_list, src_pv, clone_pv)
        clone_pv.std.instance_type = int(itype)
        truncate = clone_truncation(self.program.state.pre, session)
        for port, rid in copies:
            if rid is not None:
                self._trace(packet_id, copy_id, f"Replicating packet on port {port}")
                clone_pv.std.egress_rid = rid
                pv = self._copy(clone_pv)
            else:
                self._trace(packet_id, copy_id, f"Cloning packet to egress port {port}")
                pv = self._copy(clone_pv)
            self._enqueue(port, pv, payload, length_reg, packet_id,
                          self._new_copy_id(packet_id), repasses, in_port, truncate=truncate)

    # ------------------------------------------------------------------ ingress
    def _parse(self, ctx: PacketContext, pv: Any, packet_id: int, copy_id: int) -> None:
        """Parser then verify checksum; a parser error is stored in parser_error and the
        packet goes on with the headers extracted so far (v1model on BMv2)."""
        self._trace(packet_id, copy_id, "Parser 'parser': start")
        try:
            self.program.parser(ctx, pv)
        except ParserErrorSignal as sig:
            pv.std.parser_error = sig.code
            self._trace(packet_id, copy_id, f"Parser 'parser': error {sig.code}")
        self._trace(packet_id, copy_id, "Parser 'parser': end")
        self.program.verify_checksum(ctx, pv)

    def _control(self, block: Callable[[PacketContext, Any], None], name: str,
                 ctx: PacketContext, pv: Any, packet_id: int, copy_id: int) -> None:
        self._trace(packet_id, copy_id, f"Pipeline '{name}': start")
        try:
            block(ctx, pv)
        except ExitSignal:
            pass
        self._trace(packet_id, copy_id, f"Pipeline '{name}': end")

    def _run_ingress(self, item: _IngressItem) -> None:
        prog = self.program
        pid, cid = item.packet_id, item.copy_id
        pv = item.pv
        self._trace(pid, cid, f"Processing packet received on port {item.port}")
        ctx = PacketContext(item.data, now_us=self.clock(), log=self._ctx_log(pid, cid))
        self._parse(ctx, pv, pid, cid)
        self._control(prog.ingress, "ingress", ctx, pv, pid, cid)
        std = pv.std
        egress_spec = int(std.egress_spec) & PORT_MASK
        mgid = int(getattr(std, "mcast_grp", 0) or 0)
        length_reg = len(item.data)

        # INGRESS CLONING: the original frame, parsed again, metadata reset.
        if ctx.clone is not None:
            cpv = self._new_packet()
            cpv.std.ingress_port = item.port
            cctx = PacketContext(item.data, now_us=ctx.now_us, log=None)
            try:
                prog.parser(cctx, cpv)
            except ParserErrorSignal:
                pass                     # parser_error is reset with the metadata anyway
            prog.verify_checksum(cctx, cpv)
            clone_pv = prog.new_packet()      # metadata reset, the headers just parsed
            clone_pv.hdr = cpv.hdr
            self._clone("ingress", ctx.clone.session, ctx.clone.field_list, pv, clone_pv,
                        cctx.payload(), length_reg, pid, cid, item.repasses, item.port,
                        InstanceType.INGRESS_CLONE)
            self._release(clone_pv)

        # LEARNING: simple_switch keeps one digest per pass (the last call).
        if ctx.digests:
            self._push_digest(ctx.digests[-1], pid, cid)

        # RESUBMIT: the original frame, metadata reset except the field list.
        if ctx.resubmit is not None:
            if self.max_repasses is not None and item.repasses >= self.max_repasses:
                self._trace(pid, cid, f"Resubmit limit ({self.max_repasses}) reached,"
                            " dropping packet")
                self.stats.dropped += 1
                self._release(pv)
                return
            self._trace(pid, cid, "Resubmitting packet")
            npv = self._new_packet()
            self._preserve(ctx.resubmit, pv, npv)
            self._release(pv)
            npv.std.instance_type = int(InstanceType.RESUBMIT)
            npv.std.packet_length = length_reg
            self._ingress.append(_IngressItem(npv, item.data, item.port, pid,
                                              self._new_copy_id(pid), item.repasses + 1))
            return

        payload = ctx.payload()
        # setValid()/setInvalid() in ingress moved BMv2's length register (add_header /
        # remove_header); multicast and unicast copies carry the adjusted value.
        length_reg = len(item.data) + _length_delta(ctx)
        # MULTICAST
        if mgid != 0:
            self._trace(pid, cid, "Multicast requested for packet")
            std.instance_type = int(InstanceType.REPLICATION)
            for port, rid in replicate(prog.state.pre, mgid):
                self._trace(pid, cid, f"Replicating packet on port {port}")
                std.egress_rid = rid
                self._enqueue(port, self._copy(pv), payload, length_reg, pid,
                              self._new_copy_id(pid), item.repasses, item.port)
            self._release(pv)
            return

        self._trace(pid, cid, f"Egress port is {egress_spec}")
        if egress_spec == DROP_PORT:
            self._trace(pid, cid, "Dropping packet at the end of ingress")
            self.stats.dropped += 1
            self._release(pv)
            return
        std.instance_type = int(InstanceType.NORMAL)
        self._enqueue(egress_spec, pv, payload, length_reg, pid, cid, item.repasses, item.port,
                      truncate=ctx.truncate_bytes, recirculate=ctx.recirculate)

    def _push_digest(self, digest: tuple[str, int, tuple[Any, ...]], pid: int, cid: int) -> None:
        """Hand one ``(name, receiver, values)`` digest to the program's digest queue."""
        name, _receiver, values = digest
        self.program.state.digests.push(name, tuple(values), now_ns=self.clock() * 1000)
        self._trace(pid, cid, f"Generating digest '{name}'")
        if self.on_digest is not None:
            self.on_digest()

    # ------------------------------------------------------------------ egress
    def _run_egress(self, item: EgressWork) -> None:
        prog = self.program
        pid, cid = item.packet_id, item.copy_id
        pv = item.pv
        std = pv.std
        now = self.clock()
        std.egress_global_timestamp = now
        deq_qdepth = 0
        if item.qmeta is not None:
            std.enq_timestamp = item.qmeta.enq_timestamp
            std.enq_qdepth = item.qmeta.enq_qdepth
            deq_qdepth = item.qmeta.deq_qdepth
        std.deq_timedelta = max(0, now - int(std.enq_timestamp))
        std.deq_qdepth = deq_qdepth
        std.egress_port = item.port
        std.egress_spec = EGRESS_SPEC_AT_EGRESS_START
        std.packet_length = item.length_reg
        ctx = PacketContext(item.payload, now_us=now, log=self._ctx_log(pid, cid))
        ctx.recirculate = item.recirculate
        self._control(prog.egress, "egress", ctx, pv, pid, cid)

        # EGRESS CLONING: headers as egress left them, metadata reset.
        if ctx.clone is not None:
            clone_pv = self._headers_only(pv)
            self._clone("egress", ctx.clone.session, ctx.clone.field_list, pv,
                        clone_pv, item.payload,
                        item.length_reg + _length_delta(ctx), pid, cid,
                        item.repasses, item.in_port, InstanceType.EGRESS_CLONE)
            self._release(clone_pv)

        if int(std.egress_spec) & PORT_MASK == DROP_PORT:
            self._trace(pid, cid, "Dropping packet at the end of egress")
            self.stats.dropped += 1
            self._release(pv)
            return

        self._trace(pid, cid, "Deparser 'deparser': start")
        prog.compute_checksum(ctx, pv)
        prog.deparser(ctx, pv)
        self._trace(pid, cid, "Deparser 'deparser': end")
        frame = bytes(ctx.emitted) + item.payload

        # RECIRCULATE: the deparsed frame goes back to ingress.
        if ctx.recirculate is not None:
            if self.max_repasses is not None and item.repasses >= self.max_repasses:
                self._trace(pid, cid, f"Recirculation limit ({self.max_repasses}) reached,"
                            " dropping packet")
                self.stats.dropped += 1
                self._release(pv)
                return
            self._trace(pid, cid, "Recirculating packet")
            npv = self._new_packet()
            self._preserve(ctx.recirculate, pv, npv)
            self._release(pv)
            npv.std.instance_type = int(InstanceType.RECIRC)
            npv.std.packet_length = len(frame)
            self._ingress.append(_IngressItem(npv, frame, item.in_port, pid,
                                              self._new_copy_id(pid), item.repasses + 1))
            return

        limits = [n for n in (item.truncate, ctx.truncate_bytes) if n is not None]
        if limits:
            frame = frame[:min(limits)]
        self._trace(pid, cid, f"Transmitting packet of size {len(frame)} out of port "
                    f"{item.port}")
        self.stats.transmitted += 1
        self._out.append((item.port, frame))
        self._release(pv)
