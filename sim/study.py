"""The default study (``python -m sim study``, ``make sim``): random ECMP vs TCCL vs
TCCL+GOR (and the ideal bound) on pods of 1K, 8K and 64K GPUs.

Fabric: ``topo/specs/pod64k.yaml`` (8 rails, 128 servers per block, 128 spines, 400 G)
with 1, 8 and 64 blocks. Job: half of the pod's servers, placed at random (a busy pod),
ring AllReduce of 16 GiB per rank (fp16 gradients of an 8B-parameter model) in rank order
(the order of a job that does not use TCCL's planner: every server boundary leaves on
one rail and arrives on the next, so all of it crosses the spines) over 8 channels (one
per NIC), one step simulated, times 2(n−1) steps. Half a pod leaves uplinks idle: room
for GOR to move flows under its 75 % rule (a full pod has none). Background: one 4 MB flow per 4 servers
between random NICs (storage, checkpoints: random ports, no TCCL agent), which TCCL does
not plan around and GOR sees in its telemetry.

Example::

    >>> [(s.name, s.job.gpus) for s in study_scenarios(scales=(1,))]
    [('pod-1k', 512)]
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Sequence

from sim.report import HEADER, format_table, result_rows, run_dir, write_plots, write_report
from sim.runner import ScenarioResult, run_scenario
from sim.scenario import Scenario, scenario_from_dict

SCALES = (1, 8, 64)          # blocks of 128 servers x 8 rails: 1K, 8K, 64K GPUs


def study_scenario(blocks: int, policies: Optional[Sequence[str]] = None) -> Scenario:
    """The study's scenario on a pod of ``blocks`` blocks."""
    pod_gpus = blocks * 128 * 8
    data = {"name": f"pod-{pod_gpus // 1024}k",
            "fabric": {"spec_file": "topo/specs/pod64k.yaml", "blocks": blocks},
            "job": {"gpus": pod_gpus // 2, "placement": "random", "seed": 1},
            "workload": {"collective": "allreduce", "algorithm": "ring", "order": "rank",
                         "size_bytes": 16 << 30, "channels": 8},
            "background": {"flows": blocks * 128 // 4, "size_bytes": 4e6, "seed": 2}}
    if policies is not None:
        data["policies"] = list(policies)
    return scenario_from_dict(data, f"study-{pod_gpus}")


def study_scenarios(scales: Sequence[int] = SCALES) -> list[Scenario]:
    """The study's scenarios, smallest first."""
    return [study_scenario(b) for b in scales]


def run_study(scales: Sequence[int] = SCALES, out: Optional[Path] = None,
              say: Callable[[str], None] = print) -> tuple[list[ScenarioResult], Path]:
    """Run the study, print the table, write plots and ``report.md``; returns the results
    and the run folder."""
    results = []
    for sc in study_scenarios(scales):
        say(f"sim: {sc.name}: {sc.job.gpus} GPUs ...")
        results.append(run_scenario(sc))
    d = out or run_dir()
    d.mkdir(parents=True, exist_ok=True)
    rows = [row for r in results for row in result_rows(r)]
    say(format_table(rows, HEADER))
    write_plots(results, d)
    write_report(results, d, "Pod-scale study: random ECMP vs TCCL vs TCCL+GOR")
    say(f"sim: report {d / 'report.md'}")
    return results, d


__all__ = ["SCALES", "run_study", "study_scenario", "study_scenarios"]
