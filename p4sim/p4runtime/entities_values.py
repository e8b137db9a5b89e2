"""Value helpers of the entity modules (:mod:`p4sim.p4runtime.entities`): unsigned
bytestrings and ``P4Data`` bitstrings on top of :mod:`p4sim.p4runtime.codec`, plus the
``fail`` shorthand for :class:`RuntimeStateError`.

Bytestrings follow the P4Runtime spec ("Bytestrings"): any length is accepted on input
as long as the value fits the P4Info bitwidth; output uses the canonical shortest form
(``0`` is one zero byte). A value that does not fit (or an empty string) is
``INVALID_ARGUMENT``, BMv2's code ("Bytestring provided does not fit within N bits"),
where the spec's codec (:mod:`p4sim.p4runtime.codec`) says ``OUT_OF_RANGE``.

Example::

    >>> decode_bits(b"\\x00\\x00\\x63", 12, "x"), encode_bits(0x63), encode_bits(0)
    (99, b'c', b'\\x00')
"""
from __future__ import annotations

from typing import Callable, NoReturn

from google.rpc import code_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2

from p4sim.p4runtime.codec import decode_bytes, encode_bytes
from p4sim.runtime.errors import RuntimeStateError


NewEntity = Callable[[], p4runtime_pb2.Entity]
AddWire = Callable[[bytes, int], None]
"""Appends entities already in wire format: (``ReadResponse.entities`` items, the width of one)."""
"""Where a reader makes each entity it answers: ``p4runtime_pb2.Entity`` (a free message),
or the server's ``ReadResponse.entities.add`` so the entity is built in the response it goes
out in (no copy; upb builds a message in place several times faster than it copies one)."""


class EntityError(RuntimeStateError):
    """A :class:`RuntimeStateError` with any canonical code, ``UNKNOWN`` included (BMv2
    answers some refusals with PI's generic ``UNKNOWN``; the runtime never does)."""

    def __init__(self, code: str, message: str) -> None:
        code_pb2.Code.Value(code)          # ValueError for a name that is not a code
        Exception.__init__(self, f"{code}: {message}")
        self.code = code
        self.message = message


def fail(code: str, message: str) -> NoReturn:
    """Raise :class:`EntityError` (a shorthand used by every entity module).

    >>> try:
    ...     fail("NOT_FOUND", "no table 7")
    ... except RuntimeStateError as e:
    ...     e.code
    'NOT_FOUND'
    """
    raise EntityError(code, message)


def decode_bits(data: bytes, width: int, what: str) -> int:
    """The unsigned value of a bytestring that must fit in ``width`` bits.

    >>> decode_bits(b"\\x01\\xff", 9, "port")
    511
    """
    try:
        return decode_bytes(data, width, what)
    except RuntimeStateError as e:
        if e.code == "OUT_OF_RANGE":
            raise EntityError("INVALID_ARGUMENT", e.message) from None
        raise


def encode_bits(value: int) -> bytes:
    """Canonical (shortest) bytestring of a non-negative integer.

    >>> encode_bits(0x1234), encode_bits(0)
    (b'\\x124', b'\\x00')
    """
    return encode_bytes(value, 0)


def decode_p4data_bits(data: p4data_pb2.P4Data, width: int, what: str) -> int:
    """A ``P4Data`` that must be a ``bitstring`` of at most ``width`` bits.

    >>> decode_p4data_bits(p4data_pb2.P4Data(bitstring=b"\\x07"), 8, "r")
    7
    """
    if data.WhichOneof("data") != "bitstring":
        fail("INVALID_ARGUMENT", f"{what}: expected a bitstring P4Data, got {data.WhichOneof('data')}")
    return decode_bits(data.bitstring, width, what)


def encode_p4data_bits(value: int) -> p4data_pb2.P4Data:
    """``P4Data`` bitstring in canonical form.

    >>> encode_p4data_bits(5).bitstring
    b'\\x05'
    """
    return p4data_pb2.P4Data(bitstring=encode_bits(value))


def lpm_host_bits(plen: int, width_bits: int) -> int:
    """The mask of the low bits an LPM value must leave zero, as PI checks it.

    PI (p4lang/PI proto/frontend common.cpp ``check_prefix_trailing_zeros``, measured on
    simple_switch_grpc 1.15.5 / PI f96af95) counts the prefix from the top of the value's
    whole bytes, so a key that is not a whole number of bytes must leave
    ``8 * ceil(width / 8) - prefix_len`` low bits zero, more than its width alone asks:

        >>> bin(lpm_host_bits(24, 32)), bin(lpm_host_bits(20, 20)), bin(lpm_host_bits(16, 20))
        ('0b11111111', '0b1111', '0b11111111')
    """
    return (1 << (8 * ((width_bits + 7) // 8) - plen)) - 1


def check_lpm_host_bits(value: int, plen: int, width_bits: int, what: str) -> None:
    """Refuse an LPM value with bits set below its prefix (see :func:`lpm_host_bits`)."""
    if value & ((1 << (width_bits - plen)) - 1):
        fail("INVALID_ARGUMENT", f"{what}: bits beyond the /{plen} prefix must be zero")
    if value & lpm_host_bits(plen, width_bits):
        fail("INVALID_ARGUMENT", f"{what}: Invalid LPM value, incorrect number of trailing zeros "
             f"(PI counts the /{plen} prefix from the top of the key's "
             f"{(width_bits + 7) // 8} bytes, so the value's last "
             f"{8 * ((width_bits + 7) // 8) - plen} bits must be zero)")
