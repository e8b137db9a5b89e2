"""The p4sim switch process: ports, traffic manager (queues, rates, PFC), pcaps, logs,
a control API and the command line ``python -m p4sim switch`` (a drop-in for
``simple_switch_grpc``).

Modules: :mod:`.ports` (AF_PACKET and in-process ports), :mod:`.rxring` (the
AF_PACKET receive ring), :mod:`.ingress` (the ingress buffer, BMv2's input buffer),
:mod:`.pcap` (per-port captures), :mod:`.pfc` (IEEE 802.1Qbb frames), :mod:`.tm` (egress
queues), :mod:`.device` (``SwitchDevice``, what the P4Runtime server drives),
:mod:`.control` (the JSON-lines control API's server; its client is :mod:`p4sim.control_api`), :mod:`.main` (the
process).

Example::

    >>> from p4sim.switchd.tm import TrafficManager
    >>> TrafficManager(priority_queues=8).priority_queues
    8
"""
