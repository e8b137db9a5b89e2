"""RoCEv2 NIC emulator: RC frames with ICRC, reliable QPs, DCQCN, PFC pause honouring, raw-socket I/O.

Modules (each pure logic except :mod:`host.nic.io` and :mod:`host.nic.udphold`; see
``host/nic/README.md``):

- :mod:`host.nic.frames` — RETH for Scapy, ICRC, pre-built frame templates, a fast parser.
- :mod:`host.nic.dcqcn` — notification point and reaction point state machines.
- :mod:`host.nic.pfc` — 802.1Qbb PAUSE parsing and per-priority pause timing.
- :mod:`host.nic.rc` — RC reliability: go-back-N requester, PSN-checking responder.
- :mod:`host.nic.counters` — per-flow counters (the report's ``flows``).
- :mod:`host.nic.qp` — sender and receiver queue pairs.
- :mod:`host.nic.io` — AF_PACKET frame I/O and the send/receive loops behind
  ``python -m host.nic send|recv``.
- :mod:`host.nic.udphold` — the UDP port held so the host's kernel sends no ICMP.
"""
