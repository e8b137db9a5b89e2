"""Start and stop a real ``python -m p4sim switch`` process in tests.

The process is started with its stdout piped; :class:`SwitchProcess` reads the
``p4sim switch control: ADDR`` and ``p4sim switch ready: grpc ADDR device N`` lines
with a bounded timeout (no sleeping for readiness) and remembers both addresses. It
stops only the process it started, by PID: SIGTERM first, SIGKILL if that times out.

Importable as ``procs`` from every test (``pythonpath = tests`` in ``pytest.ini``).

Example::

    >>> from procs import SwitchProcess                           # doctest: +SKIP
    >>> with SwitchProcess(["--no-p4", "--control-port", "0",
    ...                     "--", "--grpc-server-addr", "127.0.0.1:0"]) as sw:  # doctest: +SKIP
    ...     sw.grpc_addr                                           # '127.0.0.1:40123'
    >>> sw.returncode                                              # doctest: +SKIP
    0
"""
from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Optional, Sequence

from process import stop_process  # noqa: F401 — re-exported for the tests' helpers

REPO = Path(__file__).resolve().parents[1]
#: the Python that runs ``python -m p4sim``: this one, or .venv's when the p4runtime-shell
#: compatibility tests run in .venv-shell (tests/p4sim/integration/test_shell_compat.py sets it)
P4SIM_PYTHON = os.environ.get("ASTRAL_P4SIM_PYTHON") or sys.executable
READY_TIMEOUT_S = 60.0
CONTROL_PREFIX = "p4sim switch control: "
READY_PREFIX = "p4sim switch ready: grpc "


def poll(fn, deadline_s: float, pause_s: float = 0.05):  # type: ignore[no-untyped-def]
    """``fn()`` until it returns something truthy, at most ``deadline_s`` seconds (a
    bounded probe, not a sleep); returns the last result."""
    end, pause = time.monotonic() + deadline_s, threading.Event()
    while True:
        got = fn()
        if got or time.monotonic() >= end:
            return got
        pause.wait(pause_s)


def read_line(proc: subprocess.Popen, deadline: float) -> str:
    """The next stdout line of ``proc`` (stripped), waiting until ``deadline`` at most.

    Raises AssertionError when the process exits or the deadline passes first.
    """
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            return line.decode().strip()
        if proc.poll() is not None:
            break
    raise AssertionError(f"the switch did not report ready (exit status {proc.poll()})")


class SwitchProcess:
    """``python -m p4sim switch ARGS`` as a child process, ready once constructed.

    Attributes: ``proc`` (the Popen), ``control_addr`` and ``grpc_addr`` (``HOST:PORT``
    as printed; ``grpc_addr`` is None with ``--no-grpc``), ``ready_line``, and
    ``returncode`` after :meth:`stop`. ``stderr`` is a file to write the process's
    stderr to (default: discarded).
    """

    def __init__(self, args: Sequence[str], *, stderr: Optional[IO[bytes]] = None,
                 ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        # unbuffered: read_line's select() must see every byte the switch printed (a
        # buffered reader can swallow the ready line with the control line before it)
        self.proc = subprocess.Popen(
            [P4SIM_PYTHON, "-m", "p4sim", "switch", *args], cwd=REPO,
            stdout=subprocess.PIPE, bufsize=0,
            stderr=stderr if stderr is not None else subprocess.DEVNULL)
        self.returncode: Optional[int] = None
        try:
            deadline = time.monotonic() + ready_timeout_s
            control = read_line(self.proc, deadline)
            assert control.startswith(CONTROL_PREFIX), control
            self.control_addr = control[len(CONTROL_PREFIX):]
            self.ready_line = read_line(self.proc, deadline)
            assert self.ready_line.startswith(READY_PREFIX), self.ready_line
            grpc = self.ready_line[len(READY_PREFIX):].split(" ")[0]
            self.grpc_addr: Optional[str] = None if grpc == "off" else grpc
        except BaseException:
            self.stop()
            raise

    @classmethod
    def no_p4(cls, device_id: int = 0, extra: Sequence[str] = (),
              target_extra: Sequence[str] = ()) -> "SwitchProcess":
        """A switch with no program, CPU port 255, gRPC and control ports chosen free;
        ``extra`` are general options, ``target_extra`` target options (after ``--``, as
        simple_switch_grpc wants them, e.g. ``["--priority-queues", "8"]``)."""
        return cls(["--no-p4", "--device-id", str(device_id), "--control-port", "0", *extra,
                    "--", "--cpu-port", "255", "--grpc-server-addr", "127.0.0.1:0",
                    *target_extra])

    def alive(self) -> bool:
        """True while the process runs."""
        return self.proc.poll() is None

    def stop(self, timeout_s: float = 10.0) -> int:
        """SIGTERM, wait at most ``timeout_s``, then SIGKILL; returns the exit status."""
        self.returncode = stop_process(self.proc, timeout_s)
        return self.returncode

    def __enter__(self) -> "SwitchProcess":
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]],
                 exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self.stop()
