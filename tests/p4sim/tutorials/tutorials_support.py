"""Shared set-up of p4sim's tutorials tests: the console scripts of this venv, the test
program, and the switch started through ``p4sim-simple-switch-grpc`` (ready lines read
with a bounded wait, stopped by PID). Not a test module.

Example::

    >>> script("p4sim-p4c").name
    'p4sim-p4c'
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from procs import CONTROL_PREFIX, READY_PREFIX, read_line, stop_process

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "ipv4_routes.p4"
PTF_DIR = HERE / "ptf"
VENV_BIN = Path(sys.executable).parent
READY_TIMEOUT_S = 60.0


def script(name: str) -> Path:
    """A console script of this environment (installed by ``make venv``)."""
    path = VENV_BIN / name
    assert path.exists(), f"{path} is missing: `make venv` installs it (pip install --no-deps -e .)"
    return path


def run(cmd: Sequence[str], cwd: Path, timeout_s: float = 120.0) -> subprocess.CompletedProcess:
    """Run a command; text output captured."""
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout_s, check=False)


class TutorialSwitch:
    """``[prefix...] p4sim-simple-switch-grpc ARGS`` (or a name on PATH), ready once built."""

    def __init__(self, cmd: Sequence[str], cwd: Path, env: Optional[dict[str, str]] = None) -> None:
        self.stderr_path = cwd / "switch-stderr.txt"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=self._stderr, bufsize=0)
        try:
            deadline = time.monotonic() + READY_TIMEOUT_S
            assert read_line(self.proc, deadline).startswith(CONTROL_PREFIX)
            ready = read_line(self.proc, deadline)
            assert ready.startswith(READY_PREFIX), ready
            self.grpc_addr = ready[len(READY_PREFIX):].split(" ")[0]
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout_s: float = 10.0) -> Optional[int]:
        """SIGTERM, then SIGKILL after ``timeout_s``; returns the exit status."""
        code = stop_process(self.proc, timeout_s)
        self._stderr.close()
        return code

    def __enter__(self) -> "TutorialSwitch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
