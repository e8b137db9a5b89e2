"""Values of ``@p4runtime_translation`` types in P4Runtime requests, taken as
simple_switch_grpc takes them: untranslated.

PI (the P4Runtime server of simple_switch_grpc) has no translation and no server option
for it: it checks a value against the P4Info ``bitwidth`` (the controller's width, N)
and hands BMv2 ceil(N/8) bytes. BMv2 refuses a match key whose byte count is not its
field's, and stores action data as given. p4sim does the same (:func:`decode_translated`),
then uses the value as the program's own, with the program's width checks (stricter than
BMv2 only for a value wider than the program's field, which BMv2 stores as an entry that
never matches, or truncates when an action assigns it).

Example::

    >>> from p4sim.p4runtime.entities_index import MatchFieldInfo
    >>> from p4.v1 import p4runtime_pb2 as pb
    >>> f = MatchFieldInfo(1, "hdr.ipv4.dst", 32, "exact", 0, translated=True, program_width=32)
    >>> decode_translated_field(f, pb.FieldMatch(exact=pb.FieldMatch.Exact(value=b"\\x0a\\0\\0\\1")), "t")
    Exact(value=167772161)
"""
from __future__ import annotations

from typing import Any

from p4sim.p4runtime.entities_values import check_lpm_host_bits, decode_bits, fail
from p4sim.runtime.errors import RuntimeStateError
from p4sim.runtime.tables import Exact, Lpm, Optional_, Range, Ternary


def decode_translated(data: bytes, controller_width: int, program_width: int, what: str,
                      match_key: bool) -> int:
    """A value of a ``@p4runtime_translation`` type, taken as BMv2 takes it: untranslated.

    simple_switch_grpc does not translate (PI has no translation): PI checks the value
    against the P4Info ``bitwidth`` (the controller's width N; ``string`` gives 0, so only
    a zero value passes, as "Bytestring provided does not fit within 0 bits") and gives
    BMv2 ceil(N/8) bytes; for a match key BMv2 then refuses any other byte count than its
    field's (BAD_MATCH_KEY, which reaches the client as ``UNKNOWN`` "Error when adding
    match entry to target"), while action data is stored as given. The value is then used
    as the program's own (the program's width checks follow).

    >>> decode_translated(b"\\x00\\x00\\x00\\x05", 32, 32, "k", True)
    5
    >>> try:
    ...     decode_translated(b"\\x00\\x00\\x00\\x05", 32, 48, "k", True)
    ... except RuntimeStateError as e:
    ...     e.code
    'UNKNOWN'
    """
    if controller_width == 0:
        if data.strip(b"\x00"):
            fail("INVALID_ARGUMENT", f"{what}: Bytestring provided does not fit within 0 bits "
                 "(a type translated to a string: BMv2 does not translate)")
        value = 0
    else:
        value = decode_bits(data, controller_width, what)
    if match_key and (controller_width + 7) // 8 != (program_width + 7) // 8:
        fail("UNKNOWN", f"{what}: Error when adding match entry to target (BMv2 takes no translation: the "
             f"controller's {controller_width}-bit value is not the {program_width}-bit key of the program)")
    return value


def decode_translated_field(f: Any, fm: Any, what: str) -> Any:
    """A match on a ``@p4runtime_translation`` type, untranslated as on BMv2
    (:func:`decode_translated`); an LPM whose controller
    width is not the program's is not modelled (``UNIMPLEMENTED``)."""
    def dec(data: bytes, label: str = "") -> int:
        return decode_translated(data, f.width, f.program_width, what + label, match_key=True)

    which = fm.WhichOneof("field_match_type")
    if which == "exact":
        return Exact(dec(fm.exact.value))
    if which == "optional":
        return Optional_(dec(fm.optional.value))
    if which == "ternary":
        value, mask = dec(fm.ternary.value), dec(fm.ternary.mask, " mask")
        if mask == 0:
            fail("INVALID_ARGUMENT", f"{what}: mask 0 is a don't-care and must be omitted")
        if value & ~mask:
            fail("INVALID_ARGUMENT", f"{what}: value has bits set outside the mask")
        return Ternary(value, mask)
    if which == "range":
        low, high = dec(fm.range.low, " low"), dec(fm.range.high, " high")
        if low > high:
            fail("INVALID_ARGUMENT", f"{what}: low {low} > high {high}")
        return Range(low, high)
    value, plen, w = dec(fm.lpm.value), fm.lpm.prefix_len, f.width
    if w != f.program_width:
        fail("UNIMPLEMENTED", f"{what}: an LPM match on a type translated to {w} bits over a "
             f"{f.program_width}-bit key (BMv2 takes the bytes untranslated; p4sim does not model it)")
    if plen <= 0:
        fail("INVALID_ARGUMENT", f"{what}: a /0 prefix is a don't-care and must be omitted")
    if plen > w:
        fail("INVALID_ARGUMENT", f"{what}: prefix length {plen} exceeds the width {w}")
    check_lpm_host_bits(value, plen, w, what)
    return Lpm(value, plen)
