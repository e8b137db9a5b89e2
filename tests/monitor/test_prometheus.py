"""The run's time-series store: a real Prometheus (``/usr/bin/prometheus``) scraping a real
``prometheus_client`` exporter, the embedded store scraping the same one, their answers
compared; the fallback when Prometheus is absent; a target that disappears."""
from __future__ import annotations

import doctest
import importlib
import shutil
import socket
import time
from pathlib import Path
from typing import Iterator

import pytest
from procs import poll
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from controller.telemetry.exposition import RegistryServer
from monitor.embedded import EmbeddedStore, increase
from monitor.prometheus import (MetricSource, PrometheusServer, PrometheusStartError,
                                PrometheusUnavailable, open_metric_source, scrape_config)

HAVE_PROMETHEUS = shutil.which("prometheus") is not None
needs_prometheus = pytest.mark.skipif(not HAVE_PROMETHEUS, reason="/usr/bin/prometheus absent")
RATE_PPS = 200.0
INTERVAL_S = 0.5


class LinearCounter(Collector):
    """A counter that grows by exactly ``rate`` per second of wall time, and a gauge."""

    def __init__(self, rate: float, node: str) -> None:
        self.rate, self.node, self.t0 = rate, node, time.monotonic()

    def collect(self) -> Iterator[object]:
        c = CounterMetricFamily("demo_packets", "Packets.", labels=["node"])
        c.add_metric([self.node], self.rate * (time.monotonic() - self.t0))
        yield c
        g = GaugeMetricFamily("demo_depth", "A gauge.", labels=["node"])
        g.add_metric([self.node], 7.0)
        yield g


def exporter(node: str) -> RegistryServer:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(LinearCounter(RATE_PPS, node))
    srv = RegistryServer(reg, port=0)
    srv.start()
    return srv


def addr(srv: RegistryServer) -> str:
    return f"127.0.0.1:{srv.port}"



@pytest.fixture
def two_exporters() -> Iterator[tuple[RegistryServer, RegistryServer]]:
    a, b = exporter("a"), exporter("b")
    yield a, b
    a.stop()
    b.stop()


@pytest.mark.parametrize("module", ["monitor.prometheus", "monitor.embedded"])
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_scrape_config_lists_every_job_and_rejects_bad_job_names() -> None:
    text = scrape_config({"switches": ["127.0.0.1:1", "127.0.0.1:2"], "gor": ["127.0.0.1:3"]}, 0.5)
    assert 'scrape_interval: "500ms"' in text and 'job_name: "gor"' in text
    assert 'targets: ["127.0.0.1:1", "127.0.0.1:2"]' in text
    with pytest.raises(ValueError, match="job name"):
        scrape_config({"bad job": []}, 1.0)


def test_embedded_rates_handle_counter_resets_and_stale_targets() -> None:
    assert increase([(0, 10.0), (1, 20.0), (2, 5.0), (3, 8.0)]) == 18.0
    texts = {"http://a:1/metrics": "c_total{q=\"1\"} 100\n"}
    now = [0.0]
    said: list[str] = []

    def fetch(url: str, timeout_s: float) -> str:
        if url not in texts:
            raise ConnectionRefusedError("nobody home")
        return texts[url]

    st = EmbeddedStore({"j": ["a:1"]}, clock=lambda: now[0], fetch=fetch, log=said.append)
    for t, v in ((0.0, 100), (1.0, 150), (2.0, 10)):        # restarted at t=2
        now[0] = t
        texts["http://a:1/metrics"] = f'c_total{{q="1"}} {v}\n'
        st.scrape_once()
    assert st.rates("c_total", 10.0, q="1")[0][1] == pytest.approx((50 + 10) / 2.0)
    assert st.max_over("c_total", 10.0)[0][1] == 150
    assert st.rates("c_total", 10.0, q="2") == []
    del texts["http://a:1/metrics"]
    now[0] = 3.0
    st.scrape_once()
    assert st.targets_up() == {"j/a:1": False}
    assert st.values("c_total") == [] and st.values("up")[0][1] == 0.0
    assert said == ["monitor: scrape target j/a:1 is down (ConnectionRefusedError: nobody home); "
                    "going on without it"]
    st.scrape_once()
    assert len(said) == 1                                    # said once


def test_binary_absent_falls_back_to_the_embedded_store(
        tmp_path: Path, two_exporters: tuple[RegistryServer, RegistryServer],
        capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = two_exporters
    with pytest.raises(PrometheusUnavailable, match="not installed"):
        PrometheusServer(tmp_path, {"demo": [addr(a)]}, binary="no-such-prometheus").start()
    src = open_metric_source(tmp_path, {"demo": [addr(a)]}, scrape_interval_s=INTERVAL_S,
                             binary="no-such-prometheus")
    try:
        assert isinstance(src, MetricSource) and src.kind == "embedded"
        err = capsys.readouterr().err
        assert err.count("monitor: metrics in the embedded store") == 1
        assert "Prometheus is not installed" in err
        assert src.wait_scraped("demo", time.monotonic() + 10)
        assert src.values("demo_depth", node="a") == [
            ({"instance": addr(a), "job": "demo", "node": "a"}, 7.0)]
    finally:
        src.close()


def test_a_prometheus_that_does_not_start_says_why(tmp_path: Path) -> None:
    with pytest.raises(PrometheusStartError, match="did not become ready"):
        PrometheusServer(tmp_path, {}, binary="false", ready_timeout_s=5).start()


@needs_prometheus
def test_real_prometheus_and_the_embedded_store_agree(
        tmp_path: Path, two_exporters: tuple[RegistryServer, RegistryServer]) -> None:
    a, b = two_exporters
    targets = {"demo": [addr(a), addr(b)]}
    with PrometheusServer(tmp_path, targets, INTERVAL_S) as prom, \
            EmbeddedStore(targets, INTERVAL_S) as emb:
        assert prom.proc is not None and prom.pid == prom.proc.pid
        assert (tmp_path / "prometheus.pid").read_text().strip() == str(prom.pid)
        assert (tmp_path / "prometheus.yml").exists() and (tmp_path / "prometheus.log").exists()
        assert prom.wait_scraped("demo", time.monotonic() + 20)
        assert prom.targets_up() == {f"demo/{addr(a)}": True, f"demo/{addr(b)}": True}
        window = 4.0
        full = window / INTERVAL_S - 0.5         # rate() is the true rate once the window is full
        got_p = poll(lambda: [v >= full for _, v in prom.instant(
            f"count_over_time(demo_packets_total[{window:g}s])")] == [True, True], 30)
        got_e = poll(lambda: len(emb.rates("demo_packets_total", window)) == 2, 20)
        assert got_p and got_e
        rp = {l["node"]: v for l, v in prom.rates("demo_packets_total", window)}
        re_ = {l["node"]: v for l, v in emb.rates("demo_packets_total", window)}
        for node in ("a", "b"):
            assert rp[node] == pytest.approx(RATE_PPS, rel=0.15), rp
            assert re_[node] == pytest.approx(rp[node], rel=0.15), (re_, rp)
        for store in (prom, emb):                  # several counters in one query
            many = store.rates_many(["demo_packets_total", "nothing_total", "demo_packets_total"],
                                    window)
            assert set(many) == {"demo_packets_total", "nothing_total"} and not many["nothing_total"]
            got = {l["node"]: v for l, v in many["demo_packets_total"]}
            assert sorted(l for l in many["demo_packets_total"][0][0]) == ["instance", "job", "node"]
            assert got == pytest.approx(rp, rel=0.15), (got, rp)
            vals, rts = store.read_many(["demo_depth", "nothing"], ["demo_packets_total"], window)
            assert sorted((l["node"], v) for l, v in vals["demo_depth"]) == [("a", 7.0), ("b", 7.0)]
            assert vals["nothing"] == [] and "astral_metric" not in vals["demo_depth"][0][0]
            assert {l["node"]: v for l, v in rts["demo_packets_total"]} == pytest.approx(rp, rel=0.15)
        vp, ve = prom.values("demo_depth", node="a"), emb.values("demo_depth", node="a")
        assert vp == ve == [({"instance": addr(a), "job": "demo", "node": "a"}, 7.0)]
        assert prom.max_over("demo_depth", 5.0)[0][1] == 7.0
        assert prom.instant("sum(demo_depth)") == [({}, 14.0)]

        b.stop()                                               # a target disappears
        down = {f"demo/{addr(a)}": True, f"demo/{addr(b)}": False}
        assert poll(lambda: prom.targets_up() == down, 20), prom.targets_up()
        assert poll(lambda: emb.targets_up() == down, 20), emb.targets_up()
        assert poll(lambda: [l["node"] for l, _ in prom.values("demo_depth")] == ["a"], 20)
        assert [l["node"] for l, _ in emb.values("demo_depth")] == ["a"]
        assert {l["instance"]: v for l, v in prom.values("up")} == {addr(a): 1.0, addr(b): 0.0}
    assert prom.proc is None


@needs_prometheus
def test_a_taken_port_is_said_and_another_is_used(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        with PrometheusServer(tmp_path, {}, port=port) as prom:
            assert prom.port != port
            assert prom.targets_up() == {}
    assert f"port {port} for Prometheus is taken" in capsys.readouterr().err


@needs_prometheus
def test_open_metric_source_prefers_prometheus(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    src = open_metric_source(tmp_path, {"demo": []})
    try:
        assert src.kind == "prometheus"
        assert "monitor: metrics in Prometheus at http://127.0.0.1:" in capsys.readouterr().err
        with pytest.raises(ValueError, match="not a metric name"):
            src.values("no such")
    finally:
        src.close()
