"""The ``dualport`` benchmark group: dual-port NICs on the REAL Mininet testbed (root +
Mininet; skipped with a message otherwise).

The ``topo/specs/dualport.yaml`` fabric (6 switches, 4 dual-port NICs) is brought up on
p4sim with :func:`testbed.traffic.testbed_up` and torn down after; on it
``SCENARIO=tor-failure`` (:mod:`scenarios.tor_failure`) runs once:

* ``testbed.ready_s.dualport`` — seconds from the call to a programmed fabric that answers
  ping (load-dependent: the machine is shared);
* ``scenario.tor_failure.flows_lost`` — QPs that did not deliver every message after one
  leaf of the rail died (goal 0);
* ``scenario.tor_failure.recover_s`` — from the leaf's death to the slowest NIC's first
  frame of a moved QP on its surviving port (bounded below by the NICs' 100 ms miimon).

Example::

    $ sudo .venv/bin/python -m bench dualport          # ~40 s
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure
from scenarios.common import ScenarioOptions
from scenarios.tor_failure import run_tor_failure
from testbed.traffic import testbed_unavailable, testbed_up
from topo.spec import load_spec

SPEC = Path(__file__).resolve().parents[1] / "topo" / "specs" / "dualport.yaml"
FIGURES = ("testbed.ready_s.dualport, scenario.tor_failure.flows_lost, "
           "scenario.tor_failure.recover_s")


def bench_tor_failure(config: BenchConfig) -> dict[str, Figure]:
    """Bring the dual-port fabric up and run the ToR-failure scenario (module docstring)."""
    del config
    why = testbed_unavailable()
    if why is not None:
        print(f"dualport.tor_failure: skipped, {why}; {FIGURES} not written", file=sys.stderr,
              flush=True)
        return {}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="astral-dualport-") as tmp:
        with testbed_up(spec=load_spec(SPEC)) as tb:
            ready_s = time.monotonic() - t0
            res = run_tor_failure(tb.fabric, tb.programmer, tb.state, tb.save_state,
                                  ScenarioOptions(runs_root=Path(tmp)),
                                  say=lambda line: print(line, file=sys.stderr, flush=True))
    if res.recover_s is None or res.flows_lost < 0:
        raise BenchCheckError(f"tor-failure measured nothing: {'; '.join(res.reasons)}")
    return {"testbed.ready_s.dualport": Figure(round(ready_s, 2), "s"),
            "scenario.tor_failure.flows_lost": Figure(res.flows_lost, "flows"),
            "scenario.tor_failure.recover_s": Figure(res.recover_s, "s")}


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("tor_failure", "dualport", bench_tor_failure),)
