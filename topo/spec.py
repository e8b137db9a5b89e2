"""The fabric *spec*: the handful of numbers that describe a multi-rail fabric — two tiers
(leaves, spines) in one pod, or three (pods joined by core switches) — with one- or
two-port NICs, and their validation (from a YAML/JSON file, a dict or CLI flags).

A wrong spec raises :class:`SpecError` naming the field and why; an impossible topology
(a leaf or spine with more links than ports, an address plan that does not fit) is
refused with the reason and the fix. ``topo.model.build_fabric`` turns a valid spec
into the fabric.

Example::

    >>> spec = spec_from_dict({"blocks": 2, "rails": 4})
    >>> (spec.blocks, spec.rails, spec.servers_per_block, spec.spines)
    (2, 4, 2, 2)
    >>> spec_from_dict({"rails": 0})
    Traceback (most recent call last):
    ...
    topo.spec.SpecError: spec: rails: must be at least 1, got 0
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import yaml

HASH_ALGORITHMS = ("crc16", "crc32")
CPU_PORT = 255            # v1model CPU port (switch flag --cpu-port 255): never a link port
DROP_PORT = 511           # v1model drop port: never a link port
RESERVED_PORTS = frozenset({CPU_PORT, DROP_PORT})
MAX_BLOCKS = 256          # 10.<b>.r.s: one byte for the block
MAX_RAILS = 256           # 10.b.<r>.s: one byte for the rail
MAX_THIRD_OCTET = 256     # 10.b.<pod x rails + rail>.s: pods x rails values of one byte
MAX_SERVERS = 253         # 10.b.r.<s+1>: .254 is the gateway, .255 the broadcast address
MAX_SWITCH_ID = 0xFFFF    # port MACs carry the switch id in 16 bits
SPINE_ID_BASE = 200       # spine k has switch id 200 + k (p4src/README.md address plan)


class SpecError(ValueError):
    """A fabric spec that is malformed or describes an impossible fabric.

    ``str(err)`` is ``"<source>: <field>: <reason>"``; ``field`` and ``reason`` are kept.

        >>> str(SpecError("rails", "must be at least 1, got 0", source="f.yaml"))
        'f.yaml: rails: must be at least 1, got 0'
    """

    def __init__(self, field_name: str, reason: str, source: str = "spec") -> None:
        self.field = field_name
        self.reason = reason
        self.source = source
        super().__init__(f"{source}: {field_name}: {reason}")


@dataclass(frozen=True, slots=True)
class SwitchOverride:
    """Per-switch settings a spec file may force: ``SwitchOverride(grpc_addr="10.0.0.5:9559")``.

    Unset fields (None) keep the computed defaults.
    """

    grpc_addr: Optional[str] = None
    device_id: Optional[int] = None
    ecmp_seed: Optional[int] = None
    hash_algorithm: Optional[str] = None


@dataclass(frozen=True, slots=True)
class FabricSpec:
    """The shape of a fabric: ``FabricSpec(blocks=2, servers_per_block=2, rails=2, spines=2)``.

    * ``blocks`` × ``servers_per_block`` servers, each with ``rails`` NICs; NIC r of every
      server of a block goes to one of the ``leaves_per_rail`` rail-r leaves of that block
      (servers split into contiguous runs, server order).
    * ``spines`` spines; every leaf has ``uplinks_per_spine`` links to every spine.
    * ``link_gbps``: host links; ``uplink_gbps``: leaf–spine links (default ``link_gbps``),
      or derive it from ``oversubscription`` = leaf host capacity / leaf uplink capacity.
    * ``leaf_ports`` / ``spine_ports``: switch radix (ports 255 and 511 are reserved by
      v1model and never used for links, so they do not count).
    * ``grpc_host`` / ``grpc_base_port``: switch i (leaves first, then spines) listens on
      ``grpc_host:grpc_base_port + i``; ``switches`` overrides per switch name.
    * ``ecmp_seed``: salt of the per-switch ECMP seeds; ``leaf_hash``/``spine_hash``:
      crc16 on leaves and crc32 on spines avoid polarisation (p4src/README.md).
    * ``ports_per_nic`` (1 or 2): with 2, the two ports of a NIC go to two *different*
      leaves of its rail (the Astral paper's dual-homed 2 x 200G NIC): the rail's
      ``leaves_per_rail`` leaves of a block form pairs (leaves 2j and 2j+1), port p of a
      NIC on leaf ``2j + p``; ``link_gbps`` is then the speed of one port.
    * ``pods`` copies of that pod (``blocks`` blocks each), joined by ``cores`` core
      switches in planes, one per spine index: spine k of every pod is cabled to the
      ``cores / spines`` cores of plane k. Equal bandwidth at the core tier: every spine
      has as much capacity up to the core as down to its leaves (``spine_core_uplinks``
      links of ``core_link_gbps``, default the leaf–spine speed), spread evenly over the
      cores of its plane. ``core_ports``: core radix; ``core_hash``: the cores' CRC.

    The fields below ``switches`` (dual-port NICs, pods, cores) are new in fabric file
    version 2; a spec that leaves them at their defaults is written exactly as before.
    """

    blocks: int = 2
    servers_per_block: int = 2
    rails: int = 2
    spines: int = 2
    leaves_per_rail: int = 1
    uplinks_per_spine: int = 1
    link_gbps: float = 100.0
    uplink_gbps: Optional[float] = None
    oversubscription: Optional[float] = None
    leaf_ports: int = 64
    spine_ports: int = 64
    grpc_host: str = "127.0.0.1"
    grpc_base_port: int = 9559
    election_id: int = 1
    ecmp_seed: int = 0
    leaf_hash: str = "crc16"
    spine_hash: str = "crc32"
    switches: Mapping[str, SwitchOverride] = field(default_factory=dict)
    ports_per_nic: int = 1
    pods: int = 1
    cores: int = 0
    core_link_gbps: Optional[float] = None
    core_ports: int = 64
    core_hash: str = "crc16"

    # ---------------------------------------------------------------- derived numbers
    @property
    def leaves_per_pod(self) -> int:
        """Leaves in one pod: ``blocks * rails * leaves_per_rail``."""
        return self.blocks * self.rails * self.leaves_per_rail

    @property
    def num_leaves(self) -> int:
        """Leaves in the fabric (every pod): ``FabricSpec().num_leaves == 4``."""
        return self.pods * self.leaves_per_pod

    @property
    def num_spines(self) -> int:
        """Spines in the fabric (``spines`` per pod): ``FabricSpec().num_spines == 2``."""
        return self.pods * self.spines

    @property
    def num_switches(self) -> int:
        """Leaves, spines and cores: ``FabricSpec().num_switches == 6``."""
        return self.num_leaves + self.num_spines + self.cores

    @property
    def num_servers(self) -> int:
        """Servers in the fabric: ``FabricSpec().num_servers == 4``."""
        return self.pods * self.blocks * self.servers_per_block

    @property
    def num_gpus(self) -> int:
        """GPUs (one per NIC/rail): ``FabricSpec().num_gpus == 8``."""
        return self.num_servers * self.rails

    @property
    def leaf_sets_per_rail(self) -> int:
        """Leaf sets of one rail of one block that a NIC is homed on: single leaves, or
        pairs with ``ports_per_nic`` 2 (``leaves_per_rail // ports_per_nic``)."""
        return max(1, self.leaves_per_rail // self.ports_per_nic)

    @property
    def servers_per_leaf(self) -> int:
        """Most servers on one leaf (runs of ``ceil(servers / leaf sets per rail)``)."""
        return math.ceil(self.servers_per_block / self.leaf_sets_per_rail)

    @property
    def leaf_uplinks(self) -> int:
        """Uplinks of every leaf: ``spines * uplinks_per_spine``."""
        return self.spines * self.uplinks_per_spine

    @property
    def spine_downlinks(self) -> int:
        """Downlinks of every spine: one per leaf of its pod and parallel link."""
        return self.leaves_per_pod * self.uplinks_per_spine

    @property
    def cores_per_plane(self) -> int:
        """Cores of one plane (plane k joins spine k of every pod): ``cores // spines``."""
        return self.cores // self.spines

    @property
    def effective_core_link_gbps(self) -> float:
        """Speed of a spine–core link: ``core_link_gbps``, else the leaf–spine speed."""
        if self.core_link_gbps is not None:
            return float(self.core_link_gbps)
        return self.effective_uplink_gbps

    @property
    def spine_core_uplinks_exact(self) -> float:
        """Core links a spine needs for equal bandwidth: its downlink capacity over the
        core link speed (a whole number in a valid spec; 0 without cores)."""
        if not self.cores:
            return 0.0
        return self.spine_downlinks * self.effective_uplink_gbps / self.effective_core_link_gbps

    @property
    def spine_core_uplinks(self) -> int:
        """Core links of every spine (equal bandwidth; 0 without cores)."""
        return round(self.spine_core_uplinks_exact)

    @property
    def links_per_core(self) -> int:
        """Parallel links between a spine and each core of its plane (0 without cores)."""
        return self.spine_core_uplinks // self.cores_per_plane if self.cores else 0

    @property
    def effective_uplink_gbps(self) -> float:
        """Speed of a leaf–spine link after ``uplink_gbps`` / ``oversubscription``."""
        if self.uplink_gbps is not None:
            return float(self.uplink_gbps)
        if self.oversubscription is not None:
            return self.servers_per_leaf * self.link_gbps / (self.leaf_uplinks * self.oversubscription)
        return float(self.link_gbps)

    @property
    def is_extended(self) -> bool:
        """True when the spec uses a field of fabric file version 2 (dual-port NICs,
        pods, cores): ``FabricSpec().is_extended is False``."""
        return any(getattr(self, name) != default for name, default in EXTENDED_DEFAULTS.items())

    @property
    def spine_id_base(self) -> int:
        """Switch id of spine 0: 200 (README plan) unless the leaves reach it, then the
        next multiple of 1000 above the last leaf id."""
        if self.num_leaves < SPINE_ID_BASE:
            return SPINE_ID_BASE
        return 1000 * (self.num_leaves // 1000 + 1)

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain data (what a spec file holds); ``spec_from_dict`` inverts it."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "switches":
                value = {name: {k: v for k, v in
                                (("grpc_addr", o.grpc_addr), ("device_id", o.device_id),
                                 ("ecmp_seed", o.ecmp_seed), ("hash_algorithm", o.hash_algorithm))
                                if v is not None}
                         for name, o in value.items()}
            if f.name in EXTENDED_DEFAULTS and value == EXTENDED_DEFAULTS[f.name]:
                continue        # a version-1 spec is written exactly as before
            out[f.name] = value
        return out


#: The fields of fabric file version 2 and their defaults (left out of a spec's plain data
#: when at the default, so a two-tier one-port spec reads and writes as in version 1).
EXTENDED_DEFAULTS: dict[str, Any] = {"ports_per_nic": 1, "pods": 1, "cores": 0, "core_link_gbps": None,
                                     "core_ports": 64, "core_hash": "crc16"}


# ------------------------------------------------------------------------- validation
_INT_FIELDS_MIN = {
    "blocks": 1, "servers_per_block": 1, "rails": 1, "spines": 1, "leaves_per_rail": 1,
    "uplinks_per_spine": 1, "leaf_ports": 1, "spine_ports": 1, "grpc_base_port": 1,
    "election_id": 1, "ecmp_seed": 0, "ports_per_nic": 1, "pods": 1, "cores": 0, "core_ports": 1,
}
_FLOAT_FIELDS = ("link_gbps", "uplink_gbps", "oversubscription", "core_link_gbps")
_KNOWN = tuple(f.name for f in fields(FabricSpec))


def _check_int(source: str, name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(name, f"must be an integer, got {value!r}", source)
    if value < minimum:
        raise SpecError(name, f"must be at least {minimum}, got {value}", source)
    return value


def _check_positive(source: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(name, f"must be a number, got {value!r}", source)
    if not value > 0 or not math.isfinite(value):
        raise SpecError(name, f"must be a positive number, got {value!r}", source)
    return float(value)


def check_grpc_addr(value: Any, name: str = "grpc_addr", source: str = "spec") -> str:
    """``"host:port"`` with a port in 1..65535, else :class:`SpecError`.

        >>> check_grpc_addr("10.0.0.5:9559")
        '10.0.0.5:9559'
    """
    if not isinstance(value, str) or ":" not in value:
        raise SpecError(name, f"must be 'host:port', got {value!r}", source)
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise SpecError(name, f"must be 'host:port' with a port in 1..65535, got {value!r}", source)
    return value


def _override(source: str, name: str, raw: Any) -> SwitchOverride:
    where = f"switches.{name}"
    if not isinstance(raw, Mapping):
        raise SpecError(where, f"must be a mapping of grpc_addr/device_id/ecmp_seed/hash_algorithm, "
                               f"got {raw!r}", source)
    allowed = ("grpc_addr", "device_id", "ecmp_seed", "hash_algorithm")
    for key in raw:
        if key not in allowed:
            raise SpecError(f"{where}.{key}", f"unknown field (known: {', '.join(allowed)})", source)
    addr = raw.get("grpc_addr")
    if addr is not None:
        check_grpc_addr(addr, f"{where}.grpc_addr", source)
    dev = raw.get("device_id")
    if dev is not None:
        _check_int(source, f"{where}.device_id", dev, 1)
    seed = raw.get("ecmp_seed")
    if seed is not None:
        _check_int(source, f"{where}.ecmp_seed", seed, 0)
        if seed > 0xFFFFFFFF:
            raise SpecError(f"{where}.ecmp_seed", f"must fit in 32 bits, got {seed}", source)
    algo = raw.get("hash_algorithm")
    if algo is not None and algo not in HASH_ALGORITHMS:
        raise SpecError(f"{where}.hash_algorithm", f"must be one of crc16, crc32, got {algo!r}", source)
    return SwitchOverride(addr, dev, seed, algo)


def spec_from_dict(data: Any, source: str = "spec") -> FabricSpec:
    """Validate plain data (a parsed spec file) into a :class:`FabricSpec`.

    Missing fields take the defaults; unknown fields, wrong types and impossible shapes
    raise :class:`SpecError`.

        >>> spec_from_dict({"spines": 4}).spines
        4
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise SpecError("(top level)", f"must be a mapping of field: value, got {type(data).__name__}",
                        source)
    for key in data:
        if key not in _KNOWN:
            raise SpecError(str(key), f"unknown field (known: {', '.join(_KNOWN)})", source)
    kwargs: dict[str, Any] = {}
    for name, minimum in _INT_FIELDS_MIN.items():
        if name in data:
            kwargs[name] = _check_int(source, name, data[name], minimum)
    for name in _FLOAT_FIELDS:
        if name in data and data[name] is not None:
            kwargs[name] = _check_positive(source, name, data[name])
    if "grpc_host" in data:
        host = data["grpc_host"]
        if not isinstance(host, str) or not host or ":" in host and not host.startswith("["):
            raise SpecError("grpc_host", f"must be a host name or address without a port, got {host!r}",
                            source)
        kwargs["grpc_host"] = host
    for name in ("leaf_hash", "spine_hash", "core_hash"):
        if name in data:
            if data[name] not in HASH_ALGORITHMS:
                raise SpecError(name, f"must be one of crc16, crc32, got {data[name]!r}", source)
            kwargs[name] = data[name]
    overrides_raw = data.get("switches") or {}
    if not isinstance(overrides_raw, Mapping):
        raise SpecError("switches", f"must be a mapping of switch name to settings, got "
                                    f"{type(overrides_raw).__name__}", source)
    kwargs["switches"] = {str(n): _override(source, str(n), v) for n, v in overrides_raw.items()}
    spec = FabricSpec(**kwargs)
    check_spec(spec, source)
    return spec


def check_spec(spec: FabricSpec, source: str = "spec") -> None:
    """Refuse a spec whose fabric cannot exist, with the reason and the fix.

        >>> check_spec(FabricSpec(servers_per_block=100, leaf_ports=64))
        Traceback (most recent call last):
        ...
        topo.spec.SpecError: spec: leaf_ports: impossible topology: a leaf needs 102 ports (100 servers + 2 spines x 1 uplinks) but leaf_ports is 64; raise leaf_ports or add leaves_per_rail
    """
    if spec.blocks > MAX_BLOCKS:
        raise SpecError("blocks", f"at most {MAX_BLOCKS} (address plan 10.<block>.<rail>.<server+1>), "
                                  f"got {spec.blocks}", source)
    if spec.rails > MAX_RAILS:
        raise SpecError("rails", f"at most {MAX_RAILS} (address plan 10.<block>.<rail>.<server+1>), "
                                 f"got {spec.rails}", source)
    if spec.pods * spec.rails > MAX_THIRD_OCTET:
        raise SpecError("pods", f"{spec.pods} pods x {spec.rails} rails do not fit the address plan "
                                f"10.<block>.<pod x rails + rail>.<server+1> (at most {MAX_THIRD_OCTET} "
                                f"values of the third octet)", source)
    if spec.servers_per_block > MAX_SERVERS:
        raise SpecError("servers_per_block",
                        f"at most {MAX_SERVERS} (10.b.r.<server+1>/24: .254 is the gateway, .255 "
                        f"broadcast), got {spec.servers_per_block}; use more blocks", source)
    _check_ports_per_nic(spec, source)
    if spec.leaf_sets_per_rail > spec.servers_per_block:
        sets = (f"{spec.leaves_per_rail} leaves per rail" if spec.ports_per_nic == 1 else
                f"{spec.leaf_sets_per_rail} leaf pairs per rail ({spec.leaves_per_rail} leaves)")
        raise SpecError("leaves_per_rail",
                        f"impossible topology: {sets} but only "
                        f"{spec.servers_per_block} servers per block (every leaf needs a server)", source)
    if spec.uplink_gbps is not None and spec.oversubscription is not None:
        raise SpecError("oversubscription", "give uplink_gbps or oversubscription, not both", source)
    leaf_need = spec.servers_per_leaf + spec.leaf_uplinks
    if leaf_need > spec.leaf_ports:
        raise SpecError("leaf_ports",
                        f"impossible topology: a leaf needs {leaf_need} ports ({spec.servers_per_leaf} "
                        f"servers + {spec.spines} spines x {spec.uplinks_per_spine} uplinks) but "
                        f"leaf_ports is {spec.leaf_ports}; raise leaf_ports or add leaves_per_rail", source)
    if spec.spine_downlinks > spec.spine_ports:
        raise SpecError("spine_ports",
                        f"impossible topology: a spine needs {spec.spine_downlinks} ports ({spec.leaves_per_pod} "
                        f"leaves = {spec.blocks} blocks x {spec.rails} rails x {spec.leaves_per_rail} "
                        f"leaves per rail, x {spec.uplinks_per_spine} links) but spine_ports is "
                        f"{spec.spine_ports}; raise spine_ports or use fewer blocks/rails", source)
    _check_core_tier(spec, source)
    n_switches = spec.num_switches
    last_id = spec.spine_id_base + spec.num_spines + spec.cores - 1
    if last_id > MAX_SWITCH_ID:
        raise SpecError("spines", f"too many switches for the MAC plan: switch ids reach {last_id} "
                                  f"(at most {MAX_SWITCH_ID})", source)
    if spec.grpc_base_port + n_switches - 1 > 65535:
        raise SpecError("grpc_base_port",
                        f"{n_switches} switches from port {spec.grpc_base_port} run past 65535; "
                        f"lower grpc_base_port", source)
    if spec.ecmp_seed > 0xFFFFFFFF:
        raise SpecError("ecmp_seed", f"must fit in 32 bits, got {spec.ecmp_seed}", source)


def _check_ports_per_nic(spec: FabricSpec, source: str) -> None:
    """Dual-port NICs: two ports, on two different leaves of the NIC's rail."""
    if spec.ports_per_nic not in (1, 2):
        raise SpecError("ports_per_nic", f"must be 1 or 2 (one port, or two ports on two different "
                                         f"leaves of the NIC's rail), got {spec.ports_per_nic}", source)
    if spec.ports_per_nic == 2 and spec.leaves_per_rail % 2:
        raise SpecError("leaves_per_rail",
                        f"ports_per_nic 2 puts the two ports of a NIC on two different leaves of its "
                        f"rail, so the leaves of a rail in a block come in pairs; with "
                        f"{spec.leaves_per_rail} the second port of "
                        + ("every NIC would land on the same leaf as the first" if spec.leaves_per_rail == 1
                           else "the NICs of the last leaf would land on the same leaf as the first")
                        + f": give an even leaves_per_rail (e.g. {spec.leaves_per_rail + 1})", source)


def _check_core_tier(spec: FabricSpec, source: str) -> None:
    """Pods and cores: planes of cores, equal bandwidth, radix, hash (the class docstring)."""
    if spec.pods == 1 and spec.cores:
        raise SpecError("cores", f"core switches join pods, and this fabric has 1 pod: set cores to 0 "
                                 f"or pods to 2 or more (got cores {spec.cores})", source)
    if spec.pods == 1:
        if spec.core_link_gbps is not None:
            raise SpecError("core_link_gbps", "no core tier (pods is 1): leave core_link_gbps out", source)
        return
    if not spec.cores:
        raise SpecError("cores", f"{spec.pods} pods need a core tier to join them: set cores to a "
                                 f"multiple of spines ({spec.spines}), one plane of cores per spine "
                                 f"index", source)
    if spec.cores % spec.spines:
        raise SpecError("cores", f"the core tier is made of planes, one per spine index (spine k of "
                                 f"every pod is cabled to every core of plane k), so cores must be a "
                                 f"multiple of spines ({spec.spines}), got {spec.cores}", source)
    down_gbps = spec.spine_downlinks * spec.effective_uplink_gbps
    core_gbps = spec.effective_core_link_gbps
    exact = spec.spine_core_uplinks_exact
    rule = (f"equal bandwidth means every spine has as much capacity up to the core as down to its "
            f"leaves: spine_core_uplinks x core_link_gbps = {spec.spine_downlinks} downlinks "
            f"({spec.leaves_per_pod} leaves x {spec.uplinks_per_spine} uplinks_per_spine) x "
            f"{spec.effective_uplink_gbps:g} Gb/s = {down_gbps:g} Gb/s")
    if abs(exact - round(exact)) > 1e-9 * max(exact, 1.0) or round(exact) < 1:
        raise SpecError("core_link_gbps", f"{rule}; with {core_gbps:g} Gb/s core links that is "
                                          f"{exact:.4g} links, not a whole number: use a core link "
                                          f"speed that divides {down_gbps:g}", source)
    uplinks = round(exact)
    cpp = spec.cores_per_plane
    if uplinks % cpp:
        raise SpecError("cores", f"{rule}, i.e. {uplinks} core links of {core_gbps:g} Gb/s per spine, "
                                 f"spread evenly over the {cpp} cores of its plane (cores / spines = "
                                 f"{spec.cores} / {spec.spines}): {uplinks} is not a multiple of {cpp}; "
                                 f"give cores = spines x a divisor of {uplinks}", source)
    spine_need = spec.spine_downlinks + uplinks
    if spine_need > spec.spine_ports:
        raise SpecError("spine_ports",
                        f"impossible topology: a spine needs {spine_need} ports ({spec.spine_downlinks} "
                        f"downlinks + {uplinks} core uplinks, equal bandwidth) but spine_ports is "
                        f"{spec.spine_ports}", source)
    core_need = spec.pods * (uplinks // cpp)
    if core_need > spec.core_ports:
        raise SpecError("core_ports",
                        f"impossible topology: a core needs {core_need} ports ({spec.pods} pods x "
                        f"{uplinks // cpp} links to the spine of its plane in each) but core_ports is "
                        f"{spec.core_ports}; raise core_ports or add cores", source)


def load_spec(path: Union[str, Path], overrides: Optional[Mapping[str, Any]] = None) -> FabricSpec:
    """Read and validate a YAML (``.yaml``/``.yml``) or JSON spec file.

    ``overrides`` (e.g. CLI flags) replace the file's values before validation. Errors
    name the file: ``SpecError("fab.yaml: spines: must be an integer, got 'two'")``.
    """
    p = Path(path)
    source = str(p)
    try:
        text = p.read_text()
    except OSError as exc:
        raise SpecError("(file)", f"cannot read: {exc.strerror or exc}", source) from None
    data = parse_spec_text(text, source, yaml_syntax=p.suffix.lower() in (".yaml", ".yml"))
    if overrides:
        if data is None:
            data = {}
        if isinstance(data, Mapping):
            data = {**data, **overrides}
    return spec_from_dict(data, source)


def parse_spec_text(text: str, source: str = "spec", yaml_syntax: bool = True) -> Any:
    """Parse spec text (YAML, a superset of JSON, or strict JSON) to plain data."""
    if not yaml_syntax:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError("(syntax)", f"not valid JSON: {exc.msg} at line {exc.lineno} column "
                                        f"{exc.colno}", source) from None

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError("(syntax)", f"not valid YAML: {problem}{where}", source) from None


__all__ = ["CPU_PORT", "DROP_PORT", "EXTENDED_DEFAULTS", "HASH_ALGORITHMS", "RESERVED_PORTS", "FabricSpec", "SpecError",
           "SwitchOverride", "check_grpc_addr", "check_spec", "load_spec", "parse_spec_text",
           "spec_from_dict"]
