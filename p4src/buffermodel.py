"""The shared-buffer contract of ``fabric.p4``: dynamic PFC and ECN thresholds, their
table parameters and a bit-exact model of what the switch does.

A switch ASIC keeps its queues in one shared buffer and lets a queue (an ingress
priority group for PFC, an egress queue for ECN) grow while it is below
``alpha * (buffer - occupied)``: the dynamic-threshold rule of Choudhury & Hahne
("Dynamic queue length thresholds for shared-memory packet switches", IEEE/ACM ToN 6(2),
1998). A port alone on the switch may then queue deep; under incast the free buffer
shrinks and every threshold with it, so the switch pauses and marks early. Vendors
expose ``alpha`` as a power of two: SAI's ``SAI_BUFFER_PROFILE_ATTR_SHARED_DYNAMIC_TH``
is an ``int8`` ``n`` ("the threshold is set to the 2^n of available buffer of the
pool", opencomputeproject/SAI ``inc/saibuffer.h``) and SONiC buffer profiles take
``dynamic_th`` in ``-6..3`` (Dell Enterprise SONiC, ``sonic_qos_buffer``), i.e.
``alpha`` in 1/64 .. 8 — the range accepted here. A power of two needs no division in
P4: ``threshold = (free << code) >> 6`` with ``code = log2(alpha) + 6`` (0..9).

BMv2 and p4sim have no shared buffer, so ``include/control/buffer.p4`` keeps the count
(cells enqueued minus dequeued), and ``pfc.p4`` / ``ecn.p4`` derive from it:

* **PFC XOFF** (ingress, a packet admitted): its priority group holds
  ``ing >= alpha * free`` cells (free counted with the packet in) and is not paused:
  PAUSE.
* **PFC XON** (egress, the packet has left): ``ing <= max(xon_cells, XOFF - xon_offset)``
  with XOFF computed from the free buffer now (SAI's XON_TH / XON_OFFSET_TH rule), and
  paused: RESUME.
* **ECN** (egress, before the packet leaves the counts): its egress queue ``q`` (itself
  included) against ``kmin = alpha_min * free`` and ``kmax = alpha_max * free``: mark
  at ``q >= kmax``, RED between (the switch draws ``r`` in 0..254 and marks when
  ``r * (kmax - kmin) < pmax * (q - kmin)``).

This module owns that contract as :mod:`p4src.alarmmodel` owns the alarms': the
controller builds the entries from :class:`DynamicThresholds`, the tests compare the
switch with :class:`SharedBufferModel`. Nothing here imports p4sim or the controller.

Example::

    >>> alpha_code("1/8"), alpha_code(2), threshold_cells(alpha_code(0.5), 1000)
    (3, 7, 500)
    >>> alpha_code(16, "pfc.alpha")
    Traceback (most recent call last):
    ...
    ValueError: pfc.alpha: 16 is outside 1/64..8 (alpha must be a power of two: 2^-6 .. 2^3)
    >>> m = SharedBufferModel(DynamicThresholds(SharedBuffer(1000, 6), {3: PfcAlpha(1)}))
    >>> [m.arrive(1, 2, 3, 256).pause for _ in range(125)].index(True)   # 4 cells each
    124
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping, Optional, Union

BUFFER_TABLE = "FabricIngress.buffer.config"
BUFFER_ACTION = "FabricIngress.buffer.set_shared_buffer"
PFC_TABLE = "FabricIngress.pfc.thresholds"
PFC_DYNAMIC_ACTION = "FabricIngress.pfc.set_dynamic_thresholds"
PFC_ALPHA_TABLE = "FabricIngress.pfc.alpha"
PFC_ALPHA_ACTION = "FabricIngress.pfc.set_pfc_alpha"
ECN_TABLE = "FabricEgress.ecn.thresholds"
ECN_DYNAMIC_ACTION = "FabricEgress.ecn.set_ecn_dynamic"
ECN_ALPHA_TABLE = "FabricEgress.ecn.alpha"
ECN_ALPHA_ACTION = "FabricEgress.ecn.set_ecn_alpha"

#: alpha = 2 ** (code - ALPHA_CODE_ONE); the control plane accepts codes 0..9
ALPHA_CODE_ONE = 6
ALPHA_CODE_MIN = 0
ALPHA_CODE_MAX = 9
#: the data plane's field is 4 bits wide; codes 10..15 still compute (free << code) >> 6
ALPHA_CODE_BITS = 4
#: cell sizes the control plane accepts: 2^0 (bytes) .. 2^12 (4096-byte cells)
CELL_BYTES_LOG2_MAX = 12

_U32 = 0xFFFFFFFF
AlphaLike = Union[int, float, str, Fraction]


def alpha_code(alpha: AlphaLike, what: str = "alpha") -> int:
    """The data-plane code of ``alpha`` (a number, or a string such as ``"1/8"``,
    ``"0.25"``, ``"2"``): ``log2(alpha) + 6``. Anything that is not a power of two in
    1/64 .. 8 raises ``ValueError`` naming ``what`` and the reason.

    >>> [alpha_code(a) for a in ("1/64", 0.125, 1, "8")]
    [0, 3, 6, 9]
    >>> alpha_code(0.3, "ecn.kmin_alpha")
    Traceback (most recent call last):
    ...
    ValueError: ecn.kmin_alpha: 0.3 is not a power of two (alpha must be 2^n, n in -6..3: 1/64, 1/32, ... 4, 8)
    """
    if isinstance(alpha, bool):
        raise ValueError(f"{what}: {alpha!r} is not a number")
    try:
        value = Fraction(alpha.strip()) if isinstance(alpha, str) else Fraction(alpha)
    except (ValueError, ZeroDivisionError, TypeError):
        raise ValueError(f"{what}: {alpha!r} is not a number (write it as 0.125, 1/8 or 2)") from None
    if value <= 0 or value < Fraction(1, 64) or value > 8:
        raise ValueError(f"{what}: {alpha} is outside 1/64..8 "
                         "(alpha must be a power of two: 2^-6 .. 2^3)")
    num, den = value.numerator, value.denominator
    if (den == 1 and num & (num - 1) == 0) or (num == 1 and den & (den - 1) == 0):
        return (num.bit_length() - 1 if den == 1 else -(den.bit_length() - 1)) + ALPHA_CODE_ONE
    raise ValueError(f"{what}: {alpha} is not a power of two "
                     "(alpha must be 2^n, n in -6..3: 1/64, 1/32, ... 4, 8)")


def alpha_of(code: int) -> Fraction:
    """The alpha a code stands for.

    >>> str(alpha_of(3)), str(alpha_of(9))
    ('1/8', '8')
    """
    return Fraction(2) ** (code - ALPHA_CODE_ONE)


def threshold_cells(code: int, free_cells: int) -> int:
    """``alpha * free`` as the switch computes it: ``(free << code) >> 6`` (floor).

    >>> threshold_cells(0, 127), threshold_cells(9, 100)
    (1, 800)
    """
    return (free_cells << code) >> ALPHA_CODE_ONE


def _check_int(what: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what}: {value!r} is not an integer")
    if not low <= value <= high:
        raise ValueError(f"{what}: {value} is outside {low}..{high}")
    return value


@dataclass(frozen=True, slots=True)
class SharedBuffer:
    """The pool the program keeps: ``size_cells`` cells of ``2 ** cell_bytes_log2``
    bytes; a packet of ``n`` bytes takes ``ceil(n / cell)`` cells.

    >>> SharedBuffer(1000, 6).cells(65), SharedBuffer(1000, 0).cells(65)
    (2, 65)
    >>> SharedBuffer(0, 6)
    Traceback (most recent call last):
    ...
    ValueError: buffer.size_cells: 0 is outside 1..4294967295
    """

    size_cells: int
    cell_bytes_log2: int = 7

    def __post_init__(self) -> None:
        _check_int("buffer.size_cells", self.size_cells, 1, _U32)
        _check_int("buffer.cell_bytes_log2", self.cell_bytes_log2, 0, CELL_BYTES_LOG2_MAX)

    def cells(self, packet_length: int) -> int:
        """Cells a frame of ``packet_length`` bytes takes (the switch: 32-bit arithmetic)."""
        return ((packet_length + (1 << self.cell_bytes_log2) - 1) & _U32) >> self.cell_bytes_log2

    def table_params(self) -> dict[str, int]:
        """The parameters of ``FabricIngress.buffer.set_shared_buffer``."""
        return {"size_cells": self.size_cells, "cell_bytes_log2": self.cell_bytes_log2}


@dataclass(frozen=True, slots=True)
class PfcAlpha:
    """Dynamic PFC of one priority: XOFF at ``alpha * free`` cells of the priority
    group; XON at ``max(xon_cells, XOFF - xon_offset_cells)``.

    >>> PfcAlpha("1/2").table_params()
    {'alpha_code': 5, 'xon_cells': 0, 'xon_offset_cells': 8}
    """

    alpha: AlphaLike
    xon_cells: int = 0
    xon_offset_cells: int = 8

    def __post_init__(self) -> None:
        alpha_code(self.alpha, "pfc.alpha")
        _check_int("pfc.xon_cells", self.xon_cells, 0, _U32)
        _check_int("pfc.xon_offset_cells", self.xon_offset_cells, 0, _U32)

    @property
    def code(self) -> int:
        """The data-plane code of ``alpha``."""
        return alpha_code(self.alpha, "pfc.alpha")

    def table_params(self) -> dict[str, int]:
        """The parameters of ``FabricIngress.pfc.set_pfc_alpha``."""
        return {"alpha_code": self.code, "xon_cells": self.xon_cells,
                "xon_offset_cells": self.xon_offset_cells}


@dataclass(frozen=True, slots=True)
class EcnAlpha:
    """Dynamic ECN of one priority: RED between ``kmin_alpha * free`` and
    ``kmax_alpha * free`` cells with ``pmax_per_255`` (kmin_alpha == kmax_alpha: mark
    every packet from the threshold on).

    >>> EcnAlpha("1/8", "1/2", 51).table_params()
    {'kmin_alpha_code': 3, 'kmax_alpha_code': 5, 'pmax_per_255': 51}
    >>> EcnAlpha(1, "1/2")
    Traceback (most recent call last):
    ...
    ValueError: ecn.kmin_alpha: 1 is above ecn.kmax_alpha (1/2): kmin must not exceed kmax
    """

    kmin_alpha: AlphaLike
    kmax_alpha: AlphaLike
    pmax_per_255: int = 51

    def __post_init__(self) -> None:
        lo = alpha_code(self.kmin_alpha, "ecn.kmin_alpha")
        hi = alpha_code(self.kmax_alpha, "ecn.kmax_alpha")
        if lo > hi:
            raise ValueError(f"ecn.kmin_alpha: {self.kmin_alpha} is above ecn.kmax_alpha "
                             f"({self.kmax_alpha}): kmin must not exceed kmax")
        _check_int("ecn.pmax_per_255", self.pmax_per_255, 0, 255)

    def table_params(self) -> dict[str, int]:
        """The parameters of ``FabricEgress.ecn.set_ecn_alpha``."""
        return {"kmin_alpha_code": alpha_code(self.kmin_alpha, "ecn.kmin_alpha"),
                "kmax_alpha_code": alpha_code(self.kmax_alpha, "ecn.kmax_alpha"),
                "pmax_per_255": self.pmax_per_255}


@dataclass(frozen=True)
class DynamicThresholds:
    """Everything the dynamic mode writes: the pool, PFC and ECN alphas per priority
    (a priority without one is never paused / never marked) and the pause time.

    :meth:`from_mapping` reads it from a spec or scenario file and names the field of
    anything wrong.

    >>> d = DynamicThresholds.from_mapping({"buffer_cells": 4096, "pfc": {3: {"alpha": "1/8"}},
    ...                                    "ecn": {3: {"kmin_alpha": "1/64", "kmax_alpha": "1/16"}}})
    >>> d.pfc[3].code, d.ecn[3].table_params()["kmax_alpha_code"]
    (3, 2)
    >>> DynamicThresholds.from_mapping({"pfc": {3: {"alpha": 16}}}, "spec.yaml: thresholds")
    Traceback (most recent call last):
    ...
    ValueError: spec.yaml: thresholds.pfc.3.alpha: 16 is outside 1/64..8 (alpha must be a power of two: 2^-6 .. 2^3)
    """

    buffer: SharedBuffer
    pfc: Mapping[int, PfcAlpha] = field(default_factory=dict)
    ecn: Mapping[int, EcnAlpha] = field(default_factory=dict)
    pause_quanta: int = 0xFFFF

    def __post_init__(self) -> None:
        for what, table in (("pfc", self.pfc), ("ecn", self.ecn)):
            for prio in table:
                _check_int(f"{what} priority", prio, 0, 7)
        _check_int("pause_quanta", self.pause_quanta, 0, 0xFFFF)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str = "thresholds") -> "DynamicThresholds":
        """From ``{"buffer_cells", "cell_bytes_log2", "pause_quanta", "pfc": {prio:
        {"alpha", "xon_cells", "xon_offset_cells"}}, "ecn": {prio: {"kmin_alpha",
        "kmax_alpha", "pmax_per_255"}}}`` (defaults: :data:`DEFAULT_DYNAMIC`'s); an
        unknown key or a bad value raises ``ValueError`` naming ``where.field``."""
        known = {"buffer_cells", "cell_bytes_log2", "pause_quanta", "pfc", "ecn"}
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected a mapping, got {type(data).__name__}")
        for key in data:
            if key not in known:
                raise ValueError(f"{where}.{key}: unknown field (known: {', '.join(sorted(known))})")

        def sub(name: str, fn: Any, *args: Any, **kw: Any) -> Any:
            try:
                return fn(*args, **kw)
            except ValueError as exc:
                msg = str(exc)
                head, _, why = msg.partition(": ")
                field_name = head.split(".", 1)[-1] if "." in head else head
                raise ValueError(f"{where}.{name}{'.' + field_name if field_name else ''}: {why}") from None
            except TypeError as exc:
                raise ValueError(f"{where}.{name}: {exc}") from None

        d = DEFAULT_DYNAMIC
        size = data.get("buffer_cells", d.buffer.size_cells)
        log2 = data.get("cell_bytes_log2", d.buffer.cell_bytes_log2)
        try:
            buf = SharedBuffer(size, log2)
        except ValueError as exc:
            head, _, why = str(exc).partition(": ")
            key = "buffer_cells" if head.endswith("size_cells") else "cell_bytes_log2"
            raise ValueError(f"{where}.{key}: {why}") from None

        def per_prio(name: str, maker: Any, default: Mapping[int, Any]) -> dict[int, Any]:
            raw = data.get(name)
            if raw is None:
                return dict(default)
            if not isinstance(raw, Mapping):
                raise ValueError(f"{where}.{name}: expected a mapping priority -> settings")
            out = {}
            for prio, settings in raw.items():
                try:
                    p = int(prio)
                except (TypeError, ValueError):
                    raise ValueError(f"{where}.{name}.{prio}: not a priority (0..7)") from None
                if not 0 <= p <= 7:
                    raise ValueError(f"{where}.{name}.{prio}: not a priority (0..7)")
                if not isinstance(settings, Mapping):
                    raise ValueError(f"{where}.{name}.{prio}: expected a mapping")
                fields = maker.__dataclass_fields__
                for key in settings:
                    if key not in fields:
                        raise ValueError(f"{where}.{name}.{prio}.{key}: unknown field "
                                         f"(known: {', '.join(fields)})")
                out[p] = sub(f"{name}.{prio}", maker, **settings)
            return out

        pfc = per_prio("pfc", PfcAlpha, d.pfc)
        ecn = per_prio("ecn", EcnAlpha, d.ecn)
        quanta = data.get("pause_quanta", d.pause_quanta)
        try:
            return cls(buf, pfc, ecn, quanta)
        except ValueError as exc:
            raise ValueError(f"{where}.{exc}") from None


#: The testbed's dynamic mode: a pool of 2048 cells of 128 bytes (256 KiB); RoCE data
#: (priority 3) pauses at free/4 and marks between free/32 and free/8. With 1 KiB frames
#: (8 cells) a queue alone on the switch is marked from ~8 packets, always from ~28, as
#: the static RED 8..32; its priority group pauses at ~51 packets (static: 32); four
#: groups in incast pause at 32 packets each, eight at ~21 (p4src/README.md).
DEFAULT_DYNAMIC = DynamicThresholds(
    SharedBuffer(2048, 7),
    {3: PfcAlpha("1/4", xon_cells=0, xon_offset_cells=128)},
    {3: EcnAlpha("1/32", "1/8", 51)},
)


@dataclass(frozen=True, slots=True)
class Arrival:
    """What the switch did with a packet it admitted (see :meth:`SharedBufferModel.arrive`)."""

    cells: int
    ingress_index: int          # ingress_port * 8 + priority
    egress_index: int           # egress_port * 8 + priority
    ingress_port: int
    priority: int
    free_cells: int             # free with the packet in
    group_cells: int            # its priority group with it
    xoff_cells: Optional[int]   # None: no dynamic PFC for it
    pause: bool                 # a PAUSE left the ingress port


@dataclass(frozen=True, slots=True)
class Departure:
    """What the switch did when a packet left (see :meth:`SharedBufferModel.depart`).

    ``marked`` is None when the packet fell between kmin and kmax with ``pmax > 0``: the
    switch's random draw decides, with probability :attr:`mark_probability`."""

    queue_cells: int
    free_cells: int
    kmin_cells: Optional[int]
    kmax_cells: Optional[int]
    marked: Optional[bool]
    mark_probability: float
    resume: bool
    xon_cells: Optional[int]


class SharedBufferModel:
    """What ``buffer.p4``, ``pfc.p4`` and ``ecn.p4`` do in dynamic mode, packet by packet
    (bit-exact: 32-bit counters that do not fall below 0, 64-bit thresholds).

    ``pfc_ports`` / ``ecn_ports``: the ports with ``set_dynamic_thresholds`` /
    ``set_ecn_dynamic`` entries (None: every port).

    >>> m = SharedBufferModel(DynamicThresholds(SharedBuffer(100, 0), ecn={0: EcnAlpha(1, 1)}))
    >>> a = m.arrive(1, 2, 0, 60); m.depart(a).marked      # q 60 >= free 40
    True
    """

    def __init__(self, config: DynamicThresholds, pfc_ports: Optional[set[int]] = None,
                 ecn_ports: Optional[set[int]] = None) -> None:
        self.config = config
        self.pfc_ports = pfc_ports
        self.ecn_ports = ecn_ports
        self.used = 0
        self.ingress_cells: dict[int, int] = {}
        self.egress_cells: dict[int, int] = {}
        self.paused: dict[int, bool] = {}

    def _free(self, used: int) -> int:
        size = self.config.buffer.size_cells
        return size - used if size > used else 0

    def arrive(self, ingress_port: int, egress_port: int, priority: int,
               packet_length: int) -> Arrival:
        """A forwarded IPv4 frame of ``packet_length`` bytes enters the buffer."""
        cells = self.config.buffer.cells(packet_length)
        ing_i, eg_i = ingress_port * 8 + priority, egress_port * 8 + priority
        self.used = (self.used + cells) & _U32
        ing = self.ingress_cells[ing_i] = (self.ingress_cells.get(ing_i, 0) + cells) & _U32
        self.egress_cells[eg_i] = (self.egress_cells.get(eg_i, 0) + cells) & _U32
        free = self._free(self.used)
        alpha = self.config.pfc.get(priority)
        xoff, pause = None, False
        if alpha is not None and (self.pfc_ports is None or ingress_port in self.pfc_ports):
            xoff = threshold_cells(alpha.code, free)
            if not self.paused.get(ing_i) and ing >= xoff:
                self.paused[ing_i] = pause = True
        return Arrival(cells, ing_i, eg_i, ingress_port, priority, free, ing, xoff, pause)

    def depart(self, packet: Arrival, ect: bool = True) -> Departure:
        """``packet`` leaves its egress queue (``ect``: it is ECT(0) or ECT(1))."""
        egress_port = packet.egress_index >> 3
        q = self.egress_cells.get(packet.egress_index, 0)
        free = self._free(self.used)
        kmin = kmax = None
        marked: Optional[bool] = False
        prob = 0.0
        ecn = self.config.ecn.get(packet.priority)
        if ect and ecn is not None and (self.ecn_ports is None or egress_port in self.ecn_ports):
            p = ecn.table_params()
            kmin = threshold_cells(p["kmin_alpha_code"], free)
            kmax = threshold_cells(p["kmax_alpha_code"], free)
            pmax = p["pmax_per_255"]
            if q >= kmax:
                marked, prob = True, 1.0
            elif q >= kmin:
                # mark iff r * (kmax - kmin) < pmax * (q - kmin) for r in 0..254
                hits = sum(1 for r in range(255) if r * (kmax - kmin) < pmax * (q - kmin))
                prob = hits / 255
                marked = None if 0 < hits < 255 else hits == 255
        c = packet.cells
        self.used = self.used - c if self.used > c else 0
        self.egress_cells[packet.egress_index] = q - c if q > c else 0
        ing = self.ingress_cells.get(packet.ingress_index, 0)
        ing = self.ingress_cells[packet.ingress_index] = ing - c if ing > c else 0
        resume, xon = False, None
        if packet.xoff_cells is not None:
            alpha = self.config.pfc[packet.priority]
            xoff = threshold_cells(alpha.code, self._free(self.used))
            xon = max(alpha.xon_cells, xoff - alpha.xon_offset_cells)
            if self.paused.get(packet.ingress_index) and ing <= xon:
                self.paused[packet.ingress_index] = False
                resume = True
        return Departure(q, free, kmin, kmax, marked, prob, resume, xon)


def lone_port_xoff_cells(config: DynamicThresholds, priority: int, senders: int = 1) -> int:
    """Cells each of ``senders`` equal priority groups holds when it pauses, the buffer
    holding nothing else: the least ``g`` with ``g >= alpha * (B - senders * g)``, i.e.
    about ``alpha * B / (1 + senders * alpha)`` (Choudhury & Hahne's steady state).

    >>> cfg = DynamicThresholds(SharedBuffer(1000, 0), {3: PfcAlpha(1)})
    >>> lone_port_xoff_cells(cfg, 3), lone_port_xoff_cells(cfg, 3, senders=4)
    (500, 200)
    """
    code = config.pfc[priority].code
    size = config.buffer.size_cells
    g = 0
    while g < threshold_cells(code, max(size - senders * g, 0)):
        g += 1
    return g


__all__ = ["ALPHA_CODE_MAX", "ALPHA_CODE_MIN", "ALPHA_CODE_ONE", "Arrival", "BUFFER_ACTION",
           "BUFFER_TABLE", "DEFAULT_DYNAMIC", "Departure", "DynamicThresholds", "ECN_ALPHA_ACTION",
           "ECN_ALPHA_TABLE", "ECN_DYNAMIC_ACTION", "ECN_TABLE", "EcnAlpha", "PFC_ALPHA_ACTION",
           "PFC_ALPHA_TABLE", "PFC_DYNAMIC_ACTION", "PFC_TABLE", "PfcAlpha", "SharedBuffer",
           "SharedBufferModel", "alpha_code", "alpha_of", "lone_port_xoff_cells",
           "threshold_cells"]
