"""An in-process SmartNIC for the tests: p4sim's switch device with in-process ports
(inject a frame, take what left) behind a real P4Runtime server on 127.0.0.1 — the
manager talks gRPC to it as to a switch process, no root needed.

Importable as ``nicrig`` from the fornax tests (``pythonpath = tests tests/fornax``
is not set: the conftest puts this folder on ``sys.path``).

Example::

    >>> rig = NicRig(ports=(1, 2, 3))                              # doctest: +SKIP
    >>> rig.port(2).inject(frame); rig.port(1).take(1.0)            # doctest: +SKIP
    >>> rig.stop()                                                  # doctest: +SKIP
"""
from __future__ import annotations

from typing import Optional, Sequence

from p4sim.p4runtime.server import P4RuntimeServer
from p4sim.switchd.device import InProcessPort, SwitchDevice

CPU_PORT = 255


class NicRig:
    """A p4sim switch in this process: ``ports`` in-process, CPU port 255, P4Runtime at
    :attr:`addr` (device ``device_id``)."""

    def __init__(self, ports: Sequence[int] = (1, 2, 3, 4), device_id: int = 1) -> None:
        self.device = SwitchDevice(device_id=device_id, cpu_port=CPU_PORT)
        self.ports = {p: InProcessPort(p) for p in ports}
        for p in self.ports.values():
            self.device.add_port(p)
        self.device.start()
        self.server = P4RuntimeServer(self.device, "127.0.0.1:0", None)
        port = self.server.start()
        self.addr = f"127.0.0.1:{port}"
        self.device_id = device_id

    def port(self, number: int) -> InProcessPort:
        """The in-process port ``number``."""
        return self.ports[number]

    def take(self, number: int, timeout_s: float = 2.0) -> Optional[bytes]:
        """The next frame that left on port ``number`` (None after ``timeout_s``)."""
        return self.ports[number].take(timeout_s)

    def drain(self, number: int) -> list[bytes]:
        """Every frame waiting on port ``number``."""
        out = []
        while (f := self.ports[number].take(0.0)) is not None:
            out.append(f)
        return out

    def stop(self) -> None:
        """Stop the server and the device."""
        self.server.stop(0)
        self.device.stop()
