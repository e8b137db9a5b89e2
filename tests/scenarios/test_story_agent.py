"""The agent launcher of the `make run` story: an agent over NIC sender QPs on a Unix
socket registers with a FlowRegistry on a Unix socket and applies GOR's move order —
over mutual TLS with the PKI a scenario session makes (the default), and with the token
fallback (``--insecure``)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from astral_proto.auth import HostCredentials
from astral_proto.security import CONTROLLER
from astral_proto.tls import MutualTls
from controller.registry import FlowRegistry, serve_registry
from host.agent.launch import agent_security, send_argv, start_agent
from host.nic.cli import build_parser as nic_parser
from scenarios.gor_session import GorSession, agent_pki
from host.agent.mover import QPMover
from host.nic.frames import FlowSpec
from host.nic.qp import SenderQP


@pytest.mark.parametrize("kind", ["mtls", "tokens"])
def test_agent_over_unix_sockets_moves_a_qp(tmp_path: Path, kind: str) -> None:
    secret = b"per-run-secret"
    creds: object
    if kind == "mtls":
        pki = agent_pki(None, ["b0s0"], tmp_path, say=lambda _: None)
        registry = FlowRegistry(MutualTls.from_dir(pki, CONTROLLER), {"b0s0": ["10.0.0.1"], "b1s0": ["10.1.0.1"]})
        creds = agent_security(tls_dir=pki, host="b0s0")
        assert (pki / "b0s0.key").stat().st_mode & 0o777 == 0o600
    else:
        registry = FlowRegistry(secret, {"b0s0": ["10.0.0.1"], "b1s0": ["10.1.0.1"]})
        creds = HostCredentials.derive(secret, "b0s0").save(tmp_path / "creds-b0s0.json")
        assert creds.stat().st_mode & 0o777 == 0o600
    server, raddr = serve_registry(registry, f"unix:{tmp_path}/registry.sock")
    assert raddr == f"unix:{tmp_path}/registry.sock" or raddr.startswith("unix")
    qp = SenderQP(FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1",
                           49152, 7), message_bytes=2048, mtu=1024, rate_limit=False)
    mover = QPMover()
    agent = start_agent(creds, f"unix:{tmp_path}/registry.sock",  # type: ignore[arg-type]
                        f"unix:{tmp_path}/agent.sock", mover, [qp])
    try:
        assert agent.address == f"unix:{tmp_path}/agent.sock"
        [flow] = registry.flows("b0s0")
        assert flow.sport == 49152
        order, reply = registry.move(flow.flow_id, 50001, timeout_s=5)
        assert reply.accepted
        for _ in range(4):      # the NIC loop finishes the message: the new port is in use
            with mover.lock:
                qp.poll(0.0)
        assert registry.wait(order.order_id, timeout_s=5).state == "done"
        assert mover.current_sport(flow.flow_id) == 50001
    finally:
        agent.stop()
        server.stop(0)


def test_serve_is_send_with_agent_options() -> None:
    argv = send_argv(["serve", "--creds", "c.json", "--registry", "unix:/r", "--bind", "unix:/a",
                      "--", "--iface", "e0"])
    assert argv == ["send", "--iface", "e0", "--agent-creds", "c.json", "--agent-bind", "unix:/a",
                    "--agent-registry", "unix:/r"]


def test_serve_with_tls_is_send_with_agent_tls_options() -> None:
    argv = send_argv(["serve", "--tls-dir", "build/pki", "--host", "b0s0", "--bind", "unix:/a",
                      "--", "--iface", "e0"])
    assert argv == ["send", "--iface", "e0", "--agent-tls-dir", "build/pki", "--agent-host", "b0s0",
                    "--agent-bind", "unix:/a"]


def test_the_session_uses_the_testbeds_pki_or_makes_its_own(tmp_path: Path) -> None:
    testbed_pki = agent_pki(None, ["b0s0", "b1s0"], tmp_path / "testbed", say=lambda _: None)
    run = tmp_path / "run"
    run.mkdir()
    said: list[str] = []
    # the testbed's PKI has every certificate needed: used as is, nothing made
    assert agent_pki(SimpleNamespace(pki=str(testbed_pki)), ["b0s0"], run, said.append) == testbed_pki
    assert not (run / "pki").exists() and not said
    # it lacks b2s0's: a CA of the run's own
    got = agent_pki(SimpleNamespace(pki=str(testbed_pki)), ["b2s0"], run, said.append)
    assert got == run / "pki" and (got / "b2s0.pem").is_file() and "will not do" in said[0]


def test_the_session_gives_each_sender_its_certificate(tmp_path: Path) -> None:
    session = GorSession(SimpleNamespace(switches=[]), None, None, lambda: None, [], 1.0,
                         SimpleNamespace(), tmp_path)
    session.pki = agent_pki(None, ["b0s0"], tmp_path, say=lambda _: None)
    opts = session.agent_credentials("b0s0")
    args = nic_parser().parse_args(["send", "--iface", "e0", "--dst-mac", "02:00:00:00:00:02",
                                    "--src-ip", "10.0.0.1", "--dst-ip", "10.1.0.1", "--sport", "1",
                                    *opts])
    sec = agent_security(tls_dir=args.agent_tls_dir, host=args.agent_host, creds=args.agent_creds)
    assert sec.kind == "mtls" and sec.name == "b0s0"
    assert isinstance(session._gor_security(), MutualTls)
