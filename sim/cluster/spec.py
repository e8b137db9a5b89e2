"""The cluster file: pods of one pod spec joined by a core tier, its validation and the
cluster's address plan.

Astral (SIGCOMM 2025) aggregates same-rail ToRs into pods of up to ~64K GPUs and joins
the pods by a core tier, every tier at equal bandwidth (no oversubscription), to ~512K
GPUs. The paper's text reachable here gives no more detail, so the shape below is this
project's stated assumption (``sim/README.md``, "The cluster"):

* ``pods`` copies of the pod spec ``pod`` (a ``topo/specs`` file or an inline mapping of
  ``topo.spec.FabricSpec`` fields);
* **core planes**: one per spine index; plane k holds ``cores_per_plane`` core switches,
  and spine k of *every* pod is cabled to every core of plane k;
* every spine has ``spine_core_uplinks`` links to the core (default: as many as make its
  core capacity its downlink capacity / ``core_oversubscription``), spread evenly over
  the cores of its plane (``spine_core_uplinks / cores_per_plane`` parallel links per
  core), at ``core_link_gbps`` (default the pod's leaf–spine speed);
* ``spine_ports``: a cluster spine's radix (its pod downlinks + its core uplinks must
  fit); ``core_ports``: a core switch's (``pods`` × its parallel links per spine);
* ``core_hash``: the core switches' CRC (default crc16: pod spines hash with crc32);
  ``ecmp_seed``: salt of every switch seed (default the pod spec's).

**Address plan** (extends the pod's ``10.<block>.<rail>.<server+1>``): NIC r of server s
in block b of pod p is ``10.<b>.<p·rails + r>.<s+1>`` — pod 0 *is* the pod plan, and a
pod's rails take the next ``rails`` values of the third octet, so ``pods × rails ≤ 256``.
Switches of pod p are named ``p<p>.<pod name>`` (``p3.b0r0l0``, ``p3.s17``), except
pod 0 whose names (and seeds) are the pod plan's; core j of plane k is ``c<k>.<j>``.
Every switch's seed is ``topo.model.ecmp_seed_for(name, ecmp_seed)``.

Example::

    >>> spec = cluster_from_dict({"pod": {"blocks": 2, "servers_per_block": 4, "rails": 2,
    ...                           "spines": 2, "spine_ports": 16}, "pods": 4,
    ...                           "cores_per_plane": 2, "spine_ports": 32, "core_ports": 32})
    >>> (spec.gpus, spec.spine_core_uplinks, spec.links_per_core, spec.cores)
    (64, 4, 2, 4)
    >>> nic_address(spec, pod=3, block=1, rail=1, server=0)
    '10.1.7.1'
    >>> cluster_from_dict({"pods": 0})
    Traceback (most recent call last):
    ...
    sim.topology.SimInputError: cluster: pods: must be an integer of at least 1, got 0
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from sim.scenario import read_yaml
from sim.topology import SimInputError
from topo.spec import EXTENDED_DEFAULTS, HASH_ALGORITHMS, FabricSpec, SpecError, load_spec, spec_from_dict

REPO = Path(__file__).resolve().parents[2]
FIELDS = ("name", "pod", "pods", "cores_per_plane", "spine_core_uplinks", "core_oversubscription",
          "core_link_gbps", "spine_ports", "core_ports", "core_hash", "ecmp_seed")
MAX_THIRD_OCTET = 256


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """A validated cluster (module docstring): ``pod`` is the pod's ``FabricSpec``."""

    name: str
    pod: FabricSpec
    pods: int
    cores_per_plane: int
    spine_core_uplinks: int
    core_link_gbps: float
    spine_ports: int
    core_ports: int
    core_hash: str
    ecmp_seed: int

    @property
    def pod_gpus(self) -> int:
        """GPUs of one pod."""
        return self.pod.num_gpus

    @property
    def gpus(self) -> int:
        """GPUs of the cluster."""
        return self.pods * self.pod.num_gpus

    @property
    def planes(self) -> int:
        """Core planes: one per spine index of a pod."""
        return self.pod.spines

    @property
    def cores(self) -> int:
        """Core switches of the cluster."""
        return self.planes * self.cores_per_plane

    @property
    def links_per_core(self) -> int:
        """Parallel links between one spine and one core of its plane."""
        return self.spine_core_uplinks // self.cores_per_plane

    @property
    def oversubscription(self) -> float:
        """A spine's downlink capacity over its core uplink capacity."""
        down = self.pod.spine_downlinks * self.pod.effective_uplink_gbps
        return down / (self.spine_core_uplinks * self.core_link_gbps)


def _int(source: str, name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SimInputError(f"{source}: {name}: must be an integer of at least {minimum}, got {value!r}")
    return value


def _positive(source: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
            or not math.isfinite(value):
        raise SimInputError(f"{source}: {name}: must be a positive number, got {value!r}")
    return float(value)


def _pod(source: str, raw: Any) -> FabricSpec:
    try:
        if isinstance(raw, str):
            path = Path(raw) if Path(raw).is_absolute() else REPO / raw
            return load_spec(path)
        if isinstance(raw, Mapping):
            return spec_from_dict(dict(raw), f"{source}: pod")
    except SpecError as exc:
        where = exc.source if exc.source.startswith(source) else f"{source}: pod: {exc.source}"
        raise SimInputError(f"{where}: {exc.field}: {exc.reason}") from None
    raise SimInputError(f"{source}: pod: must be a topo spec file or a mapping of its fields, got {raw!r}")


def cluster_from_dict(data: Any, source: str = "cluster") -> ClusterSpec:
    """Validate a parsed cluster file; ``SimInputError`` names the field and why."""
    if not isinstance(data, Mapping):
        raise SimInputError(f"{source}: a cluster is a mapping of fields ({', '.join(FIELDS)})")
    for key in data:
        if key not in FIELDS:
            raise SimInputError(f"{source}: {key}: unknown field (known: {', '.join(FIELDS)})")
    pod = _pod(source, data.get("pod", "topo/specs/pod64k.yaml"))
    pods = _int(source, "pods", data.get("pods", 8), 1)
    cpp = _int(source, "cores_per_plane", data.get("cores_per_plane", 8), 1)
    gbps = _positive(source, "core_link_gbps", data.get("core_link_gbps", pod.effective_uplink_gbps))
    if "spine_core_uplinks" in data and "core_oversubscription" in data:
        raise SimInputError(f"{source}: core_oversubscription: give spine_core_uplinks or "
                            f"core_oversubscription, not both")
    if "spine_core_uplinks" in data:
        uplinks = _int(source, "spine_core_uplinks", data["spine_core_uplinks"], 1)
    else:
        over = _positive(source, "core_oversubscription", data.get("core_oversubscription", 1.0))
        exact = pod.spine_downlinks * pod.effective_uplink_gbps / (gbps * over)
        uplinks = max(1, round(exact))
        if abs(uplinks - exact) > 1e-6 * exact:
            raise SimInputError(f"{source}: core_oversubscription: {over} gives {exact:.2f} core uplinks "
                                f"per spine, not a whole number")
    if uplinks % cpp:
        raise SimInputError(f"{source}: cores_per_plane: {uplinks} core uplinks per spine do not split "
                            f"evenly over {cpp} cores (give a divisor of {uplinks})")
    spine_ports = _int(source, "spine_ports", data.get("spine_ports", pod.spine_downlinks + uplinks), 1)
    if pod.spine_downlinks + uplinks > spine_ports:
        raise SimInputError(f"{source}: spine_ports: impossible topology: a spine needs "
                            f"{pod.spine_downlinks + uplinks} ports ({pod.spine_downlinks} downlinks + "
                            f"{uplinks} core uplinks) but spine_ports is {spine_ports}")
    core_ports = _int(source, "core_ports", data.get("core_ports", pods * (uplinks // cpp)), 1)
    if pods * (uplinks // cpp) > core_ports:
        raise SimInputError(f"{source}: core_ports: impossible topology: a core switch needs "
                            f"{pods * (uplinks // cpp)} ports ({pods} pods x {uplinks // cpp} links) "
                            f"but core_ports is {core_ports}; add cores_per_plane")
    if pods * pod.rails > MAX_THIRD_OCTET:
        raise SimInputError(f"{source}: pods: {pods} pods x {pod.rails} rails do not fit the address plan "
                            f"10.<block>.<pod x rails + rail>.<server+1> (at most {MAX_THIRD_OCTET})")
    core_hash = data.get("core_hash", "crc16")
    if core_hash not in HASH_ALGORITHMS:
        raise SimInputError(f"{source}: core_hash: must be one of {', '.join(HASH_ALGORITHMS)}, got {core_hash!r}")
    seed = _int(source, "ecmp_seed", data.get("ecmp_seed", pod.ecmp_seed), 0)
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise SimInputError(f"{source}: name: must be a non-empty string, got {name!r}")
    return ClusterSpec(name, pod, pods, cpp, uplinks, gbps, spine_ports, core_ports, core_hash, seed)


TOPO_ONLY = tuple(f.name for f in dataclasses.fields(FabricSpec) if f.name not in FIELDS)


def cluster_from_topo(spec: FabricSpec, source: str = "spec") -> ClusterSpec:
    """The cluster a three-tier topo spec describes (``pods``, ``cores``; topo/README.md,
    "Pods, cores and dual-port NICs"): the same pods, core planes, core links per spine
    and their speed, radixes, core CRC and seed salt — one description for the testbed and
    the simulator. A spec without a core tier, or with dual-port NICs (the cluster router
    sends from a NIC's port 0 only: ``python -m sim dualport`` simulates both ports), is
    refused naming the field.

        >>> c = cluster_from_topo(spec_from_dict({"pods": 2, "cores": 4, "blocks": 1, "rails": 2}))
        >>> (c.pods, c.cores, c.spine_core_uplinks, c.links_per_core, c.pod.pods, c.pod.cores)
        (2, 4, 2, 1, 1, 0)
    """
    if spec.pods < 2 or not spec.cores:
        raise SimInputError(f"{source}: pods: a cluster is pods joined by cores (pods >= 2, cores > 0); "
                            f"got pods {spec.pods}, cores {spec.cores}")
    if spec.ports_per_nic != 1:
        raise SimInputError(f"{source}: ports_per_nic: the cluster simulator routes one port per NIC; "
                            f"simulate dual-port NICs with 'python -m sim dualport --spec {source}'")
    pod = dataclasses.replace(spec, pods=1, cores=0, core_link_gbps=None, core_ports=EXTENDED_DEFAULTS["core_ports"],
                              core_hash=EXTENDED_DEFAULTS["core_hash"])    # the cluster carries them
    return ClusterSpec(Path(source).stem, pod, spec.pods, spec.cores_per_plane, spec.spine_core_uplinks,
                       spec.effective_core_link_gbps, spec.spine_ports, spec.core_ports, spec.core_hash,
                       spec.ecmp_seed)


def load_cluster(path: Union[str, Path]) -> ClusterSpec:
    """Read and validate a cluster YAML file (errors name the file and the field), or a
    topo spec with a core tier (a file with ``cores`` or other topo fields and no ``pod``:
    read by ``topo.spec.load_spec``, :func:`cluster_from_topo`)."""
    data = read_yaml(path)
    if isinstance(data, Mapping) and "pod" not in data and any(k in TOPO_ONLY or k == "cores" for k in data):
        try:
            spec = load_spec(path)
        except SpecError as exc:
            raise SimInputError(str(exc)) from None
        return cluster_from_topo(spec, str(path))
    return cluster_from_dict(data, str(path))


def nic_address(spec: ClusterSpec, pod: int, block: int, rail: int, server: int) -> str:
    """The address of NIC ``rail`` of ``server`` in ``block`` of ``pod`` (module docstring)."""
    return f"10.{block}.{pod * spec.pod.rails + rail}.{server + 1}"


def pod_switch_name(pod: int, name: str) -> str:
    """A pod switch's name in the cluster: ``pod_switch_name(3, "s1") == "p3.s1"`` (pod 0:
    the pod plan's own name)."""
    return name if pod == 0 else f"p{pod}.{name}"


def core_name(plane: int, j: int) -> str:
    """Core ``j`` of plane ``plane``: ``core_name(5, 1) == "c5.1"``."""
    return f"c{plane}.{j}"


def pod_of_address(spec: ClusterSpec, ip: Optional[int]) -> int:
    """The pod of a cluster address (as an integer): its third octet // rails.

        >>> pod_of_address(cluster_from_dict({"pod": {"rails": 2}, "pods": 2,
        ...                "cores_per_plane": 1}), (10 << 24) | (1 << 16) | (3 << 8) | 1)
        1
    """
    return ((int(ip or 0) >> 8) & 0xFF) // spec.pod.rails


__all__ = ["ClusterSpec", "cluster_from_dict", "cluster_from_topo", "core_name", "load_cluster", "nic_address",
           "pod_of_address", "pod_switch_name"]
