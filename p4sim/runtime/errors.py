"""Errors raised by the runtime state (tables, externs, replication engine).

Every control-plane operation on :mod:`p4sim.runtime` objects either succeeds or raises
:class:`RuntimeStateError` *without changing any state*. ``code`` is the name of a
P4Runtime / gRPC canonical status code so that the P4Runtime server can forward it as is.

Example::

    >>> err = RuntimeStateError("NOT_FOUND", "no entry with this key")
    >>> err.code, str(err)
    ('NOT_FOUND', 'NOT_FOUND: no entry with this key')
"""
from __future__ import annotations

#: The canonical codes the runtime uses (subset of google.rpc.Code names).
CODES = frozenset({
    "INVALID_ARGUMENT",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "OUT_OF_RANGE",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "PERMISSION_DENIED",
    "UNIMPLEMENTED",
})


class RuntimeStateError(Exception):
    """A rejected control-plane operation. ``code`` is a P4Runtime canonical code name."""

    def __init__(self, code: str, message: str) -> None:
        if code not in CODES:
            raise ValueError(f"unknown canonical code {code!r}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def check_fits(value: int, width: int, what: str) -> None:
    """Raise ``OUT_OF_RANGE`` unless ``0 <= value < 2**width``.

    Example::

        >>> check_fits(255, 8, "x")
        >>> try:
        ...     check_fits(256, 8, "x")
        ... except RuntimeStateError as e:
        ...     print(e.code)
        OUT_OF_RANGE
    """
    if value < 0 or value >> width:
        raise RuntimeStateError("OUT_OF_RANGE", f"{what}: value {value:#x} does not fit in {width} bits")
