"""Lab 04, reading the switch: port counters, a queue-depth histogram (a counter too) and
sampled-flow digests of a running fabric switch, read with the controller's P4Runtime
client (``controller.p4rt.SwitchConnection``).

Names are the fully qualified P4Runtime names of ``p4src/fabric.p4`` (p4src/README.md,
"Telemetry" and "FabricIngress.sampling.config"). The methods you need are all on
``SwitchConnection`` (controller/p4rt/connection.py): ``read_counter``,
``enable_digest``, ``table_entry``, ``insert``, ``get_digest``.
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
    # TODO 1: sw.read_counter(NAME, port) returns {port: CounterData(packets, bytes)}.
    #         Read RX, TX and DROPS and fill in the six numbers.
    return {"rx_packets": 0, "rx_bytes": 0, "tx_packets": 0, "tx_bytes": 0,
            "drop_packets": 0, "drop_bytes": 0}


def queue_depth_bins(sw: SwitchConnection, port: int) -> list[int]:
    """Packets ``port`` has sent so far in each queue-depth bin: ``BINS`` numbers, bin 0
    first (bin b counts the packets that found 4b .. 4b+3 packets queued ahead of them;
    the last bin every depth from 60 up)."""
    # TODO 2: QDEPTH_HIST has BINS cells per port: the cell of bin b of port p is
    #         p * BINS + b. sw.read_counter(QDEPTH_HIST, index) returns
    #         {index: CounterData(packets, bytes)}; return the packets of each bin.
    return [0] * BINS


def deepest_queue(before: list[int], after: list[int]) -> int:
    """The deepest queue (packets, at bin resolution) that packets met between two
    readings of ``queue_depth_bins``: the lower edge of the highest bin that grew, 0
    when none did. Nothing is cleared on the switch: the difference is the measurement."""
    # TODO 3: subtract before from after bin by bin; find the highest bin whose count
    #         went up; return that bin times BIN_PKTS (0 if no bin went up).
    return 0


def start_sampling(sw: SwitchConnection, port: int, one_in_n: int) -> None:
    """Sample 1 in ``one_in_n`` packets leaving on ``port`` as ``flow_sample_t`` digests."""
    # TODO 4: turn the digest on (sw.enable_digest(DIGEST)), then insert an entry in
    #         SAMPLING: match {"standard_metadata.egress_spec": port}, action SAMPLE with
    #         {"one_in_n": one_in_n} (build it with sw.table_entry, write it with sw.insert).


def collect_samples(sw: SwitchConnection, idle_s: float = 1.0) -> list[dict[str, int]]:
    """Every digest message received until none arrives for ``idle_s`` seconds, one dict
    per sampled packet (``src_addr``, ``src_port``, ``egress_port``, ``qdepth`` …)."""
    # TODO 5: sw.get_digest(idle_s) returns the next DigestList (its .data is a list of
    #         dicts) or None after idle_s seconds of silence. Collect every dict.
    return []
