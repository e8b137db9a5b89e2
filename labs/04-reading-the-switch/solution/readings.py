"""Lab 04, reading the switch (solution): port counters, a queue-depth histogram (a
counter too) and sampled-flow digests of a running fabric switch, read with the
controller's P4Runtime client (``controller.p4rt.SwitchConnection``).

Names are the fully qualified P4Runtime names of ``p4src/fabric.p4`` (p4src/README.md,
"Telemetry" and "FabricIngress.sampling.config").

Example (with a connection ``sw`` to a programmed leaf)::

    >>> port_counters(sw, 1)["rx_packets"]                           # doctest: +SKIP
    15
    >>> deepest_queue([7, 0, 0, 0], [12, 4, 3, 0])                   # bins 0..2 grew
    8
    >>> start_sampling(sw, port=2, one_in_n=1); collect_samples(sw)  # doctest: +SKIP
    [{'switch_id': 1, 'src_addr': 167772161, ...}]
"""
from __future__ import annotations

from controller.p4rt import SwitchConnection

RX = "FabricIngress.telemetry.rx"
TX = "FabricEgress.telemetry.tx"
DROPS = "FabricIngress.telemetry.drops"
QDEPTH_HIST = "FabricEgress.telemetry.qdepth_hist"
BINS = 16              # queue-depth bins per port (QDEPTH_BINS in p4src/include/define.p4)
BIN_PKTS = 4           # packets of queue depth per bin: bin b holds depths 4b .. 4b+3
SAMPLING = "FabricIngress.sampling.config"
SAMPLE = "FabricIngress.sampling.sample"
DIGEST = "flow_sample_t"


def port_counters(sw: SwitchConnection, port: int) -> dict[str, int]:
    """Packets and bytes received, sent and dropped (in ingress) on ``port``: keys
    ``rx_packets``, ``rx_bytes``, ``tx_packets``, ``tx_bytes``, ``drop_packets``,
    ``drop_bytes``."""
    rx = sw.read_counter(RX, port)[port]
    tx = sw.read_counter(TX, port)[port]
    drops = sw.read_counter(DROPS, port)[port]
    return {"rx_packets": rx.packets, "rx_bytes": rx.bytes,
            "tx_packets": tx.packets, "tx_bytes": tx.bytes,
            "drop_packets": drops.packets, "drop_bytes": drops.bytes}


def queue_depth_bins(sw: SwitchConnection, port: int) -> list[int]:
    """Packets ``port`` has sent so far in each queue-depth bin: ``BINS`` numbers, bin 0
    first (bin b counts the packets that found 4b .. 4b+3 packets queued ahead of them;
    the last bin every depth from 60 up)."""
    cells = [port * BINS + b for b in range(BINS)]
    return [sw.read_counter(QDEPTH_HIST, i)[i].packets for i in cells]


def deepest_queue(before: list[int], after: list[int]) -> int:
    """The deepest queue (packets, at bin resolution) that packets met between two
    readings of ``queue_depth_bins``: the lower edge of the highest bin that grew, 0
    when none did. Nothing is cleared on the switch: the difference is the measurement."""
    grew = [b for b in range(len(after)) if after[b] > before[b]]
    return max(grew) * BIN_PKTS if grew else 0


def start_sampling(sw: SwitchConnection, port: int, one_in_n: int) -> None:
    """Sample 1 in ``one_in_n`` packets leaving on ``port`` as ``flow_sample_t`` digests."""
    sw.enable_digest(DIGEST)
    sw.insert(sw.table_entry(SAMPLING, {"standard_metadata.egress_spec": port}, SAMPLE,
                             {"one_in_n": one_in_n}))


def collect_samples(sw: SwitchConnection, idle_s: float = 1.0) -> list[dict[str, int]]:
    """Every digest message received until none arrives for ``idle_s`` seconds, one dict
    per sampled packet (``src_addr``, ``src_port``, ``egress_port``, ``qdepth`` …)."""
    samples: list[dict[str, int]] = []
    while (digest_list := sw.get_digest(idle_s)) is not None:
        samples.extend(digest_list.data)
    return samples
