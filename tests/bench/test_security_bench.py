"""bench.security_bench on real switch processes (no root needed): both figures are
written, in ms, and the TLS switch it measures does refuse a plaintext client (so the
TLS figure is a TLS handshake)."""
from __future__ import annotations

import grpc
import pytest

from bench import security_bench
from bench.results import BenchConfig
from testbed import attacks


def test_figures_are_written(monkeypatch) -> None:
    monkeypatch.setattr(security_bench, "CONNECTIONS", 3)
    figs = security_bench.bench_tls_handshake(BenchConfig(runs=1))
    assert set(figs) == {"security.tls_handshake_ms", "security.plaintext_connect_ms"}
    assert all(f.unit == "ms" and 0 < f.value < 5000 for f in figs.values())


def test_the_tls_switch_refuses_plaintext(tmp_path, monkeypatch) -> None:
    from testbed.pki import FabricPki
    f = FabricPki.create(tmp_path, ["switch"]).files("switch")
    monkeypatch.setattr(security_bench, "RPC_TIMEOUT_S", 2.0)
    with security_bench.live_switch(["--grpc-server-ssl", "--grpc-server-cert", str(f.cert),
                                     "--grpc-server-key", str(f.key)]) as addr:
        with pytest.raises(grpc.RpcError):
            security_bench.connect_times(addr, None, 1, warmup=0)


P4RT_SAMPLE = ("host-takeover-own-role", "monitor-push-pipeline")
"""Two rows of the P4Runtime matrix: one refused at the TLS handshake, one by the policy."""
AGENT_SAMPLE = ("host-squats-flow-id", "switch-registers-flows")
"""Two rows of the agent protocol's matrix, both refused by the registry."""


def test_authz_and_stream_figures(monkeypatch) -> None:
    """bench_authz on the testbed's p4sim switch counts and scores what it ran (two rows of
    each attack matrix here: every row, with its exact refusal and the state kept, is
    tests/security/test_threat_model.py's, on the same switch command; the whole matrix
    here took about 12 s more of the 2-core machine and proved nothing more); with 10
    other streams open the controller's Read is answered and the streams stay open."""
    run_p4rt, run_one_agent = attacks.run_attacks, attacks.run_agent_attack

    def p4rt_sample(v):  # type: ignore[no-untyped-def]
        rows = attacks.p4rt_attacks(*attacks.default_attackers(v.pki, v.switch))
        return run_p4rt(v, [a for a in rows if a.name in P4RT_SAMPLE])

    def agent_sample(pki_dir, host_ips, switch):  # type: ignore[no-untyped-def]
        fab = attacks.AgentFabric(pki_dir, host_ips)
        try:
            return [run_one_agent(fab, a) for a in attacks.agent_attacks(switch) if a.name in AGENT_SAMPLE]
        finally:
            fab.close()

    monkeypatch.setattr(security_bench, "run_attacks", p4rt_sample)
    monkeypatch.setattr(security_bench, "run_agent_attacks", agent_sample)
    monkeypatch.setattr(security_bench, "OTHER_STREAMS", 10)
    monkeypatch.setattr(security_bench, "READS", 5)
    figs = security_bench.bench_authz(BenchConfig(runs=1))
    assert figs["security.authz_attacks"].value == len(P4RT_SAMPLE) + len(AGENT_SAMPLE)
    assert figs["security.authz_denied_ok"].value == 1.0
    figs = security_bench.bench_streams(BenchConfig(runs=1))
    assert figs["security.p4rt_streams_open"].value == 10
    assert 0 < figs["security.p4rt_rpc_ms_under_streams.p99"].value < 10_000
