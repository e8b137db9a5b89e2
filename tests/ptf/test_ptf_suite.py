"""The fabric PTF suite (``tests/ptf/fabric``) on p4sim as one pytest test, through
``tests/ptf/run_ptf.py`` (what ``make ptf`` runs). Needs root, iproute2 and
``p4src/fabric.p4``; skipped with the reason otherwise. TARGET=bmv2 in the environment
runs it on BMv2 instead (P4C / SIMPLE_SWITCH_GRPC name the tools). P4Runtime runs over
TLS with client certificates (the harness's default; tests/ptf/README.md).

On p4sim the suite runs twice. On the native path (the program's C and the C data plane,
what ``python -m p4sim switch`` runs by default) every test runs, in two halves. On the Python engine
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

The runs go at once (:func:`suite_runs`: each its own switch, veths and build folder):
the native run in two halves (:func:`native_half`, every test in one of them) and the
Python engine's; each run's test waits for its own run and asserts on it.
"""
from __future__ import annotations

import ast
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

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


RUNS = ("native-1", "native-2", "python")
"""The suite's runs in ``make test``, all at once: the native run in two halves
(:func:`native_half`), each with its own switch, and the Python engine's."""
RUN_TIMEOUT_S = 600


def native_half(half: int, suite: Path = SUITE) -> list[str]:
    """The tests of the native run's ``half`` (1 or 2): the suite's modules in name order,
    alternately (each half about 35 s of the 71 s the native run took in one piece).

    >>> sorted(native_half(1) + native_half(2)) == sorted(suite_tests())
    True
    """
    modules = sorted({t.split(".")[0] for t in suite_tests(suite)})
    mine = set(modules[half - 1::2])
    return [t for t in suite_tests(suite) if t.split(".")[0] in mine]


def run_tests(run: str) -> list[str]:
    """The PTF tests ``run`` (one of :data:`RUNS`) is given."""
    if run == "python":
        return list(PYTHON_ENGINE_TESTS)
    return native_half(int(run.split("-")[1]))


def _needs_ptf() -> Optional[str]:
    """Why the suite cannot run here (None: it can)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return "the PTF suite needs root and iproute2 (veth pairs, raw sockets)"
    if not (REPO / "p4src" / "fabric.p4").exists():
        return "p4src/fabric.p4 not present"
    return None


@dataclass
class SuiteRun:
    """One run's ``run_ptf.py`` process, started by :func:`suite_runs`; :meth:`output`
    waits for it (at most :data:`RUN_TIMEOUT_S` from its start)."""

    run: str
    tests: list[str]
    build: Path
    log: Path
    proc: subprocess.Popen[bytes]
    started: float

    def output(self) -> tuple[int, str]:
        """(exit status, stdout + stderr) of the finished run."""
        left_s = max(1.0, RUN_TIMEOUT_S - (time.monotonic() - self.started))
        returncode = self.proc.wait(timeout=left_s)
        return returncode, self.log.read_text(errors="replace")

    def stop(self) -> None:
        """Interrupt an unfinished run (run_ptf.py then stops its switch and deletes its
        veths), killing it if it does not end."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _selected_runs(session: pytest.Session) -> list[str]:
    """The runs whose ``test_fabric_ptf_suite`` case this session runs."""
    return [r for r in RUNS
            if any(getattr(item, "originalname", "") == "test_fabric_ptf_suite"
                   and item.callspec.params.get("run") == r for item in session.items)]


@pytest.fixture(scope="module")
def suite_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[dict[str, SuiteRun]]:
    """The selected runs at once, each with its own switch, veths and build folder: their
    time is mostly the tests' waits on queues and time windows (in one piece the native
    run took 26 s of CPU in 83 s, the Python one 13 s in 61 s), so together they take
    about the longest run's time instead of the sum."""
    target = os.environ.get("TARGET", "p4sim")
    runs: dict[str, SuiteRun] = {}
    try:
        for run in _selected_runs(request.session):
            engine = run.split("-")[0]
            if target != "p4sim" and engine != "native":
                continue
            tests = run_tests(run)
            folder = tmp_path_factory.mktemp(f"ptf-{run}")
            log = folder / "run_ptf.out"
            with log.open("wb") as out:     # a file, not a pipe: nobody reads it meanwhile
                proc = subprocess.Popen([sys.executable, str(HERE / "run_ptf.py"), "--target",
                                         target, "--build-dir", str(folder / "build"), *tests],
                                        cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                        env=dict(os.environ, P4SIM_ENGINE=engine))
            runs[run] = SuiteRun(run, tests, folder / "build", log, proc, time.monotonic())
        yield runs
    finally:
        for started in runs.values():
            started.stop()


def test_the_native_halves_are_the_suite() -> None:
    """The native run's two halves together run every test of the suite once."""
    halves = native_half(1) + native_half(2)
    assert sorted(halves) == sorted(set(halves)) == sorted(suite_tests())
    assert native_half(1) and native_half(2)


@pytest.mark.skipif(_needs_ptf() is not None, reason=str(_needs_ptf()))
@pytest.mark.parametrize("run", RUNS)
def test_fabric_ptf_suite(run: str, suite_runs: dict[str, SuiteRun]) -> None:
    target = os.environ.get("TARGET", "p4sim")
    engine = run.split("-")[0]
    if target != "p4sim" and engine != "native":
        pytest.skip("the engine is p4sim's")
    started = suite_runs[run]
    returncode, out = started.output()
    assert returncode == 0, out[-6000:]
    assert "P4Runtime over TLS with client certificates" in out, out[:2000]   # the default
    assert f"Ran {len(started.tests)} test" in out, out[-3000:]              # all it was given
    if target == "p4sim":
        logs = "".join(p.read_text(errors="replace") for p in started.build.rglob("switch*.log"))
        said = "data plane: native" in logs and "on the native engine" in logs
        assert said == (engine == "native"), logs[-3000:]
