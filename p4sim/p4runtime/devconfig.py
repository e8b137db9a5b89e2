"""The ``p4_device_config`` of a ``SetForwardingPipelineConfig``: which forms p4sim
accepts, how they are decoded into a compiled program, and the P4Info check.

Accepted forms (anything else is ``INVALID_ARGUMENT`` naming them):

* p4sim's compiled JSON, :class:`p4sim.device.DeviceConfig` (written by
  ``p4sim-p4c-bm2-ss``, ``p4sim-p4c`` and ``python -m p4sim compile --config``), raw;
* ``{"program": PATH, "include_dirs": [...]}``, a P4 file on the switch's machine — only
  with ``allow_paths`` (``--p4runtime-extras``): BMv2 reads no file a client names, and
  a switch that does lets any client that may push a pipeline probe the switch machine's
  files (a compile error quotes where a file fails to parse; found by ``fuzz/``);
* either of them inside PI's ``p4.tmp.P4DeviceConfig`` wrapper (its ``device_data``),
  which BMv2 controllers send (the P4 tutorials' ``p4runtime_lib``: ``reassign`` true,
  ``device_data`` the compiled file's bytes; ``reassign`` and ``extras`` change nothing
  here, as on BMv2). The wrapper is decoded with :mod:`p4sim.p4runtime.p4config_pb2`
  (``p4.tmp.p4config_pb2``).

A BMv2 JSON (p4c-bm2-ss output), raw or wrapped, is recognised and refused: p4sim runs
P4 source, not BMv2's compiled JSON.

Example::

    >>> from p4sim.p4runtime.p4config_pb2 import P4DeviceConfig
    >>> unwrap(P4DeviceConfig(device_data=b'{"format": "p4sim-1"}').SerializeToString())
    (b'{"format": "p4sim-1"}', True)
    >>> unwrap(b'{"format": "p4sim-1"}')
    (b'{"format": "p4sim-1"}', False)
"""
from __future__ import annotations

import json
from typing import Any, Optional

from google.protobuf.message import DecodeError
from p4.config.v1 import p4info_pb2

from p4sim.device import DeviceConfig
from p4sim.p4runtime.p4config_pb2 import P4DeviceConfig

ACCEPTED_FORMS = ("p4sim's compiled JSON {\"format\": \"p4sim-1\", ...} (written by p4sim-p4c-bm2-ss, "
                  "p4sim-p4c, python -m p4sim compile --config), "
                  "{\"program\": PATH, \"include_dirs\": [...]} (with --p4runtime-extras), or "
                  "either inside p4.tmp.P4DeviceConfig.device_data")

# Top-level keys of every p4c-bm2-ss JSON (BMv2's "device config").
_BMV2_JSON_KEYS = {"header_types", "pipelines", "parsers", "deparsers"}


class DeviceConfigError(ValueError):
    """A device config p4sim cannot load (the server answers ``INVALID_ARGUMENT``)."""


def unwrap(data: bytes) -> tuple[bytes, bool]:
    """(inner config, whether it was wrapped): the ``device_data`` of a
    ``p4.tmp.P4DeviceConfig``, or ``data`` itself when it is not one.

    A config that starts with ``{`` is JSON, never the wrapper (whose first byte is a
    protobuf tag: 0x08, 0x12 or 0x1a). A wrapper without ``device_data`` (e.g. only
    ``reassign``) is recognised when it is exactly that message: ``(b"", True)``.

    >>> unwrap(P4DeviceConfig(reassign=True).SerializeToString())
    (b'', True)
    """
    if not data or data[:1] in (b"{", b" ", b"\n", b"\t", b"\r"):
        return data, False
    msg = P4DeviceConfig()
    try:
        msg.ParseFromString(data)
    except DecodeError:
        return data, False
    if not msg.device_data:
        return (b"", True) if msg.ListFields() and msg.SerializeToString() == data else (data, False)
    return bytes(msg.device_data), True


def is_bmv2_json(d: Any) -> bool:
    """Whether parsed JSON ``d`` is a BMv2 JSON (p4c-bm2-ss output), which p4sim refuses.

    >>> is_bmv2_json({"header_types": [], "pipelines": []}), is_bmv2_json({"format": "p4sim-1"})
    (True, False)
    """
    return isinstance(d, dict) and (len(_BMV2_JSON_KEYS & set(d)) >= 2 or "__meta__" in d)


def load_device_config(data: bytes, allow_paths: bool = False) -> tuple[Any, str]:
    """Compile the program a ``p4_device_config`` names; returns (program, name).
    ``allow_paths``: accept the ``{"program": PATH}`` form (p4sim's extras only).

    Raises :class:`DeviceConfigError` (bad config) or :class:`p4sim.errors.P4Error`
    (the program does not compile; raised by the compiler). A config or program nested
    past Python's stack (``[[[[…``, a group in a group … in the wrapper, ``{{{{…`` in
    P4) is a :class:`DeviceConfigError` too, not a RecursionError (found by fuzz/)."""
    try:
        return _load(bytes(data), allow_paths)
    except RecursionError:
        raise DeviceConfigError("the device config or its program nests too deeply for p4sim "
                                f"(Python's recursion limit); accepted: {ACCEPTED_FORMS}") from None


def _load(data: bytes, allow_paths: bool) -> tuple[Any, str]:
    inner, wrapped = unwrap(data)
    where = "p4.tmp.P4DeviceConfig.device_data" if wrapped else "p4_device_config"
    if not inner:
        raise DeviceConfigError(f"{where} is empty; accepted: {ACCEPTED_FORMS}")
    try:
        parsed = json.loads(inner)
    except (ValueError, UnicodeDecodeError) as e:
        raise DeviceConfigError(f"{where} is not a config p4sim can run ({e}); accepted: {ACCEPTED_FORMS}") from None
    return _compile(parsed, inner, where, allow_paths)


def _compile(parsed: Any, inner: bytes, where: str, allow_paths: bool) -> tuple[Any, str]:
    """The program of a decoded config (``load_device_config`` past the JSON)."""
    from p4sim.engine.program import load_program, load_program_text
    if is_bmv2_json(parsed):
        raise DeviceConfigError(f"{where} is a BMv2 JSON (p4c-bm2-ss output), which p4sim cannot run; "
                                f"accepted: {ACCEPTED_FORMS}")
    try:
        dc = DeviceConfig.from_json(inner)
    except ValueError as first:
        if not isinstance(parsed, dict) or not isinstance(parsed.get("program"), str):
            raise DeviceConfigError(f"{first}; accepted: {ACCEPTED_FORMS}") from None
        if not allow_paths:
            raise DeviceConfigError(f"{where}: a program path is read only with "
                                    "--p4runtime-extras (BMv2 reads no file a client names); "
                                    "send the compiled program (p4sim-p4c-bm2-ss, python -m "
                                    "p4sim compile --config)") from None
        dirs = parsed.get("include_dirs", [])
        if not isinstance(dirs, list) or not all(isinstance(x, str) for x in dirs):
            raise DeviceConfigError("p4_device_config: 'include_dirs' must be a list of strings") from None
        try:
            return load_program(parsed["program"], dirs), parsed["program"]
        except OSError as e:
            raise DeviceConfigError(str(e)) from None
    return load_program_text(dc.source, dc.name), dc.name


def check_p4info(given: p4info_pb2.P4Info, built: p4info_pb2.P4Info) -> None:
    """Tables and actions of ``given`` must have the ids and names of ``built``
    (:class:`DeviceConfigError` naming the first difference otherwise).

    Example::

        >>> a = p4info_pb2.P4Info(); t = a.tables.add(); t.preamble.id, t.preamble.name = 1, "t"
        >>> check_p4info(a, a)
    """
    for kind in ("tables", "actions"):
        want = {o.preamble.id: o.preamble.name for o in getattr(built, kind)}
        got = {o.preamble.id: o.preamble.name for o in getattr(given, kind)}
        if want != got:
            diff = sorted(set(want.items()) ^ set(got.items()))
            oid, name = diff[0]
            side = "the program has" if (oid, name) in want.items() else "the P4Info has"
            raise DeviceConfigError(f"P4Info does not match the program: {side} {kind[:-1]} {name!r} "
                                    f"(id {oid}) that the other lacks")


def digest_too_complex(p4info: p4info_pb2.P4Info) -> Optional[str]:
    """The first digest whose data PI cannot import, as simple_switch_grpc refuses it
    (p4info_to_and_from_proto.cpp: a struct, tuple or bitstring whose every member is a
    ``bit<W>``; anything else, e.g. a ``type`` (``new_type``), an enum, ``error``, ``bool``
    or ``int<W>``, is "Packed type for digest too complex").

    >>> info = p4info_pb2.P4Info(); d = info.digests.add(); d.preamble.name = "d_t"
    >>> d.type_spec.bool.SetInParent(); digest_too_complex(info)
    'd_t'
    """
    def plain_bit(spec: Any) -> bool:
        return spec.WhichOneof("type_spec") == "bitstring" and spec.bitstring.WhichOneof("type_spec") == "bit"

    for d in p4info.digests:
        spec = d.type_spec
        kind = spec.WhichOneof("type_spec")
        if kind == "struct":
            st = p4info.type_info.structs.get(spec.struct.name)
            members = [m.type_spec for m in st.members] if st is not None else [None]
        elif kind == "tuple":
            members = list(spec.tuple.members)
        else:
            members = [spec]
        if not all(m is not None and plain_bit(m) for m in members):
            return d.preamble.name
    return None


__all__ = ["ACCEPTED_FORMS", "DeviceConfigError", "check_p4info", "digest_too_complex", "is_bmv2_json",
           "load_device_config", "unwrap"]
