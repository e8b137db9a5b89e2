"""Smoke tests of ``p4sim.pps.veth_overload`` (:mod:`bench.veth_overload`): the frame and
its expected rewrite (ipv4_lpm.p4's and the fabric leaf's), the skip without root (no
figure written, the reason on stderr), and, as root, a tiny run on each engine (and of
fabric.p4 as a leaf on the native engine) that measures all eight figures and deletes
its veths."""
from __future__ import annotations

import os
import subprocess

import pytest

from bench.results import BenchConfig
from bench.switch_bench import veth_available
from bench.veth_overload import (FABRIC, LPM, NEXT_HOP_MAC, OverloadSetup, expected,
                                 fabric_leaf_plan, ipv4_checksum, ipv4_frame, run_overload)
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


def test_fabric_leaf_frame_and_its_rewrite() -> None:
    """The leaf's frame is RoCE from its host 10.0.0.1 to another leaf's host; it may leave
    only on an uplink, with that uplink's spine MAC and its own, TTL - 1."""
    frame = FABRIC.frame(5)
    assert frame[26:30] == bytes([10, 0, 0, 1]) and frame[30:34] == bytes([10, 0, 1, 1])
    assert frame[15] >> 2 == 26 and frame[15] & 3 == 2 and ipv4_checksum(frame[14:34]) == 0
    plan = fabric_leaf_plan()
    macs = {e.params["port"]: e.params for e in plan.entries
            if e.table == "FabricIngress.forwarding.nexthops"}
    assert FABRIC.out_ports == (3, 4) == tuple(sorted(plan.groups[1].ports))
    for port in (1, 2):
        assert FABRIC.rewrite(frame, port) is None
    for port in (3, 4):
        out = FABRIC.rewrite(frame, port)
        assert out is not None and out[:6].hex(":") == macs[port]["dst_mac"]
        assert out[6:12].hex(":") == macs[port]["src_mac"]
        assert out[22] == 63 and ipv4_checksum(out[14:34]) == 0 and out[34:] == frame[34:]
    assert "--priority-queues" in FABRIC.target_options   # DSCP 26 is priority 3


def test_skips_without_root(monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    import bench.veth_overload as vo

    monkeypatch.setattr(vo, "veth_available", lambda: "needs root (creates veth pairs)")
    assert run_overload(TINY) == {}
    assert "p4sim.pps.veth_overload: skipped, needs root" in capsys.readouterr().err


@pytest.mark.skipif(veth_available() is not None, reason=f"veth benchmark: {veth_available()}")
@pytest.mark.parametrize("engine,prefix,setup", [("python", "p4sim", LPM),
                                                 ("native", "p4sim.native", LPM),
                                                 ("native", "p4sim.native", FABRIC)],
                         ids=["python", "native", "native-fabric"])
def test_overload_figures_and_cleanup(engine: str, prefix: str, setup: OverloadSetup) -> None:
    if engine == "native" and not compiler_status()[0]:
        pytest.skip(f"native path: {compiler_status()[1]}")
    figures = run_overload(TINY, engine=engine, prefix=prefix, setup=setup)
    name = f"veth_overload{setup.tag}"
    assert {n: f.unit for n, f in figures.items()} == {
        f"{prefix}.pps.{name}": "pps", f"{prefix}.pps.{name}_offered": "pps",
        f"{prefix}.pps.{name}_dropped": "pps", f"{prefix}.{name}.recovery_s": "s",
        f"{prefix}.{name}.switch_cores": "cores", f"{prefix}.{name}.load_1m": "load",
        f"{prefix}.{name}.ctx_switches_per_frame": "switches",
        f"{prefix}.pps_per_core.{name}": "pps/core"}
    assert figures[f"{prefix}.pps.{name}"].value > 0
    # forwarded never far beyond offered (a wrong counter, both directions counted, would be
    # 2x): the native path keeps up with the tiny probe's sender and drains in its one
    # 0.2 s window what the warm-up left in the rings and the kernel's backlog, so it may
    # forward more than was sent in the window (CI at 00309c1: 292.7 against 258.0 kpps,
    # +13 %; i32-dp-s49 saw it once too), hence 1.5x, not 1.1x
    assert figures[f"{prefix}.pps.{name}"].value <= \
        1.5 * figures[f"{prefix}.pps.{name}_offered"].value
    tag = f"p4b{os.getpid() % 100000}"
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True,
                           timeout=10).stdout
    assert tag not in links
