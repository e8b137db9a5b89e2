"""Switch-table writes of GOR's loop: :class:`SwitchTables` writes (INSERT, or MODIFY when
the entry exists) and deletes entries through the switch connections
(``programmer.connections``: switch name → connection with ``table_entry``, ``insert``,
``modify``, ``delete``); its errors are raised, the caller decides. The sampling entries
it writes for the loop are :mod:`controller.gor.sampling`'s.

>>> is_not_found(ValueError("x")), SAMPLING_TABLE
(False, 'FabricIngress.sampling.config')
"""
from __future__ import annotations

from typing import Any, Mapping

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


__all__ = ["SAMPLING_ACTION", "SAMPLING_KEY", "SAMPLING_TABLE", "SwitchTables", "is_already_exists",
           "is_not_found"]
