"""Shared fixtures of the switch-process tests: the test program ``qfwd.p4`` (port 1 <->
port 2, queue priority from a test header, queueing metadata written back in egress, CPU
port 64, a digest) and frame builders."""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Iterator

import pytest

from p4sim.engine.program import CompiledProgram, load_program
from p4sim.switchd.device import SwitchDevice
from p4sim.switchd.ports import InProcessPort
from veths import veth_pairs

HERE = Path(__file__).parent
QFWD = HERE / "qfwd.p4"
QM_ETHERTYPE = 0x88B5
SRC = bytes.fromhex("020000000001")
DST = bytes.fromhex("020000000002")
QM = struct.Struct("!BIIIIH")


def qm_frame(prio: int = 0, seq: int = 0, dst: bytes = DST) -> bytes:
    """Ethernet + the test header (queueing metadata zero) + a 2-byte sequence number."""
    return dst + SRC + struct.pack("!H", QM_ETHERTYPE) + QM.pack(prio, 0, 0, 0, 0, 0) \
        + struct.pack("!H", seq)


def qm_fields(frame: bytes) -> dict[str, int]:
    """Decode the test header of a forwarded frame (and the sequence number)."""
    prio, enq, deq, delta, ts, in_port = QM.unpack_from(frame, 14)
    seq = struct.unpack_from("!H", frame, 14 + QM.size)[0]
    return {"prio": prio, "enq_qdepth": enq, "deq_qdepth": deq, "deq_timedelta": delta,
            "enq_timestamp": ts, "in_port": in_port, "seq": seq}


@pytest.fixture(scope="session")
def qfwd_program_path() -> Path:
    return QFWD


@pytest.fixture
def qfwd() -> CompiledProgram:
    return load_program(str(QFWD))


class Rig:
    """A started SwitchDevice with in-process ports 1 and 2 running qfwd.p4."""

    def __init__(self, program: CompiledProgram, **kw: object) -> None:
        self.dev = SwitchDevice(cpu_port=64, **kw)  # type: ignore[arg-type]
        self.p1, self.p2 = InProcessPort(1), InProcessPort(2)
        self.dev.add_port(self.p1)
        self.dev.add_port(self.p2)
        self.dev.set_program(program)
        self.dev.start()

    def take_all(self, port: InProcessPort, n: int, timeout_s: float = 5.0) -> list[bytes]:
        """Up to ``n`` frames sent out of ``port`` (waits at most ``timeout_s`` each)."""
        out = []
        for _ in range(n):
            f = port.take(timeout_s)
            if f is None:
                break
            out.append(f)
        return out


@pytest.fixture
def rig(qfwd: CompiledProgram) -> Iterator[Rig]:
    r = Rig(qfwd)
    yield r
    r.dev.stop()


@pytest.fixture
def make_rig(qfwd: CompiledProgram) -> Iterator:
    made: list[Rig] = []

    def make(**kw: object) -> Rig:
        r = Rig(qfwd, **kw)
        made.append(r)
        return r
    yield make
    for r in made:
        r.dev.stop()


@pytest.fixture
def veths() -> Iterator[tuple[str, str, str, str]]:
    """Two veth pairs named after this process, IPv6 off, up (deleted afterwards, only
    they; ``veths.veth_pairs``): (switch side 1, switch side 2, host side 1, host side 2).
    Needs root; skipped when the kernel refuses them."""
    with veth_pairs(f"p4s{os.getpid() % 100000}", skip_if_refused=True) as [(a0, b0), (a1, b1)]:
        yield a0, a1, b0, b1
