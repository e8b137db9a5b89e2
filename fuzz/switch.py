"""A live ``python -m p4sim switch`` process for the campaigns: compile ``p4src/fabric.p4``
into a private directory, start the switch, read its ready lines with a bounded wait,
stop it by its PID (SIGTERM, then SIGKILL).

>>> ready_addr("p4sim switch ready: grpc 127.0.0.1:40123 device 0")
'127.0.0.1:40123'
"""
from __future__ import annotations

import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Optional, Sequence

from process import stop_process

REPO = Path(__file__).resolve().parents[1]
FABRIC_P4 = REPO / "p4src" / "fabric.p4"
READY_TIMEOUT_S = 60.0
CONTROL_PREFIX = "p4sim switch control: "
READY_PREFIX = "p4sim switch ready: grpc "


class SwitchStartError(RuntimeError):
    """The switch did not start (the message says how it ended)."""


@dataclass(frozen=True, slots=True)
class FabricBuild:
    """The compiled fabric program: ``FabricBuild(p4info_path, config_path)``."""

    p4info: Path
    config: Path


def compile_fabric(out_dir: Path) -> FabricBuild:
    """``python -m p4sim compile p4src/fabric.p4`` into ``out_dir`` (its own copy, so a
    campaign never reads a build/ another process is rewriting)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    build = FabricBuild(out_dir / "fabric.p4info.txtpb", out_dir / "fabric.json")
    proc = subprocess.run(
        [sys.executable, "-m", "p4sim", "compile", str(FABRIC_P4), "-I",
         str(FABRIC_P4.parent / "include"), "--p4info", str(build.p4info), "--config",
         str(build.config)], cwd=REPO, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SwitchStartError(f"p4sim compile of {FABRIC_P4} failed: {proc.stderr.strip()}")
    return build


def ready_addr(line: str) -> str:
    """The gRPC address of a ready line (``off`` with ``--no-grpc``)."""
    if not line.startswith(READY_PREFIX):
        raise SwitchStartError(f"unexpected line from the switch: {line!r}")
    return line[len(READY_PREFIX):].split(" ")[0]


def _read_line(proc: "subprocess.Popen[bytes]", deadline: float) -> str:
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 0.2)[0]:
            line = proc.stdout.readline()
            if not line:
                break
            return line.decode(errors="replace").strip()
        if proc.poll() is not None:
            break
    raise SwitchStartError(f"the switch did not report ready (exit status {proc.poll()})")


class SwitchProcess:
    """``python -m p4sim switch ARGS``, ready once constructed (``grpc_addr``,
    ``control_addr``); a context manager that stops it. ``log_path``: its stderr."""

    def __init__(self, args: Sequence[str], *, log_path: Optional[Path] = None,
                 ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        self._log = open(log_path, "wb") if log_path is not None else None
        self.proc = subprocess.Popen([sys.executable, "-m", "p4sim", "switch", *args],
                                     cwd=REPO, stdout=subprocess.PIPE, bufsize=0,
                                     stderr=self._log if self._log else subprocess.DEVNULL)
        self.returncode: Optional[int] = None
        try:
            deadline = time.monotonic() + ready_timeout_s
            control = _read_line(self.proc, deadline)
            if not control.startswith(CONTROL_PREFIX):
                raise SwitchStartError(f"unexpected line from the switch: {control!r}")
            self.control_addr = control[len(CONTROL_PREFIX):]
            self.grpc_addr = ready_addr(_read_line(self.proc, deadline))
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self) -> int:
        """The switch's process id."""
        return self.proc.pid

    def alive(self) -> bool:
        """True while the process runs."""
        return self.proc.poll() is None

    def stop(self, timeout_s: float = 10.0) -> int:
        """SIGTERM to this process, wait at most ``timeout_s``, then SIGKILL."""
        stop_process(self.proc, timeout_s)
        if self._log is not None:
            self._log.close()
        self.returncode = self.proc.returncode
        return self.returncode

    def __enter__(self) -> "SwitchProcess":
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]],
                 exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self.stop()


def scratch_dir(prefix: str) -> Path:
    """A new private directory for one campaign's build and logs."""
    return Path(tempfile.mkdtemp(prefix=prefix))
