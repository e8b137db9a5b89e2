"""The fabric PTF suite (``tests/ptf/fabric``) on p4sim as one pytest test, through
``tests/ptf/run_ptf.py`` (what ``make ptf`` runs). Needs root, iproute2 and
``p4src/fabric.p4``; skipped with the reason otherwise. TARGET=bmv2 in the environment
runs it on BMv2 instead (P4C / SIMPLE_SWITCH_GRPC name the tools). P4Runtime runs over
TLS with client certificates (the harness's default; tests/ptf/README.md).

On p4sim the suite runs twice. On the native path (the program's C and the C data plane,
what ``python -m p4sim switch`` runs by default) every test runs. On the Python engine
(``P4SIM_ENGINE=python``: the Python pipeline *and* the Python data plane) the tests of
:data:`PYTHON_ENGINE_TESTS` run: every test whose outcome goes through the switch
process's data plane (queues and their rates, PFC pause and passthrough, the shared
buffer's counts, the CPU port's PacketIn/PacketOut and its policing, digests, clones and recirculation,
port counters, time windows). The rest, :data:`PIPELINE_ONLY_TESTS`, check frames out of
the match-action pipeline for given entries and a given frame (routes, ARP proxy, ECMP
members against the hash model, the override, TTL and checksum, a sample digest's
fields): ``tests/p4sim/native/test_native_fuzz.py`` asserts that both engines give the
same frames out, counts, errors, registers, counters and digests for fabric.p4 with
random entries in every table, random selector groups, clone sessions and 600 random
frames (through ``process_packet``, ``process_batch`` and the switch process's
``run_ingress``/``run_egress`` halves), and the native run here proves what those
tests assert. What that does not prove on the Python engine: that its random draw builds
the exact state each of those tests builds (e.g. a 4-member group hashed as the hash
model predicts). ``test_every_suite_test_is_placed`` fails when a test is added to the
suite without being placed in one of the two lists.
"""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
REPO = HERE.parents[1]
SUITE = HERE / "fabric"

PYTHON_ENGINE_TESTS = (
    "alarms.AlarmLevelsUpAndDown", "alarms.AlarmReportNeedsNoNextPacket",
    "alarms.AlarmOnlyWhereConfigured", "alarms.ElephantsOfAKnownMix",
    "alarms.ElephantsAgainWhenAlarmed", "alarms.ElephantsBeforeTheirThresholdWhenAlarmed",
    "buffer.DynamicSinglePackets", "buffer.DynamicIncastPausesEarlier",
    "ecn.EcnThreshold",
    "forwarding.PacketOutBypassesPipeline",
    "pfc.PfcPauseAndResume", "pfc.PfcReceivedCountedNotForwarded",
    "punt_policing.ArpPuntsPoliced",
    "sampling.SamplingRate", "sampling.SampleToCpu",
    "source_guard.SourceGuardDropsSpoofedSources",
    "telemetry.PortCounters", "telemetry.QdepthHistogramAtDepthZero",
    "telemetry.QdepthHistogramOfASlowQueue",
)
"""What the Python engine runs: the tests whose outcome goes through the data plane."""
PIPELINE_ONLY_TESTS = (
    "ecmp.EcmpMatchesHashModel", "ecmp.EcmpSeedChangesMapping",
    "ecmp.EcmpPortsFirstMatchesHashModel",
    "forwarding.LeafHostRoutes", "forwarding.LeafToOtherBlockAndRail",
    "forwarding.SpineRoutes", "forwarding.ArpProxy", "forwarding.NoRouteDropped",
    "override.OverridePinsFlow",
    "sampling.SampleEveryPacketFields",
    "ttl_checksum.TtlDecrementAndChecksum", "ttl_checksum.TtlExpiredDropped",
    "ttl_checksum.BadChecksumDropped",
)
"""Native run only: frames out of the pipeline, engine against engine in test_native_fuzz."""


def suite_tests(suite: Path = SUITE) -> list[str]:
    """Every PTF test of ``suite`` as ``module.Class``: the classes that define ``runTest``.

    >>> "ecn.EcnThreshold" in suite_tests()
    True
    """
    out = []
    for path in sorted(suite.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(f, ast.FunctionDef) and f.name == "runTest" for f in node.body):
                out.append(f"{path.stem}.{node.name}")
    return out


def test_every_suite_test_is_placed() -> None:
    """Each test of the suite is in exactly one of the two lists (no root needed)."""
    placed = list(PYTHON_ENGINE_TESTS) + list(PIPELINE_ONLY_TESTS)
    assert sorted(placed) == sorted(set(placed)), "a test is listed twice"
    assert sorted(placed) == sorted(suite_tests())


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                    reason="the PTF suite needs root and iproute2 (veth pairs, raw sockets)")
@pytest.mark.skipif(not (REPO / "p4src" / "fabric.p4").exists(),
                    reason="p4src/fabric.p4 not present")
@pytest.mark.parametrize("engine", ["native", "python"])
def test_fabric_ptf_suite(tmp_path: Path, engine: str) -> None:
    target = os.environ.get("TARGET", "p4sim")
    if target != "p4sim" and engine != "native":
        pytest.skip("the engine is p4sim's")
    env = dict(os.environ, P4SIM_ENGINE=engine)
    tests = list(PYTHON_ENGINE_TESTS) if engine == "python" else []
    res = subprocess.run([sys.executable, str(HERE / "run_ptf.py"), "--target", target,
                          "--build-dir", str(tmp_path / "build"), *tests],
                         cwd=REPO, capture_output=True, timeout=600, env=env)
    out = res.stdout.decode(errors="replace") + res.stderr.decode(errors="replace")
    assert res.returncode == 0, out[-6000:]
    assert "P4Runtime over TLS with client certificates" in out, out[:2000]   # the default
    ran = len(tests) if tests else len(suite_tests())
    assert f"Ran {ran} test" in out, out[-3000:]                             # all it was given
    if target == "p4sim":
        logs = "".join(p.read_text(errors="replace") for p in (tmp_path / "build").rglob("switch*.log"))
        said = "data plane: native" in logs and "on the native engine" in logs
        assert said == (engine == "native"), logs[-3000:]
