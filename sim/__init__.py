"""sim — the pod-scale flow-level simulator of the Astral fabric (issue 9).

Flows of TCCL-planned collectives over paths of the real topology (``topo.model``),
chosen hop by hop by the published hash model (``p4src.hashmodel``), with max-min fair
rates re-solved at every arrival and completion; policies random ECMP, TCCL ports,
TCCL + GOR (``controller.gor.paths``) and the ideal bound; prediction and calibration
against the testbed. See ``sim/README.md``.

* :mod:`sim.topology` — numbered links, hash model of the fabric as programmed, failures
* :mod:`sim.routing` — vectorised hash-model routing
* :mod:`sim.detours` — the leaves' detour routes as a (source leaf, destination leaf) table
* :mod:`sim.engine` — progressive filling and the event loop
* :mod:`sim.ports` — random and TCCL hash-orthogonal source ports at scale
* :mod:`sim.workloads` — placement, collective phases, background traffic
* :mod:`sim.policies` — the four policies on one phase (GOR rounds included)
* :mod:`sim.scenario`, :mod:`sim.runner`, :mod:`sim.report`, :mod:`sim.study` — CLI plumbing
* :mod:`sim.model`, :mod:`sim.calibrate` — prediction and calibration (the testbed
  measurement it fits on is :mod:`scenarios.measure`: running things live there)
* :mod:`sim.predict` — ``python -m sim predict``: one training iteration of an LLM job (issue 18)

Example::

    >>> from sim.scenario import scenario_from_dict
    >>> from sim.runner import run_scenario
    >>> sc = scenario_from_dict({"fabric": {"spec_file": "topo/specs/default.yaml"},
    ...                          "job": {"gpus": 8}, "policies": ["tccl"]})
    >>> run_scenario(sc).results[0].undeliverable
    0
"""
