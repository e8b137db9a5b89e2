"""Hash algorithms of BMv2 (v1model ``HashAlgorithm``) and the field packing they hash.

``hash()``, ``action_selector`` and checksum externs feed a *field list* to an algorithm.
BMv2 packs the list MSB-first and bit-contiguous (no per-field byte padding; only the end
of the whole list is zero-padded to a byte), then runs the algorithm over the bytes:

* ``crc16``  CRC-16/ARC (poly 0x8005, init 0, reflected in/out, xorout 0).
* ``crc32``  CRC-32/IEEE, same as :func:`zlib.crc32`.
* ``crc16_custom`` / ``crc32_custom`` (and ``crc8_custom``/``crc64_custom``): BMv2's
  re-parameterisable CRCs, defaulting to the parameters of crc16/crc32 (crc8: poly 0x07,
  crc64: poly 0x1b, both unreflected/reflected as BMv2); change them with
  :meth:`CustomCrc.set_config`. Each calculation in a program owns its own instance.
* ``csum16`` RFC 1071: ones' complement of the ones' complement sum of big-endian 16-bit
  words (odd tail padded with a zero byte at the end). BMv2 returns the complement, so the
  result is directly the IPv4 header checksum.
* ``xor16``  XOR of big-endian 16-bit words, tail padded at the end. (``xor32`` likewise.)
* ``identity`` the first ``min(8, len)`` bytes as a big-endian integer (no padding).
* ``crcCCITT`` CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, not reflected), as BMv2.
* ``random`` is accepted by p4c but BMv2 refuses to load it: :func:`get_algorithm` raises
  ``ValueError("unsupported: ...")``.

Example::

    >>> pack_fields([(0x0bb8, 16), (0x1f90, 16)]).hex()
    '0bb81f90'
    >>> hex(get_algorithm("crc16")(bytes.fromhex("0bb81f90")))
    '0x5d8a'
    >>> compute_hash("crc16", [(0x0bb8, 16), (0x1f90, 16)], base=0, max_value=4)
    2
"""
from __future__ import annotations

import zlib
from typing import Callable, Iterable, Optional, Sequence, Union

HashFn = Callable[[bytes], int]
Fields = Sequence[tuple[int, int]]

_REV8 = bytes(int(f"{i:08b}"[::-1], 2) for i in range(256))


def pack_fields(fields: Iterable[tuple[int, int]]) -> bytes:
    """Pack ``(value, width_bits)`` pairs MSB-first, bit-contiguously, zero-padding the end.

    Values wider than their width are truncated to it. Zero-width fields add nothing.
    The caller decides what an invalid header contributes: BMv2 skips fields of invalid
    headers that a calculation names directly (checksum field lists, ``action_selector``
    keys), while ``hash()`` hashes the value a read of the field yields (p4c-bm2-ss copies
    the list into temporaries first); see ``p4sim/engine/natives.py``, ``flat_fields``.

    Example::

        >>> pack_fields([(0b101, 3), (0b1, 1)]).hex()   # 1011 + 0000 padding
        'b0'
    """
    acc = 0
    nbits = 0
    for value, width in fields:
        if width <= 0:
            continue
        acc = (acc << width) | (value & ((1 << width) - 1))
        nbits += width
    if nbits == 0:
        return b""
    pad = (-nbits) % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big")


def _reflect(value: int, nbits: int) -> int:
    return int(f"{value:0{nbits}b}"[::-1], 2)


class CustomCrc:
    """A table-driven CRC with BMv2 ``crc_custom`` semantics (width 8, 16, 32 or 64).

    Example::

        >>> crc = CustomCrc(16)                 # defaults = crc16 (CRC-16/ARC)
        >>> hex(crc(b"123456789"))
        '0xbb3d'
        >>> crc.set_config(poly=0x1021, init=0xFFFF, xorout=0, reflect_in=False, reflect_out=False)
        >>> hex(crc(b"123456789"))              # CRC-16/CCITT-FALSE
        '0x29b1'
    """

    DEFAULTS: dict[int, tuple[int, int, int, bool, bool]] = {
        8: (0x07, 0x00, 0x00, False, False),
        16: (0x8005, 0x0000, 0x0000, True, True),
        32: (0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True),
        64: (0x1B, 0, 0, True, True),
    }

    def __init__(self, width: int, poly: Optional[int] = None, init: Optional[int] = None,
                 xorout: Optional[int] = None, reflect_in: Optional[bool] = None,
                 reflect_out: Optional[bool] = None) -> None:
        if width not in self.DEFAULTS:
            raise ValueError(f"unsupported CRC width {width}")
        self.width = width
        self._mask = (1 << width) - 1
        d = self.DEFAULTS[width]
        self.set_config(d[0] if poly is None else poly, d[1] if init is None else init,
                        d[2] if xorout is None else xorout,
                        d[3] if reflect_in is None else reflect_in,
                        d[4] if reflect_out is None else reflect_out)

    def set_config(self, poly: int, init: int, xorout: int, reflect_in: bool,
                   reflect_out: bool) -> None:
        """Re-parameterise (BMv2 ``set_crc16_parameters`` / ``set_crc32_parameters``)."""
        mask = self._mask
        for name, v in (("poly", poly), ("init", init), ("xorout", xorout)):
            if v < 0 or v > mask:
                raise ValueError(f"crc{self.width}_custom {name} {v:#x} does not fit in {self.width} bits")
        self.poly, self.init, self.xorout = poly, init, xorout
        self.reflect_in, self.reflect_out = bool(reflect_in), bool(reflect_out)
        w = self.width
        top = 1 << (w - 1)
        table = []
        for dividend in range(256):
            rem = dividend << (w - 8)
            for _ in range(8):
                rem = ((rem << 1) ^ poly) if rem & top else (rem << 1)
                rem &= mask
            table.append(rem)
        self._table = table
        # When input and output are both reflected the bit-reversed ("LSB-first")
        # formulation is equivalent and cheaper per byte.
        if self.reflect_in and self.reflect_out:
            self._rtable = [_reflect(table[_REV8[i]], w) for i in range(256)]
            self._rinit = _reflect(init, w)
        else:
            self._rtable = None
            self._rinit = 0

    def config(self) -> tuple[int, int, int, bool, bool]:
        """``(poly, init, xorout, reflect_in, reflect_out)``."""
        return (self.poly, self.init, self.xorout, self.reflect_in, self.reflect_out)

    def __call__(self, data: bytes) -> int:
        rtable = self._rtable
        if rtable is not None:
            crc = self._rinit
            for b in data:
                crc = rtable[(crc ^ b) & 0xFF] ^ (crc >> 8)
            return crc ^ self.xorout
        table = self._table
        mask = self._mask
        shift = self.width - 8
        rem = self.init
        rev = _REV8 if self.reflect_in else None
        for b in data:
            if rev is not None:
                b = rev[b]
            rem = (table[(b ^ (rem >> shift)) & 0xFF] ^ (rem << 8)) & mask
        if self.reflect_out:
            rem = _reflect(rem, self.width)
        return rem ^ self.xorout


_CRC16 = CustomCrc(16)
_CRC_CCITT = CustomCrc(16, poly=0x1021, init=0xFFFF, xorout=0, reflect_in=False, reflect_out=False)


def crc16(data: bytes) -> int:
    """CRC-16/ARC (BMv2 ``crc16``). ``crc16(b"123456789") == 0xBB3D``."""
    return _CRC16(data)


def crc32(data: bytes) -> int:
    """CRC-32/IEEE (BMv2 ``crc32``), i.e. :func:`zlib.crc32`."""
    return zlib.crc32(data)


def crc_ccitt(data: bytes) -> int:
    """CRC-16/CCITT-FALSE (BMv2 ``crcCCITT``). ``crc_ccitt(b"123456789") == 0x29B1``."""
    return _CRC_CCITT(data)


def csum16(data: bytes) -> int:
    """RFC 1071 checksum as BMv2 returns it (already complemented).

    Example::

        >>> hex(csum16(bytes.fromhex("450000730000400040110000c0a80001c0a800c7")))
        '0xb861'
    """
    if len(data) & 1:
        data = data + b"\x00"
    total = 0
    for i in range(0, len(data), 2):
        total += (data[i] << 8) | data[i + 1]
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total) & 0xFFFF


def _xor_words(data: bytes, nbytes: int) -> int:
    out = 0
    for i in range(0, len(data), nbytes):
        chunk = data[i:i + nbytes]
        out ^= int.from_bytes(chunk.ljust(nbytes, b"\x00"), "big")
    return out


def xor16(data: bytes) -> int:
    """XOR of big-endian 16-bit words, tail padded at the end (BMv2 ``xor16``)."""
    return _xor_words(data, 2)


def xor32(data: bytes) -> int:
    """XOR of big-endian 32-bit words, tail padded at the end (BMv2 ``xor32``)."""
    return _xor_words(data, 4)


def identity(data: bytes) -> int:
    """The first ``min(8, len)`` bytes as a big-endian integer (BMv2 ``identity``)."""
    return int.from_bytes(data[:8], "big")


_STATIC: dict[str, HashFn] = {
    "crc16": crc16,
    "crc32": crc32,
    "crcCCITT": crc_ccitt,
    "csum16": csum16,
    "cksum16": csum16,
    "xor16": xor16,
    "xor32": xor32,
    "identity": identity,
}
_CUSTOM_WIDTH = {"crc8_custom": 8, "crc16_custom": 16, "crc32_custom": 32, "crc64_custom": 64}
_UNSUPPORTED = {"random", "round_robin", "round_robin_consistent", "xxh64", "toeplitz"}


def algorithm_names() -> list[str]:
    """Names :func:`get_algorithm` accepts."""
    return sorted([*_STATIC, *_CUSTOM_WIDTH])


def get_algorithm(name: str) -> HashFn:
    """The hash function called ``name`` (v1model ``HashAlgorithm`` member name).

    ``*_custom`` names return a *new* :class:`CustomCrc` each call (BMv2 keeps one
    instance per calculation, re-parameterisable on its own). Unknown names and
    ``random`` raise ``ValueError("unsupported: ...")``.

    Example::

        >>> get_algorithm("xor16")(bytes.fromhex("0bb81f90")) == 0x1428
        True
        >>> get_algorithm("random")
        Traceback (most recent call last):
        ...
        ValueError: unsupported: hash algorithm 'random' (BMv2 refuses to load it)
    """
    fn = _STATIC.get(name)
    if fn is not None:
        return fn
    width = _CUSTOM_WIDTH.get(name)
    if width is not None:
        return CustomCrc(width)
    if name in _UNSUPPORTED:
        raise ValueError(f"unsupported: hash algorithm {name!r} (BMv2 refuses to load it)")
    raise ValueError(f"unsupported: unknown hash algorithm {name!r}")


def compute_hash(algo: Union[str, HashFn], fields: Union[Fields, bytes], base: int,
                 max_value: int) -> int:
    """v1model ``hash()``: ``(H(pack_fields(fields)) % max) + base``; ``max == 0`` acts as 1.

    The caller truncates the result to the destination's width. ``algo`` is a name or a
    function from :func:`get_algorithm`; ``fields`` is a list of ``(value, width)`` or
    already packed bytes.

    Example::

        >>> compute_hash("identity", [(7, 8)], base=10, max_value=0)
        10
        >>> compute_hash("identity", [(7, 8)], base=10, max_value=100)
        17
    """
    fn = get_algorithm(algo) if isinstance(algo, str) else algo
    data = fields if isinstance(fields, (bytes, bytearray)) else pack_fields(fields)
    h = fn(bytes(data))
    if max_value == 0:
        max_value = 1
    return (h % max_value) + base
