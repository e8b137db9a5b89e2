"""The exporters: the switch exporter reading real p4sim switches over P4Runtime with TLS
(no stream, no arbitration), one of them hung; the textfile exporter serving the NIC
emulators' metric files."""
from __future__ import annotations

import doctest
import importlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter, write_to_textfile

from controller.fabric.ecmp import EcmpGroup, group_entries
from controller.fabric.entries import route_entry
from controller.telemetry.exposition import parse_metrics
from controller.p4rt import ClientTls, SwitchConnection
from monitor.ecmpstate import T_OVERRIDES, EcmpState
from monitor.exporters import SwitchExporter, TextfileExporter, switch_targets, targets_from_state
from procs import SwitchProcess, poll
from testbed.pki import FabricPki
from topo.model import build_fabric

REPO = Path(__file__).resolve().parents[2]
FABRIC = build_fabric()
LEAF, SPINE = FABRIC.switch("b0r0l0"), FABRIC.switch("s0")
PACKETS_OUT = 5



def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for s in parse_metrics(text)}


@pytest.mark.parametrize("module", ["monitor.exporters", "monitor.switch_exporter"])
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


# ------------------------------------------------------------------ switch exporter
@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("fabric")
    p4info, config = out / "fabric.p4info.txtpb", out / "fabric.json"
    subprocess.run([sys.executable, "-m", "p4sim", "compile", str(REPO / "p4src" / "fabric.p4"),
                    "--p4info", str(p4info), "--config", str(config)], cwd=REPO, check=True,
                   timeout=300)
    return p4info, config


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> FabricPki:
    return FabricPki.create(tmp_path_factory.mktemp("pki"), ["b0r0l0", "s0", "controller", "monitor"])


def tls_switch(pki: FabricPki, name: str, device_id: int) -> SwitchProcess:
    f = pki.files(name)
    return SwitchProcess.no_p4(device_id=device_id, target_extra=[
        "--grpc-server-ssl", "--grpc-server-cacert", str(f.ca_cert), "--grpc-server-cert",
        str(f.cert), "--grpc-server-key", str(f.key), "--grpc-server-with-client-auth"])


@pytest.fixture
def switches(pki: FabricPki) -> Iterator[tuple[SwitchProcess, SwitchProcess]]:
    leaf = tls_switch(pki, "b0r0l0", LEAF.device_id)
    try:
        spine = tls_switch(pki, "s0", SPINE.device_id)
    except BaseException:
        leaf.stop()
        raise
    try:
        yield leaf, spine
    finally:
        if spine.alive():
            os.kill(spine.proc.pid, signal.SIGCONT)       # ours, stopped by the test
        spine.stop()
        leaf.stop()


def controller_tls(pki: FabricPki) -> ClientTls:
    f = pki.files("controller")
    return ClientTls(f.ca_cert, f.cert, f.key)


def test_switch_exporter_reads_counters_and_marks_a_hung_switch_down(
        switches: tuple[SwitchProcess, SwitchProcess], pki: FabricPki,
        compiled: tuple[Path, Path]) -> None:
    leaf, spine = switches
    tls = controller_tls(pki)
    with SwitchConnection(leaf.grpc_addr, device_id=LEAF.device_id, election_id=(0, 7),
                          tls=tls.for_server("b0r0l0")) as conn:
        conn.push_pipeline(*compiled)
        frame = bytes.fromhex("020000000103" "020000000001" "0800") + bytes(46)
        for _ in range(PACKETS_OUT):
            conn.packet_out(frame, {"egress_port": 3})
        # the GOR-like primary stays connected: the exporter reads beside it
        targets = [t for t in switch_targets(FABRIC, {"b0r0l0": leaf.grpc_addr,
                                                      "s0": spine.grpc_addr}, tls)
                   if t.name in ("b0r0l0", "s0")]
        os.kill(spine.proc.pid, signal.SIGSTOP)         # hung: no answer at all
        said: list[str] = []
        with SwitchExporter(targets, period_s=0.2, timeout_s=0.5, log=said.append) as exp:
            tx = ("astral_switch_port_tx_packets_total",
                  (("kind", "uplink"), ("peer", "s0"), ("port", "3"), ("switch", "b0r0l0")))
            got = poll(lambda: (m := scrape(exp.url)).get(tx) == PACKETS_OUT
                       and ("astral_switch_up", (("switch", "s0"),)) in m and m, 20)
            assert got, scrape(exp.url)
            assert got[("astral_switch_up", (("switch", "b0r0l0"),))] == 1
            assert got[("astral_switch_up", (("switch", "s0"),))] == 0
            assert got[("astral_switch_read_errors_total", (("switch", "s0"),))] >= 1
            host = (("kind", "host"), ("peer", "b0s0-eth0"), ("port", "1"), ("switch", "b0r0l0"))
            assert got[("astral_switch_port_rx_packets_total", host)] == 0
            assert got[("astral_switch_port_pfc_rx_frames_total",
                        tuple(sorted(host + (("priority", "3"),))))] == 0
            bins = {dict(k[1])["bin"]: v for k, v in got.items()
                    if k[0] == "astral_switch_port_qdepth_bin_total" and dict(k[1])["port"] == "3"}
            assert len(bins) == 16 and sum(bins.values()) == PACKETS_OUT
            assert not any(dict(k[1]).get("switch") == "s0" for k in got
                           if k[0].startswith("astral_switch_port_"))
            assert got[("astral_switch_read_seconds", (("switch", "b0r0l0"),))] > 0.0   # measured; speed is a bench figure
            assert len([m for m in said if "switch s0 does not answer" in m]) == 1
            assert not any("b0r0l0" in m for m in said)

            # the ECMP tables, read beside the counters: what the monitor re-predicts from
            groups = [*group_entries(EcmpGroup(1, 0, (3, 4), ("s0", "s1"))),
                      *group_entries(EcmpGroup(2, 2, (3, 4), ("s0", "s1"), ports_first=True)),
                      route_entry("10.1.0.0/16", group=1), route_entry("10.0.0.1/32", nexthop=1)]
            conn.insert(*[conn.table_entry(e.table, e.match, e.action, e.params) for e in groups])
            conn.insert(conn.table_entry(T_OVERRIDES, {
                "hdr.ipv4.src_addr": "10.0.0.1", "hdr.ipv4.dst_addr": "10.1.1.2",
                "hdr.ipv4.protocol": 17, "hdr.udp.src_port": 49152, "hdr.udp.dst_port": 4791},
                "FabricIngress.override.set_nexthop", {"nexthop_id": 4}))
            want = EcmpState(((1, 0, 2), (2, 2, 2)), ((0, 3), (1, 4), (2, 3), (3, 4)),
                             (("10.1.0.0/16", 1),),
                             (("10.0.0.1", "10.1.1.2", 17, 49152, 4791, 4),), (2,))
            assert poll(lambda: exp.ecmp_snapshot().get("b0r0l0") == want, 10), exp.ecmp_snapshot()
            assert "s0" not in exp.ecmp_snapshot()      # hung, and no pipeline: no tables

            os.kill(spine.proc.pid, signal.SIGCONT)     # it answers again (no pipeline yet)
            assert poll(lambda: scrape(exp.url).get(("astral_switch_up", (("switch", "s0"),))) == 1, 20)
            assert poll(lambda: any("switch s0 answers again" in m for m in said), 5)
            assert len([m for m in said if "does not answer" in m]) == 1
        assert conn.is_primary                          # the exporter never took mastership


def test_targets_from_a_testbed_state(tmp_path: Path, pki: FabricPki) -> None:
    state = tmp_path / "testbed-state.json"
    state.write_text('{"switches": {"s0": {"grpc_addr": "127.0.0.1:50200"}}, "pki": "%s"}'
                     % pki.root)
    by = {t.name: t for t in targets_from_state(FABRIC, state)}
    assert by["s0"].addr == "127.0.0.1:50200" and by["b0r0l0"].addr == LEAF.grpc_addr
    assert by["s0"].tls is not None and by["s0"].tls.server_name == "s0"
    assert by["s0"].tls.cert == pki.files("monitor").cert     # the monitor reads as itself
    assert by["b0r0l0"].ports[2] == ("b0s1-eth0", "host")
    assert by["s0"].ports[1][1] == "downlink"


# ------------------------------------------------------------------ textfile exporter
def nic_file(path: Path, nic: str, tx: int) -> None:
    reg = CollectorRegistry()
    Counter("astral_nic_tx_packets", "Frames sent.", ["nic"], registry=reg).labels(nic).inc(tx)
    write_to_textfile(str(path), reg)


def test_textfile_exporter_serves_the_union_and_skips_a_bad_file(tmp_path: Path) -> None:
    nic_file(tmp_path / "b0s0-eth0.prom", "b0s0-eth0", 10)
    nic_file(tmp_path / "b1s0-eth0.prom", "b1s0-eth0", 20)
    (tmp_path / "torn.prom").write_text("astral_nic_tx_packets_total{nic=\"x\" 1\n")
    (tmp_path / "ignored.txt").write_text("not a metric file\n")
    said: list[str] = []
    with TextfileExporter(tmp_path, log=said.append) as exp:
        got = scrape(exp.url)
        got = scrape(exp.url)                            # two scrapes: the error counted twice
    tx = {dict(k[1])["nic"]: v for k, v in got.items() if k[0] == "astral_nic_tx_packets_total"}
    assert tx == {"b0s0-eth0": 10, "b1s0-eth0": 20}
    assert got[("astral_textfile_errors_total", (("file", "torn.prom"),))] == 2
    assert 0 <= got[("astral_textfile_age_seconds", (("file", "b0s0-eth0.prom"),))] < 60
    assert ("astral_textfile_age_seconds", (("file", "torn.prom"),)) not in got
    assert len(said) == 1 and "torn.prom" in said[0]


def test_textfile_exporter_tells_two_files_of_one_nic_apart(tmp_path: Path) -> None:
    nic_file(tmp_path / "a.prom", "n0", 1)
    nic_file(tmp_path / "b.prom", "n0", 2)
    (tmp_path / "c.prom").write_text("# TYPE astral_nic_tx_packets gauge\n"
                                     'astral_nic_tx_packets{nic="n0"} 5\n')
    exp = TextfileExporter(tmp_path, log=lambda m: None)
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in parse_metrics(exp.render())}
    assert got[("astral_nic_tx_packets_total", (("nic", "n0"), ("source", "a")))] == 1
    assert got[("astral_nic_tx_packets_total", (("nic", "n0"), ("source", "b")))] == 2
    assert got[("astral_textfile_errors_total", (("file", "c.prom"),))] == 1   # a gauge now
    assert TextfileExporter(tmp_path / "absent", log=lambda m: None).render().count("\n") == 4


def test_nic_files_reach_the_embedded_store_through_the_textfile_exporter(tmp_path: Path) -> None:
    from monitor.embedded import EmbeddedStore

    nic_file(tmp_path / "b0s0-eth0.prom", "b0s0-eth0", 10)
    with TextfileExporter(tmp_path, log=lambda m: None) as exp, \
            EmbeddedStore({"nics": [exp.address]}, scrape_interval_s=0.1) as store:
        assert store.wait_scraped("nics", time.monotonic() + 10)
        assert store.values("astral_nic_tx_packets_total", nic="b0s0-eth0")[0][1] == 10
        nic_file(tmp_path / "b0s0-eth0.prom", "b0s0-eth0", 30)          # the NIC wrote again
        assert poll(lambda: store.values("astral_nic_tx_packets_total")[0][1] == 30, 10)
        assert store.rates("astral_nic_tx_packets_total", 5.0)[0][1] > 0
        assert store.values("astral_nic_tx_packets_total")[0][0] == {
            "instance": exp.address, "job": "nics", "nic": "b0s0-eth0", "source": "b0s0-eth0"}
