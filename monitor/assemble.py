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

QDEPTH_BIN_PKTS = 4
"""Width of a queue-depth bin of ``FabricEgress.telemetry.qdepth_hist`` (p4src/README.md)."""


class MetricReader(Protocol):
    """The part of :class:`monitor.prometheus.MetricSource` this module reads."""

    def values(self, metric: str, **labels: str) -> list[tuple[dict[str, str], float]]: ...

    def rates(self, metric: str, window_s: float) -> list[tuple[dict[str, str], float]]: ...

    def rates_many(self, metrics: Sequence[str], window_s: float,
                   ) -> dict[str, list[tuple[dict[str, str], float]]]: ...

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


def port_rates(reader: MetricReader, window_s: float) -> dict[tuple[str, int], PortRates]:
    """Per (switch, port) counter rates from the switch exporter's series (one query)."""
    fields = {"tx_pps": "astral_switch_port_tx_packets_total",
              "rx_pps": "astral_switch_port_rx_packets_total",
              "drops_pps": "astral_switch_port_drops_total",
              "ecn_marks_pps": "astral_switch_port_ecn_marks_total",
              "pfc_tx_fps": "astral_switch_port_pfc_tx_frames_total",
              "pfc_rx_fps": "astral_switch_port_pfc_rx_frames_total"}
    qdepth = "astral_switch_port_qdepth_bin_total"
    got = reader.rates_many([*fields.values(), qdepth], window_s)
    acc: dict[tuple[str, int], dict[str, Any]] = {}
    for attr, metric in fields.items():
        for labels, value in got[metric]:
            try:
                key = (labels["switch"], int(labels["port"]))
            except (KeyError, ValueError):
                continue
            row = acc.setdefault(key, {})
            row[attr] = row.get(attr, 0.0) + float(value)     # pfc rx: summed over priorities
    for labels, value in got[qdepth]:
        try:
            key, bin_ = (labels["switch"], int(labels["port"])), int(labels["bin"])
        except (KeyError, ValueError):
            continue
        if value > 0:
            row = acc.setdefault(key, {})
            row["max_qdepth_pkts"] = max(row.get("max_qdepth_pkts", 0), bin_ * QDEPTH_BIN_PKTS)
    return {k: PortRates(k[0], k[1], **v) for k, v in acc.items()}


def nic_rates(reader: MetricReader, window_s: float) -> dict[str, NicRates]:
    """Per NIC counter rates from the NIC emulators' metric files (delivered bytes as
    goodput in Mbit/s; one query)."""
    acc: dict[str, dict[str, float]] = {}
    fields = {"pause_tx_fps": "astral_nic_pause_tx_frames_total",
              "pause_rx_fps": "astral_nic_pause_rx_frames_total",
              "icrc_errors_ps": "astral_nic_icrc_errors_total",
              "naks_ps": "astral_nic_naks_total",
              "cnps_ps": "astral_nic_cnps_total"}
    delivered = "astral_nic_delivered_bytes_total"
    got = reader.rates_many([*fields.values(), delivered], window_s)
    for attr, metric in fields.items():
        for nic, value in _by(got[metric], "nic").items():
            acc.setdefault(nic, {})[attr] = value
    for nic, value in _by(got[delivered], "nic").items():
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
    it has no count for yet counts as nothing sent).

    >>> b = EvidenceBuilder([], {}, {}, window_s=3.0)                # doctest: +SKIP
    >>> b.build(reader, t_s=12.0).switch_up                          # doctest: +SKIP
    {'b0r0l0': True, ...}
    """

    def __init__(self, paths: Sequence[ProbePath], path_dst_prefix: Mapping[str, str],
                 port_peer: Mapping[tuple[str, int], str], *, window_s: float = 3.0,
                 ecn_threshold_pkts: Optional[int] = None, gor_job: Optional[str] = "gor",
                 probe_stats: Optional[ProbeStatsSource] = None) -> None:
        self.paths = list(paths)
        self.probe_stats = probe_stats
        self.path_dst_prefix = dict(path_dst_prefix)
        self.port_peer = dict(port_peer)
        self.window_s = window_s
        self.ecn_threshold_pkts = ecn_threshold_pkts
        self.gor_job = gor_job

    def build(self, reader: MetricReader, t_s: float) -> Evidence:
        """The evidence at ``t_s`` (monotonic seconds)."""
        from monitor.tomography import estimate  # noqa: PLC0415 (the planner's sibling)
        w = self.window_s
        stats = self._path_stats(reader)
        ev = Evidence(t_s)
        ev.paths = stats
        if self.probe_stats is not None:
            ev.path_epochs = self.probe_stats.per_epoch()
        ev.path_links = {p.name: p.links for p in self.paths}
        ev.path_dst_prefix = dict(self.path_dst_prefix)
        ev.links = estimate(self.paths, stats)
        ev.switch_up = {labels["switch"]: v >= 1.0 for labels, v in reader.values("astral_switch_up")
                        if "switch" in labels}
        ev.ports = port_rates(reader, w)
        ev.port_peer = dict(self.port_peer)
        ev.nics = nic_rates(reader, w)
        ev.agent_age_s = {labels["host"]: float(v) for labels, v in
                          reader.values("gor_agent_last_report_age_seconds") if "host" in labels}
        if self.gor_job is not None:
            up = [ok for target, ok in reader.targets_up().items()
                  if target.split("/", 1)[0] == self.gor_job]
            ev.controller_up = all(up) if up else None
        ev.ecn_threshold_pkts = self.ecn_threshold_pkts
        return ev

    def _path_stats(self, reader: MetricReader) -> dict[str, PathStats]:
        """Every plan path's counts over the window (module docstring, ``paths``)."""
        w = self.window_s
        if self.probe_stats is not None:
            got = self.probe_stats.poll()
            measured = got[1] if got is not None else {}
            return {p.name: measured.get(p.name, PathStats(p.name, w, 0, 0)) for p in self.paths}
        sent = _by(reader.rates("astral_probe_sent_total", w), "path")
        recv = _by(reader.rates("astral_probe_received_total", w), "path")
        bad = _by(reader.rates("astral_probe_corrupted_total", w), "path")
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


__all__ = ["EvidenceBuilder", "MetricReader", "ProbeStatsSource", "QDEPTH_BIN_PKTS", "nic_rates", "port_peers",
           "port_rates", "stats_of"]
