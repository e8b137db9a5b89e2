"""The TCCL agent: the per-host service GOR talks to (design in ``host/agent/README.md``).

* :class:`~host.agent.service.Agent` — serves ``AgentService`` (``MoveFlow``, ``Status``),
  registers the host's flows with GOR's ``FlowRegistry`` and reports finished moves.
* :class:`~host.agent.mover.QPMover` — applies moves to the NIC emulator's sender QPs.
* :class:`~host.agent.registry_client.RegistryClient` — the host's registry client.
* :class:`~host.agent.guard.OrderGuard` — the checks on every order (nonce, expiry,
  target host, flow) before it moves anything.

The wire contract lives in :mod:`astral_proto` (shared with ``controller.registry``).

>>> from host.agent import Agent, QPMover, RegistryClient
>>> Agent.__name__
'Agent'
"""
from host.agent.guard import OrderGuard, OrderRefused
from host.agent.mover import FlowMover, QPMover
from host.agent.registry_client import RegistryClient
from host.agent.service import Agent, AgentServicer, UnknownFlow

__all__ = ["Agent", "AgentServicer", "FlowMover", "OrderGuard", "OrderRefused", "QPMover",
           "RegistryClient", "UnknownFlow"]
