"""Errors raised by the P4Runtime client library (``controller.p4rt``).

Example::

    >>> raise NotPrimaryError("127.0.0.1:9559", 0, "election id (0, 1) lost")  # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass


class P4RuntimeClientError(RuntimeError):
    """Base class of every error of ``controller.p4rt``."""


class NotPrimaryError(P4RuntimeClientError):
    """The connection did not become the primary controller of the device.

    >>> str(NotPrimaryError("a:1", 0, "ALREADY_EXISTS"))
    'a:1 device 0: not primary: ALREADY_EXISTS'
    """

    def __init__(self, addr: str, device_id: int, detail: str) -> None:
        super().__init__(f"{addr} device {device_id}: not primary: {detail}")
        self.addr, self.device_id, self.detail = addr, device_id, detail


class P4InfoLookupError(P4RuntimeClientError, KeyError):
    """A name (or id) that the P4Info does not hold.

    >>> str(P4InfoLookupError("table", "MyIngress.nope"))
    "'no table named MyIngress.nope in the P4Info'"
    """

    def __init__(self, kind: str, name: object) -> None:
        super().__init__(f"no {kind} named {name} in the P4Info")
        self.kind, self.name = kind, name


@dataclass(frozen=True, slots=True)
class UpdateError:
    """The outcome of one update of a failed Write: ``index`` in the batch, gRPC canonical
    code name (``ALREADY_EXISTS``…) and the switch's message.

    >>> UpdateError(0, "NOT_FOUND", "no such entry").code
    'NOT_FOUND'
    """

    index: int
    code: str
    message: str


class WriteError(P4RuntimeClientError):
    """A Write RPC failed; ``errors`` lists the updates that failed (code != OK).

    >>> e = WriteError("Write failed", [UpdateError(1, "ALREADY_EXISTS", "dup")])
    >>> e.codes()
    ['ALREADY_EXISTS']
    """

    def __init__(self, message: str, errors: list[UpdateError]) -> None:
        detail = "; ".join(f"update {e.index}: {e.code} {e.message}" for e in errors)
        super().__init__(f"{message}: {detail}" if detail else message)
        self.errors = errors

    def codes(self) -> list[str]:
        """The canonical code names of the failed updates, in batch order."""
        return [e.code for e in self.errors]
