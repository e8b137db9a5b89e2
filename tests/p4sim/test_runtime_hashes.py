"""Tests for p4sim.runtime.hashes: BMv2 hash algorithms, field packing, hash()."""
from __future__ import annotations

import zlib

import pytest

from p4sim.runtime.hashes import (CustomCrc, algorithm_names, compute_hash, crc16, crc32, crc_ccitt,
                                  csum16, get_algorithm, identity, pack_fields, xor16, xor32)

PORTS = bytes.fromhex("0bb81f90")          # UDP 3000 -> 8080
CHECK = b"123456789"


def test_reference_vectors() -> None:
    assert crc16(PORTS) == 0x5D8A
    assert crc32(PORTS) == 0x005D6A6F
    assert xor16(PORTS) == 0x1428
    assert csum16(bytes.fromhex("450000730000400040110000c0a80001c0a800c7")) == 0xB861


def test_check_values() -> None:
    assert crc16(CHECK) == 0xBB3D
    assert crc32(CHECK) == 0xCBF43926
    assert crc_ccitt(CHECK) == 0x29B1


def test_crc32_is_zlib() -> None:
    for data in (b"", b"\x00", bytes(range(256)), b"\xff" * 37):
        assert crc32(data) == zlib.crc32(data)


def test_pack_fields_bit_contiguous() -> None:
    # 6 + 8 + 9 + 9 bits = one 32-bit word, no per-field padding
    packed = pack_fields([(0b111111, 6), (0, 8), (0b111111111, 9), (0, 9)])
    assert packed == (0b111111 << 26 | 0b111111111 << 9).to_bytes(4, "big")
    # end padding only
    assert pack_fields([(1, 1)]) == b"\x80"
    assert pack_fields([(0xABC, 12)]) == b"\xab\xc0"
    assert pack_fields([]) == b""
    # values truncated to their width, zero width ignored
    assert pack_fields([(0x1FF, 8), (5, 0)]) == b"\xff"


def test_csum16_odd_tail_and_zero() -> None:
    assert csum16(b"\x01") == (~0x0100) & 0xFFFF
    assert csum16(b"") == 0xFFFF
    assert csum16(b"\xff\xff") == 0


def test_xor_and_identity() -> None:
    assert xor16(b"\x12\x34\x56") == 0x1234 ^ 0x5600
    assert xor32(b"\x01\x02\x03\x04\x05") == 0x01020304 ^ 0x05000000
    assert identity(b"\x01\x02") == 0x0102
    assert identity(bytes(range(1, 11))) == int.from_bytes(bytes(range(1, 9)), "big")
    assert identity(b"") == 0


def test_custom_crc_defaults_match_fixed() -> None:
    c16, c32 = get_algorithm("crc16_custom"), get_algorithm("crc32_custom")
    for data in (CHECK, PORTS, bytes(range(200))):
        assert c16(data) == crc16(data)
        assert c32(data) == crc32(data)


def test_custom_crc_reparameterised() -> None:
    c = CustomCrc(16)
    c.set_config(poly=0x8005, init=0, xorout=0, reflect_in=False, reflect_out=False)
    assert c(CHECK) == 0xFEE8                  # CRC-16/UMTS
    c.set_config(poly=0x1021, init=0, xorout=0, reflect_in=True, reflect_out=True)
    assert c(CHECK) == 0x2189                  # CRC-16/KERMIT
    c32 = CustomCrc(32, reflect_in=False, reflect_out=False)
    assert c32(CHECK) == 0xFC891918            # CRC-32/BZIP2
    c32.set_config(0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
    assert c32(CHECK) == 0xE3069283            # CRC-32C
    assert CustomCrc(8)(CHECK) == 0xF4         # CRC-8/SMBUS (BMv2 crc8_custom default)
    with pytest.raises(ValueError):
        c.set_config(0x10000, 0, 0, True, True)


def test_custom_instances_are_independent() -> None:
    a, b = get_algorithm("crc16_custom"), get_algorithm("crc16_custom")
    assert isinstance(a, CustomCrc) and isinstance(b, CustomCrc)
    a.set_config(0x1021, 0xFFFF, 0, False, False)
    assert b(CHECK) == 0xBB3D


def test_random_and_unknown_refused() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        get_algorithm("random")
    with pytest.raises(ValueError, match="unsupported"):
        get_algorithm("md5")
    assert "crc16" in algorithm_names() and "random" not in algorithm_names()


def test_compute_hash() -> None:
    fields = [(3000, 16), (8080, 16)]
    assert compute_hash("crc16", fields, 0, 65536) == 0x5D8A
    assert compute_hash("crc16", fields, 10, 4) == 0x5D8A % 4 + 10
    assert compute_hash("crc16", fields, 7, 0) == 7       # max 0 behaves as 1
    assert compute_hash(crc32, PORTS, 0, 1 << 32) == 0x005D6A6F


def test_crc16_affine_bijection_over_ports() -> None:
    # with other fields fixed, the source port -> crc16 map is a bijection (reference facts)
    seen = {crc16(pack_fields([(sp, 16), (4791, 16)])) for sp in range(0, 65536, 1)}
    assert len(seen) == 65536
