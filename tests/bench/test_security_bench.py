"""bench.security_bench on real switch processes (no root needed): both figures are
written, in ms, and the TLS switch it measures does refuse a plaintext client (so the
TLS figure is a TLS handshake)."""
from __future__ import annotations

import grpc
import pytest

from bench import security_bench
from bench.results import BenchConfig


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


def test_authz_and_stream_figures(monkeypatch) -> None:
    """The attack matrix on the testbed's p4sim switch is refused whole; with 10 other
    streams open the controller's Read is answered and the streams stay open."""
    monkeypatch.setattr(security_bench, "OTHER_STREAMS", 10)
    monkeypatch.setattr(security_bench, "READS", 5)
    figs = security_bench.bench_authz(BenchConfig(runs=1))
    assert figs["security.authz_denied_ok"].value == 1.0 and figs["security.authz_attacks"].value >= 11
    figs = security_bench.bench_streams(BenchConfig(runs=1))
    assert figs["security.p4rt_streams_open"].value == 10
    assert 0 < figs["security.p4rt_rpc_ms_under_streams.p99"].value < 10_000
