"""Builds the localiser's :class:`~monitor.evidence.Evidence` from what monitoring
collected: the probe counters, the switch and NIC counters and GOR's own metrics, all
read back from one :class:`~monitor.prometheus.MetricSource` (the real Prometheus, or the
embedded store where it is absent), and the tomography of the probe paths.

Where each field comes from (metric names of :mod:`monitor.exporters`,
:mod:`monitor.prober` and ``controller.gor.metrics``)::

    paths        the probers' epoch snapshots (monitor.probestats.ProbeStatsReader):
                 sent at the sender and received/corrupted at the receiver over the
                 same closed send epochs, one PathStats per plan path (and
                 path_epochs: the last epochs one by one). The same counts
                 are in the store (astral_probe_*_total), but a rate over scrapes
                 cannot line them up: one scrape that sees the sender a second ahead
                 of the receiver makes a third of a 3 s window look lost. Without a
                 snapshot reader (``probe_stats=None``), those rates are used.
    links        monitor.tomography.estimate(plan paths, path stats)
    switch_up    astral_switch_up (the switch exporter's P4Runtime read answered)
    ports        astral_switch_port_*_total rates; the deepest queue from the highest
                 queue-depth bin (4 packets wide) that counted a packet in the window
    nics         astral_nic_*_total rates
    agent_age_s  gor_agent_last_report_age_seconds
    controller   the gor scrape target is up

>>> from monitor.evidence import LinkDir, ProbePath
>>> p = ProbePath("p0", "b0s0-eth0", "b1s0-eth0", "10.0.0.1", "10.1.0.1", 49152,
...               (LinkDir("b0s0-eth0", "b0r0l0"),))
>>> stats_of([p], {"p0": 50.0}, {"p0": 45.0}, {}, 2.0)["p0"].loss
0.1
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Protocol, Sequence

from monitor.evidence import EpochCount, Evidence, NicRates, PathStats, PortRates, ProbePath
from monitor.tomography import estimate

QDEPTH_BIN_PKTS = 4
"""Width of a queue-depth bin of ``FabricEgress.telemetry.qdepth_hist`` (p4src/README.md)."""


class MetricReader(Protocol):
    """The part of :class:`monitor.prometheus.MetricSource` this module reads."""

    def read_many(self, values: Sequence[str], rates: Sequence[str], window_s: float,
                  ) -> tuple[dict[str, list[tuple[dict[str, str], float]]],
                             dict[str, list[tuple[dict[str, str], float]]]]: ...

    def targets_up(self) -> dict[str, bool]: ...


def _by(rows: Sequence[tuple[dict[str, str], float]], key: str) -> dict[str, float]:
    """Sum of the rows' values by the label ``key`` (rows without it are skipped)."""
    out: dict[str, float] = {}
    for labels, value in rows:
        if key in labels:
            out[labels[key]] = out.get(labels[key], 0.0) + float(value)
    return out


def stats_of(paths: Sequence[ProbePath], sent: Mapping[str, float], received: Mapping[str, float],
             corrupted: Mapping[str, float], window_s: float) -> dict[str, PathStats]:
    """One :class:`PathStats` per plan path from probes sent, received and corrupted in
    the window (a path the probers have not reported yet counts as nothing sent)."""
    out = {}
    for p in paths:
        s = int(round(sent.get(p.name, 0.0)))
        r = min(s, int(round(received.get(p.name, 0.0))))
        out[p.name] = PathStats(p.name, window_s, s, r, int(round(corrupted.get(p.name, 0.0))))
    return out


PORT_RATES = {"tx_pps": "astral_switch_port_tx_packets_total",
              "rx_pps": "astral_switch_port_rx_packets_total",
              "drops_pps": "astral_switch_port_drops_total",
              "ecn_marks_pps": "astral_switch_port_ecn_marks_total",
              "pfc_tx_fps": "astral_switch_port_pfc_tx_frames_total",
              "pfc_rx_fps": "astral_switch_port_pfc_rx_frames_total"}
"""``PortRates`` field → the switch exporter's counter it is the rate of."""
QDEPTH_COUNTER = "astral_switch_port_qdepth_bin_total"
NIC_RATES = {"pause_tx_fps": "astral_nic_pause_tx_frames_total",
             "pause_rx_fps": "astral_nic_pause_rx_frames_total",
             "icrc_errors_ps": "astral_nic_icrc_errors_total",
             "naks_ps": "astral_nic_naks_total",
             "cnps_ps": "astral_nic_cnps_total"}
"""``NicRates`` field → the NIC emulator's counter it is the rate of."""
DELIVERED_COUNTER = "astral_nic_delivered_bytes_total"
#: every counter one evidence snapshot reads the rate of
EVIDENCE_RATES = (*PORT_RATES.values(), QDEPTH_COUNTER, *NIC_RATES.values(), DELIVERED_COUNTER)
#: every gauge it reads the latest value of
EVIDENCE_VALUES = ("astral_switch_up", "gor_agent_last_report_age_seconds")
#: the probe counters (sent, received, corrupted), read only without a snapshot reader
PROBE_COUNTERS = ("astral_probe_sent_total", "astral_probe_received_total",
                  "astral_probe_corrupted_total")


def port_rates(rates: Mapping[str, Sequence[tuple[dict[str, str], float]]],
               ) -> dict[tuple[str, int], PortRates]:
    """Per (switch, port) counter rates from the switch exporter's series (``rates``:
    counter → its rate series, as :meth:`MetricReader.read_many` gives them)."""
    acc: dict[tuple[str, int], dict[str, Any]] = {}
    for attr, metric in PORT_RATES.items():
        for labels, value in rates.get(metric, ()):
            try:
                key = (labels["switch"], int(labels["port"]))
            except (KeyError, ValueError):
                continue
            row = acc.setdefault(key, {})
            row[attr] = row.get(attr, 0.0) + float(value)     # pfc rx: summed over priorities
    for labels, value in rates.get(QDEPTH_COUNTER, ()):
        try:
            key, bin_ = (labels["switch"], int(labels["port"])), int(labels["bin"])
        except (KeyError, ValueError):
            continue
        if value > 0:
            row = acc.setdefault(key, {})
            row["max_qdepth_pkts"] = max(row.get("max_qdepth_pkts", 0), bin_ * QDEPTH_BIN_PKTS)
    return {k: PortRates(k[0], k[1], **v) for k, v in acc.items()}


def nic_rates(rates: Mapping[str, Sequence[tuple[dict[str, str], float]]]) -> dict[str, NicRates]:
    """Per NIC counter rates from the NIC emulators' metric files (delivered bytes as
    goodput in Mbit/s).

    >>> nic_rates({"astral_nic_delivered_bytes_total": [({"nic": "b0s0-eth0"}, 1e6)]})
    {'b0s0-eth0': NicRates(nic='b0s0-eth0', goodput_mbps=8.0, pause_tx_fps=0.0, pause_rx_fps=0.0, icrc_errors_ps=0.0, naks_ps=0.0, cnps_ps=0.0)}
    """
    acc: dict[str, dict[str, float]] = {}
    for attr, metric in NIC_RATES.items():
        for nic, value in _by(rates.get(metric, ()), "nic").items():
            acc.setdefault(nic, {})[attr] = value
    for nic, value in _by(rates.get(DELIVERED_COUNTER, ()), "nic").items():
        acc.setdefault(nic, {})["goodput_mbps"] = value * 8 / 1e6
    return {nic: NicRates(nic, **v) for nic, v in acc.items()}


class ProbeStatsSource(Protocol):
    """The part of :class:`monitor.probestats.ProbeStatsReader` this module reads."""

    def poll(self) -> Optional[tuple[float, dict[str, PathStats]]]: ...

    def per_epoch(self, epochs: int = 8) -> dict[str, tuple[EpochCount, ...]]: ...


class EvidenceBuilder:
    """Reads one evidence snapshot per call of :meth:`build`.

    ``paths``: the probe plan; ``path_dst_prefix``: each path's destination prefix;
    ``port_peer``: the node behind every switch port (:func:`port_peers`);
    ``window_s``: the rate window (a few scrape intervals); ``gor_job``: the scrape job
    whose target being down means the controller is down (``None``: no GOR watched);
    ``probe_stats``: the probers' epoch-aligned path counts (module docstring; a path
    it has no count for yet counts as nothing sent); ``extra_values``: gauges read in the
    same query for someone else (the web view), left in :attr:`extra` after each build.

    A build makes one query for every counter rate and gauge (``read_many``) and one for
    the targets' health: an evaluation is two round trips to the store.

    >>> b = EvidenceBuilder([], {}, {}, window_s=3.0)                # doctest: +SKIP
    >>> b.build(reader, t_s=12.0).switch_up                          # doctest: +SKIP
    {'b0r0l0': True, ...}
    """

    def __init__(self, paths: Sequence[ProbePath], path_dst_prefix: Mapping[str, str],
                 port_peer: Mapping[tuple[str, int], str], *, window_s: float = 3.0,
                 ecn_threshold_pkts: Optional[int] = None, gor_job: Optional[str] = "gor",
                 probe_stats: Optional[ProbeStatsSource] = None,
                 extra_values: Sequence[str] = ()) -> None:
        self.paths = list(paths)
        self.probe_stats = probe_stats
        self.extra_values = tuple(extra_values)
        self.extra: dict[str, list[tuple[dict[str, str], float]]] = {m: [] for m in self.extra_values}
        self.path_dst_prefix = dict(path_dst_prefix)
        self.port_peer = dict(port_peer)
        self.window_s = window_s
        self.ecn_threshold_pkts = ecn_threshold_pkts
        self.gor_job = gor_job

    def build(self, reader: MetricReader, t_s: float) -> Evidence:
        """The evidence at ``t_s`` (monotonic seconds)."""
        w = self.window_s
        rate_names = [*EVIDENCE_RATES, *(PROBE_COUNTERS if self.probe_stats is None else ())]
        values, rates = reader.read_many([*EVIDENCE_VALUES, *self.extra_values], rate_names, w)
        self.extra = {m: values[m] for m in self.extra_values}
        ev = Evidence(t_s)
        if self.probe_stats is not None:
            ev.paths = self._path_stats()
            ev.path_epochs = self.probe_stats.per_epoch()
        else:
            ev.paths = self._stats_from_rates(rates)
        ev.path_links = {p.name: p.links for p in self.paths}
        ev.path_dst_prefix = dict(self.path_dst_prefix)
        ev.links = estimate(self.paths, ev.paths)
        ev.switch_up = {labels["switch"]: v >= 1.0 for labels, v in values["astral_switch_up"]
                        if "switch" in labels}
        ev.ports = port_rates(rates)
        ev.port_peer = dict(self.port_peer)
        ev.nics = nic_rates(rates)
        ev.agent_age_s = {labels["host"]: float(v) for labels, v in
                          values["gor_agent_last_report_age_seconds"] if "host" in labels}
        if self.gor_job is not None:
            up = [ok for target, ok in reader.targets_up().items()
                  if target.split("/", 1)[0] == self.gor_job]
            ev.controller_up = all(up) if up else None
        ev.ecn_threshold_pkts = self.ecn_threshold_pkts
        return ev

    def _path_stats(self) -> dict[str, PathStats]:
        """Every plan path's counts over the window from the probers' snapshots (module
        docstring, ``paths``; a path without counts yet: nothing sent)."""
        w = self.window_s
        got = self.probe_stats.poll() if self.probe_stats is not None else None
        measured = got[1] if got is not None else {}
        return {p.name: measured.get(p.name, PathStats(p.name, w, 0, 0)) for p in self.paths}

    def _stats_from_rates(self, rates: Mapping[str, Sequence[tuple[dict[str, str], float]]],
                          ) -> dict[str, PathStats]:
        """The paths' counts from the probe counters' rates (no snapshot reader)."""
        w = self.window_s
        sent, recv, bad = (_by(rates.get(m, ()), "path") for m in PROBE_COUNTERS)
        return stats_of(self.paths, {k: v * w for k, v in sent.items()},
                        {k: v * w for k, v in recv.items()}, {k: v * w for k, v in bad.items()}, w)


def port_peers(fabric: Any) -> dict[tuple[str, int], str]:
    """The node behind every switch port of ``fabric``: a switch name, or the NIC
    ``<host>-eth<rail>`` for a host port.

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> port_peers(build_fabric(FabricSpec()))[("b0r0l0", 1)]
    'b0s0-eth0'
    """
    out = {}
    for sw in fabric.switches:
        for port, info in sw.ports.items():
            peer = f"{info.peer_node}-eth{info.peer_port}" if info.kind == "host" else info.peer_node
            out[(sw.name, port)] = peer
    return out


__all__ = ["EVIDENCE_RATES", "EVIDENCE_VALUES", "EvidenceBuilder", "MetricReader", "NIC_RATES",
           "PORT_RATES", "ProbeStatsSource", "QDEPTH_BIN_PKTS", "nic_rates", "port_peers",
           "port_rates", "stats_of"]
