"""Smoke tests of ``p4sim.pps.veth_overload`` (:mod:`bench.veth_overload`): the frame and
its expected rewrite, the skip without root (no figure written, the reason on stderr),
and, as root, a tiny run on each engine that measures all six figures and deletes its veths."""
from __future__ import annotations

import os
import subprocess

import pytest

from bench.results import BenchConfig
from bench.switch_bench import veth_available
from bench.veth_overload import NEXT_HOP_MAC, expected, ipv4_checksum, ipv4_frame, run_overload
from p4sim.native import compiler_status

TINY = BenchConfig(duration_s=0.2, runs=1, warmup_s=0.1)


def test_frame_and_its_rewrite() -> None:
    frame = ipv4_frame(seq=7)
    assert frame[12:14] == b"\x08\x00" and ipv4_checksum(frame[14:34]) == 0
    assert frame[30:34] == bytes([10, 0, 2, 1]) and frame[42:46] == (7).to_bytes(4, "big")
    out = expected(frame)
    assert out[:6] == NEXT_HOP_MAC.to_bytes(6, "big") and out[6:12] == frame[:6]
    assert out[22] == frame[22] - 1 and ipv4_checksum(out[14:34]) == 0
    assert out[34:] == frame[34:] and len(out) == len(frame)


def test_skips_without_root(monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    import bench.veth_overload as vo

    monkeypatch.setattr(vo, "veth_available", lambda: "needs root (creates veth pairs)")
    assert run_overload(TINY) == {}
    assert "switch.pps_veth_overload: skipped, needs root" in capsys.readouterr().err


@pytest.mark.skipif(veth_available() is not None, reason=f"veth benchmark: {veth_available()}")
@pytest.mark.parametrize("engine,prefix", [("python", "p4sim"), ("native", "p4sim.native")])
def test_overload_figures_and_cleanup(engine: str, prefix: str) -> None:
    if engine == "native" and not compiler_status()[0]:
        pytest.skip(f"native path: {compiler_status()[1]}")
    figures = run_overload(TINY, engine=engine, prefix=prefix)
    assert {n: f.unit for n, f in figures.items()} == {
        f"{prefix}.pps.veth_overload": "pps", f"{prefix}.pps.veth_overload_offered": "pps",
        f"{prefix}.pps.veth_overload_dropped": "pps", f"{prefix}.veth_overload.recovery_s": "s",
        f"{prefix}.veth_overload.switch_cores": "cores",
        f"{prefix}.pps_per_core.veth_overload": "pps/core"}
    assert figures[f"{prefix}.pps.veth_overload"].value > 0
    # forwarded never beyond offered, but for the windows' edges (the native path can keep
    # up with the tiny probe's sender: then the two are equal up to that skew)
    assert figures[f"{prefix}.pps.veth_overload"].value <= \
        1.1 * figures[f"{prefix}.pps.veth_overload_offered"].value
    tag = f"p4b{os.getpid() % 100000}"
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True,
                           timeout=10).stdout
    assert tag not in links
