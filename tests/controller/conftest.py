"""Fixtures shared by the controller tests: real p4sim switches (``fabric_compiled``,
``probe_compiled``, ``live``), and a fabric described by a topo spec with GOR's path engine
on it (``fab``, ``engine``: a test module that sets ``SPEC``, the spec file, gets them)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from controller.fabric.detours import fabric_hash_model
from controller.fabric_setup import FabricProgrammer
from controller.gor.paths import LinkState, PathEngine
from p4sim_fabric import switch_process
from procs import SwitchProcess
from topo import model as topo_model
from topo.spec import load_spec

REPO = Path(__file__).resolve().parents[2]
FABRIC_PROGRAM = REPO / "p4src" / "fabric.p4"
PROBE_PROGRAM = Path(__file__).parent / "probe.p4"


@pytest.fixture(scope="session")
def fabric_compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``p4src/fabric.p4`` compiled once per test session: (P4Info text file, device config)."""
    out = tmp_path_factory.mktemp("fabric")
    p4info, config = out / "fabric.p4info.txtpb", out / "fabric.json"
    subprocess.run([sys.executable, "-m", "p4sim", "compile", str(FABRIC_PROGRAM), "--p4info",
                    str(p4info), "--config", str(config)], cwd=REPO, check=True, timeout=300)
    return p4info, config


@pytest.fixture(scope="session")
def probe_compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``tests/controller/probe.p4`` compiled once per test session: (P4Info text file,
    device config)."""
    out = tmp_path_factory.mktemp("probe")
    p4info, config = out / "probe.p4info.txtpb", out / "probe.json"
    subprocess.run([sys.executable, "-m", "p4sim", "compile", str(PROBE_PROGRAM), "--p4info",
                    str(p4info), "--config", str(config)], cwd=REPO, check=True, timeout=120)
    return p4info, config


@pytest.fixture()
def live(fabric_compiled: tuple[Path, Path]) -> Iterator[tuple[Any, FabricProgrammer, dict[str, SwitchProcess]]]:
    """A small fabric of real p4sim switches, programmed: (fabric, programmer, processes)."""
    spec = topo_model.FabricSpec(blocks=1, servers_per_block=2, rails=2, spines=2,
                                 leaves_per_rail=1, uplinks_per_spine=2)
    fab = topo_model.build_fabric(spec)
    procs: dict[str, SwitchProcess] = {}
    prog = None
    try:
        for sw in fab.switches:
            procs[sw.name] = switch_process(sw.device_id)
            sw.grpc_addr = procs[sw.name].grpc_addr
        prog = FabricProgrammer(fab, *fabric_compiled, timeout_s=10.0)
        prog.setup()
        yield fab, prog, procs
    finally:
        if prog is not None:
            prog.close()
        for p in procs.values():
            p.stop()


@pytest.fixture(scope="module")
def fab(request: pytest.FixtureRequest) -> topo_model.Fabric:
    """The fabric of the test module's ``SPEC`` (a topo spec file), built once per module."""
    spec = getattr(request.module, "SPEC", None)
    if spec is None:
        raise pytest.UsageError(f"{request.module.__name__}: the fab fixture needs SPEC, "
                                "the topo spec file, at module level")
    return topo_model.build_fabric(load_spec(Path(spec)))


@pytest.fixture()
def engine(fab: topo_model.Fabric) -> PathEngine:
    """GOR's path engine on ``fab``, fresh for each test: the fabric's hash model, every
    link idle."""
    return PathEngine(fab, fabric_hash_model(fab), LinkState.from_fabric(fab))
