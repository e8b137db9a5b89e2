"""The switch exporter: every switch's port counters and liveness, read over P4Runtime and
exposed for Prometheus.

For each switch of a :class:`topo.model.Fabric` a thread reads, every ``period_s``,
``fabric.p4``'s indexed counters (``p4src/README.md``; the names of
:mod:`controller.telemetry.counter_reader`) of the switch's fabric ports in ONE P4Runtime
``Read`` with a bounded deadline. A Read needs no stream and no primary arbitration:
BMv2's server (PI's ``pi_server.cpp``) checks the election id on Write and
SetForwardingPipelineConfig only, and answers a Read or GetForwardingPipelineConfig on a
device with no pipeline ``FAILED_PRECONDITION`` — as p4sim does; so the exporter never
competes with GOR for mastership, and a switch with no pipeline yet counts as up. The reads happen on those threads, never at scrape
time; a switch that does not answer is said once on stderr and marked down
(``astral_switch_up 0``, its counter series left out until it answers again), the others
go on. A second Read after the counters takes the switch's ECMP tables
(:mod:`monitor.ecmpstate`; not exported as metrics: :meth:`SwitchExporter.ecmp_snapshot`
gives them to the monitor, which re-predicts the probe paths when GOR rewrites a group).

Metrics (counters are the switch's own, cumulative since its pipeline was pushed; a
restarted switch starts again from 0, which ``rate()`` handles):

* ``astral_switch_up{switch}`` — 1 when the last Read answered within the deadline (a
  switch appears once its first Read ended)
* ``astral_switch_read_seconds{switch}`` — duration of the last Read
* ``astral_switch_read_errors_total{switch}`` — Reads that failed
* ``astral_switch_port_tx_packets_total``, ``_rx_packets_total``, ``_drops_total``,
  ``_ecn_marks_total``, ``_pfc_tx_frames_total``, ``_source_guard_drops_total``,
  ``_arp_punt_drops_total``, ``_queue_limit_drops_total`` ``{switch,port,peer,kind}`` (0 where
  the program has no such counter)
* ``astral_switch_port_pfc_rx_frames_total{switch,port,peer,kind,priority}``
* ``astral_switch_port_qdepth_bin_total{switch,port,peer,kind,bin}`` — frames sent that
  met a queue of bin·4 … bin·4+3 packets (bin 15: 60 and more)

``peer`` is the node behind the port: a switch name, or for a leaf's host port the NIC
(``<host>-eth<rail>``, as :mod:`monitor.evidence` names NICs); ``kind`` is the port kind
of the topology (``host``, ``uplink``, ``downlink``).

>>> from topo.model import build_fabric
>>> t = switch_targets(build_fabric())[0]
>>> t.name, t.addr, t.ports[1], t.ports[3]
('b0r0l0', '127.0.0.1:9559', ('b0s0-eth0', 'host'), ('s0', 'uplink'))
>>> with SwitchExporter(switch_targets(build_fabric()), port=0) as exp:  # doctest: +SKIP
...     exp.url
'http://127.0.0.1:40533/metrics'
"""
from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from controller.fabric.admission import ADMISSION_DROPS_COUNTER
from controller.fabric.puntguard import ARP_PUNT_DROPS_COUNTER
from controller.fabric.sourceguard import GUARD_DROPS_COUNTER
from controller.p4rt import P4InfoHelper, counter_entry
from controller.p4rt.pipeline import read_p4info
from controller.p4rt.tls import ClientTls, open_channel
from controller.telemetry.counter_reader import (DROPS_COUNTER, ECN_COUNTER, PFC_PRIORITIES,
                                           PFC_RX_COUNTER, PFC_TX_COUNTER, QDEPTH_BINS,
                                           QDEPTH_HIST_COUNTER, RX_COUNTER, TX_COUNTER,
                                           qdepth_hist_index)
from controller.telemetry.exposition import RegistryServer
from monitor.ecmpstate import EcmpState, ecmp_tables_in, read_ecmp
from testbed.tls import recorded_monitor_tls

PERIOD_S = 1.0
READ_TIMEOUT_S = 0.8
PORT_LABELS = ("switch", "port", "peer", "kind")
#: per-port counters: metric name → (P4 counter, help)
PORT_COUNTERS = {
    "astral_switch_port_tx_packets": (TX_COUNTER, "Frames sent on the port."),
    "astral_switch_port_rx_packets": (RX_COUNTER, "Frames received on the port."),
    "astral_switch_port_drops": (DROPS_COUNTER, "Frames from the port dropped in ingress."),
    "astral_switch_port_ecn_marks": (ECN_COUNTER, "CE marks on the port's egress."),
    "astral_switch_port_pfc_tx_frames": (PFC_TX_COUNTER, "PFC PAUSE/RESUME frames sent."),
    "astral_switch_port_source_guard_drops": (
        GUARD_DROPS_COUNTER, "IPv4 frames from the port dropped by the source guard (a source "
                             "the port's NICs do not own)."),
    "astral_switch_port_arp_punt_drops": (
        ARP_PUNT_DROPS_COUNTER, "ARP frames from the port over its punt policer's rate, dropped "
                                "before the controller."),
    "astral_switch_port_queue_limit_drops": (
        ADMISSION_DROPS_COUNTER, "Frames to the port dropped by its egress queue limit (the "
                                 "queue full, e.g. held by PAUSE frames from its peer)."),
}


@dataclass(frozen=True, slots=True)
class SwitchTarget:
    """One switch to read: name, P4Runtime address and device id, its ports (port →
    (peer, kind)) and the client TLS (None: plaintext)."""

    name: str
    addr: str
    device_id: int
    ports: dict[int, tuple[str, str]]
    tls: Optional[ClientTls] = None


def switch_targets(fabric: Any, addresses: Optional[Mapping[str, str]] = None,
                   tls: Optional[ClientTls] = None) -> list[SwitchTarget]:
    """A :class:`SwitchTarget` per switch of ``fabric`` (``addresses`` override the
    topology's ``grpc_addr``; ``tls`` is the client's credentials — on the testbed the
    monitor's, which a switch lets read and nothing else — checked against each switch's
    own certificate)."""
    nic_at = {(p.leaf, p.leaf_port): p.intf for h in fabric.hosts for n in h.nics
              for p in (getattr(n, "ports", None) or [n])}      # every port of a dual-port NIC
    out = []
    for sw in fabric.switches:
        ports = {p: (nic_at.get((sw.name, p), pi.peer_node) if pi.kind == "host" else pi.peer_node,
                     pi.kind) for p, pi in sorted(sw.ports.items())}
        addr = (addresses or {}).get(sw.name, sw.grpc_addr)
        out.append(SwitchTarget(sw.name, addr, sw.device_id, ports,
                                tls.for_server(sw.name) if tls is not None else None))
    return out


def targets_from_record(fabric: Any, switches: Mapping[str, Mapping[str, Any]],
                        pki: Optional[str]) -> list[SwitchTarget]:
    """:func:`switch_targets` with what a running testbed recorded: each switch's
    ``grpc_addr`` (``TestbedState.switches``) and its PKI directory (``TestbedState.pki``;
    empty or None: plaintext), whose ``monitor`` certificate the reads present (a p4sim
    switch's policy lets it Read and GetForwardingPipelineConfig only)."""
    addresses = {n: d["grpc_addr"] for n, d in switches.items() if "grpc_addr" in d}
    return switch_targets(fabric, addresses, recorded_monitor_tls(pki or None))


def targets_from_state(fabric: Any, state_path: Path) -> list[SwitchTarget]:
    """:func:`targets_from_record` of a testbed's state file (``build/testbed-state.json``)."""
    state = json.loads(Path(state_path).read_text())
    return targets_from_record(fabric, state.get("switches", {}), state.get("pki"))


@dataclass(slots=True)
class PortCounters:
    """One port's cumulative counters as read (packets)."""

    totals: dict[str, int] = field(default_factory=dict)     # metric name → packets
    pfc_rx: tuple[int, ...] = (0,) * PFC_PRIORITIES
    qdepth_bins: tuple[int, ...] = (0,) * QDEPTH_BINS


class SwitchReader:
    """Reads one switch's port counters with plain ``Read`` RPCs (no stream, no
    arbitration); the P4Info is fetched once per pipeline and again after a failure.

    >>> r = SwitchReader(SwitchTarget("s0", "127.0.0.1:1", 1, {1: ("b0r0l0", "downlink")}),
    ...                  timeout_s=0.2)
    >>> r.read()
    Traceback (most recent call last):
    ...
    grpc...RpcError: ...
    >>> r.close()
    """

    def __init__(self, target: SwitchTarget, timeout_s: float = READ_TIMEOUT_S) -> None:
        self.target, self.timeout_s = target, timeout_s
        self._info: Optional[P4InfoHelper] = None
        self._open()

    def _open(self) -> None:
        self._channel = open_channel(self.target.addr, self.target.tls)
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)

    def _reset(self) -> None:
        """After a failure: a new channel (gRPC's reconnect back-off on the old one grows to
        minutes; a new one connects at the next read) and the P4Info read again (a
        restarted switch may run another pipeline)."""
        self._channel.close()
        self._info = None
        self._open()

    def _cells(self, info: P4InfoHelper) -> list[tuple[str, int]]:
        ports = list(self.target.ports)
        cells = [(c, p) for c, _ in PORT_COUNTERS.values() for p in ports]
        cells += [(PFC_RX_COUNTER, p * PFC_PRIORITIES + q) for p in ports for q in range(PFC_PRIORITIES)]
        cells += [(QDEPTH_HIST_COUNTER, qdepth_hist_index(p, b)) for p in ports for b in range(QDEPTH_BINS)]
        return [(c, i) for c, i in cells if info.has("counter", c)]

    def read(self) -> dict[int, PortCounters]:
        """Every port's counters (one Read); ``grpc.RpcError`` when the switch does not
        answer without error within the timeout (each of the two RPCs: the P4Info once,
        the counters). A switch with no pipeline yet answers with no ports."""
        if self._info is None:
            try:
                p4info = read_p4info(self._stub, self.target.device_id, self.timeout_s)
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.FAILED_PRECONDITION:
                    return {}                     # no pipeline (yet): it answers, nothing to read
                self._reset()
                raise
            if not p4info.counters:
                return {}
            self._info = P4InfoHelper(p4info)
        info = self._info
        cells = self._cells(info)
        names = {info.counter_id(c): c for c, _ in cells}
        req = p4runtime_pb2.ReadRequest(device_id=self.target.device_id, entities=[
            p4runtime_pb2.Entity(counter_entry=counter_entry(info, c, i)) for c, i in cells])
        got: dict[tuple[str, int], int] = {}
        try:
            for resp in self._stub.Read(req, timeout=self.timeout_s):
                for e in resp.entities:
                    ce = e.counter_entry
                    got[(names.get(ce.counter_id, ""), ce.index.index)] = ce.data.packet_count
        except grpc.RpcError:
            self._reset()
            raise
        out = {}
        for p in self.target.ports:
            out[p] = PortCounters(
                {m: got.get((c, p), 0) for m, (c, _) in PORT_COUNTERS.items()},
                tuple(got.get((PFC_RX_COUNTER, p * PFC_PRIORITIES + q), 0) for q in range(PFC_PRIORITIES)),
                tuple(got.get((QDEPTH_HIST_COUNTER, qdepth_hist_index(p, b)), 0) for b in range(QDEPTH_BINS)))
        return out

    def read_ecmp(self) -> Optional[EcmpState]:
        """The switch's ECMP tables (:func:`monitor.ecmpstate.read_ecmp`), or None when
        its program has none (or no pipeline was read yet); ``grpc.RpcError`` when it
        does not answer."""
        info = self._info
        if info is None or not ecmp_tables_in(info):
            return None
        try:
            return read_ecmp(self._stub, info, self.target.device_id, self.timeout_s)
        except grpc.RpcError:
            self._reset()
            raise

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()


@dataclass(slots=True)
class _SwitchState:
    up: bool = False
    read_s: float = 0.0
    errors: int = 0
    reads: int = 0                      # attempts; a switch not yet read is not exposed
    ports: dict[int, PortCounters] = field(default_factory=dict)
    said_down: bool = False
    ecmp: Optional[EcmpState] = None    # the last ECMP tables read (kept while it is down)


class _SwitchCollector(Collector):
    def __init__(self, exporter: "SwitchExporter") -> None:
        self._exp = exporter

    def collect(self) -> Iterator[Metric]:
        states = self._exp.snapshot()
        targets = {t.name: t for t in self._exp.targets}
        up = GaugeMetricFamily("astral_switch_up", "1 when the switch's last P4Runtime Read "
                               "answered within the deadline.", labels=["switch"])
        took = GaugeMetricFamily("astral_switch_read_seconds",
                                 "Duration of the last counter Read.", labels=["switch"])
        errs = CounterMetricFamily("astral_switch_read_errors", "Counter Reads that failed.",
                                   labels=["switch"])
        fams = {m: CounterMetricFamily(m, h, labels=list(PORT_LABELS))
                for m, (_, h) in PORT_COUNTERS.items()}
        pfc = CounterMetricFamily("astral_switch_port_pfc_rx_frames",
                                  "PFC frames received on the port, per priority.",
                                  labels=[*PORT_LABELS, "priority"])
        hist = CounterMetricFamily("astral_switch_port_qdepth_bin",
                                   "Frames sent that met an egress queue in this 4-packet bin.",
                                   labels=[*PORT_LABELS, "bin"])
        for name, st in sorted(states.items()):
            if st.reads == 0:
                continue
            up.add_metric([name], 1.0 if st.up else 0.0)
            took.add_metric([name], st.read_s)
            errs.add_metric([name], st.errors)
            if not st.up:
                continue
            for port, pc in sorted(st.ports.items()):
                peer, kind = targets[name].ports[port]
                labels = [name, str(port), peer, kind]
                for m, v in pc.totals.items():
                    fams[m].add_metric(labels, v)
                for q, v in enumerate(pc.pfc_rx):
                    pfc.add_metric([*labels, str(q)], v)
                for b, v in enumerate(pc.qdepth_bins):
                    hist.add_metric([*labels, str(b)], v)
        yield from (up, took, errs, *fams.values(), pfc, hist)


class SwitchExporter:
    """Reads every target switch on its own thread every ``period_s`` and serves the
    metrics (module docstring) on ``http://HOST:PORT/metrics`` (``port=0``: a free port).

    ``log`` receives the one-line notices (default: stderr). :meth:`read_once` reads one
    switch now (the threads call it; tests may too).
    """

    def __init__(self, targets: Sequence[SwitchTarget], host: str = "127.0.0.1", port: int = 0,
                 period_s: float = PERIOD_S, timeout_s: float = READ_TIMEOUT_S,
                 log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> None:
        self.targets = list(targets)
        self.period_s, self.timeout_s, self._log = period_s, timeout_s, log
        self._lock = threading.Lock()
        self._states = {t.name: _SwitchState() for t in self.targets}
        self._readers = {t.name: SwitchReader(t, timeout_s) for t in self.targets}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_SwitchCollector(self))
        self.server = RegistryServer(self.registry, host, port, name="switch-exporter")

    @property
    def url(self) -> str:
        """The scrape URL."""
        return self.server.url

    @property
    def address(self) -> str:
        """``host:port`` for a scrape config."""
        return self.server.url.split("//")[1].split("/")[0]

    def snapshot(self) -> dict[str, _SwitchState]:
        """A copy of every switch's last read state."""
        with self._lock:
            return {n: _SwitchState(s.up, s.read_s, s.errors, s.reads, dict(s.ports), s.said_down,
                                    s.ecmp)
                    for n, s in self._states.items()}

    def ecmp_snapshot(self) -> dict[str, EcmpState]:
        """Every switch's last ECMP tables read (switches never read, or whose program has
        none, are absent)."""
        with self._lock:
            return {n: s.ecmp for n, s in self._states.items() if s.ecmp is not None}

    def read_once(self, name: str) -> bool:
        """Read switch ``name`` now; True when it answered."""
        t0 = time.monotonic()
        ecmp = None
        try:
            ports = self._readers[name].read()
            ecmp = self._readers[name].read_ecmp() if ports else None
            why = ""
        except grpc.RpcError as exc:
            ports, why = None, f"{exc.code().name if hasattr(exc, 'code') else 'ERROR'}: " \
                               f"{exc.details() if hasattr(exc, 'details') else exc}"
        except Exception as exc:  # noqa: BLE001 — a bad answer must not stop the exporter
            ports, why = None, f"{type(exc).__name__}: {exc}"
        took = time.monotonic() - t0
        with self._lock:
            st = self._states[name]
            st.read_s, st.up = took, ports is not None
            st.reads += 1
            if ports is None:
                st.errors += 1
                if not st.said_down:
                    self._log(f"monitor: switch {name} does not answer P4Runtime reads "
                              f"({why}); marked down, the others go on")
                st.said_down = True
            else:
                st.ports = ports
                if ecmp is not None:
                    st.ecmp = ecmp
                if st.said_down:
                    self._log(f"monitor: switch {name} answers again")
                st.said_down = False
        return ports is not None

    def _run(self, name: str) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.read_once(name)
            next_at = max(next_at + self.period_s, time.monotonic())
            self._stop.wait(next_at - time.monotonic())          # the read period

    def start(self) -> "SwitchExporter":
        """Start the readers and the HTTP server."""
        self.server.start()
        for t in self.targets:
            th = threading.Thread(target=self._run, args=(t.name,), name=f"read-{t.name}",
                                  daemon=True)
            th.start()
            self._threads.append(th)
        return self

    def stop(self) -> None:
        """Stop reading and serving (idempotent)."""
        self._stop.set()
        for th in self._threads:
            th.join(timeout=self.timeout_s + 5)
        self._threads.clear()
        self.server.stop()
        for r in self._readers.values():
            r.close()

    def __enter__(self) -> "SwitchExporter":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["PORT_COUNTERS", "PortCounters", "SwitchExporter", "SwitchReader", "SwitchTarget",
           "switch_targets", "targets_from_record", "targets_from_state"]
