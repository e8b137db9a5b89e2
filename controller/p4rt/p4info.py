"""P4Info name helpers: ids of tables, actions, match fields, parameters, counters,
registers, digests, meters and controller packet metadata, by fully qualified name or
by alias (P4Runtime's shortest unique suffix).

Example::

    >>> info = P4InfoHelper.from_file("build/fabric.p4info.txtpb")      # doctest: +SKIP
    >>> info.table_id("FabricIngress.forwarding.routes")               # doctest: +SKIP
    33574274
    >>> info.table_id("routes") == info.table_id("FabricIngress.forwarding.routes")  # doctest: +SKIP
    True
    >>> info.match_field("routes", "hdr.ipv4.dst_addr").match_type     # doctest: +SKIP
    3
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from controller.p4rt.errors import P4InfoLookupError

# P4Info repeated field of each entity kind (kind names are what the helpers take).
_KINDS = {
    "table": "tables",
    "action": "actions",
    "action_profile": "action_profiles",
    "counter": "counters",
    "direct_counter": "direct_counters",
    "meter": "meters",
    "direct_meter": "direct_meters",
    "register": "registers",
    "digest": "digests",
    "controller_packet_metadata": "controller_packet_metadata",
}


def load_p4info(source: Union[str, Path, bytes, p4info_pb2.P4Info]) -> p4info_pb2.P4Info:
    """A P4Info message from a message, a text-format file (``.txt``/``.txtpb``) or a
    binary file/bytes.

    >>> load_p4info(p4info_pb2.P4Info()).ByteSize()
    0
    """
    if isinstance(source, p4info_pb2.P4Info):
        return source
    info = p4info_pb2.P4Info()
    if isinstance(source, bytes):
        info.ParseFromString(source)
        return info
    data = Path(source).read_bytes()
    try:
        text_format.Merge(data.decode(), info)
    except (UnicodeDecodeError, text_format.ParseError):
        info = p4info_pb2.P4Info()
        info.ParseFromString(data)
    return info


class P4InfoHelper:
    """Lookups over one P4Info (by name, alias or id).

    >>> h = P4InfoHelper(p4info_pb2.P4Info())
    >>> h.has("table", "t")
    False
    """

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self._memo: dict[tuple[str, Any], Any] = {}     # per-message decode tables
        self._by_name: dict[str, dict[str, Any]] = {}
        self._by_id: dict[str, dict[int, Any]] = {}
        for kind, attr in _KINDS.items():
            names: dict[str, Any] = {}
            ids: dict[int, Any] = {}
            for obj in getattr(p4info, attr):
                names[obj.preamble.name] = obj
                ids[obj.preamble.id] = obj
            for obj in getattr(p4info, attr):
                alias = obj.preamble.alias
                if alias and alias not in names:
                    names[alias] = obj
            self._by_name[kind], self._by_id[kind] = names, ids

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "P4InfoHelper":
        """Load a text or binary P4Info file."""
        return cls(load_p4info(path))

    # ---------------------------------------------------------------- generic lookups
    def get(self, kind: str, name_or_id: Union[str, int]) -> Any:
        """The P4Info object of ``kind`` ("table", "action", "counter", …)."""
        table = self._by_id[kind] if isinstance(name_or_id, int) else self._by_name[kind]
        try:
            return table[name_or_id]
        except KeyError:
            if isinstance(name_or_id, str):
                matches = [o for n, o in self._by_name[kind].items()
                           if n.endswith("." + name_or_id)]
                if len({o.preamble.id for o in matches}) == 1:
                    return matches[0]
            raise P4InfoLookupError(kind, name_or_id) from None

    def has(self, kind: str, name_or_id: Union[str, int]) -> bool:
        """True when the P4Info holds that object."""
        try:
            self.get(kind, name_or_id)
            return True
        except P4InfoLookupError:
            return False

    def get_id(self, kind: str, name: Union[str, int]) -> int:
        """The id of an object of ``kind``."""
        return int(self.get(kind, name).preamble.id)

    def get_name(self, kind: str, object_id: int) -> str:
        """The fully qualified name of an object of ``kind`` by id."""
        return str(self.get(kind, object_id).preamble.name)

    def names(self, kind: str) -> list[str]:
        """Every fully qualified name of ``kind``, in P4Info order."""
        return [o.preamble.name for o in getattr(self.p4info, _KINDS[kind])]

    # ---------------------------------------------------------------- typed shortcuts
    def table_id(self, name: str) -> int:
        return self.get_id("table", name)

    def action_id(self, name: str) -> int:
        return self.get_id("action", name)

    def counter_id(self, name: str) -> int:
        return self.get_id("counter", name)

    def register_id(self, name: str) -> int:
        return self.get_id("register", name)

    def digest_id(self, name: str) -> int:
        return self.get_id("digest", name)

    def meter_id(self, name: str) -> int:
        return self.get_id("meter", name)

    def match_field(self, table: Union[str, int], field: Union[str, int]) -> Any:
        """The MatchField of ``table`` named ``field`` (or with that id)."""
        t = self.get("table", table)
        for mf in t.match_fields:
            if (isinstance(field, int) and mf.id == field) or mf.name == field:
                return mf
        if isinstance(field, str):
            ends = [mf for mf in t.match_fields if mf.name.endswith("." + field)]
            if len(ends) == 1:
                return ends[0]
        raise P4InfoLookupError(f"match field of {t.preamble.name}", field)

    def match_field_id(self, table: Union[str, int], field: str) -> int:
        return int(self.match_field(table, field).id)

    def action_param(self, action: Union[str, int], param: Union[str, int]) -> Any:
        """The Param of ``action`` named ``param`` (or with that id)."""
        a = self.get("action", action)
        for p in a.params:
            if (isinstance(param, int) and p.id == param) or p.name == param:
                return p
        raise P4InfoLookupError(f"parameter of {a.preamble.name}", param)

    def action_param_id(self, action: Union[str, int], param: str) -> int:
        return int(self.action_param(action, param).id)

    def packet_metadata(self, kind: str) -> Any:
        """The ControllerPacketMetadata ``"packet_in"`` or ``"packet_out"`` (None if absent)."""
        for cpm in self.p4info.controller_packet_metadata:
            if cpm.preamble.name == kind:
                return cpm
        return None

    def packet_metadata_names(self, kind: str) -> dict[int, str]:
        """Metadata id -> name of the ``packet_in``/``packet_out`` header (empty when
        absent), computed once: a stream decodes every PacketIn with it (read only).

        >>> P4InfoHelper(p4info_pb2.P4Info()).packet_metadata_names("packet_in")
        {}
        """
        got = self._memo.get(("cpm", kind))
        if got is None:
            cpm = self.packet_metadata(kind)
            got = {m.id: m.name for m in cpm.metadata} if cpm is not None else {}
            self._memo[("cpm", kind)] = got
        return got

    def digest_layout(self, digest_id: int) -> Optional[tuple[str, list[str]]]:
        """(name, member names) of digest ``digest_id`` (None when the P4Info has none),
        computed once: a stream decodes every DigestList with it (read only).

        >>> P4InfoHelper(p4info_pb2.P4Info()).digest_layout(7) is None
        True
        """
        key = ("digest", digest_id)
        if key not in self._memo:
            self._memo[key] = (self.get_name("digest", digest_id),
                               self.digest_field_names(digest_id)) \
                if self.has("digest", digest_id) else None
        return self._memo[key]  # type: ignore[no-any-return]

    def digest_field_names(self, digest: Union[str, int]) -> list[str]:
        """Member names of a digest's struct (``field_0``… when the P4Info has no type_info)."""
        d = self.get("digest", digest)
        spec = d.type_spec
        if spec.HasField("struct") and spec.struct.name in self.p4info.type_info.structs:
            return [m.name for m in self.p4info.type_info.structs[spec.struct.name].members]
        if spec.HasField("tuple"):
            return [f"field_{i}" for i in range(len(spec.tuple.members))]
        return []
