"""Control-plane faults written through P4Runtime: a route removed (blackhole) and one
egress port's ECN threshold set far too low, each undone by writing back exactly the
entry that was there.

The P4Runtime primary connection of a switch belongs to the controller (the testbed's
programmer, GOR in the scenarios), so the injector does not open its own: it is handed
an object with the :class:`TableWriter` shape. :class:`P4RuntimeWriter` is that object
over ``controller.p4rt.SwitchConnection`` s (``FabricProgrammer.connections``). A change
returns an :class:`EntryUndo`, a plain record (the saved entry as serialized
``p4.v1.TableEntry`` bytes in hex) that the fault file keeps, so the undo can be written
by another process holding a writer too.

>>> u = EntryUndo("s0", "insert", "0a0b")
>>> EntryUndo.from_dict(u.to_dict()) == u
True
"""
from __future__ import annotations

import ipaddress
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Protocol

from p4.v1 import p4runtime_pb2

from controller.fabric.entries import T_ECN, T_ROUTES
from controller.p4rt.errors import P4RuntimeClientError, WriteError

ROUTE_FIELD = "hdr.ipv4.dst_addr"
PORT_FIELD = "standard_metadata.egress_port"
ECN_STEP_ACTION = "FabricEgress.ecn.set_ecn_threshold"
UNDO_WAIT_S = 15.0       # a switch's recovery (reconnect, re-program) takes 0.3-2 s
UNDO_PROBE_S = 0.05


class WriterError(RuntimeError):
    """A P4Runtime fault could not be written; the message names the switch and entry."""


@dataclass(frozen=True, slots=True)
class EntryUndo:
    """How to put one table entry back: ``op`` ``insert`` (it was deleted), ``modify`` (it
    was changed) or ``delete`` (it did not exist and was added), with the entry (hex of the
    serialized ``TableEntry``) on ``switch``."""

    switch: str
    op: str
    entry_hex: str

    def to_dict(self) -> dict[str, str]:
        """JSON form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "EntryUndo":
        """Inverse of :meth:`to_dict`."""
        return cls(str(raw["switch"]), str(raw["op"]), str(raw["entry_hex"]))

    def entry(self) -> p4runtime_pb2.TableEntry:
        """The saved entry."""
        return p4runtime_pb2.TableEntry.FromString(bytes.fromhex(self.entry_hex))


class TableWriter(Protocol):
    """What the injector needs to break and restore switch tables (the controller's
    connection: :class:`P4RuntimeWriter`, or a test double)."""

    def delete_route(self, switch: str, prefix: str) -> EntryUndo:
        """Delete ``switch``'s route for ``prefix``; how to put it back."""
        ...

    def set_ecn_threshold(self, switch: str, port: int, kmin_pkts: int) -> EntryUndo:
        """Make egress ``port`` of ``switch`` mark CE from ``kmin_pkts`` packets on; how
        to put the old entry back."""
        ...

    def undo(self, undo: EntryUndo) -> None:
        """Write ``undo`` back."""
        ...


def _key(fm: p4runtime_pb2.FieldMatch) -> tuple[int, str, int, int]:
    """A FieldMatch as comparable numbers (servers may trim leading zero bytes)."""
    kind = fm.WhichOneof("field_match_type") or ""
    sub = getattr(fm, kind) if kind else None
    value = int.from_bytes(getattr(sub, "value", b""), "big") if sub is not None else 0
    extra = 0
    if kind == "lpm":
        extra = fm.lpm.prefix_len
    elif kind == "ternary":
        extra = int.from_bytes(fm.ternary.mask, "big")
    return (fm.field_id, kind, value, extra)


def same_match(a: p4runtime_pb2.TableEntry, b: p4runtime_pb2.TableEntry) -> bool:
    """True when two entries have the same key (field ids, kinds, values, prefix lengths).

    >>> e = p4runtime_pb2.TableEntry(table_id=1); m = e.match.add(field_id=1)
    >>> m.lpm.value, m.lpm.prefix_len = b"\\x0a\\x01\\x00\\x00", 24
    >>> f = p4runtime_pb2.TableEntry(table_id=1); n = f.match.add(field_id=1)
    >>> n.lpm.value, n.lpm.prefix_len = b"\\x00\\x0a\\x01\\x00\\x00", 24
    >>> same_match(e, f)
    True
    """
    return (a.table_id == b.table_id and a.priority == b.priority
            and sorted(map(_key, a.match)) == sorted(map(_key, b.match)))


def writable(entry: p4runtime_pb2.TableEntry) -> p4runtime_pb2.TableEntry:
    """A read-back entry as an INSERT/MODIFY may carry it (read-only data cleared)."""
    out = p4runtime_pb2.TableEntry()
    out.CopyFrom(entry)
    for name in ("counter_data", "meter_counter_data", "time_since_last_hit", "meter_config"):
        if out.HasField(name):
            out.ClearField(name)
    return out


class P4RuntimeWriter:
    """:class:`TableWriter` over the controller's primary connections, switch name →
    ``controller.p4rt.SwitchConnection`` (``FabricProgrammer.connections``).

    >>> w = P4RuntimeWriter(programmer.connections)                    # doctest: +SKIP
    >>> undo = w.delete_route("s0", "10.1.0.0/24"); w.undo(undo)        # doctest: +SKIP
    """

    def __init__(self, connections: Mapping[str, Any]) -> None:
        self.connections = connections

    def _conn(self, switch: str) -> Any:
        try:
            conn = self.connections[switch]
        except KeyError:
            raise WriterError(f"no P4Runtime connection to switch {switch!r} (connected: "
                              f"{', '.join(sorted(self.connections)) or 'none'})") from None
        if conn.p4info is None:
            conn.fetch_pipeline()
        return conn

    def _find(self, conn: Any, table: str, probe: p4runtime_pb2.TableEntry
              ) -> p4runtime_pb2.TableEntry | None:
        for entry in conn.read_table(table):
            if same_match(entry, probe):
                return writable(entry)
        return None

    def delete_route(self, switch: str, prefix: str) -> EntryUndo:
        conn = self._conn(switch)
        net = ipaddress.ip_network(prefix, strict=False)
        probe = conn.table_entry(T_ROUTES, {ROUTE_FIELD: str(net)})
        found = self._find(conn, T_ROUTES, probe)
        if found is None:
            have = [self._prefix(e) for e in conn.read_table(T_ROUTES)]
            raise WriterError(f"switch {switch} has no route for {net} (its routes: "
                              f"{', '.join(have) or 'none'})")
        conn.delete(found)
        return EntryUndo(switch, "insert", found.SerializeToString().hex())

    @staticmethod
    def _prefix(entry: p4runtime_pb2.TableEntry) -> str:
        for fm in entry.match:
            if fm.WhichOneof("field_match_type") == "lpm":
                addr = ipaddress.ip_address(int.from_bytes(fm.lpm.value, "big"))
                return f"{addr}/{fm.lpm.prefix_len}"
        return "?"

    def set_ecn_threshold(self, switch: str, port: int, kmin_pkts: int) -> EntryUndo:
        conn = self._conn(switch)
        new = conn.table_entry(T_ECN, {PORT_FIELD: port}, ECN_STEP_ACTION,
                               {"kmin_pkts": kmin_pkts})
        old = self._find(conn, T_ECN, new)
        if old is None:
            conn.insert(new)
            return EntryUndo(switch, "delete", new.SerializeToString().hex())
        conn.modify(new)
        return EntryUndo(switch, "modify", old.SerializeToString().hex())

    def undo(self, undo: EntryUndo, wait_s: float = UNDO_WAIT_S) -> None:
        """Write ``undo`` back. An undo is done once its entry is as it was, whoever put it
        back: GOR's recovery re-programs a switch it found stale and off its plan, so a
        deleted route may be there again (ALREADY_EXISTS: the entry is checked, then kept
        or modified) and an added one gone (NOT_FOUND). A connection that fails as a whole
        (closed under the write while the recovery replaces it, or not answering) is
        retried on the connection that replaces it, for at most ``wait_s``."""
        if undo.op not in ("insert", "modify", "delete"):
            raise WriterError(f"unknown undo operation {undo.op!r}")
        deadline = time.monotonic() + wait_s
        while True:
            conn = self._conn(undo.switch)
            try:
                self._write_back(conn, undo.op, undo.entry())
                return
            except (WriteError, P4RuntimeClientError, ValueError) as exc:
                if not _whole_rpc_failed(exc) or time.monotonic() >= deadline:
                    raise WriterError(f"undo {undo.op} on {undo.switch} failed: {exc}") from exc
                self._replaced(undo.switch, conn, deadline)

    def _write_back(self, conn: Any, op: str, entry: p4runtime_pb2.TableEntry) -> None:
        try:
            {"insert": conn.insert, "modify": conn.modify, "delete": conn.delete}[op](entry)
        except WriteError as exc:
            codes = exc.codes()
            if op == "delete" and codes == ["NOT_FOUND"]:
                return                                  # gone already
            if op == "insert" and codes == ["ALREADY_EXISTS"]:
                present = self._find(conn, self._table_name(conn, entry), entry)
                if present is None or present.action != entry.action:
                    conn.modify(entry)
                return
            if op == "modify" and codes == ["NOT_FOUND"]:
                conn.insert(entry)
                return
            raise

    @staticmethod
    def _table_name(conn: Any, entry: p4runtime_pb2.TableEntry) -> str:
        return str(conn.p4info.get_name("table", entry.table_id))

    def _replaced(self, switch: str, old: Any, deadline: float) -> None:
        """Wait (bounded by ``deadline``) until ``connections[switch]`` is another
        connection than ``old``, or ``old`` answers again."""
        gone = threading.Event()
        while time.monotonic() < deadline:
            cur = self.connections.get(switch)
            if cur is not None and cur is not old:
                return
            if cur is old and getattr(old, "stream_alive", True):
                try:
                    old.pipeline_cookie()
                    return
                except Exception:  # noqa: BLE001 — not answering yet
                    pass
            gone.wait(min(UNDO_PROBE_S, max(0.0, deadline - time.monotonic())))


def _whole_rpc_failed(exc: Exception) -> bool:
    """Whether the Write failed as a whole (transport, closed channel, no answer) rather
    than the switch refusing the update (that is no reason to try again)."""
    if isinstance(exc, WriteError):
        return not exc.errors
    if isinstance(exc, ValueError):
        return "closed channel" in str(exc)
    return isinstance(exc, P4RuntimeClientError)


__all__ = ["ECN_STEP_ACTION", "EntryUndo", "P4RuntimeWriter", "T_ECN", "T_ROUTES",
           "TableWriter", "WriterError", "same_match", "writable"]
