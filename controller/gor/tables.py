"""Switch-table writes of GOR's loop: INSERT-or-MODIFY of one entry, and the sampling
entries (``FabricIngress.sampling.config``) the loop turns on at congested ports and at the
first link of every move it must confirm.

* :class:`SwitchTables` writes and deletes entries through the switch connections
  (``programmer.connections``: switch name → connection with ``table_entry``, ``insert``,
  ``modify``, ``delete``); its errors are raised, the caller decides.
* :class:`Sampling` owns the sampling entries GOR has programmed (link → ``one_in_n``):
  :meth:`Sampling.enable`, :meth:`Sampling.disable`, and :meth:`Sampling.release`, which
  turns a link's sampling off only when its alarm is CLEAR and nothing else needs it (the
  ``needed`` callback the loop gives: a move to confirm, a follow-up round, a dead-link
  probe, an override's liveness probe). A write that fails is reported
  (:meth:`LoopOutputs.error <controller.gor.outputs.LoopOutputs.error>`), never raised
  out of a tick. On the decision path the loop does not write at once:
  :meth:`Sampling.request` notes the link and :meth:`Sampling.flush` writes every noted
  link once the round's orders are out (a P4Runtime write takes 3–80 ms on the testbed:
  before, an alarm's sampling write delayed the round and its first order by that much).

Example (fakes for the switches, see ``tests/controller/test_gor_loop.py``)::

    >>> sampling = Sampling(SwitchTables(programmer), flows, alarms, LoopOutputs(),
    ...                     one_in_n=100, needed=lambda link: False)   # doctest: +SKIP
    >>> sampling.enable(("b0r0l0", 3), t_s=1.0)                      # doctest: +SKIP
    True
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Optional

from controller.gor.alarms import AlarmMonitor
from controller.gor.decisions import AlarmLevel, LinkKey
from controller.gor.elephants import FlowTable
from controller.gor.outputs import LoopOutputs

SAMPLING_TABLE = "FabricIngress.sampling.config"
SAMPLING_ACTION = "FabricIngress.sampling.sample"
SAMPLING_KEY = "standard_metadata.egress_spec"


def _has_code(exc: BaseException, code: str) -> bool:
    """True when ``exc`` is a P4Runtime ``WriteError`` with an update that failed with
    ``code`` (a canonical gRPC code name)."""
    codes = getattr(exc, "codes", None)
    try:
        return callable(codes) and code in codes()
    except Exception:  # noqa: BLE001
        return False


def is_not_found(exc: BaseException) -> bool:
    """True when a P4Runtime ``WriteError`` says the entry is not there (a DELETE of
    something already gone).

    >>> is_not_found(ValueError("x"))
    False
    """
    return _has_code(exc, "NOT_FOUND")


def is_already_exists(exc: BaseException) -> bool:
    """True when a P4Runtime ``WriteError`` says the entry exists already.

    >>> is_already_exists(ValueError("x"))
    False
    """
    return _has_code(exc, "ALREADY_EXISTS")


class SwitchTables:
    """Entry writes through ``programmer.connections`` (read at every call: a restored
    switch's new connection is used at once).

    >>> SwitchTables(type("P", (), {"connections": {}})()).conn("s0")
    Traceback (most recent call last):
    ...
    KeyError: 's0: no connection'
    """

    def __init__(self, programmer: Any) -> None:
        self._programmer = programmer

    @property
    def connections(self) -> Mapping[str, Any]:
        """Switch name → connection, as the programmer has them now."""
        return self._programmer.connections

    def conn(self, switch: str) -> Any:
        """The connection of ``switch``; ``KeyError`` when there is none."""
        conn = self._programmer.connections.get(switch)
        if conn is None:
            raise KeyError(f"{switch}: no connection")
        return conn

    def write(self, switch: str, table: str, match: Mapping[str, Any], action: str,
              params: Mapping[str, Any]) -> None:
        """INSERT the entry, MODIFY when it exists already."""
        conn = self.conn(switch)
        te = conn.table_entry(table, match, action, params)
        try:
            conn.insert(te)
        except Exception as exc:  # noqa: BLE001
            if not is_already_exists(exc):
                raise
            conn.modify(te)

    def delete(self, switch: str, table: str, match: Mapping[str, Any]) -> None:
        """DELETE the entry of ``table`` with ``match``."""
        conn = self.conn(switch)
        conn.delete(conn.table_entry(table, match))

    def delete_if_present(self, switch: str, table: str, match: Mapping[str, Any]) -> None:
        """DELETE an entry; one that is not there is fine."""
        conn = self.conn(switch)
        try:
            conn.delete(conn.table_entry(table, match))
        except Exception as exc:  # noqa: BLE001
            if not is_not_found(exc):
                raise


class Sampling:
    """The sampling entries GOR has programmed, link → ``one_in_n`` (see the module
    docstring). ``needed(link)`` says whether anything but an alarm still needs a link's
    sampling; ``flows`` is told every link's ratio.
    """

    def __init__(self, tables: SwitchTables, flows: FlowTable, alarms: AlarmMonitor,
                 outputs: LoopOutputs, *, one_in_n: int, needed: Callable[[LinkKey], bool]) -> None:
        self._tables, self._flows, self._alarms, self._out = tables, flows, alarms, outputs
        self.one_in_n = one_in_n
        self.needed = needed
        self.on: dict[LinkKey, int] = {}              # link → one_in_n programmed
        self.since: dict[LinkKey, float] = {}         # link → t_s it was turned on
        self.due: dict[LinkKey, float] = {}           # link → t_s it was requested (not yet written)

    def __contains__(self, link: object) -> bool:
        return link in self.on

    def __iter__(self) -> Iterator[LinkKey]:
        return iter(self.on)

    def get(self, link: LinkKey) -> Optional[int]:
        """``one_in_n`` programmed at ``link`` (None: no sampling there)."""
        return self.on.get(link)

    def enable(self, key: LinkKey, t_s: float = 0.0) -> bool:
        """Sample one packet in ``one_in_n`` at ``key``'s egress port; False when the write
        failed (reported; the caller may try again on a later tick)."""
        sw, port = key
        try:
            self._tables.write(sw, SAMPLING_TABLE, {SAMPLING_KEY: port}, SAMPLING_ACTION,
                               {"one_in_n": self.one_in_n})
        except Exception as exc:  # noqa: BLE001 — a dead switch must not stop the loop
            self._out.error(f"{sw}: sampling on port {port} not enabled: {type(exc).__name__}: {exc}")
            return False
        self.on[key] = self.one_in_n
        self.since[key] = t_s
        self._flows.set_sampling(key, self.one_in_n)
        return True

    def request(self, key: LinkKey, t_s: float = 0.0) -> int:
        """Note that ``key`` needs sampling; :meth:`flush` writes it. Returns the ratio
        in force or to be written (``one_in_n``).

        >>> from types import SimpleNamespace as NS
        >>> written = []
        >>> tables = NS(write=lambda sw, table, match, action, params: written.append((sw, match)))
        >>> s = Sampling(tables, NS(set_sampling=lambda key, n: None), None, None,
        ...              one_in_n=1, needed=lambda link: False)
        >>> s.request(("b0r0l0", 3), 1.0), written, s.wanted(("b0r0l0", 3))
        (1, [], True)
        >>> s.flush(), written
        ([('b0r0l0', 3)], [('b0r0l0', {'standard_metadata.egress_spec': 3})])
        """
        got = self.on.get(key)
        if got is not None:
            return got
        self.due.setdefault(key, t_s)
        return self.one_in_n

    def wanted(self, key: LinkKey) -> bool:
        """Sampling is on at ``key``, or requested and about to be written."""
        return key in self.on or key in self.due

    def flush(self) -> list[LinkKey]:
        """Write every link :meth:`request` noted (oldest first); the links now on. A
        failed write is reported and forgotten: the caller asks again (the loop does for
        every alarm on each tick)."""
        done = []
        while self.due:
            key = next(iter(self.due))
            t_s = self.due.pop(key)
            if key not in self.on and self.enable(key, t_s):
                done.append(key)
        return done

    def adopt(self, key: LinkKey, one_in_n: int, t_s: float) -> None:
        """Record an entry found in the switch (a predecessor's) as GOR's own."""
        self.on[key] = one_in_n
        self.since[key] = t_s
        self._flows.set_sampling(key, one_in_n)

    def disable(self, key: LinkKey) -> None:
        """Delete ``key``'s sampling entry (nothing when there is none)."""
        self.due.pop(key, None)
        if self.on.pop(key, None) is None:
            return
        self.since.pop(key, None)
        sw, port = key
        try:
            self._tables.delete(sw, SAMPLING_TABLE, {SAMPLING_KEY: port})
        except Exception as exc:  # noqa: BLE001
            self._out.error(f"{sw}: sampling on port {port} not disabled: {type(exc).__name__}: {exc}")

    def release(self, link: LinkKey) -> None:
        """Turn ``link``'s sampling off when its alarm is CLEAR and nothing needs it."""
        if (self.wanted(link) and not self.needed(link)
                and self._alarms.level(link) == AlarmLevel.CLEAR):
            self.disable(link)


__all__ = ["SAMPLING_ACTION", "SAMPLING_KEY", "SAMPLING_TABLE", "Sampling", "SwitchTables",
           "is_already_exists", "is_not_found"]
