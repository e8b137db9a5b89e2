"""The grid file of ``python -m sim sweep GRID.yaml`` and the points it expands to.

::

    name: gpt3-small-grid            # default: the file's stem
    job: sim/jobs/gpt3-175b-1024.yaml   # the base job (repository-relative or relative to the
                                     # grid file), or an inline job mapping (sim/predict/job.py)
    parallel:                        # REQUIRED: the parallelism choices; each a mapping of
      - {tp: 8, pp: 16}              # parallel.* fields of the job except dp, which every
      - {tp: 8, pp: 8, zero: 1}      # point derives: dp = gpus / (tp x pp x cp)
    policies: [random_ecmp, tccl]    # default: the base job's network.policy
    gpus: [512, 1024]                # REQUIRED: the scales (GPUs per point)
    seeds: [1]                       # network.seed (random placement and random ECMP ports)

Every point's job is the base job with the choice, ``dp``, ``network.policy`` and
``network.seed`` set, and without ``fabric.blocks``: the predictor then builds the fewest
blocks of the fabric spec that hold the point's GPUs (a fixed block count would refuse
every larger scale).

The points are the product parallel × policies × gpus × seeds, in that order. A grid
that is malformed is refused before anything runs, naming the field
(``g.yaml: parallel[1].tpp: unknown field (known: ...)``, ``g.yaml: gpus[0]: must be a
positive integer, got 0``); a point that cannot run (gpus not a multiple of tp × pp × cp,
a batch that does not split, a model that does not fit) is a row of the results with
its reason, not an error: finding those is what a sweep is for.

Example::

    >>> g = grid_from_dict({"job": {"model": {"layers": 4, "hidden": 256, "heads": 8,
    ...     "seq_length": 128, "vocab": 1000}, "training": {"global_batch": 16},
    ...     "gpu": {"preset": "H800"}}, "parallel": [{"tp": 2}, {"tp": 4}], "gpus": [8, 16],
    ...     "policies": ["tccl"]}, "g.yaml")
    >>> [(p.parallel["tp"], p.gpus) for p in g.points()]
    [(2, 8), (2, 16), (4, 8), (4, 16)]
    >>> grid_from_dict({"job": {}, "parallel": [{"dp": 2}], "gpus": [8]}, "g.yaml")
    Traceback (most recent call last):
    ...
    sim.topology.SimInputError: g.yaml: parallel[0].dp: dp is derived from gpus (dp = gpus / (tp x pp x cp)); leave it out
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Union

from sim.policies import POLICIES
from sim.predict.job import ParallelSpec
from sim.scenario import read_yaml
from sim.topology import SimInputError

REPO = Path(__file__).resolve().parents[2]
TOP_LEVEL = ("gpus", "job", "name", "parallel", "policies", "seeds")
PARALLEL_FIELDS = tuple(f.name for f in fields(ParallelSpec))


@dataclass(frozen=True, slots=True)
class Point:
    """One point of a grid: its index, the parallel choice, policy, GPUs and seed."""

    index: int
    parallel: dict[str, Any]
    policy: str
    gpus: int
    seed: int

    def job_dict(self, base: dict[str, Any]) -> dict[str, Any]:
        """The job of this point: ``base`` with the choice, dp, policy and seed set."""
        job = copy.deepcopy(base)
        par = dict(job.get("parallel") or {})
        par.update(self.parallel)
        par.pop("dp", None)
        job["parallel"] = par
        net = dict(job.get("network") or {})
        net["policy"], net["seed"] = self.policy, self.seed
        job["network"] = net
        job["name"] = f"{job.get('name', 'job')}-{self.label}"
        if isinstance(job.get("fabric"), dict):      # the fabric follows the point's scale
            job["fabric"] = {k: v for k, v in job["fabric"].items() if k != "blocks"}
        return job

    @property
    def label(self) -> str:
        """``tp8-pp16-tccl-1024-s1`` (the parallel choice's fields in file order)."""
        par = "-".join(f"{k}{v}" for k, v in self.parallel.items())
        return f"{par}-{self.policy}-{self.gpus}-s{self.seed}"


@dataclass(slots=True)
class Grid:
    """A validated grid (module docstring)."""

    name: str
    job: dict[str, Any]
    parallel: list[dict[str, Any]]
    policies: list[str]
    gpus: list[int]
    seeds: list[int]
    source: str = "grid"
    base_dir: Path = field(default_factory=lambda: REPO)

    def points(self) -> list[Point]:
        """Every point, parallel × policies × gpus × seeds."""
        out: list[Point] = []
        for par in self.parallel:
            for pol in self.policies:
                for g in self.gpus:
                    for s in self.seeds:
                        out.append(Point(len(out), dict(par), pol, g, s))
        return out


def _ints(source: str, name: str, value: Any, minimum: int) -> list[int]:
    if not isinstance(value, list) or not value:
        raise SimInputError(f"{source}: {name}: must be a non-empty list of integers, got {value!r}")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            what = "a positive integer" if minimum > 0 else f"an integer of at least {minimum}"
            raise SimInputError(f"{source}: {name}[{i}]: must be {what}, got {v!r}")
    return list(value)


def _job(source: str, raw: Any, base_dir: Path) -> dict[str, Any]:
    if isinstance(raw, str):
        for candidate in (base_dir / raw, REPO / raw, Path(raw)):
            if candidate.exists():
                data = read_yaml(candidate)
                if not isinstance(data, dict):
                    raise SimInputError(f"{source}: job: {raw}: a job is a mapping of sections")
                return data
        raise SimInputError(f"{source}: job: {raw}: no such job file (relative to the grid file or the repository)")
    if isinstance(raw, dict):
        return dict(raw)
    raise SimInputError(f"{source}: job: must be a job file or an inline job mapping, got {raw!r}")


def grid_from_dict(data: Any, source: str = "grid", base_dir: Path = REPO) -> Grid:
    """Validate a parsed grid; ``SimInputError`` names the field and why."""
    if not isinstance(data, dict):
        raise SimInputError(f"{source}: a grid is a mapping of fields ({', '.join(TOP_LEVEL)})")
    for key in data:
        if key not in TOP_LEVEL:
            raise SimInputError(f"{source}: {key}: unknown field (known: {', '.join(TOP_LEVEL)})")
    for key in ("job", "parallel", "gpus"):
        if key not in data:
            raise SimInputError(f"{source}: {key}: missing")
    job = _job(source, data["job"], base_dir)
    choices = data["parallel"]
    if not isinstance(choices, list) or not choices:
        raise SimInputError(f"{source}: parallel: must be a non-empty list of mappings of parallel fields")
    for i, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise SimInputError(f"{source}: parallel[{i}]: must be a mapping of parallel fields, got {choice!r}")
        for key in choice:
            if key == "dp":
                raise SimInputError(f"{source}: parallel[{i}].dp: dp is derived from gpus "
                                    f"(dp = gpus / (tp x pp x cp)); leave it out")
            if key not in PARALLEL_FIELDS:
                raise SimInputError(f"{source}: parallel[{i}].{key}: unknown field "
                                    f"(known: {', '.join(f for f in PARALLEL_FIELDS if f != 'dp')})")
    base_policy = (job.get("network") or {}).get("policy", "tccl_gor") if isinstance(job.get("network"), dict) \
        else "tccl_gor"
    policies = data.get("policies", [base_policy])
    if not isinstance(policies, list) or not policies:
        raise SimInputError(f"{source}: policies: must be a non-empty list (known: {', '.join(POLICIES)})")
    for i, p in enumerate(policies):
        if p not in POLICIES:
            raise SimInputError(f"{source}: policies[{i}]: unknown policy {p!r} (known: {', '.join(POLICIES)})")
    gpus = _ints(source, "gpus", data["gpus"], 1)
    seeds = _ints(source, "seeds", data.get("seeds", [1]), 0)
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise SimInputError(f"{source}: name: must be a non-empty string, got {name!r}")
    return Grid(name, job, [dict(c) for c in choices], list(policies), gpus, seeds, source, base_dir)


def load_grid(path: Union[str, Path]) -> Grid:
    """Read and validate a grid YAML file."""
    p = Path(path)
    return grid_from_dict(read_yaml(p), str(p), p.resolve().parent)


__all__ = ["Grid", "Point", "grid_from_dict", "load_grid"]
