"""Flows of the RoCEv2 NIC emulator on the live testbed: elephants or a collective's flows,
source ports random (seeded) or TCCL-planned, per-flow NIC reports and per-uplink counters.

One run (:func:`run_traffic`) on a running, programmed testbed:

1. the flows (:class:`NicFlow`, :mod:`testbed.traffic.flows`): ``count`` elephants from one
   block's servers to the next block's on one rail (:func:`elephant_pairs`), or the
   inter-server transfers of a collective planned by :mod:`host.tccl.planner`
   (:func:`collective_pairs`);
2. their UDP source ports and NIC ports (:func:`plan_ports`): ``random`` (distinct, from a
   seed; each QP on the NIC port the bond's hash picks) or ``tccl``
   (:class:`host.tccl.ports.PortPlanner` on the programmed hash model,
   ``FabricProgrammer.hash_model()``; on dual-port NICs
   :func:`host.tccl.dualport.plan_dualport`, NIC port and source port together), and the
   uplink the model predicts for each;
3. one ``python -m host.nic recv`` per destination NIC, probed until its raw socket is
   open, then one ``python -m host.nic send`` per (source NIC, destination NIC) pair (one
   QP per flow), started in the hosts' namespaces with ``mnexec -a <host shell pid>`` and
   recorded by PID in the testbed state (kind ``"traffic"``) so that ``make stop`` also
   ends them (:class:`NicFleet`, :mod:`testbed.traffic.fleet`);
4. the switches' ``FabricEgress.telemetry.tx`` counters of every leaf uplink read before
   and, once they stop changing, after (P4Runtime reads only; :mod:`testbed.traffic.counters`);
5. SIGTERM to every NIC process, their JSON reports merged per flow (sender: sent, CNPs
   received, pauses, final DCQCN rate; receiver: goodput, CE marks, CNPs sent).

Modules: ``flows`` (pairs, ports, QPNs, predicted uplinks), ``nicproc`` (one NIC process:
options, command lines, RoCE sink), ``probe`` (bounded readiness and settling probes),
``fleet`` (:class:`NicFleet`), ``counters`` (uplink counters), ``run`` (:func:`run_traffic`
and its result), ``live`` (:func:`testbed_up`), ``cli`` (``python -m testbed.traffic``).

>>> from topo.model import build_fabric
>>> fab = build_fabric()
>>> elephant_pairs(fab, rail=0, count=3)
[('10.0.0.1', '10.1.0.1'), ('10.0.0.2', '10.1.0.1'), ('10.0.0.1', '10.1.0.2')]
"""
from testbed.traffic.counters import (TX_COUNTER, leaf_uplinks, max_over_mean, read_uplink_tx,
                                   settled_uplink_tx)
from testbed.traffic.fleet import READY_TIMEOUT_S, FleetError, NicFleet
from testbed.traffic.flows import (FIRST_QPN, LEAF_UPLINK_GROUP, PORT_MODES, QPNS_PER_PAIR,
                                ROCE_DPORT, SPORT_RANGE, NicFlow, PortChoice, build_flows,
                                choose_ports, collective_pairs, elephant_pairs, plan_ports,
                                predict_uplink, uplink_port_of)
from testbed.traffic.live import LiveTestbed, testbed_unavailable, testbed_up
from testbed.traffic.nicproc import (CLONE_NEWNET, NicOptions, NicProcess, bind_roce_sink,
                                  receiver_command, sender_command)
from testbed.traffic.probe import packet_socket_open, poll_until, read_until_stable
from testbed.traffic.run import (FlowResult, TrafficOptions, TrafficResult, delivery,
                              merge_reports, plan_flows, run_traffic)

__all__ = ["CLONE_NEWNET", "FIRST_QPN", "FleetError", "FlowResult", "LEAF_UPLINK_GROUP",
           "LiveTestbed", "NicFleet", "NicFlow", "NicOptions", "NicProcess", "PORT_MODES", "PortChoice",
           "QPNS_PER_PAIR", "READY_TIMEOUT_S", "ROCE_DPORT", "SPORT_RANGE", "TX_COUNTER",
           "TrafficOptions", "TrafficResult", "bind_roce_sink", "build_flows", "choose_ports",
           "collective_pairs", "delivery", "elephant_pairs", "leaf_uplinks", "max_over_mean",
           "merge_reports",
           "packet_socket_open", "plan_flows", "plan_ports", "poll_until", "predict_uplink", "read_uplink_tx",
           "read_until_stable", "receiver_command", "run_traffic", "sender_command",
           "settled_uplink_tx", "testbed_unavailable", "testbed_up", "uplink_port_of"]
