"""Scenario files of ``python -m sim run SCENARIO.yaml``: schema, defaults and validation.

Every section and field is optional except ``job.gpus`` (or ``job.ranks``); an unknown
field anywhere is refused naming it (``SimInputError``: ``"s.yaml: workload.colective:
unknown field (known: ...)"``). Schema (defaults shown)::

    name: my-scenario
    fabric:                      # topo.spec.FabricSpec fields, over the spec file
      spec_file: topo/specs/pod64k.yaml   # or topology: build/topology.json
      blocks: 8                  # ... any FabricSpec field
    job:
      gpus: 8192                 # ranks; more than the fabric's GPUs is refused
      gpus_per_server: null      # default: every rail
      placement: contiguous      # contiguous | fragmented | random
      fragment_servers: 16
      seed: 1
      ranks: null                # or explicit ["b0s0:0", "b1s0:0", ...] (rank order)
    workload:
      collective: allreduce      # allreduce | allgather | reducescatter | alltoall
      algorithm: ring            # ring | tree
      order: tccl                # tccl | rank (host.tccl.planner orders)
      size_bytes: 1073741824
      channels: 1
      alltoall_rounds: 8
      steps: null                # a number: only that many steps (a measured partial run)
    background: {flows: 0, size_bytes: 4000000, seed: 2}
    failures: []                 # ["s3", "b0r0l0:129"]
    policies: [random_ecmp, tccl, tccl_gor, ideal]
    gor: {rounds: 4, top_n: 100, safety: 0.75}
    model: {per_host_s: 3.5e-6, per_hop_s: 0.5e-6, bandwidth_scale: 1.0, link_Bps: null}
    seed: 1

Example::

    >>> s = scenario_from_dict({"job": {"gpus": 8}, "fabric": {"blocks": 2}})
    >>> (s.job.gpus, s.workload.collective, s.fabric_spec().blocks)
    (8, 'allreduce', 2)
    >>> scenario_from_dict({"job": {"gpus": 8, "gpu": 1}})
    Traceback (most recent call last):
    ...
    sim.topology.SimInputError: scenario: job.gpu: unknown field (known: fragment_servers, gpus, gpus_per_server, placement, ranks, seed)
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Optional, Union

import yaml

from sim.model import ModelParams
from sim.policies import POLICIES, GorOptions
from sim.topology import SimInputError
from topo.spec import FabricSpec, SpecError, load_spec, spec_from_dict

REPO = Path(__file__).resolve().parent.parent


@dataclass(slots=True)
class JobSpec:
    """The ``job`` section."""

    gpus: int = 0
    gpus_per_server: Optional[int] = None
    placement: str = "contiguous"
    fragment_servers: int = 16
    seed: int = 1
    ranks: Optional[list[str]] = None


@dataclass(slots=True)
class WorkloadSpec:
    """The ``workload`` section."""

    collective: str = "allreduce"
    algorithm: str = "ring"
    order: str = "tccl"
    size_bytes: int = 1 << 30
    channels: int = 1
    alltoall_rounds: int = 8
    steps: Optional[int] = None


@dataclass(slots=True)
class BackgroundSpec:
    """The ``background`` section."""

    flows: int = 0
    size_bytes: float = 4e6
    seed: int = 2


@dataclass(slots=True)
class Scenario:
    """A validated scenario; :meth:`fabric_spec` resolves the fabric section."""

    name: str = "scenario"
    fabric: dict[str, Any] = field(default_factory=dict)
    job: JobSpec = field(default_factory=JobSpec)
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    background: BackgroundSpec = field(default_factory=BackgroundSpec)
    failures: list[str] = field(default_factory=list)
    policies: list[str] = field(default_factory=lambda: list(POLICIES))
    gor: GorOptions = field(default_factory=GorOptions)
    model: ModelParams = field(default_factory=ModelParams)
    seed: int = 1
    source: str = "scenario"

    def fabric_spec(self) -> FabricSpec:
        """The FabricSpec: ``spec_file`` (default ``topo/specs/pod64k.yaml`` unless a
        ``topology`` file is named) with the other fields on top."""
        f = dict(self.fabric)
        f.pop("topology", None)
        spec_file = f.pop("spec_file", None)
        path = REPO / (spec_file or "topo/specs/pod64k.yaml")
        try:
            base = load_spec(path).to_dict()
            base.update(f)
            return spec_from_dict(base, self.source)
        except SpecError as exc:
            raise SimInputError(f"{self.source}: fabric.{exc.field}: {exc.reason}") from None

    @property
    def topology_file(self) -> Optional[Path]:
        """The topology JSON named by ``fabric.topology`` (None: build from the spec)."""
        t = self.fabric.get("topology")
        return None if t is None else (REPO / t if not Path(t).is_absolute() else Path(t))


def _section(data: Any, path: str, cls: type, source: str) -> Any:
    if data is None:
        return cls()
    if not isinstance(data, dict):
        raise SimInputError(f"{source}: {path}: must be a mapping, got {type(data).__name__}")
    known = sorted(f.name for f in fields(cls))
    kw: dict[str, Any] = {}
    defaults = cls()
    for key, value in data.items():
        if key not in known:
            raise SimInputError(f"{source}: {path}.{key}: unknown field (known: {', '.join(known)})")
        default = getattr(defaults, key)
        want = type(default)
        if default is None:              # optional: a list of strings (ranks) or a number
            if key == "ranks":
                ok = value is None or (isinstance(value, list) and all(isinstance(x, str) for x in value))
                shape = "a list of 'SERVER:GPU' strings"
            else:
                ok = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
                shape = "a number"
            if not ok:
                raise SimInputError(f"{source}: {path}.{key}: must be {shape}, got {value!r}")
        elif isinstance(value, bool) or not (isinstance(value, want) or (want is float and isinstance(value, int))):
            raise SimInputError(f"{source}: {path}.{key}: must be {want.__name__}, got {value!r}")
        kw[key] = float(value) if want is float else value
    return cls(**kw)


TOP_LEVEL = ("background", "failures", "fabric", "gor", "job", "model", "name", "policies", "seed", "workload")


def scenario_from_dict(data: Any, source: str = "scenario") -> Scenario:
    """Validate a parsed scenario (module docstring); ``SimInputError`` names the field."""
    if not isinstance(data, dict):
        raise SimInputError(f"{source}: a scenario is a mapping of sections ({', '.join(TOP_LEVEL)})")
    for key in data:
        if key not in TOP_LEVEL:
            raise SimInputError(f"{source}: {key}: unknown field (known: {', '.join(TOP_LEVEL)})")
    fabric = data.get("fabric") or {}
    if not isinstance(fabric, dict):
        raise SimInputError(f"{source}: fabric: must be a mapping")
    fabric_known = {f.name for f in fields(FabricSpec)} | {"spec_file", "topology"}
    for key in fabric:
        if key not in fabric_known:
            raise SimInputError(f"{source}: fabric.{key}: unknown field (known: {', '.join(sorted(fabric_known))})")
    s = Scenario(name=str(data.get("name", Path(source).stem)), fabric=dict(fabric),
                 job=_section(data.get("job"), "job", JobSpec, source),
                 workload=_section(data.get("workload"), "workload", WorkloadSpec, source),
                 background=_section(data.get("background"), "background", BackgroundSpec, source),
                 gor=_section(data.get("gor"), "gor", GorOptions, source),
                 model=_section(data.get("model"), "model", ModelParams, source),
                 seed=int(data.get("seed", 1)), source=source)
    failures = data.get("failures") or []
    if not isinstance(failures, list) or not all(isinstance(x, str) for x in failures):
        raise SimInputError(f"{source}: failures: must be a list of spine names or 'switch:port'")
    s.failures = list(failures)
    policies = data.get("policies", list(POLICIES))
    if not isinstance(policies, list) or not policies:
        raise SimInputError(f"{source}: policies: must be a non-empty list (known: {', '.join(POLICIES)})")
    for p in policies:
        if p not in POLICIES:
            raise SimInputError(f"{source}: policies: unknown policy {p!r} (known: {', '.join(POLICIES)})")
    s.policies = list(policies)
    if not 0 < s.gor.safety <= 1:
        raise SimInputError(f"{source}: gor.safety: must be in (0, 1], got {s.gor.safety}")
    if s.gor.rounds < 0 or s.gor.top_n < 1:
        raise SimInputError(f"{source}: gor: rounds must be >= 0 and top_n >= 1")
    if s.job.ranks is None and not s.job.gpus:
        raise SimInputError(f"{source}: job.gpus: missing (how many ranks the job has)")
    return s


def read_yaml(path: Union[str, Path]) -> Any:
    """The YAML document of ``path`` (a scenario, a job); an unreadable file or invalid
    YAML raises :class:`SimInputError` naming the file (and the line and column of a YAML
    error).

    >>> read_yaml("/nonexistent.yaml")
    Traceback (most recent call last):
    ...
    sim.topology.SimInputError: /nonexistent.yaml: cannot read: No such file or directory
    """
    p = Path(path)
    try:
        return yaml.safe_load(p.read_text())
    except OSError as exc:
        raise SimInputError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(p)
        why = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise SimInputError(f"{where}: not valid YAML: {why}") from None


def load_scenario(path: Union[str, Path]) -> Scenario:
    """Read and validate a scenario YAML file."""
    return scenario_from_dict(read_yaml(path), str(path))


__all__ = ["BackgroundSpec", "JobSpec", "Scenario", "WorkloadSpec", "load_scenario", "scenario_from_dict"]
