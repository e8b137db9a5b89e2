"""The testbed's TLS wiring without Mininet (no root needed): the switch command lines of
both targets carry the same five TLS options after ``--``; a p4sim switch started from
the testbed's own command line accepts the controller's credentials from the testbed
PKI and only for *its* name; ``--insecure`` and ``$INSECURE``; ``make shell``'s
p4runtime-shell command parses with p4runtime-shell's own parser (in its environment,
.venv-shell, as a subprocess: nothing in .venv imports p4runtime_sh)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import grpc
import pytest

from controller.p4rt import SwitchConnection
from p4rt_refusal import refusal
from p4sim.p4runtime.authz import Denied, load_policy
from procs import SwitchProcess
from testbed.cli import build_parser
from testbed.pki import FabricPki
from testbed.shell import SHELL_PYTHON, recorded_pki, shell_command
from testbed.targets import SwitchLaunch
from testbed.tls import (CONTROLLER, MONITOR, controller_tls, create_fabric_pki, policy_path,
                         recorded_controller_tls)
from topo.model import build_fabric

TLS_OPTIONS = ["--grpc-server-ssl", "--grpc-server-cacert", "--grpc-server-cert",
               "--grpc-server-key", "--grpc-server-with-client-auth"]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> FabricPki:
    return create_fabric_pki(build_fabric(), tmp_path_factory.mktemp("build") / "pki")


def launch(target: str, pki: FabricPki, tmp_path: Path, name: str = "s0") -> SwitchLaunch:
    return SwitchLaunch(target, name, device_id=201, grpc_addr="127.0.0.1:0", interfaces={},
                        log_dir=tmp_path, pcap_dir=None, thrift_port=9391, tls=pki.files(name))


def test_every_party_of_the_fabric_has_a_certificate(pki) -> None:
    fabric = build_fabric()
    for name in [*(s.name for s in fabric.switches), CONTROLLER, *(h.name for h in fabric.hosts)]:
        assert pki.files(name).key.stat().st_mode & 0o777 == 0o600


def test_the_testbeds_policy_is_one_p4sim_loads_controller_programs_monitor_reads(pki) -> None:
    pol = load_policy(policy_path(pki.root))
    assert pol.roles_of(CONTROLLER) == ("",)
    assert pol.roles_of(MONITOR) == ("monitor",)
    assert pol.roles_of("b0s0") == ()
    with pytest.raises(Denied):
        pol.require_writer(MONITOR, "monitor")


def test_both_targets_get_the_same_tls_options_after_the_separator(pki, tmp_path) -> None:
    tails = []
    for target in ("p4sim", "bmv2"):
        cmd = launch(target, pki, tmp_path).command()
        cut = cmd.index("--")
        assert not set(cmd[:cut]) & set(TLS_OPTIONS)          # BMv2 refuses them before '--'
        tails.append(cmd[cut:])
        f = pki.files("s0")
        assert cmd[cmd.index("--grpc-server-cert") + 1] == str(f.cert)
        assert cmd[cmd.index("--grpc-server-key") + 1] == str(f.key)
        assert cmd[cmd.index("--grpc-server-cacert") + 1] == str(f.ca_cert)
    assert tails[0] == tails[1]
    plain = SwitchLaunch("p4sim", "s0", device_id=1, grpc_addr="127.0.0.1:0", interfaces={},
                         log_dir=tmp_path, pcap_dir=None).command()
    assert not set(plain) & set(TLS_OPTIONS)


def test_the_testbeds_switch_command_serves_the_controller_over_tls(pki, tmp_path) -> None:
    cmd = launch("p4sim", pki, tmp_path).command()
    sw = SwitchProcess(cmd[cmd.index("switch") + 1:])
    try:
        tls = controller_tls(pki.root)
        with SwitchConnection(sw.grpc_addr, device_id=201, tls=tls.for_server("s0")) as conn:
            assert conn.is_primary
        # the switch's certificate names s0: the controller refuses it as another switch,
        # and a plaintext client gets nothing (the handshake refused, UNAVAILABLE: the
        # controller's open_channel with those credentials; SwitchConnection's own timeout
        # on a refused channel is tests/controller/test_p4rt_tls.py's)
        assert refusal(sw.grpc_addr, tls.for_server("s1")) == grpc.StatusCode.UNAVAILABLE
        assert refusal(sw.grpc_addr, None) == grpc.StatusCode.UNAVAILABLE
    finally:
        sw.stop()


def test_insecure_option_and_environment(monkeypatch) -> None:
    assert build_parser().parse_args(["up"]).insecure is False
    assert build_parser().parse_args(["up", "--insecure"]).insecure is True
    monkeypatch.setenv("INSECURE", "1")
    assert build_parser().parse_args(["up"]).insecure is True
    from scenarios.cli import build_parser as scenarios_parser
    monkeypatch.setenv("INSECURE", "0")
    assert scenarios_parser().parse_args(["up", "--insecure"]).insecure is True
    assert scenarios_parser().parse_args(["up"]).insecure is False


def test_state_records_the_pki_for_the_other_tools(pki, tmp_path) -> None:
    from testbed.net import TestbedState
    state = TestbedState(target="p4sim", pki=str(pki.root))
    path = tmp_path / "testbed-state.json"
    state.save(path)
    assert recorded_pki(path) == pki.root
    assert recorded_controller_tls(TestbedState.load(path).pki).cert == pki.files(CONTROLLER).cert
    TestbedState(target="p4sim").save(path)                  # --insecure records none
    assert recorded_pki(path) is None and recorded_controller_tls("") is None


def _shell_parse(args: list[str]) -> dict:
    """p4runtime-shell's own argument parser on ``args``, run in .venv-shell."""
    if not SHELL_PYTHON.exists():
        why = f"{SHELL_PYTHON} missing: make venv-shell"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    code = ("import json, sys; from p4runtime_sh.shell import get_arg_parser; "
            "print(json.dumps(vars(get_arg_parser().parse_args(sys.argv[1:]))))")
    run = subprocess.run([str(SHELL_PYTHON), "-c", code, *args], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def test_shell_command_is_accepted_by_p4runtime_shell(pki, tmp_path) -> None:
    topology = tmp_path / "topology.json"
    fabric = build_fabric()
    fabric.save(topology)
    cmd = shell_command(topology, fabric.switches[0].name, pki.root)
    assert cmd[:3] == [str(SHELL_PYTHON), "-m", "p4runtime_sh"]
    args = _shell_parse(cmd[3:])
    f = pki.files(CONTROLLER)
    assert (args["ssl"], args["cacert"], args["cert"], args["private_key"]) == \
        (True, str(pki.ca_cert("switches")), str(f.cert), str(f.key))
    plain = _shell_parse(shell_command(topology, fabric.switches[0].name)[3:])
    assert plain["ssl"] is False
