"""What every manager of one SmartNIC is told, whichever design it runs: which NIC, how to
reach its switch over P4Runtime, which policy, which program, and how it writes.

:class:`fornax.manager.ManagerConfig` (FORNAX) and :class:`fornax.baseline.BaselineConfig`
(the software-centric baseline) extend it with their own fields, so the CLI, the bench
and the scenario build both from one set of options.

Example::

    >>> o = NicManagerOptions(nic="nicA", grpc_addr="127.0.0.1:9559", device_id=1,
    ...                       policy_path=Path("vpc.policy"))
    >>> o.election_id, o.idle_timeout_s, o.batch
    ((0, 1), 30.0, 256)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from controller.p4rt.tls import ClientTls
from fornax.pipeline import WRITE_GAP_S
from p4src.smartnic import model as M


@dataclass(slots=True)
class NicManagerOptions:
    """The fields both managers share.

    ``p4info``/``device_config``: the pipeline to push (both None: use the one the switch
    runs, as a restarted manager does); ``table_size``: the program's session table size;
    ``tls``: the manager's own certificate (None: plaintext); ``idle_timeout_s``: a
    session (or flow) ages after this idle time; ``batch``: updates per Write;
    ``write_gap_s``: the least time between two Writes; ``event_log``: JSON lines of every
    event (None: none); ``write_timeout_s``: a Write's deadline."""

    nic: str
    grpc_addr: str
    device_id: int
    policy_path: Path
    election_id: tuple[int, int] = (0, 1)
    p4info: Optional[Path] = None
    device_config: Optional[Path] = None
    table_size: int = M.DEFAULT_SESSION_TABLE_SIZE
    tls: Optional[ClientTls] = None
    idle_timeout_s: float = 30.0
    batch: int = 256
    write_gap_s: float = WRITE_GAP_S
    event_log: Optional[Path] = None
    write_timeout_s: float = 10.0


__all__ = ["NicManagerOptions"]
