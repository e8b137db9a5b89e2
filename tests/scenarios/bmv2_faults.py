"""What the BMv2 faults-scenario tests share (``test_faults_scenario_bmv2_testbed``,
``test_dualport_faults_bmv2_testbed``): skip, with the reason, unless both BMv2 binaries
are on PATH and a Mininet testbed can start here; then the faults scenario (seed 1) on a
testbed of ``simple_switch_grpc`` switches.

    res, procs = run_bmv2_faults(tmp_path, load_spec(SPEC), kinds=("dead_tor",))
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Optional, Sequence

import pytest

from scenarios.common import ScenarioOptions
from scenarios.faults import FaultsResult, run_faults
from testbed.traffic import testbed_unavailable as _unavailable  # names starting with test_*
from testbed.traffic import testbed_up as _up                   # are not pytest's to collect

BMV2_BINARIES = ("simple_switch_grpc", "p4c-bm2-ss")


def run_bmv2_faults(tmp_path: Path, spec: Optional[Any] = None,
                    kinds: Optional[Sequence[str]] = None) -> tuple[FaultsResult, list[Any]]:
    """The faults scenario on a BMv2 testbed of ``spec`` (the default fabric when None),
    only ``kinds`` when given: (its result, the processes the testbed's state recorded
    when the scenario ended, before the teardown). Skips unless BMv2 and a testbed are here."""
    missing = [b for b in BMV2_BINARIES if shutil.which(b) is None]
    if missing:
        pytest.skip(f"BMv2 not installed: {', '.join(missing)} not on PATH")
    why = _unavailable()
    if why:
        pytest.skip(why)
    state = tmp_path / "state.json"
    with _up(spec, log_dir=tmp_path / "logs", state_path=state, target="bmv2") as tb:
        assert tb.state.target == "bmv2"
        res = run_faults(tb.fabric, tb.programmer, tb.state, tb.save_state,
                         ScenarioOptions(seed=1, runs_root=tmp_path / "runs", state_path=state),
                         kinds=kinds)
        return res, list(tb.state.procs)
