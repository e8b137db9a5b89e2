"""Runs every STF test under ``tests/p4sim/stf/`` in-process: ``NAME.stf`` is run against
``NAME.p4`` next to it; ``NAME.xfail`` next to them marks an expected failure (its text is
the reason). Run one directory with ``-k``, e.g. ``pytest tests/p4sim/test_stf.py -k tables``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from p4sim.errors import P4Error
from p4sim.stf import run_stf

STF_ROOT = Path(__file__).parent / "stf"


def _cases() -> list:
    cases = []
    for stf in sorted(STF_ROOT.rglob("*.stf")):
        rel = stf.relative_to(STF_ROOT).with_suffix("").as_posix()
        marks = []
        xfail = stf.with_suffix(".xfail")
        if xfail.exists():
            reason = xfail.read_text(encoding="utf-8").strip() or "expected failure"
            marks.append(pytest.mark.xfail(reason=reason, strict=False))
        cases.append(pytest.param(stf, id=rel, marks=marks))
    return cases


@pytest.mark.parametrize("stf_path", _cases())
def test_stf(stf_path: Path) -> None:
    program = stf_path.with_suffix(".p4")
    assert program.exists(), f"{stf_path.name} has no {program.name} next to it"
    trace: list[str] = []
    compile_error = None
    try:
        result = run_stf(str(program), str(stf_path), [str(stf_path.parent)], log=trace.append)
    except P4Error as err:
        compile_error = err.render()
    if compile_error is not None:
        pytest.fail(f"{program} does not compile:\n{compile_error}", pytrace=False)
    if not result.passed:
        tail = "\n".join(trace[-60:])
        pytest.fail(f"{result.report()}\n--- switch log (last lines) ---\n{tail}", pytrace=False)
