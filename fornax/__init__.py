"""FORNAX: hardware-centric session management for a SmartNIC in a VPC (Tencent,
SIGCOMM 2025), on the v1model program ``p4src/smartnic/smartnic.p4``.

The manager (one process per SmartNIC) reaches its switch only through P4Runtime, as
the GOR controller does: it never imports p4sim, the testbed or a scenario. See
``fornax/README.md``.
"""
