"""The two-pod dual-port fabric (``topo/specs/pod2-dualport.yaml``) and its probe plans,
built once per test process and shared by the monitor tests that read them (a test
helper, importable as ``pod2plans``: ``tests/monitor`` is on the path of its tests).

``plan_probes`` on this fabric takes about 2.8 s of CPU (5.5 s, mostly the route pass,
before that pass scored candidates on ``_RouteView``); test_probes_routes,
test_probes_tiers and test_tierwalk each built the same plan of the same fabric. Nothing
here is changed by a test: a plan and a fabric are read only.

Example::

    >>> from pod2plans import pod2_fabric, pod2_plan           # doctest: +SKIP
    >>> len(pod2_plan().paths), len(pod2_plan(tell_routes=False).paths)   # doctest: +SKIP
    (48, 32)
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from monitor.probeplan import ProbePlan
from monitor.probes import plan_probes
from topo.model import Fabric, build_fabric
from topo.spec import load_spec

SPEC = Path(__file__).resolve().parents[2] / "topo" / "specs" / "pod2-dualport.yaml"


@lru_cache(maxsize=1)
def pod2_fabric() -> Fabric:
    """The fabric of :data:`SPEC` (one object for every caller)."""
    return build_fabric(load_spec(SPEC))


@lru_cache(maxsize=2)
def pod2_plan(tell_routes: bool = True) -> ProbePlan:
    """``plan_probes(pod2_fabric(), tell_routes=...)`` with its other defaults."""
    return plan_probes(pod2_fabric(), tell_routes=tell_routes)
