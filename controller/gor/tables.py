"""Switch-table writes of GOR's loop: INSERT-or-MODIFY of one entry, and the sampling
entries (``FabricIngress.sampling.config``) the loop turns on at congested ports and at the
first link of every move it must confirm.

:class:`SwitchTables` is mixed into :class:`controller.gor.loop.GorLoop`; it works on the
loop's ``programmer.connections`` (switch name → connection with ``table_entry``,
``insert``, ``modify``, ``delete``), ``sampling`` (link → ``one_in_n`` programmed),
``sampling_since``, ``flows`` (the flow table is told each link's ratio), ``follow_up``,
``probes`` and ``pending``. A write that fails is logged (:meth:`_error`), never raised
out of a tick.

Example (the loop's own use)::

    >>> loop._enable_sampling(("b0r0l0", 3), t_s=1.0)        # doctest: +SKIP
    True
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from controller.gor.decisions import LinkKey
from controller.gor.elephants import FlowTable
from controller.gor.moves import MoveInFlight

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
    """Entry writes and sampling control, mixed into :class:`controller.gor.loop.GorLoop`."""

    programmer: Any
    one_in_n: int
    flows: FlowTable
    sampling: dict[LinkKey, int]
    sampling_since: dict[LinkKey, float]
    follow_up: set[LinkKey]
    probes: dict[LinkKey, float]
    pending: dict[str, MoveInFlight]
    liveness: dict[Any, tuple[LinkKey, float]]

    if TYPE_CHECKING:  # provided by the other parts of GorLoop (stubs here would shadow them)
        def _error(self, msg: str) -> None: ...

    def _confirming(self, link: LinkKey) -> bool:
        """Sampling on ``link`` is still needed: a move must be seen there, a follow-up
        round may run on it, it probes a link that may be dead, or an override's flow
        that may have ended (:mod:`controller.gor.expiry`)."""
        return (link in self.follow_up or link in self.probes
                or any(m.new_link == link for m in self.pending.values())
                or any(l == link for l, _ in self.liveness.values()))

    def _conn(self, switch: str) -> Any:
        conn = self.programmer.connections.get(switch)
        if conn is None:
            raise KeyError(f"{switch}: no connection")
        return conn

    def _write(self, switch: str, table: str, match: Mapping[str, Any], action: str,
               params: Mapping[str, Any]) -> None:
        """INSERT the entry, MODIFY when it exists already."""
        conn = self._conn(switch)
        te = conn.table_entry(table, match, action, params)
        try:
            conn.insert(te)
        except Exception as exc:  # noqa: BLE001
            if not is_already_exists(exc):
                raise
            conn.modify(te)

    def _enable_sampling(self, key: LinkKey, t_s: float = 0.0) -> bool:
        sw, port = key
        try:
            self._write(sw, SAMPLING_TABLE, {SAMPLING_KEY: port}, SAMPLING_ACTION,
                        {"one_in_n": self.one_in_n})
        except Exception as exc:  # noqa: BLE001 — a dead switch must not stop the loop
            self._error(f"{sw}: sampling on port {port} not enabled: {type(exc).__name__}: {exc}")
            return False
        self.sampling[key] = self.one_in_n
        self.sampling_since[key] = t_s
        self.flows.set_sampling(key, self.one_in_n)
        return True

    def _disable_sampling(self, key: LinkKey) -> None:
        if self.sampling.pop(key, None) is None:
            return
        self.sampling_since.pop(key, None)
        sw, port = key
        try:
            conn = self._conn(sw)
            conn.delete(conn.table_entry(SAMPLING_TABLE, {SAMPLING_KEY: port}))
        except Exception as exc:  # noqa: BLE001
            self._error(f"{sw}: sampling on port {port} not disabled: {type(exc).__name__}: {exc}")

__all__ = ["SAMPLING_ACTION", "SAMPLING_KEY", "SAMPLING_TABLE", "SwitchTables", "is_already_exists",
           "is_not_found"]
