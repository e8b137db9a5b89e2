"""Real p4sim switch processes for the controller tests (the ``live`` fixture of
``conftest.py`` builds a small fabric of them): one switch with no program, and the two
leaves the tests use."""
from __future__ import annotations

from procs import SwitchProcess

LEAF, OTHER = "b0r0l0", "b0r1l0"


def switch_process(device_id: int, addr: str = "127.0.0.1:0") -> SwitchProcess:
    """A ``python -m p4sim switch`` with no program (the programmer pushes it)."""
    return SwitchProcess(["--no-p4", "--device-id", str(device_id), "--control-port", "0",
                          "--", "--cpu-port", "255", "--grpc-server-addr", addr,
                          "--priority-queues", "8"])
