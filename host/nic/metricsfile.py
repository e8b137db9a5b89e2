"""The NIC emulator's metric file: its port counters in the Prometheus text format,
rewritten atomically every ``interval_s`` and once more at exit
(``python -m host.nic send|recv … --metrics-file PATH``), for the monitor's textfile
exporter to serve.

Every series carries ``nic`` (the interface, ``<host>-eth<rail>``). From the counters the
NIC keeps (:class:`host.nic.io.NicPort`, the flows of :mod:`host.nic.qp`):

* ``astral_nic_tx_packets_total``, ``astral_nic_rx_packets_total`` — frames sent and
  received on the port (every kind; the PFC frames a stalled receiver sends excluded)
* ``astral_nic_delivered_bytes_total`` — payload delivered in order by the receiver;
  ``astral_nic_acked_bytes_total`` — payload the sender's QPs got acknowledged
* ``astral_nic_pause_tx_frames_total`` — PFC frames (PAUSE and RESUME) the NIC sent: a
  receiver in stall mode (:mod:`host.nic.stall`, a slow receiver) sends them, 0 otherwise
* ``astral_nic_pause_rx_frames_total`` — PFC frames received (PAUSE and RESUME)
* ``astral_nic_icrc_errors_total`` — data frames dropped for a bad ICRC
* ``astral_nic_naks_total{direction="rx|tx"}``, ``astral_nic_cnps_total{direction}`` —
  NAKs and CNPs received (by the senders) and sent (by the receiver)
* ``astral_nic_retransmitted_packets_total`` — packets the senders sent again
* ``astral_nic_rx_flows_refused_total`` — data frames of a new flow the receiver refused:
  its source at ``host.nic.qp.MAX_RX_FLOWS_PER_SOURCE`` flows, or the receiver at
  ``MAX_RX_FLOWS`` (a host naming a new QPN in every frame; sec-audit5)
* ``astral_nic_qp_state{qpn,state}`` — 1 for each sender QP's current state (``RTS`` or
  ``ERROR``), 0 for the other; ``qpn`` is the QP's destination QPN

>>> import socket, tempfile, pathlib
>>> from host.nic.io import DatagramIO, NicPort
>>> port = NicPort(DatagramIO(socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]),
...                line_rate_bps=1e8)
>>> path = pathlib.Path(tempfile.mkdtemp()) / "b0s0-eth0.prom"
>>> MetricsFile(path, port, "b0s0-eth0").write()
>>> [l for l in path.read_text().splitlines() if l.startswith("astral_nic_tx_packets")]
['astral_nic_tx_packets_total{nic="b0s0-eth0"} 0.0']
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Iterator

from prometheus_client import CollectorRegistry, write_to_textfile
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from host.nic.rc import QP_ERROR, QP_RTS

QP_STATES = (QP_RTS, QP_ERROR)
INTERVAL_S = 1.0


def pause_frames_sent(port: Any) -> int:
    """PFC frames (PAUSE and RESUME) the port sent: those of a stall-mode link
    (:class:`host.nic.stall.StallableIO`, a slow receiver), 0 for a plain one.

    >>> pause_frames_sent(type("P", (), {"io": object()})())
    0
    """
    io = getattr(port, "io", None)
    return int(getattr(io, "pause_frames_sent", 0)) + int(getattr(io, "resume_frames_sent", 0))


def nic_families(port: Any, nic: str) -> list[Metric]:
    """The metric families of ``port`` (a :class:`host.nic.io.NicPort`) for NIC ``nic``."""
    senders = list(port.senders)                     # copies: the port's loop may add to them
    flows = list(port.receiver.flows.values()) if port.receiver is not None else []
    rx = [st.counters for st in flows]
    tx = [qp.counters for qp in senders]

    def counter(name: str, help_: str, value: float) -> Metric:
        fam = CounterMetricFamily(name, help_, labels=["nic"])
        fam.add_metric([nic], value)
        return fam

    def by_direction(name: str, help_: str, rx_value: float, tx_value: float) -> Metric:
        fam = CounterMetricFamily(name, help_, labels=["nic", "direction"])
        fam.add_metric([nic, "rx"], rx_value)
        fam.add_metric([nic, "tx"], tx_value)
        return fam

    qp_state = GaugeMetricFamily("astral_nic_qp_state", "1 for the sender QP's current state.",
                                 labels=["nic", "qpn", "state"])
    for qp in senders:
        for state in QP_STATES:
            qp_state.add_metric([nic, str(qp.flow.dqpn), state], 1.0 if qp.rc.state == state else 0.0)
    return [
        counter("astral_nic_tx_packets", "Frames sent on the port.", port.tx_frames),
        counter("astral_nic_rx_packets", "Frames received on the port.", port.rx_frames),
        counter("astral_nic_delivered_bytes", "Payload bytes delivered in order by the receiver.",
                sum(c.recv_payload_bytes for c in rx)),
        counter("astral_nic_acked_bytes", "Payload bytes the sender QPs got acknowledged.",
                sum(c.acked_payload_bytes for c in tx)),
        counter("astral_nic_pause_tx_frames", "PFC frames sent by the NIC (PAUSE and RESUME).",
                pause_frames_sent(port)),
        counter("astral_nic_pause_rx_frames", "PFC frames received (PAUSE and RESUME).",
                port.rx_pfc),
        counter("astral_nic_icrc_errors", "Data frames dropped for a bad ICRC.",
                sum(c.bad_icrc for c in rx)),
        by_direction("astral_nic_naks", "NAKs received (rx, senders) and sent (tx, receiver).",
                     sum(c.naks_received for c in tx), sum(c.naks_sent for c in rx)),
        by_direction("astral_nic_cnps", "CNPs received (rx, senders) and sent (tx, receiver).",
                     sum(c.cnps_received for c in tx), sum(c.cnps_sent for c in rx)),
        counter("astral_nic_retransmitted_packets", "Packets the sender QPs sent again.",
                sum(qp.rc.retransmitted_pkts for qp in senders)),
        counter("astral_nic_rx_flows_refused", "Data frames of a new flow the receiver refused "
                "(its source, or the receiver, at its bound on flows).",
                port.receiver.flows_refused if port.receiver is not None else 0),
        qp_state,
    ]


class _NicCollector(Collector):
    def __init__(self, port: Any, nic: str) -> None:
        self._port, self._nic = port, nic

    def collect(self) -> Iterator[Metric]:
        return iter(nic_families(self._port, self._nic))


class MetricsFile:
    """Writes ``port``'s metrics to ``path`` (atomically: a temporary file renamed) every
    ``interval_s`` from a daemon thread between :meth:`start` and :meth:`stop`, and once
    more at :meth:`stop`. A write that fails is said once on stderr; the NIC goes on."""

    def __init__(self, path: Path, port: Any, nic: str, interval_s: float = INTERVAL_S) -> None:
        if not interval_s > 0:
            raise ValueError(f"metrics interval must be positive, got {interval_s!r} s")
        self.path, self.interval_s = Path(path), interval_s
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_NicCollector(port, nic))
        self.writes = 0
        self._failed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def write(self) -> None:
        """Write the file now."""
        try:
            write_to_textfile(str(self.path), self.registry)
            self.writes += 1
        except OSError as exc:
            if not self._failed:
                print(f"host.nic: cannot write the metrics file {self.path}: {exc}",
                      file=sys.stderr)
            self._failed = True

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):   # the write period
            self.write()

    def start(self) -> "MetricsFile":
        """Write now, then every ``interval_s`` on a daemon thread."""
        self.write()
        self._thread = threading.Thread(target=self._run, name="nic-metrics", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread and write a last time (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
            self.write()

    def __enter__(self) -> "MetricsFile":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["INTERVAL_S", "MetricsFile", "QP_STATES", "nic_families"]
