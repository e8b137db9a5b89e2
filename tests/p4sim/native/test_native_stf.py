"""Equivalence of the two engines on the STF corpus: every ``tests/p4sim/stf`` test runs on
the Python engine (the reference) and on the native path, with the same seed and the same
deterministic clock, and must give the same frames, notes, errors, verdict and final
state (registers, counters, direct counters, entries' hit times, digests). A program the
native path cannot run must be listed in ``EXPECTED_FALLBACK`` with its reason; any other
fallback fails (never a silent difference).

The 183 programs are compiled at ``-O0`` here (``$P4SIM_NATIVE_OPT``), three to four times
faster than the ``-O2`` of a running switch, in parallel: this test checks the
translation (the C is the same; ``-fwrapv``, no strict aliasing, and shifts, divisions
and widths through helpers leave the optimiser nothing undefined to exploit). The
differential fuzz (test_native_fuzz.py) runs the repository's programs at ``-O2``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from p4sim.native import compiler_status
from p4sim.stf import run_stf_text
import os

from native_equiv import StepClock, diff_snapshots, prebuild, state_snapshot
from p4sim.engine import load_program

STF_ROOT = Path(__file__).resolve().parent.parent / "stf"
EXPECTED_FALLBACK = {
    "corpus_regress/checksum_varbit_field": "is a varbit",
    "parser/error_codes": "is a varbit",
    "parser/varbit_error_codes": "is a varbit",
    "parser/varbit_extract": "is a varbit",
}
pytestmark = pytest.mark.skipif(not compiler_status()[0], reason=compiler_status()[1])


def _cases() -> list[Any]:
    return [pytest.param(stf, id=stf.relative_to(STF_ROOT).with_suffix("").as_posix())
            for stf in sorted(STF_ROOT.rglob("*.stf")) if stf.with_suffix(".p4").exists()]


SEED = 11


@pytest.fixture(scope="module")
def built() -> Any:
    old = os.environ.get("P4SIM_NATIVE_OPT")
    os.environ["P4SIM_NATIVE_OPT"] = "-O0"
    try:
        items = [(str(c.values[0].with_suffix(".p4")), [str(c.values[0].parent)]) for c in _cases()]
        yield prebuild(items, seed=SEED)
    finally:
        if old is None:
            os.environ.pop("P4SIM_NATIVE_OPT", None)
        else:
            os.environ["P4SIM_NATIVE_OPT"] = old


def _result(r: Any) -> tuple:
    return (r.passed, r.failures, r.received, r.notes, r.switch_errors)


@pytest.mark.parametrize("stf", _cases())
def test_stf_same_on_both_engines(stf: Path, built: dict[str, Any]) -> None:
    rel = stf.relative_to(STF_ROOT).with_suffix("").as_posix()
    p4 = stf.with_suffix(".p4")
    why = built[str(p4)].reason
    if why is not None and why.startswith("does not load"):
        pytest.skip(why)
    if rel in EXPECTED_FALLBACK:
        assert why is not None and EXPECTED_FALLBACK[rel] in why, f"{rel} now runs natively ({why}): drop it from EXPECTED_FALLBACK"
        return
    assert why is None, f"{rel} falls back to the Python engine: {why}"
    text = stf.read_text(encoding="utf-8")
    a, b = load_program(str(p4), [str(stf.parent)], seed=SEED), built[str(p4)].program
    ra = run_stf_text(a, text, str(stf), clock=StepClock())
    rb = run_stf_text(b, text, str(stf), clock=StepClock(), engine="native")
    assert rb.engine == "native"
    assert _result(ra) == _result(rb), f"python {_result(ra)}\nnative {_result(rb)}"
    assert not diff_snapshots(state_snapshot(a), state_snapshot(b)), diff_snapshots(state_snapshot(a), state_snapshot(b))
