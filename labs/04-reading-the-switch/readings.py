"""Lab 04, reading the switch: port counters, a queue-depth register and sampled-flow
digests of a running fabric switch, read with the controller's P4Runtime client
(``controller.p4rt.SwitchConnection``).

Names are the fully qualified P4Runtime names of ``p4src/fabric.p4`` (p4src/README.md,
"Telemetry" and "FabricIngress.sampling.config"). The methods you need are all on
``SwitchConnection`` (controller/p4rt/connection.py): ``read_counter``,
``read_register``, ``write_register``, ``enable_digest``, ``table_entry``, ``insert``,
``get_digest``.
"""
from __future__ import annotations

from controller.p4rt import SwitchConnection

RX = "FabricIngress.telemetry.rx"
TX = "FabricEgress.telemetry.tx"
DROPS = "FabricIngress.telemetry.drops"
MAX_QDEPTH = "FabricEgress.telemetry.max_qdepth"
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


def max_queue_depth(sw: SwitchConnection, port: int, clear: bool = False) -> int:
    """The deepest egress queue (packets) ``port`` has seen since it was last cleared;
    ``clear=True`` writes 0 back after reading, to start a new measurement."""
    # TODO 2: sw.read_register(MAX_QDEPTH, port) returns {port: value}; when clear is
    #         True, write 0 back with sw.write_register(MAX_QDEPTH, port, 0).
    return 0


def start_sampling(sw: SwitchConnection, port: int, one_in_n: int) -> None:
    """Sample 1 in ``one_in_n`` packets leaving on ``port`` as ``flow_sample_t`` digests."""
    # TODO 3: turn the digest on (sw.enable_digest(DIGEST)), then insert an entry in
    #         SAMPLING: match {"standard_metadata.egress_spec": port}, action SAMPLE with
    #         {"one_in_n": one_in_n} (build it with sw.table_entry, write it with sw.insert).


def collect_samples(sw: SwitchConnection, idle_s: float = 1.0) -> list[dict[str, int]]:
    """Every digest message received until none arrives for ``idle_s`` seconds, one dict
    per sampled packet (``src_addr``, ``src_port``, ``egress_port``, ``qdepth`` …)."""
    # TODO 4: sw.get_digest(idle_s) returns the next DigestList (its .data is a list of
    #         dicts) or None after idle_s seconds of silence. Collect every dict.
    return []
