"""The contract between the P4Runtime server (:mod:`p4sim.p4runtime`) and the switch
process that forwards packets (:mod:`p4sim.switchd`).

The server never touches ports or queues; the switch never parses P4Runtime messages.
The server drives the switch only through this interface, so the server can be tested
with an in-process device and the switch with no gRPC at all.

Example::

    >>> from p4sim.device import DeviceConfig
    >>> DeviceConfig.from_json('{"format": "p4sim-1", "name": "x.p4", "source": "..."}').name
    'x.p4'
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

from p4sim.engine.program import CompiledProgram

DEVICE_CONFIG_FORMAT = "p4sim-1"


@dataclass(frozen=True)
class DeviceConfig:
    """p4sim's ``p4_device_config`` (what BMv2's JSON is for simple_switch_grpc): the
    preprocessed P4 source, so that a switch on another machine can load it.

    ``source`` keeps the ``#line`` markers of preprocessing, so diagnostics still name
    the original files and lines.
    """

    name: str
    source: str
    format: str = DEVICE_CONFIG_FORMAT

    def to_json(self) -> str:
        return json.dumps({"format": self.format, "name": self.name, "source": self.source})

    @staticmethod
    def from_json(text: str | bytes) -> "DeviceConfig":
        """Raises ValueError with a message naming the problem."""
        try:
            d = json.loads(text)
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"p4_device_config is not p4sim JSON: {e}") from None
        if not isinstance(d, dict) or d.get("format") != DEVICE_CONFIG_FORMAT:
            raise ValueError(f"p4_device_config: expected format {DEVICE_CONFIG_FORMAT!r}")
        if not isinstance(d.get("source"), str) or not isinstance(d.get("name", ""), str):
            raise ValueError("p4_device_config: 'source' must be a string")
        return DeviceConfig(d.get("name", "<program>"), d["source"])


PacketInFn = Callable[[bytes], None]
"""Called by the device with a frame the pipeline sent to the CPU port (the
@controller_header("packet_in") header, if the program has one, is still in front)."""


class Device(Protocol):
    """What the P4Runtime server needs from a switch.

    * ``lock``: held by the device around every packet's pass through the pipeline and
      by the server around every Write batch, so that a batch is atomic for packets.
    * ``program``: the running program (None before the first pipeline push).
    * ``set_program``: replace the program (all table/extern state is the new program's).
    * ``inject_cpu``: a PacketOut frame (controller header already prepended by the
      server) enters the pipeline as if received on the CPU port.
    * ``on_packet_in``: set by the server; the device calls it for frames egressing on
      the CPU port.
    * ``digest_event``: set by the device when the program pushed a digest (the server
      drains ``program.state.digests``).
    """

    device_id: int
    cpu_port: Optional[int]
    lock: threading.RLock
    program: Optional[CompiledProgram]
    on_packet_in: Optional[PacketInFn]
    digest_event: threading.Event

    def set_program(self, program: Optional[CompiledProgram]) -> None: ...

    def inject_cpu(self, frame: bytes) -> None: ...

    def port_status(self) -> dict[int, Any]: ...
