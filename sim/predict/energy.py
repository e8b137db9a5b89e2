"""Energy of one training iteration and per token (issue 31, item 7): the software form of
the power and cooling figures of a training cluster.

Per iteration, on the critical stage's timeline (the iteration time of the prediction):

* each GPU draws its board power while its compute stream runs (``tdp_W`` from the
  datasheet, or its ``power_limit_W``), ``idle_W`` + a third of the way to the board power
  while it waits on an exposed collective (its NVLink/NIC engines and SMs busy with NCCL),
  ``idle_W`` in the pipeline bubble and the fixed overheads;
* every NIC of the job (one per GPU) draws ``nic_W`` for the whole iteration; the job's
  switches — a non-blocking two-tier fabric of ``switch_ports``-port switches, one NIC per
  GPU: ``N/(ports/2)`` leaves and half as many spines — ``switch_W`` each; every server
  ``server_W`` more (CPUs, memory, fans, NVSwitches);
* the facility multiplies the IT power by ``pue``.

The ``energy`` section of a job sets these (defaults below: ``tdp_W`` / ``idle_W`` from the
GPU preset; the others are typical figures, given as assumptions, not from a cited
datasheet: set yours). Reported: joules per iteration and per token, average power,
GPU share.

Example::

    >>> e = iteration_energy(EnergySpec(), gpus=8, compute_s=0.8, comm_s=0.1, idle_s=0.1,
    ...                      gpu_busy_W=700.0, gpu_idle_W=90.0, switches=0.5, servers=1, tokens=8192)
    >>> round(e.gpu_J), round(e.total_J), round(e.per_token_J, 2)
    (4787, 8671, 1.06)
"""
from __future__ import annotations

from dataclasses import dataclass

from sim.topology import SimInputError


@dataclass(slots=True)
class EnergySpec:
    """The ``energy`` section (module docstring)."""

    pue: float = 1.25
    nic_W: float = 25.0
    switch_W: float = 1500.0
    switch_ports: int = 128
    server_W: float = 1200.0
    gpu_idle_W: float = -1.0          # -1: the preset's idle_W
    gpu_busy_W: float = -1.0          # -1: the preset's power limit or TDP

    def validate(self, source: str) -> None:
        """``SimInputError`` naming a field out of range."""
        if not 1.0 <= self.pue <= 3.0:
            raise SimInputError(f"{source}: energy.pue: a power usage effectiveness in [1, 3], got {self.pue}")
        if self.switch_ports < 2:
            raise SimInputError(f"{source}: energy.switch_ports: at least 2, got {self.switch_ports}")
        for k in ("nic_W", "switch_W", "server_W"):
            if getattr(self, k) < 0:
                raise SimInputError(f"{source}: energy.{k}: watts >= 0, got {getattr(self, k)}")
        for k in ("gpu_idle_W", "gpu_busy_W"):
            v = getattr(self, k)
            if v != -1.0 and v < 0:
                raise SimInputError(f"{source}: energy.{k}: watts >= 0 (or -1: the preset's), got {v}")


@dataclass(frozen=True, slots=True)
class IterationEnergy:
    """Joules of one iteration by part, and per token."""

    gpu_J: float
    nic_J: float
    switch_J: float
    server_J: float
    pue: float
    seconds: float
    tokens: float

    @property
    def it_J(self) -> float:
        """IT equipment joules."""
        return self.gpu_J + self.nic_J + self.switch_J + self.server_J

    @property
    def total_J(self) -> float:
        """Facility joules (× PUE)."""
        return self.it_J * self.pue

    @property
    def per_token_J(self) -> float:
        """Facility joules per token trained."""
        return self.total_J / self.tokens

    @property
    def power_kW(self) -> float:
        """Average facility power."""
        return self.total_J / self.seconds / 1e3


def fabric_switches(gpus: int, ports: int) -> float:
    """Switches of a non-blocking two-tier fabric for ``gpus`` NICs (module docstring)."""
    return 1.5 * gpus / (ports / 2.0)


def iteration_energy(spec: EnergySpec, gpus: int, compute_s: float, comm_s: float, idle_s: float,
                     gpu_busy_W: float, gpu_idle_W: float, switches: float, servers: float,
                     tokens: float) -> IterationEnergy:
    """Energy of one iteration (module docstring); the three times add up to the iteration."""
    t = compute_s + comm_s + idle_s
    comm_W = gpu_idle_W + (gpu_busy_W - gpu_idle_W) / 3.0
    gpu = gpus * (compute_s * gpu_busy_W + comm_s * comm_W + idle_s * gpu_idle_W)
    return IterationEnergy(gpu, gpus * spec.nic_W * t, switches * spec.switch_W * t, servers * spec.server_W * t,
                           spec.pue, t, tokens)


__all__ = ["EnergySpec", "IterationEnergy", "fabric_switches", "iteration_energy"]
