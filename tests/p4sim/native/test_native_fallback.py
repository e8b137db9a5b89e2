"""Bad input on the native path (issue 32): a program it cannot translate, no C compiler,
a compiler that fails. Each runs on the Python engine with one line saying why (once per
program) under ``auto``; ``native`` refuses with the reason; the switch process says so
in one line and exits 2, never a traceback."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from p4sim.engine import load_program
from p4sim.native import NativeUnsupported, build, compiler_status, make_switch
from p4sim.native.switch import NativeSwitch
from p4sim.v1model.switch import V1ModelSwitch

STF = Path(__file__).resolve().parent.parent / "stf"
VARBIT = STF / "corpus_regress" / "checksum_varbit_field.p4"
PLAIN = STF / "tables" / "const_default_action.p4"
REPO = Path(__file__).resolve().parents[3]


def _load(path: Path):  # type: ignore[no-untyped-def]
    return load_program(str(path), [str(path.parent)])


def _fallback_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "runs on the Python engine" in r.getMessage()]


def test_untranslatable_program_runs_on_python_said_once(caplog: pytest.LogCaptureFixture) -> None:
    prog = _load(VARBIT)
    with caplog.at_level(logging.WARNING, logger="p4sim.native"):
        first = make_switch(prog, "auto", cpu_port=255, log=None)
        second = make_switch(prog, "auto", cpu_port=255, log=None)
    assert type(first) is V1ModelSwitch and type(second) is V1ModelSwitch
    (line,) = _fallback_lines(caplog)
    assert "varbit" in line
    with pytest.raises(NativeUnsupported, match="varbit"):
        make_switch(prog, "native", cpu_port=255, log=None)


def _with_compiler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cc: str) -> None:
    monkeypatch.setenv("CC", cc)
    monkeypatch.setenv("P4SIM_NATIVE_CACHE", str(tmp_path / "cache"))
    build._compiler_version.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_compiler_status():  # type: ignore[no-untyped-def]
    build._compiler_version.cache_clear()
    yield
    build._compiler_version.cache_clear()


def test_no_compiler_runs_on_python(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                    caplog: pytest.LogCaptureFixture) -> None:
    _with_compiler(monkeypatch, tmp_path, str(tmp_path / "no-such-cc"))
    with caplog.at_level(logging.WARNING, logger="p4sim.native"):
        sw = make_switch(_load(PLAIN), "auto", cpu_port=255, log=None)
    assert type(sw) is V1ModelSwitch
    (line,) = _fallback_lines(caplog)
    assert "no C compiler" in line


def test_compiler_error_runs_on_python(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                       caplog: pytest.LogCaptureFixture) -> None:
    fake = tmp_path / "fakecc"
    fake.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'gcc (planted) 12.2.0'; exit 0; fi\n"
                    "echo 'x.c:1:1: error: planted failure' >&2; exit 1\n")
    fake.chmod(0o755)
    _with_compiler(monkeypatch, tmp_path, str(fake))
    with caplog.at_level(logging.WARNING, logger="p4sim.native"):
        sw = make_switch(_load(PLAIN), "auto", cpu_port=255, log=None)
    assert type(sw) is V1ModelSwitch
    (line,) = _fallback_lines(caplog)
    assert "the C compiler failed" in line and "planted failure" in line


@pytest.mark.skipif(not compiler_status()[0], reason=compiler_status()[1])
def test_plain_program_runs_natively() -> None:
    assert type(make_switch(_load(PLAIN), "auto", cpu_port=255, log=None)) is NativeSwitch


def test_switch_process_refuses_native_in_one_line() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    res = subprocess.run([sys.executable, "-m", "p4sim", "switch", str(VARBIT), "--engine", "native",
                          "--control-port", "0", "--no-grpc"],
                         capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert "error: the program cannot run on the native path" in res.stderr and "varbit" in res.stderr
