"""Local child processes, for every folder that starts one: the command line of a PID
(:func:`proc_cmdline`, to check a recorded PID is still ours) and stopping a child this code
started — SIGTERM, a bounded wait, then SIGKILL — by the process object it holds, never
by name (the machine is shared). The low owner the testbed's switch daemons, the
monitor's Prometheus, the fuzzing and benchmark switches and the tests' helpers share;
imports nothing of the project.

>>> import subprocess, sys
>>> proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
>>> stop_process(proc, timeout_s=5.0) != 0
True
>>> stop_process(proc)                  # already stopped: its status again
-15
>>> proc_cmdline(proc.pid) is None      # gone (reaped): no command line
True
"""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Optional


def stop_process(proc: "subprocess.Popen[Any]", timeout_s: float = 10.0) -> int:
    """SIGTERM ``proc``, wait at most ``timeout_s``, then SIGKILL (and wait 5 s more);
    closes its stdout pipe; returns its exit status (negative: the signal that ended it)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    if proc.stdout is not None:
        proc.stdout.close()
    return proc.returncode


def proc_cmdline(pid: int) -> Optional[str]:
    """``/proc/PID/cmdline`` as one space-separated string (None if no such process): what
    a recorded PID is checked against before anything is done to it."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


__all__ = ["proc_cmdline", "stop_process"]
