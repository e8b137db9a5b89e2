"""Per-packet execution context shared by the compiled program and the v1model driver.

The generated code reads the packet through it (parser cursor), writes the deparsed bytes
to it, and records the side effects of externs (clone, resubmit, recirculate, digest,
truncate) that the v1model driver (:mod:`p4sim.v1model.switch`) carries out after a block
returns.

Example::

    >>> ctx = PacketContext(b"\\x01\\x02\\x03", now_us=10)
    >>> ctx.remaining_bytes()
    3
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional


@dataclass
class CloneRequest:
    """``clone``/``clone_preserving_field_list`` called in ingress (``I2E``) or egress (``E2E``)."""

    kind: str  # "I2E" or "E2E"
    session: int
    field_list: Optional[int] = None  # @field_list index of the user metadata to keep


@dataclass
class PacketContext:
    """Everything about one packet's pass through the pipeline that is not P4 state."""

    data: bytes
    now_us: int = 0
    offset_bits: int = 0            # parser cursor into ``data``
    emitted: bytearray = field(default_factory=bytearray)  # deparser output (headers)
    clone: Optional[CloneRequest] = None   # BMv2 keeps only the last clone call per block
    resubmit: Optional[int] = None         # @field_list index to keep, or None
    recirculate: Optional[int] = None      # @field_list index to keep, or None
    digests: list[tuple[str, int, tuple[Any, ...]]] = field(default_factory=list)
    # (digest name, receiver argument, values of the digest struct's fields in order)
    truncate_bytes: Optional[int] = None
    packet_length_delta: int = 0           # bytes added by setValid() minus removed by setInvalid()
    log: Optional[Callable[[str], None]] = None  # per-packet trace sink (None = no trace)
    std: Any = None                        # standard_metadata of the block being run
    dmeter: dict[str, Optional[int]] = field(default_factory=dict)  # colour of the last hit, per direct meter

    def remaining_bytes(self) -> int:
        return len(self.data) - (self.offset_bits >> 3)

    def payload(self) -> bytes:
        """The bytes the parser did not consume (carried after the emitted headers)."""
        return self.data[self.offset_bits >> 3:]
