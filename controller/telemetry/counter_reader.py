"""Reading one switch's port counters over P4Runtime: :func:`p4rt_reader` builds the
:data:`Reader` the telemetry poller calls (one indexed Read per poll, nothing written);
:func:`connection_reader` follows the switch's *current* connection in a mapping, so a
switch reconnected after a restart is read on its new connection.

Names read (``p4src/README.md``), all indexed counters — BMv2's P4Runtime server reads
and writes no register, so GOR needs none: :data:`TX_COUNTER`, :data:`RX_COUNTER`,
:data:`ECN_COUNTER`, :data:`DROPS_COUNTER`, :data:`PFC_TX_COUNTER`, :data:`PFC_RX_COUNTER`
(index ``port·8 + priority``) and :data:`QDEPTH_HIST_COUNTER` (index
``port·QDEPTH_BINS + bin``, :func:`qdepth_hist_index`). A counter missing from the
pipeline reads as 0.

>>> readers = {n: connection_reader(prog.connections, n) for n in prog.connections}  # doctest: +SKIP
>>> readers["b0r0l0"]([3, 4])[3].tx_pkts                                            # doctest: +SKIP
1200

The queue-depth histogram, read by hand (the PTF tests, lab 04): read a port's bins
before and after, subtract, and :func:`qdepth_floor` gives the deepest queue in between
(the lower edge of the highest bin that grew; :data:`QDEPTH_BIN_PKTS` packets per bin)::

    >>> idx = [qdepth_hist_index(2, b) for b in range(QDEPTH_BINS)]                # doctest: +SKIP
    >>> bins = lambda: [sw.read_counter(QDEPTH_HIST_COUNTER, i)[i].packets for i in idx]  # doctest: +SKIP
    >>> before = bins(); send_burst(); after = bins()                            # doctest: +SKIP
    >>> qdepth_floor([a - b for a, b in zip(after, before)])                     # doctest: +SKIP
    12
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from controller.telemetry.counters import (QDEPTH_BIN_PKTS, QDEPTH_BINS, PortReading, qdepth_bin,
                                     qdepth_floor)
from controller.p4rt import counter_entry

TX_COUNTER = "FabricEgress.telemetry.tx"
RX_COUNTER = "FabricIngress.telemetry.rx"
DROPS_COUNTER = "FabricIngress.telemetry.drops"
ECN_COUNTER = "FabricEgress.ecn.marks"
PFC_TX_COUNTER = "FabricEgress.telemetry.pfc_tx"
PFC_RX_COUNTER = "FabricIngress.pfc.rx_frames"
QDEPTH_HIST_COUNTER = "FabricEgress.telemetry.qdepth_hist"
PFC_PRIORITIES = 8

Reader = Callable[[Sequence[int]], Mapping[int, PortReading]]
"""Reads the cumulative counters of the given ports of one switch (writes nothing)."""


def qdepth_hist_index(port: int, bin_: int) -> int:
    """Index of ``port``'s bin ``bin_`` in :data:`QDEPTH_HIST_COUNTER`.

    >>> qdepth_hist_index(2, 0), qdepth_hist_index(2, QDEPTH_BINS - 1)
    (32, 47)
    """
    return port * QDEPTH_BINS + bin_


def _has_counter(info: Any, name: str) -> bool:
    """False only when the P4Info says the pipeline has no counter ``name``."""
    return info is None or info.has("counter", name)


def _optional_counter(conn: Any, info: Any, name: str) -> dict[int, Any]:
    """Cells of ``name``, or nothing when the pipeline has no such counter."""
    return conn.read_counter(name) if _has_counter(info, name) else {}


def p4rt_reader(conn: Any) -> Reader:
    """A :data:`Reader` over an open, primary ``controller.p4rt.SwitchConnection``: ONE
    Read request with one entity per (counter, polled port) cell, the polled ports'
    :data:`QDEPTH_BINS` histogram cells included (a wildcard read would return all 512
    cells of every counter, 4,096 of the PFC ones, 8,192 of the histogram: seconds per
    poll on a loaded 2-core machine), and no write. Targets that refuse an indexed read
    fall back to wildcard reads."""
    state: dict[str, Any] = {}

    def cells(info: Any, ports: Sequence[int]) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for name in (TX_COUNTER, ECN_COUNTER, RX_COUNTER, DROPS_COUNTER, PFC_TX_COUNTER):
            if name in (TX_COUNTER, ECN_COUNTER) or _has_counter(info, name):
                out += [(name, p) for p in ports]
        if _has_counter(info, PFC_RX_COUNTER):
            out += [(PFC_RX_COUNTER, p * PFC_PRIORITIES + q) for p in ports for q in range(PFC_PRIORITIES)]
        if _has_counter(info, QDEPTH_HIST_COUNTER):
            out += [(QDEPTH_HIST_COUNTER, qdepth_hist_index(p, b)) for p in ports for b in range(QDEPTH_BINS)]
        return out

    def request(info: Any, ports: Sequence[int]) -> tuple[Any, dict[int, str]]:
        """The Read of ``ports``' cells and counter id → name, built once per P4Info and
        port list (the poller asks for the same cells every interval; with protobuf's
        pure-Python runtime building ~500 entities took most of GOR's polling time)."""
        built = state.setdefault("requests", {})
        key = tuple(ports)
        if key not in built or built[key][0] is not info:      # a new pipeline: new ids
            want = cells(info, ports)
            msgs = [counter_entry(info, n, i) for n, i in want]
            req = conn.read_request(*msgs)
            built[key] = (info, req, {info.counter_id(n): n for n in {n for n, _ in want}})
        _, req, ids = built[key]
        return req, ids

    def read_indexed(info: Any, ports: Sequence[int]) -> dict[str, dict[int, Any]]:
        req, ids = request(info, ports)
        got: dict[str, dict[int, Any]] = {n: {} for n in ids.values()}
        entities = conn.send_read(req)
        for e in entities:
            if e.HasField("counter_entry"):
                ce = e.counter_entry
                got[ids[ce.counter_id]][ce.index.index] = _Cell(ce.data.packet_count, ce.data.byte_count)
        return got

    def read_wildcard(info: Any) -> dict[str, dict[int, Any]]:
        got = {TX_COUNTER: conn.read_counter(TX_COUNTER), ECN_COUNTER: conn.read_counter(ECN_COUNTER)}
        for name in (RX_COUNTER, DROPS_COUNTER, PFC_TX_COUNTER, PFC_RX_COUNTER, QDEPTH_HIST_COUNTER):
            got[name] = _optional_counter(conn, info, name)
        return got

    def read(ports: Sequence[int]) -> dict[int, PortReading]:
        info = conn.p4info if conn.p4info is not None else conn.fetch_pipeline()
        if state.get("indexed", True):
            try:
                got = read_indexed(info, ports)
                state["indexed"] = True
            except Exception:  # noqa: BLE001 — a target without indexed reads
                if state.get("indexed"):
                    raise
                state["indexed"] = False
                got = read_wildcard(info)
        else:
            got = read_wildcard(info)

        def pk(name: str, i: int) -> int:
            c = got.get(name, {}).get(i)
            return c.packets if c else 0

        has_hist = _has_counter(info, QDEPTH_HIST_COUNTER)
        out = {}
        for p in ports:
            t, r = got[TX_COUNTER].get(p), got.get(RX_COUNTER, {}).get(p)
            prx = sum(pk(PFC_RX_COUNTER, p * PFC_PRIORITIES + q) for q in range(PFC_PRIORITIES))
            bins = tuple(pk(QDEPTH_HIST_COUNTER, qdepth_hist_index(p, b)) for b in range(QDEPTH_BINS)) \
                if has_hist else ()
            out[p] = PortReading(t.packets if t else 0, t.bytes if t else 0, pk(ECN_COUNTER, p),
                                 qdepth_floor(bins), r.packets if r else 0, r.bytes if r else 0,
                                 pk(DROPS_COUNTER, p), pk(PFC_TX_COUNTER, p), prx, bins)
        return out
    return read


@dataclass(frozen=True, slots=True)
class _Cell:
    packets: int
    bytes: int


def connection_reader(connections: Mapping[str, Any], switch: str) -> Reader:
    """A :data:`Reader` of ``switch`` over whatever connection ``connections[switch]`` holds
    at each call (a :func:`p4rt_reader` per connection object, rebuilt when the connection
    is replaced, e.g. by :class:`controller.gor.recovery.SwitchRecovery`).

    >>> class C: p4info = None
    >>> r = connection_reader({"s0": C()}, "s0"); callable(r)
    True
    """
    cache: dict[str, Any] = {}

    def read(ports: Sequence[int]) -> Mapping[int, PortReading]:
        conn = connections[switch]
        if cache.get("conn") is not conn:
            cache["conn"], cache["reader"] = conn, p4rt_reader(conn)
        reader: Reader = cache["reader"]
        return reader(ports)
    return read


__all__ = ["DROPS_COUNTER", "ECN_COUNTER", "PFC_PRIORITIES", "PFC_RX_COUNTER", "PFC_TX_COUNTER",
           "QDEPTH_BINS", "QDEPTH_BIN_PKTS", "QDEPTH_HIST_COUNTER", "RX_COUNTER", "Reader",
           "TX_COUNTER", "connection_reader", "p4rt_reader", "qdepth_bin", "qdepth_floor",
           "qdepth_hist_index"]
