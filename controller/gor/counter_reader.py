"""Reading one switch's port counters over P4Runtime: :func:`p4rt_reader` builds the
:data:`Reader` the telemetry poller calls (one indexed Read per poll, read-and-clear of the
queue-depth register); :func:`connection_reader` follows the switch's *current* connection
in a mapping, so a switch reconnected after a restart is read on its new connection.

Names read (``p4src/README.md``): :data:`TX_COUNTER`, :data:`RX_COUNTER`,
:data:`ECN_COUNTER`, :data:`DROPS_COUNTER`, :data:`PFC_TX_COUNTER`, :data:`PFC_RX_COUNTER`
(index ``port·8 + priority``) and :data:`QDEPTH_REGISTER`. A counter missing from the
pipeline reads as 0.

>>> readers = {n: connection_reader(prog.connections, n) for n in prog.connections}  # doctest: +SKIP
>>> readers["b0r0l0"]([3, 4])[3].tx_pkts                                            # doctest: +SKIP
1200
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from controller.gor.counters import PortReading
from controller.p4rt import counter_entry, register_entry, update

TX_COUNTER = "FabricEgress.telemetry.tx"
RX_COUNTER = "FabricIngress.telemetry.rx"
DROPS_COUNTER = "FabricIngress.telemetry.drops"
ECN_COUNTER = "FabricEgress.ecn.marks"
PFC_TX_COUNTER = "FabricEgress.telemetry.pfc_tx"
PFC_RX_COUNTER = "FabricIngress.pfc.rx_frames"
QDEPTH_REGISTER = "FabricEgress.telemetry.max_qdepth"
PFC_PRIORITIES = 8

Reader = Callable[[Sequence[int]], Mapping[int, PortReading]]
"""Reads (and clears ``max_qdepth`` of) the given ports of one switch."""


def _optional_counter(conn: Any, info: Any, name: str) -> dict[int, Any]:
    """Cells of ``name``, or nothing when the pipeline has no such counter."""
    if info is not None and hasattr(info, "has") and not info.has("counter", name):
        return {}
    return conn.read_counter(name)


def p4rt_reader(conn: Any) -> Reader:
    """A :data:`Reader` over an open, primary ``controller.p4rt.SwitchConnection``: ONE
    Read request with one entity per (counter, polled port) cell and the ``max_qdepth``
    cells (a wildcard read would return all 512 cells of every counter, 4,096 of the
    PFC ones: seconds per poll on a loaded 2-core machine), then one batched write of
    zeros to ``max_qdepth`` for the ports read (only the non-zero cells). Targets that
    refuse an indexed read fall back to wildcard reads."""
    state: dict[str, Any] = {}

    def cells(info: Any, ports: Sequence[int]) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        def present(name: str) -> bool:
            return not hasattr(info, "has") or info.has("counter", name)
        for name in (TX_COUNTER, ECN_COUNTER, RX_COUNTER, DROPS_COUNTER, PFC_TX_COUNTER):
            if name in (TX_COUNTER, ECN_COUNTER) or present(name):
                out += [(name, p) for p in ports]
        if present(PFC_RX_COUNTER):
            out += [(PFC_RX_COUNTER, p * PFC_PRIORITIES + q) for p in ports for q in range(PFC_PRIORITIES)]
        return out

    def read_indexed(info: Any, ports: Sequence[int]) -> tuple[dict[str, dict[int, Any]], dict[int, int]]:
        want = cells(info, ports)
        ids = {info.counter_id(n): n for n in {n for n, _ in want}}
        msgs = [counter_entry(info, n, i) for n, i in want]
        msgs += [register_entry(info, QDEPTH_REGISTER, p) for p in ports]
        got: dict[str, dict[int, Any]] = {n: {} for n in ids.values()}
        qd: dict[int, int] = {}
        for e in conn.read(*msgs):
            if e.HasField("counter_entry"):
                ce = e.counter_entry
                got[ids[ce.counter_id]][ce.index.index] = _Cell(ce.data.packet_count, ce.data.byte_count)
            elif e.HasField("register_entry"):
                re_ = e.register_entry
                qd[re_.index.index] = _p4data_int(re_.data)
        return got, qd

    def read_wildcard(info: Any) -> tuple[dict[str, dict[int, Any]], dict[int, int]]:
        got = {TX_COUNTER: conn.read_counter(TX_COUNTER), ECN_COUNTER: conn.read_counter(ECN_COUNTER)}
        for name in (RX_COUNTER, DROPS_COUNTER, PFC_TX_COUNTER, PFC_RX_COUNTER):
            got[name] = _optional_counter(conn, info, name)
        return got, conn.read_register(QDEPTH_REGISTER)

    def read(ports: Sequence[int]) -> dict[int, PortReading]:
        info = conn.p4info if conn.p4info is not None else conn.fetch_pipeline()
        if state.get("indexed", hasattr(conn, "read")):
            try:
                got, qd = read_indexed(info, ports)
                state["indexed"] = True
            except Exception:  # noqa: BLE001 — a target without indexed reads
                if state.get("indexed"):
                    raise
                state["indexed"] = False
                got, qd = read_wildcard(info)
        else:
            got, qd = read_wildcard(info)
        clears = [update(register_entry(info, QDEPTH_REGISTER, p, 0), "MODIFY")
                  for p in ports if qd.get(p)]
        if clears:
            conn.write(clears)

        def pk(name: str, i: int) -> int:
            c = got.get(name, {}).get(i)
            return c.packets if c else 0

        out = {}
        for p in ports:
            t, r = got[TX_COUNTER].get(p), got.get(RX_COUNTER, {}).get(p)
            prx = sum(pk(PFC_RX_COUNTER, p * PFC_PRIORITIES + q) for q in range(PFC_PRIORITIES))
            out[p] = PortReading(t.packets if t else 0, t.bytes if t else 0, pk(ECN_COUNTER, p),
                                 qd.get(p, 0), r.packets if r else 0, r.bytes if r else 0,
                                 pk(DROPS_COUNTER, p), pk(PFC_TX_COUNTER, p), prx)
        return out
    return read


@dataclass(frozen=True, slots=True)
class _Cell:
    packets: int
    bytes: int


def _p4data_int(data: Any) -> int:
    """The integer of a register cell's P4Data (a bitstring, or the first struct member)."""
    if data.HasField("bitstring"):
        return int.from_bytes(data.bitstring, "big")
    for kind in ("struct", "tuple", "header"):
        if data.HasField(kind):
            members = getattr(getattr(data, kind), "members", None) or []
            return _p4data_int(members[0]) if members else 0
    return 0


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
           "QDEPTH_REGISTER", "RX_COUNTER", "Reader", "TX_COUNTER", "connection_reader", "p4rt_reader"]
