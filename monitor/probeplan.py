"""The probe plan as data: the paths, the NICs they use, their destination prefixes,
the links left unwatched — and its JSON file (``schema`` ``astral-probe-plan``, version 1;
:mod:`monitor.probes` makes it, :mod:`monitor.prober` reads it).

A bad file raises ``ValueError`` naming the field::

    >>> plan_from_dict({"schema": "astral-probe-plan", "version": 1, "dport": 4791})
    Traceback (most recent call last):
    ...
    ValueError: probe plan: $.rate_pps: missing
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from monitor.evidence import LinkDir, ProbePath

SCHEMA = "astral-probe-plan"
SCHEMA_VERSION = 1
ROCE_DPORT = 4791
DEFAULT_RATE_PPS = 10.0        # probes per second per path

@dataclass(frozen=True, slots=True)
class ProbeNic:
    """What the prober needs of one NIC: its host, rail, addresses, the leaf it is cabled
    to (and that leaf's router MAC, the frames' destination) and the prefix spines route
    to it (``10.b.r.0/24``, or a /32 when the rail subnet is split over leaves).

    >>> ProbeNic("b0s0", 0, "10.0.0.1", "06:00:00:00:00:01", "02:00:00:00:01:00", "b0r0l0",
    ...          "10.0.0.0/24").leaf
    'b0r0l0'
    """

    host: str
    rail: int
    ip: str
    mac: str
    gateway_mac: str
    leaf: str
    prefix: str


@dataclass(slots=True)
class ProbePlan:
    """The probe paths, the NICs they use, each path's destination prefix, the links no
    pair of paths can watch (with why) and the probe rate per path."""

    paths: tuple[ProbePath, ...]
    nics: dict[str, ProbeNic]
    dst_prefix: dict[str, str] = field(default_factory=dict)
    uncovered: dict[str, str] = field(default_factory=dict)
    rate_pps: float = DEFAULT_RATE_PPS

    def hosts(self) -> list[str]:
        """Hosts with a NIC in the plan, sorted."""
        return sorted({n.host for n in self.nics.values()})

    def paths_from(self, host: str) -> list[ProbePath]:
        """The paths ``host`` sends (its NICs are their sources)."""
        return [p for p in self.paths if self.nics[p.src_nic].host == host]

    def paths_to(self, host: str) -> list[ProbePath]:
        """The paths ``host`` receives."""
        return [p for p in self.paths if self.nics[p.dst_nic].host == host]

    def nics_of(self, host: str) -> dict[str, ProbeNic]:
        """``host``'s NICs by interface name."""
        return {k: n for k, n in self.nics.items() if n.host == host}

    def paths_by_prefix(self) -> dict[str, list[str]]:
        """Destination prefix → the paths that end there (blackhole localisation)."""
        out: dict[str, list[str]] = defaultdict(list)
        for p in self.paths:
            out[self.dst_prefix[p.name]].append(p.name)
        return dict(out)

    def path_links(self) -> dict[str, tuple[LinkDir, ...]]:
        """Path → the link directions it crosses (``Evidence.path_links``)."""
        return {p.name: p.links for p in self.paths}

    def probes_per_s(self) -> float:
        """Probe frames the plan sends per second, fabric-wide."""
        return len(self.paths) * self.rate_pps

    def to_dict(self) -> dict[str, Any]:
        """The plan file's data (module docstring)."""
        return {
            "schema": SCHEMA, "version": SCHEMA_VERSION, "dport": ROCE_DPORT,
            "rate_pps": self.rate_pps,
            "nics": {k: {"host": n.host, "rail": n.rail, "ip": n.ip, "mac": n.mac,
                         "gateway_mac": n.gateway_mac, "leaf": n.leaf, "prefix": n.prefix}
                     for k, n in sorted(self.nics.items())},
            "paths": [{"name": p.name, "src_nic": p.src_nic, "dst_nic": p.dst_nic,
                       "src_ip": p.src_ip, "dst_ip": p.dst_ip, "sport": p.sport,
                       "links": [str(l) for l in p.links], "switches": list(p.switches),
                       "dst_prefix": self.dst_prefix[p.name]} for p in self.paths],
            "uncovered": dict(sorted(self.uncovered.items())),
        }

    def to_json(self) -> str:
        """The plan file's text."""
        return json.dumps(self.to_dict(), indent=1)

    def save(self, path: Union[str, Path]) -> Path:
        """Write the plan file (parent folders created); returns the path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(self.to_json() + "\n")
        tmp.replace(p)
        return p


def _need(d: Any, key: str, kind: type, where: str) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise ValueError(f"probe plan: {where}.{key}: missing")
    v = d[key]
    if kind is float and isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise ValueError(f"probe plan: {where}.{key}: want {kind.__name__}, got {type(v).__name__}")
    return v


def plan_from_dict(data: Any) -> ProbePlan:
    """A :class:`ProbePlan` from the plan file's data; ``ValueError`` naming the field."""
    if _need(data, "schema", str, "$") != SCHEMA:
        raise ValueError(f"probe plan: $.schema: not {SCHEMA!r}")
    if _need(data, "version", int, "$") != SCHEMA_VERSION:
        raise ValueError(f"probe plan: $.version: unsupported {data['version']!r} "
                         f"(this code reads {SCHEMA_VERSION})")
    if _need(data, "dport", int, "$") != ROCE_DPORT:
        raise ValueError(f"probe plan: $.dport: must be {ROCE_DPORT}")
    rate = _need(data, "rate_pps", float, "$")
    if rate <= 0:
        raise ValueError("probe plan: $.rate_pps: must be positive")
    nics: dict[str, ProbeNic] = {}
    for k, n in _need(data, "nics", dict, "$").items():
        w = f"$.nics.{k}"
        nics[k] = ProbeNic(_need(n, "host", str, w), _need(n, "rail", int, w),
                           _need(n, "ip", str, w), _need(n, "mac", str, w),
                           _need(n, "gateway_mac", str, w), _need(n, "leaf", str, w),
                           _need(n, "prefix", str, w))
    paths: list[ProbePath] = []
    prefix: dict[str, str] = {}
    for i, p in enumerate(_need(data, "paths", list, "$")):
        w = f"$.paths[{i}]"
        name = _need(p, "name", str, w)
        if name in prefix:
            raise ValueError(f"probe plan: {w}.name: duplicate path {name!r}")
        src, dst = _need(p, "src_nic", str, w), _need(p, "dst_nic", str, w)
        for key, nic in (("src_nic", src), ("dst_nic", dst)):
            if nic not in nics:
                raise ValueError(f"probe plan: {w}.{key}: no NIC {nic!r} in $.nics")
        sport = _need(p, "sport", int, w)
        if not 0 < sport < 1 << 16:
            raise ValueError(f"probe plan: {w}.sport: {sport} is not a UDP port")
        try:
            links = tuple(LinkDir.parse(str(t)) for t in _need(p, "links", list, w))
        except ValueError as exc:
            raise ValueError(f"probe plan: {w}.links: {exc}") from None
        paths.append(ProbePath(name, src, dst, _need(p, "src_ip", str, w), _need(p, "dst_ip", str, w),
                               sport, links, tuple(str(s) for s in _need(p, "switches", list, w))))
        prefix[name] = _need(p, "dst_prefix", str, w)
    uncovered = {str(k): str(v) for k, v in _need(data, "uncovered", dict, "$").items()}
    return ProbePlan(tuple(paths), nics, prefix, uncovered, rate)


def load_plan_text(text: str) -> ProbePlan:
    """A plan from the plan file's text (``ValueError`` on bad JSON or a bad field)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"probe plan: not valid JSON: {exc.msg} at line {exc.lineno}") from None
    return plan_from_dict(data)


def load_plan(path: Union[str, Path]) -> ProbePlan:
    """Read a plan file (``ValueError`` naming the file and the field)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the probe plan: {exc.strerror or exc}") from None
    try:
        return load_plan_text(text)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


__all__ = ["DEFAULT_RATE_PPS", "ProbeNic", "ProbePlan", "ROCE_DPORT", "SCHEMA", "SCHEMA_VERSION",
           "load_plan", "load_plan_text", "plan_from_dict"]
