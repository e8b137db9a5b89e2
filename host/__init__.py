"""The host side of Astral-P4: TCCL (``host.tccl``) and, later, the RoCEv2 NIC emulator and
the per-host agent. Hosts never write switch tables; they read the published hash model
and the topology file and meet the controller only through the agent protocol.

Example::

    >>> import host.tccl
    >>> host.tccl.__name__
    'host.tccl'
"""
