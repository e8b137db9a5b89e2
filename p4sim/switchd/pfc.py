"""IEEE 802.1Qbb priority flow control (PFC) frames, as p4sim's port MAC reads them.

A PFC frame: destination 01:80:C2:00:00:01, EtherType 0x8808 (MAC control), opcode
0x0101, a 16-bit class-enable vector (bit i = priority i, low 8 bits used) and eight
16-bit pause times in quanta (priority 0 first). One quantum is 512 bit times at the
port's line rate; a time of 0 resumes the priority at once. BMv2 has no PFC: this is
p4sim's addition.

Example::

    >>> f = build_pfc_frame(bytes(6), {3: 100})
    >>> parse_pfc(f)
    {3: 100}
    >>> round(quanta_to_us(100, 10.0), 2)
    5.12

PFC watchdog (p4sim's, after SONiC's pfcwd; BMv2 has neither PFC nor a watchdog): a queue
that stays paused for the detection time while packets wait in it is in a *storm*; the
watchdog then ignores PFC on it (action ``forward``) or also discards its packets, queued
and new (``drop``), until no PAUSE frame (a non-zero time) has come for that priority for
the restoration time. :class:`PfcWatchdog` holds the settings; the traffic managers
(``tm.py`` and the native data plane) run it. Ranges and defaults are SONiC's:
detection 100–5000 ms and restoration 100–60000 ms (sonic-swss
``orchagent/pfcwdorch.cpp``, ``PFC_WD_DETECTION_TIME_MIN/MAX``,
``PFC_WD_RESTORATION_TIME_MIN/MAX``); restoration 2 × detection when not given, and
``pfcwd start_default``'s 200 ms / 200 ms / ``drop`` (sonic-utilities ``pfcwd/main.py``,
``DEFAULT_DETECTION_TIME``, ``DEFAULT_RESTORATION_TIME``, ``DEFAULT_ACTION``).

    >>> PfcWatchdog.from_ms(200)
    PfcWatchdog(detection_us=200000.0, restoration_us=400000.0, action='drop')
    >>> PfcWatchdog.from_ms(50)
    Traceback (most recent call last):
    ...
    ValueError: detection_ms must be 100..5000 ms (SONiC pfcwd's range), not 50
"""
from __future__ import annotations

import struct
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Optional

PFC_DST = bytes.fromhex("0180c2000001")
MAC_CONTROL_ETHERTYPE = 0x8808
PFC_OPCODE = 0x0101
MIN_FRAME = 60
_BODY = struct.Struct("!HHH8H")  # ethertype, opcode, class-enable vector, 8 times

WATCHDOG_ACTIONS = ("drop", "forward")
DETECTION_MS_RANGE = (100, 5000)
RESTORATION_MS_RANGE = (100, 60000)
#: ``pfcwd start_default`` (sonic-utilities pfcwd/main.py): what the testbed turns on
DEFAULT_DETECTION_MS = 200
DEFAULT_RESTORATION_MS = 200
DEFAULT_ACTION = "drop"


@dataclass(frozen=True)
class PfcWatchdog:
    """The PFC watchdog's settings (one per switch, every port and priority).

    ``PfcWatchdog.from_ms(200, 200, "forward")``: a storm after 200 ms paused with
    packets waiting; PFC ignored on that queue until 200 ms pass without a PAUSE frame.
    """

    detection_us: float
    restoration_us: float
    action: str

    @classmethod
    def from_ms(cls, detection_ms: float, restoration_ms: Optional[float] = None,
                action: str = DEFAULT_ACTION) -> "PfcWatchdog":
        """Checked settings; ``restoration_ms`` None = 2 × ``detection_ms`` (SONiC's)."""
        _check_ms("detection_ms", detection_ms, DETECTION_MS_RANGE)
        if restoration_ms is None:
            restoration_ms = 2 * detection_ms
        _check_ms("restoration_ms", restoration_ms, RESTORATION_MS_RANGE)
        if action not in WATCHDOG_ACTIONS:
            raise ValueError(f"action must be one of {', '.join(WATCHDOG_ACTIONS)}, not {action!r}")
        return cls(float(detection_ms) * 1e3, float(restoration_ms) * 1e3, action)

    def as_ms(self) -> dict[str, Any]:
        """``{"detection_ms", "restoration_ms", "action"}`` (the control API's reply)."""
        d = asdict(self)
        return {"detection_ms": d["detection_us"] / 1e3, "restoration_ms": d["restoration_us"] / 1e3,
                "action": d["action"]}


def _check_ms(name: str, value: Any, bounds: tuple[int, int]) -> None:
    lo, hi = bounds
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise ValueError(f"{name} must be {lo}..{hi} ms (SONiC pfcwd's range), not {value!r}")


def parse_pfc(frame: bytes) -> Optional[dict[int, int]]:
    """``{priority: pause_quanta}`` for the enabled classes of a PFC frame; None when
    ``frame`` is not a PFC frame (too short, other destination, EtherType or opcode)."""
    if len(frame) < 14 + _BODY.size - 2 or frame[:6] != PFC_DST:
        return None
    ethertype, opcode, vector, *times = _BODY.unpack_from(frame, 12)
    if ethertype != MAC_CONTROL_ETHERTYPE or opcode != PFC_OPCODE:
        return None
    return {prio: times[prio] for prio in range(8) if vector >> prio & 1}


def build_pfc_frame(src_mac: bytes, pauses: Mapping[int, int]) -> bytes:
    """A PFC frame pausing each ``priority`` for ``quanta`` (0 = resume), padded to 60
    bytes (no FCS)."""
    vector = 0
    times = [0] * 8
    for prio, quanta in pauses.items():
        if not 0 <= prio < 8 or not 0 <= quanta <= 0xFFFF:
            raise ValueError(f"PFC priority {prio} / quanta {quanta} out of range")
        vector |= 1 << prio
        times[prio] = quanta
    frame = PFC_DST + bytes(src_mac) + _BODY.pack(MAC_CONTROL_ETHERTYPE, PFC_OPCODE, vector,
                                                   *times)
    return frame + bytes(max(0, MIN_FRAME - len(frame)))


def quanta_to_us(quanta: int, line_rate_gbps: float) -> float:
    """Pause duration in microseconds: ``quanta`` × 512 bit times at ``line_rate_gbps``."""
    return quanta * 512 / (line_rate_gbps * 1e3)
