"""The published ECMP hash model of the fabric: which member a 5-tuple takes at each hop.

The controller (GOR) publishes one :class:`FabricHashModel` as JSON; hosts (TCCL) load it
and predict offline, bit for bit, the ECMP member every flow takes on every switch. This
module is the single owner of that contract: both sides import it, nothing here imports
p4sim or the controller.

What the data plane computes (``FabricIngress.ecmp.groups`` in ``p4src/fabric.p4``)::

    hash(meta.ecmp_member, HashAlgorithm.crc16, base,
         {meta.ecmp_seed, hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
          hdr.udp.src_port, hdr.udp.dst_port}, (bit<32>) size)

and the model reproduces it exactly as BMv2 (and p4sim) do:

1. **Packing**: the field values, in list order, are packed MSB-first and
   bit-contiguously (no padding between fields); only the end of the whole list is
   zero-padded to a byte. The default list is 32+32+32+8+16+16 = 136 bits = 17 bytes.
2. **Fields of an invalid header hash as 0**, they are not skipped: the fabric parser
   extracts UDP only when the IPv4 protocol is 17 and the fragment offset is 0, and for
   any other packet the ``udp.*`` fields are hashed as 0, so the message is always the
   17 bytes of the field list. Why: p4c-bm2-ss copies the arguments of ``hash()`` into
   temporaries before the call (the BMv2 JSON of ``fabric.p4`` lists ``["scalars",
   "tmp…"]`` as the calculation's inputs), and the copy of a field of a header that was
   never extracted reads 0. (BMv2 skips fields of invalid headers only where the JSON
   names them directly: checksum field lists and ``action_selector`` keys.) A ``Flow``
   with ``proto != 17`` therefore hashes as if its ports were 0, whatever it holds; a
   non-first UDP fragment is ``Flow(src, dst, 17, 0, 0)``.
3. **Algorithm**: ``crc16`` is CRC-16/ARC (poly 0x8005 reflected, init 0, xorout 0;
   ``crc16(b"123456789") == 0xBB3D``). ``crc32`` (zlib's CRC-32) is also accepted.
4. **Selection**: ``member = (H % size + base) mod 2**member_width_bits`` where
   ``size = len(members)`` (a size of 0 would behave as 1; the model forbids empty
   groups) and ``member_width_bits`` is the width of ``meta.ecmp_member`` (16). The
   member index then selects ``members[H % size]`` through ``FabricIngress.ecmp.members``.

JSON schema (``version`` 1; every key below is required unless marked optional, unknown
keys are rejected, and a bad file raises ``ValueError`` naming the JSON path and why)::

    {
      "version": 1,
      "packing": "msb-first-contiguous",                         (optional, fixed)
      "formula": "member = H(fields) % len(members) + base",     (optional, fixed)
      "switches": [
        {
          "switch": "leaf-b0-r0",                # unique name, non-empty
          "algorithm": "crc16",                  # "crc16" | "crc32"
          "fields": [                            # hash input, in order (unique names from
            {"name": "ecmp_seed", "width_bits": 32},       # FIELD_NAMES, width 1..64); all
                                                           # are always hashed, udp.* as 0
                                                           # for a packet without UDP
            {"name": "ipv4.src_addr", "width_bits": 32},
            {"name": "ipv4.dst_addr", "width_bits": 32},
            {"name": "ipv4.protocol", "width_bits": 8},
            {"name": "udp.src_port", "width_bits": 16},
            {"name": "udp.dst_port", "width_bits": 16}
          ],
          "seed": 305419896,                     # fits the ecmp_seed field's width
          "member_width_bits": 16,               (optional, default 16)
          "groups": [                            # unique group_id (0..65535)
            {"group_id": 1, "base": 0, "members": ["spine0", "spine1", "spine2", "spine3"],
             "fields": [...]}                    (optional) the group's own hash input: the
          ],                                     # switch's fields in another order
          "routes": [                            (optional) routes to a group, by prefix:
            {"prefix": "10.1.0.0/24", "group_id": 2}        # unique IPv4 prefixes; the
          ]                                                 # longest match decides
        }
      ]
    }

A group with ``fields`` is hashed over them instead of the switch's list (same
algorithm and seed): the data plane's ``select_member_ports_first`` groups, whose list is
:data:`PORTS_FIRST_FIELDS` (seed, UDP ports, protocol, addresses). A reader that hashes per
switch must take the group's list (:meth:`SwitchHashModel.for_group`); the member
functions below do.

Groups may share member indexes (two groups over the same uplinks with the same base)
only when they name the same member at every shared index.

The schema has no per-field validity rule: ``udp.*`` fields are hashed as 0 for a packet
without a UDP header (point 2). Earlier readers of this version-1 schema left them out;
the documents are unchanged, only predictions for non-UDP packets were corrected.

Which group a packet uses is the switch's route for its destination (``FabricIngress.
forwarding.routes``, an LPM table). ``routes`` lists the routes to a group that a reader
cannot guess: on a leaf, the destinations that avoid a spine which lost its links to the
destination's leaf (the fabric's own rule sends everything else to the uplink group).
:func:`route_group` applies them.

Sweeping source ports fast: with every other field fixed, CRC is affine over GF(2) in its
input bits — for equal-length messages ``crc(x ^ d) == crc(x) ^ crc(d) ^ crc(0)``. So
``H(sport) = H(sport=0) ^ L(sport)`` where ``L`` is linear: ``L(sport)`` is the XOR of
``crc(e_b) ^ crc(0)`` over the set bits ``b`` of ``sport`` (``e_b`` = the all-zero
message with only that bit of the source-port field set). 16 CRCs give the basis and the
65,536 values follow by doubling the table (``t[i | 1 << b] = t[i] ^ basis[b]``), about
10 ms in pure Python instead of ~0.5 s for 65,536 CRCs. For CRC-16 the map ``sport -> H``
is a bijection, so every member of a group of 2**k members gets exactly 65536 / 2**k
ports. See :func:`port_to_member_table` and :func:`ports_for_member`.

Example::

    >>> sw = SwitchHashModel("leaf0", seed=7, groups={1: GroupModel(0, ["s0", "s1", "s2", "s3"])})
    >>> fabric = FabricHashModel({"leaf0": sw})
    >>> FabricHashModel.from_json(fabric.to_json()) == fabric
    True
    >>> i = member_index(sw, 1, "10.0.0.1", "10.1.0.1", 17, 49152, 4791)
    >>> 0 <= i < 4 and predict_member(sw, 1, "10.0.0.1", "10.1.0.1", 17, 49152, 4791) == f"s{i}"
    True
    >>> port_to_member_table(sw, 1, "10.0.0.1", "10.1.0.1", 17, 4791)[49152] == i
    True
"""
from __future__ import annotations

import ipaddress
import json
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence, Union

SCHEMA_VERSION = 1
PACKING = "msb-first-contiguous"
FORMULA = "member = H(fields) % len(members) + base"
PROTO_UDP = 17
DEFAULT_MEMBER_WIDTH_BITS = 16

Address = Union[int, str, ipaddress.IPv4Address]


# --------------------------------------------------------------------------- algorithms
def _arc_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_ARC_TABLE = _arc_table()


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC, BMv2's ``crc16``: ``crc16_arc(b"123456789") == 0xBB3D``."""
    crc = 0
    table = _ARC_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def crc32(data: bytes) -> int:
    """CRC-32/IEEE, BMv2's ``crc32``: ``crc32(b"123456789") == 0xCBF43926``."""
    return zlib.crc32(data) & 0xFFFFFFFF


ALGORITHMS: dict[str, Callable[[bytes], int]] = {"crc16": crc16_arc, "crc32": crc32}


def pack_fields(fields: Sequence[tuple[int, int]]) -> bytes:
    """Pack ``(value, width_bits)`` MSB-first, bit-contiguously, zero-padding only the end.

    Example::

        >>> pack_fields([(0b101, 3), (0b1, 1), (0xAB, 8)]).hex()   # 1011 1010 1011 + 0000
        'bab0'
    """
    acc = 0
    nbits = 0
    for value, width in fields:
        acc = (acc << width) | (value & ((1 << width) - 1))
        nbits += width
    if nbits == 0:
        return b""
    pad = (-nbits) % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big")


# --------------------------------------------------------------------------- the model
@dataclass(frozen=True, slots=True)
class HashField:
    """One field of the hash input: ``HashField("udp.src_port", 16)``."""

    name: str
    width_bits: int


DEFAULT_FIELDS: tuple[HashField, ...] = (
    HashField("ecmp_seed", 32),
    HashField("ipv4.src_addr", 32),
    HashField("ipv4.dst_addr", 32),
    HashField("ipv4.protocol", 8),
    HashField("udp.src_port", 16),
    HashField("udp.dst_port", 16),
)
PORTS_FIRST_FIELDS: tuple[HashField, ...] = (
    HashField("ecmp_seed", 32),
    HashField("udp.src_port", 16),
    HashField("udp.dst_port", 16),
    HashField("ipv4.protocol", 8),
    HashField("ipv4.src_addr", 32),
    HashField("ipv4.dst_addr", 32),
)
"""The field order of ``select_member_ports_first`` (a group's "B" hash, ``ecmp.p4``)."""
FIELD_NAMES = tuple(f.name for f in DEFAULT_FIELDS)
UDP_FIELDS = frozenset({"udp.src_port", "udp.dst_port"})   # hashed as 0 when not UDP


@dataclass(frozen=True, slots=True)
class GroupModel:
    """An ECMP group: member indexes ``base .. base+len(members)-1``, in member order;
    ``fields``: the group's own hash input when it is not the switch's (a group the data
    plane selects with ``select_member_ports_first`` hashes :data:`PORTS_FIRST_FIELDS`).

    Example::

        >>> GroupModel(4, ["spine0", "spine1"]).size
        2
    """

    base: int
    members: tuple[str, ...]
    fields: Optional[tuple[HashField, ...]] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", tuple(self.members))
        if self.fields is not None:
            object.__setattr__(self, "fields", tuple(self.fields))

    @property
    def size(self) -> int:
        """The number of members (``size`` of ``select_member``)."""
        return len(self.members)


@dataclass(frozen=True, slots=True)
class RouteModel:
    """A destination prefix the switch routes to ECMP group ``group_id``.

        >>> RouteModel("10.1.0.0/24", 2).network.num_addresses
        256
    """

    prefix: str
    group_id: int

    @property
    def network(self) -> ipaddress.IPv4Network:
        """The prefix as an ``IPv4Network``."""
        return ipaddress.IPv4Network(self.prefix)


@dataclass(slots=True)
class SwitchHashModel:
    """The hash of one switch: algorithm, field list, seed and its ECMP groups by id.

    Example::

        >>> m = SwitchHashModel("spine0", seed=0xBEEF, groups={2: GroupModel(0, ["l0", "l1"])})
        >>> m.algorithm, [f.width_bits for f in m.fields]
        ('crc16', [32, 32, 32, 8, 16, 16])
    """

    switch: str
    algorithm: str = "crc16"
    fields: tuple[HashField, ...] = DEFAULT_FIELDS
    seed: int = 0
    groups: dict[int, GroupModel] = field(default_factory=dict)
    member_width_bits: int = DEFAULT_MEMBER_WIDTH_BITS
    routes: tuple[RouteModel, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this switch (validated)."""
        out: dict[str, Any] = {
            "switch": self.switch,
            "algorithm": self.algorithm,
            "fields": [{"name": f.name, "width_bits": f.width_bits} for f in self.fields],
            "seed": self.seed,
            "member_width_bits": self.member_width_bits,
            "groups": [_group_dict(gid, g) for gid, g in sorted(self.groups.items())],
        }
        if self.routes:
            out["routes"] = [{"prefix": r.prefix, "group_id": r.group_id} for r in self.routes]
        _parse_switch(out, "$")
        return out

    def group(self, group_id: int) -> GroupModel:
        """The group ``group_id``; ``KeyError`` naming the switch when it has none."""
        try:
            return self.groups[group_id]
        except KeyError:
            raise KeyError(f"switch {self.switch!r} has no ECMP group {group_id}") from None

    def for_group(self, group_id: int) -> "SwitchHashModel":
        """This switch as group ``group_id`` hashes: the same model, with the group's own
        field list when it has one (:func:`flow_hash` and :func:`source_port_hashes` of
        the result are that group's ``H``).

        >>> sw = SwitchHashModel("c", groups={1: GroupModel(0, ["a", "b"], PORTS_FIRST_FIELDS),
        ...                                   2: GroupModel(2, ["c", "d"])})
        >>> sw.for_group(1).fields == PORTS_FIRST_FIELDS, sw.for_group(2) is sw
        (True, True)
        """
        fields = self.group(group_id).fields
        if fields is None or fields == self.fields:
            return self
        return SwitchHashModel(self.switch, self.algorithm, fields, self.seed, self.groups,
                               self.member_width_bits, self.routes)


def _group_dict(gid: int, g: GroupModel) -> dict[str, Any]:
    out: dict[str, Any] = {"group_id": gid, "base": g.base, "members": list(g.members)}
    if g.fields is not None:
        out["fields"] = [{"name": f.name, "width_bits": f.width_bits} for f in g.fields]
    return out


@dataclass(slots=True)
class FabricHashModel:
    """Every switch's hash model, by switch name; the published JSON document.

    Example::

        >>> fm = FabricHashModel({"leaf0": SwitchHashModel("leaf0", seed=1)})
        >>> FabricHashModel.from_json(fm.to_json()).switches["leaf0"].seed
        1
    """

    switches: dict[str, SwitchHashModel] = field(default_factory=dict)
    version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (validated; raises ``ValueError`` for an inconsistent model)."""
        for name, sw in self.switches.items():
            if name != sw.switch:
                raise ValueError(f"hash model: switches[{name!r}] holds switch {sw.switch!r}")
        return {"version": self.version, "packing": PACKING, "formula": FORMULA,
                "switches": [sw.to_dict() for sw in self.switches.values()]}

    def to_json(self, indent: Optional[int] = 2) -> str:
        """The published JSON text."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any) -> "FabricHashModel":
        """Validate and load a parsed JSON object; ``ValueError`` names the bad path."""
        return _parse_fabric(data)

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "FabricHashModel":
        """Validate and load the JSON text; ``ValueError`` names the bad path and why."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"hash model: not valid JSON: {exc}") from None
        return _parse_fabric(data)

    def switch(self, name: str) -> SwitchHashModel:
        """The model of switch ``name``; ``KeyError`` when the fabric has none."""
        try:
            return self.switches[name]
        except KeyError:
            raise KeyError(f"hash model has no switch {name!r}") from None


# --------------------------------------------------------------------------- validation
def _fail(path: str, why: str) -> ValueError:
    return ValueError(f"hash model {path}: {why}")


def _obj(data: Any, path: str, required: Sequence[str], optional: Sequence[str] = ()
         ) -> Mapping[str, Any]:
    if not isinstance(data, dict):
        raise _fail(path, f"must be an object, got {type(data).__name__}")
    for key in required:
        if key not in data:
            raise _fail(f"{path}.{key}", "missing")
    for key in data:
        if key not in required and key not in optional:
            raise _fail(f"{path}.{key}", "unknown key")
    return data


def _int(value: Any, path: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(path, f"must be an integer, got {json.dumps(value)}")
    if not lo <= value <= hi:
        raise _fail(path, f"must be in {lo}..{hi}, got {value}")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(path, f"must be a non-empty string, got {json.dumps(value)}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(path, f"must be a list, got {type(value).__name__}")
    return value


def _parse_fabric(data: Any) -> FabricHashModel:
    obj = _obj(data, "$", ("version", "switches"), ("packing", "formula"))
    version = obj["version"]
    if isinstance(version, bool) or version != SCHEMA_VERSION:
        raise _fail("$.version", f"unsupported version {json.dumps(version)} "
                                 f"(this reader knows {SCHEMA_VERSION})")
    for key, want in (("packing", PACKING), ("formula", FORMULA)):
        if key in obj and obj[key] != want:
            raise _fail(f"$.{key}", f"must be {json.dumps(want)}, got {json.dumps(obj[key])}")
    switches: dict[str, SwitchHashModel] = {}
    for i, raw in enumerate(_list(obj["switches"], "$.switches")):
        sw = _parse_switch(raw, f"$.switches[{i}]")
        if sw.switch in switches:
            raise _fail(f"$.switches[{i}].switch", f"duplicate switch {sw.switch!r}")
        switches[sw.switch] = sw
    return FabricHashModel(switches, version)


def _parse_switch(data: Any, path: str) -> SwitchHashModel:
    obj = _obj(data, path, ("switch", "algorithm", "fields", "seed", "groups"),
               ("member_width_bits", "routes"))
    name = _str(obj["switch"], f"{path}.switch")
    algorithm = obj["algorithm"]
    if algorithm not in ALGORITHMS:
        raise _fail(f"{path}.algorithm", f"unknown algorithm {json.dumps(algorithm)} "
                                         f"(known: {', '.join(ALGORITHMS)})")
    fields = _parse_fields(obj["fields"], f"{path}.fields")
    seed_width = next((f.width_bits for f in fields if f.name == "ecmp_seed"), 32)
    seed = _int(obj["seed"], f"{path}.seed", 0, (1 << seed_width) - 1)
    mwidth = _int(obj.get("member_width_bits", DEFAULT_MEMBER_WIDTH_BITS),
                  f"{path}.member_width_bits", 1, 32)
    groups: dict[int, GroupModel] = {}
    owner: dict[int, tuple[int, str]] = {}          # member index -> (group id, member name)
    for i, raw in enumerate(_list(obj["groups"], f"{path}.groups")):
        gpath = f"{path}.groups[{i}]"
        gobj = _obj(raw, gpath, ("group_id", "base", "members"), ("fields",))
        gid = _int(gobj["group_id"], f"{gpath}.group_id", 0, 0xFFFF)
        if gid in groups:
            raise _fail(f"{gpath}.group_id", f"duplicate group {gid}")
        members = [_str(m, f"{gpath}.members[{j}]")
                   for j, m in enumerate(_list(gobj["members"], f"{gpath}.members"))]
        if not members:
            raise _fail(f"{gpath}.members", "a group needs at least one member")
        base = _int(gobj["base"], f"{gpath}.base", 0, (1 << mwidth) - len(members))
        for j, member in enumerate(members):
            prev = owner.setdefault(base + j, (gid, member))
            if prev[1] != member:
                raise _fail(f"{gpath}.members[{j}]",
                            f"member index {base + j} is {member!r} here but {prev[1]!r} "
                            f"in group {prev[0]}")
        gfields: Optional[tuple[HashField, ...]] = None
        if "fields" in gobj:
            gfields = tuple(_parse_fields(gobj["fields"], f"{gpath}.fields"))
            if sorted(gfields, key=lambda f: f.name) != sorted(fields, key=lambda f: f.name):
                raise _fail(f"{gpath}.fields", "a group's fields must be the switch's fields "
                                               "in another order")
        groups[gid] = GroupModel(base, tuple(members), gfields)
    routes = _parse_routes(obj.get("routes", []), f"{path}.routes", groups)
    return SwitchHashModel(name, algorithm, tuple(fields), seed, groups, mwidth, routes)


def _parse_fields(data: Any, path: str) -> list[HashField]:
    fields: list[HashField] = []
    for i, raw in enumerate(_list(data, path)):
        fpath = f"{path}[{i}]"
        fobj = _obj(raw, fpath, ("name", "width_bits"))
        fname = _str(fobj["name"], f"{fpath}.name")
        if fname not in FIELD_NAMES:
            raise _fail(f"{fpath}.name", f"unknown field {fname!r} (known: {', '.join(FIELD_NAMES)})")
        if any(f.name == fname for f in fields):
            raise _fail(f"{fpath}.name", f"duplicate field {fname!r}")
        fields.append(HashField(fname, _int(fobj["width_bits"], f"{fpath}.width_bits", 1, 64)))
    return fields


def _parse_routes(data: Any, path: str, groups: Mapping[int, GroupModel]) -> tuple[RouteModel, ...]:
    routes: list[RouteModel] = []
    seen: set[ipaddress.IPv4Network] = set()
    for i, raw in enumerate(_list(data, path)):
        rpath = f"{path}[{i}]"
        robj = _obj(raw, rpath, ("prefix", "group_id"))
        text = _str(robj["prefix"], f"{rpath}.prefix")
        try:
            net = ipaddress.IPv4Network(text)
        except ValueError as exc:
            raise _fail(f"{rpath}.prefix", f"not an IPv4 prefix: {exc}") from None
        if net in seen:
            raise _fail(f"{rpath}.prefix", f"duplicate prefix {net}")
        seen.add(net)
        gid = _int(robj["group_id"], f"{rpath}.group_id", 0, 0xFFFF)
        if gid not in groups:
            raise _fail(f"{rpath}.group_id", f"no group {gid} in this switch's groups")
        routes.append(RouteModel(str(net), gid))
    return tuple(routes)


# --------------------------------------------------------------------------- prediction
class Flow(NamedTuple):
    """A 5-tuple: ``Flow.of("10.0.0.1", "10.1.0.1", 17, 49152, 4791)``.

    Addresses are 32-bit integers; the ports only count when ``proto == 17`` (UDP): the
    switch hashes them as 0 for any other protocol (it extracted no UDP header).
    """

    src: int
    dst: int
    proto: int
    sport: int = 0
    dport: int = 0

    @classmethod
    def of(cls, src: Address, dst: Address, proto: int, sport: int = 0, dport: int = 0) -> "Flow":
        """Build a flow from dotted-quad strings or integers."""
        return cls(_addr(src), _addr(dst), proto, sport, dport)


def _addr(a: Address) -> int:
    return a if isinstance(a, int) else int(ipaddress.IPv4Address(a))


def _field_values(model: SwitchHashModel, flow: Flow) -> list[tuple[int, int]]:
    """The ``(value, width)`` list the switch hashes for ``flow``: every field of the
    model, the UDP ports as 0 unless the flow is UDP (module docstring, point 2).

        >>> [v for v, _ in _field_values(SwitchHashModel("s", seed=5), Flow(1, 2, 6, 80, 443))]
        [5, 1, 2, 6, 0, 0]
    """
    values = {"ecmp_seed": model.seed, "ipv4.src_addr": flow.src, "ipv4.dst_addr": flow.dst,
              "ipv4.protocol": flow.proto, "udp.src_port": flow.sport, "udp.dst_port": flow.dport}
    is_udp = flow.proto == PROTO_UDP
    return [(values[f.name] if is_udp or f.name not in UDP_FIELDS else 0, f.width_bits)
            for f in model.fields]


def flow_hash(model: SwitchHashModel, flow: Flow) -> int:
    """``H``: the switch's hash of ``flow`` before ``% size + base``.

    Example::

        >>> flow_hash(SwitchHashModel("s"), Flow(0, 0, 0))    # 17 zero bytes: CRC-16/ARC 0
        0
        >>> flow_hash(SwitchHashModel("s"), Flow(1, 2, 6, 80, 443)) == flow_hash(
        ...     SwitchHashModel("s"), Flow(1, 2, 6))                # not UDP: ports hash as 0
        True
    """
    return ALGORITHMS[model.algorithm](pack_fields(_field_values(model, flow)))


def member_index(model: SwitchHashModel, group_id: int, src: Address, dst: Address, proto: int,
                 sport: int = 0, dport: int = 0) -> int:
    """The member index (``meta.ecmp_member``) switch ``model`` picks in ``group_id``:
    ``(H % size + base) mod 2**member_width_bits``.

    Example::

        >>> sw = SwitchHashModel("l", seed=1, groups={3: GroupModel(8, ["a", "b"])})
        >>> member_index(sw, 3, "10.0.0.1", "10.0.1.1", 17, 1000, 4791) in (8, 9)
        True
    """
    group = model.group(group_id)
    h = flow_hash(model.for_group(group_id), Flow.of(src, dst, proto, sport, dport))
    return (h % group.size + group.base) & ((1 << model.member_width_bits) - 1)


def predict_member(model: SwitchHashModel, group_id: int, src: Address, dst: Address, proto: int,
                   sport: int = 0, dport: int = 0) -> str:
    """The name of the member (next hop / link) the flow takes in ``group_id``."""
    group = model.group(group_id)
    h = flow_hash(model.for_group(group_id), Flow.of(src, dst, proto, sport, dport))
    return group.members[h % group.size]


def route_group(model: SwitchHashModel, dst: Address, default: Optional[int] = None) -> Optional[int]:
    """The ECMP group switch ``model`` uses for destination ``dst``: the group of its
    longest published route that contains ``dst``, else ``default`` (the fabric's rule for
    what is not published, e.g. a leaf's uplink group).

    Example::

        >>> sw = SwitchHashModel("l", groups={1: GroupModel(0, ["s0", "s1"]), 2: GroupModel(2, ["s1"])},
        ...                      routes=(RouteModel("10.1.0.0/24", 2),))
        >>> route_group(sw, "10.1.0.7", 1), route_group(sw, "10.2.0.7", 1), route_group(sw, "10.2.0.7")
        (2, 1, None)
    """
    if not model.routes:
        return default
    addr = _addr(dst)
    best: Optional[RouteModel] = None
    for r in model.routes:
        net = r.network
        if (addr & int(net.netmask)) == int(net.network_address) and (
                best is None or net.prefixlen > best.network.prefixlen):
            best = r
    return best.group_id if best is not None else default


def predict_path(fabric: FabricHashModel, flow: Flow, hops: Sequence[tuple[str, int]]) -> list[str]:
    """The member taken at each ECMP hop: ``hops`` is ``[(switch name, group id), ...]``.

    Example::

        >>> fm = FabricHashModel({"leaf0": SwitchHashModel("leaf0", seed=3,
        ...                       groups={1: GroupModel(0, ["spine0", "spine1"])})})
        >>> predict_path(fm, Flow.of("10.0.0.1", "10.1.0.1", 6), [("leaf0", 1)])[0] in ("spine0", "spine1")
        True
    """
    out = []
    for switch, group_id in hops:
        sw = fabric.switch(switch)
        out.append(predict_member(sw, group_id, flow.src, flow.dst, flow.proto, flow.sport, flow.dport))
    return out


# --------------------------------------------------------------------------- source-port sweep
def source_port_hashes(model: SwitchHashModel, src: Address, dst: Address, proto: int,
                       dport: int) -> list[int]:
    """``H`` for every source port ``0 .. 2**w - 1`` (``w`` = the ``udp.src_port`` width),
    computed with the affine property (module docstring): ``result[p] == flow_hash(model,
    Flow(src, dst, proto, p, dport))``. A non-UDP flow (its ports hash as 0), or a field
    list without ``udp.src_port``, hashes the same for every port.

    Example::

        >>> hs = source_port_hashes(SwitchHashModel("s", seed=9), "10.0.0.1", "10.0.1.1", 17, 4791)
        >>> len(hs), len(set(hs))     # crc16: a bijection over the 65,536 ports
        (65536, 65536)
    """
    width = next((f.width_bits for f in model.fields if f.name == "udp.src_port"), 16)
    flow0 = Flow.of(src, dst, proto, 0, dport)
    h0 = flow_hash(model, flow0)
    if proto != PROTO_UDP or all(f.name != "udp.src_port" for f in model.fields):
        return [h0] * (1 << width)
    algo = ALGORITHMS[model.algorithm]
    zero_fields = [(0, w) for _, w in _field_values(model, flow0)]
    pos = [f.name for f in model.fields].index("udp.src_port")  # no field is ever skipped
    crc_zero = algo(pack_fields(zero_fields))
    table = [0]
    for b in range(width):
        unit = list(zero_fields)
        unit[pos] = (1 << b, width)
        basis = algo(pack_fields(unit)) ^ crc_zero
        table += [x ^ basis for x in table]
    return [h0 ^ x for x in table]


def source_port_hasher(model: SwitchHashModel, src: Address, dst: Address, proto: int,
                       dport: int) -> Callable[[int], int]:
    """``H`` as a function of the source port, for a few ports rather than all: the same
    affine sweep as :func:`source_port_hashes` folded into one 256-entry table per byte of
    the port (``H(p) = H(0) ^ L(p & 0xFF) ^ L(p & 0xFF00)``).

        >>> m = SwitchHashModel("s", seed=9)
        >>> f = source_port_hasher(m, "10.0.0.1", "10.0.1.1", 17, 4791)
        >>> [f(p) for p in (0, 4791, 65535)] == [source_port_hashes(m, "10.0.0.1", "10.0.1.1", 17, 4791)[p]
        ...                                     for p in (0, 4791, 65535)]
        True
    """
    flow0 = Flow.of(src, dst, proto, 0, dport)
    h0 = flow_hash(model, flow0)
    if proto != PROTO_UDP or all(f.name != "udp.src_port" for f in model.fields):
        return lambda port: h0
    width = next(f.width_bits for f in model.fields if f.name == "udp.src_port")
    algo = ALGORITHMS[model.algorithm]
    zero_fields = [(0, w) for _, w in _field_values(model, flow0)]
    pos = [f.name for f in model.fields].index("udp.src_port")
    crc_zero = algo(pack_fields(zero_fields))
    basis = []
    for b in range(width):
        unit = list(zero_fields)
        unit[pos] = (1 << b, width)
        basis.append(algo(pack_fields(unit)) ^ crc_zero)
    tables: list[list[int]] = []
    for byte in range((width + 7) // 8):
        t = [0]
        for b in basis[8 * byte:8 * byte + 8]:
            t += [x ^ b for x in t]
        tables.append(t)
    mask = (1 << width) - 1

    def h(port: int) -> int:
        port &= mask
        out = h0
        for t in tables:
            out ^= t[port & 0xFF]
            port >>= 8
        return out
    return h


def port_to_member_table(model: SwitchHashModel, group_id: int, src: Address, dst: Address,
                         proto: int, dport: int) -> list[int]:
    """The member index for every source port: ``table[sport] == member_index(model,
    group_id, src, dst, proto, sport, dport)`` (65,536 entries for the default fields).

    Example::

        >>> sw = SwitchHashModel("l", seed=5, groups={1: GroupModel(0, ["a", "b", "c", "d"])})
        >>> t = port_to_member_table(sw, 1, "10.0.0.1", "10.0.1.1", 17, 4791)
        >>> [t.count(i) for i in range(4)]
        [16384, 16384, 16384, 16384]
    """
    group = model.group(group_id)
    n, base = group.size, group.base
    mask = (1 << model.member_width_bits) - 1
    return [(h % n + base) & mask
            for h in source_port_hashes(model.for_group(group_id), src, dst, proto, dport)]


def ports_for_member(model: SwitchHashModel, group_id: int, src: Address, dst: Address,
                     proto: int, dport: int, member: str) -> list[int]:
    """Every source port (ascending) that sends the flow to ``member`` of ``group_id``:
    how a host pins a new connection to a chosen uplink.

    Example::

        >>> sw = SwitchHashModel("l", seed=5, groups={1: GroupModel(0, ["a", "b"])})
        >>> ports = ports_for_member(sw, 1, "10.0.0.1", "10.0.1.1", 17, 4791, "b")
        >>> len(ports), predict_member(sw, 1, "10.0.0.1", "10.0.1.1", 17, ports[0], 4791)
        (32768, 'b')
    """
    group = model.group(group_id)
    if member not in group.members:
        raise KeyError(f"group {group_id} of switch {model.switch!r} has no member {member!r}")
    n = group.size
    wanted = {i for i, m in enumerate(group.members) if m == member}
    hashes = source_port_hashes(model.for_group(group_id), src, dst, proto, dport)
    return [p for p, h in enumerate(hashes) if h % n in wanted]


__all__ = [
    "ALGORITHMS", "DEFAULT_FIELDS", "FIELD_NAMES", "FORMULA", "PACKING", "PORTS_FIRST_FIELDS",
    "SCHEMA_VERSION",
    "FabricHashModel", "Flow", "GroupModel", "HashField", "RouteModel", "SwitchHashModel",
    "crc16_arc", "crc32", "flow_hash", "member_index", "pack_fields", "port_to_member_table",
    "ports_for_member", "predict_member", "predict_path", "route_group", "source_port_hasher",
    "source_port_hashes",
]
