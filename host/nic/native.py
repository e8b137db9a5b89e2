"""The NIC emulator's per-frame hot loop in C (``host/nic/c/nicfast.c``), loaded through ctypes.

The C is compiled at first use with the system gcc and cached by its hash in p4sim's
build cache (:mod:`p4sim.cbuild`, the repository's one: ``$P4SIM_NATIVE_CACHE``, else
``~/.cache/p4sim/native``). It does only the work each frame costs:

* **tx** (:class:`NativeTx`, :class:`NativeQP`): a sender QP's due frames are made from
  its templates straight into a ``sendmmsg`` arena (PSN, AckReq, RETH, ICRC), paced, with
  the RC requester's sequence bookkeeping (``SenderQP.poll_into``); the replies Python
  makes (CNPs, ACKs, NAKs) are copied into the same arena first; one ``sendmmsg`` loop
  with :class:`~host.nic.mmsg.MmsgSender`'s rules sends them all in order.
* **rx** (:class:`NativeRx`): ``recvmmsg`` with ``PacketSocket.recv_many``'s rules, and
  for every frame the parse of :func:`~host.nic.frames.parse_roce` and the check of
  :func:`~host.nic.frames.verify_icrc`, as one record of integers.
* **a sender's burst** (:class:`NativeBurst`, ``NicPort.run``): the wait-and-send loop
  between two Python steps also takes the replies that only move state forward, a
  cumulative ACK (the requester's acked PSN, the AETH's MSN) and a CNP (DCQCN's rate
  cut), and runs DCQCN's timers and byte counter (``dcqcn.ReactionPoint``'s arithmetic,
  the same doubles): no Python step per ACK, CNP or rate-timer expiry.

Python keeps the control: whether a QP may send now (PFC, the retry timer), a NAK's
go-back-N, rate changes outside a burst (:meth:`SenderQP.poll_into`'s fill stops at the
frame that ends a DCQCN byte-counter round, and at a message end when a source-port
move waits), QP setup (templates), and every counter it reports. ``NicPort(native=True)``
uses it; the frames and counters are the Python path's, byte for byte
(``tests/host/test_nic_native.py``). No compiler: :func:`nic_lib` returns None, says why
once, and the Python path runs.

Example::

    >>> native_status()[0] in (True, False)
    True
"""
from __future__ import annotations

import ctypes
import errno
import logging
import threading
from pathlib import Path
from typing import Optional

from p4sim.cbuild import NativeBuildError, build

C_SOURCE = Path(__file__).resolve().parent / "c" / "nicfast.c"
SLOT_BYTES = 16384
"""An arena slot (as :data:`host.nic.mmsg.SLOT_BYTES`): a 4 KiB-MTU frame fits."""
TX_SLOTS = 256
"""Frames one tx arena holds; a step with more flushes on the way."""
RX_SLOTS = 64
"""Frames one ``recvmmsg`` round reads at most (:data:`host.nic.mmsg.BATCH`)."""
FILL_MAX = 64
"""Frames one :meth:`NativeQP.fill` makes at most (the ``ackreqs`` array's size)."""

# State words of nicc_qp_fill (the C enum's order).
(S_NEXT, S_HIGH, S_ACKED, S_TOTAL, S_WINDOW, S_WINDOW_PKTS, S_ACKREQ_EVERY, S_PER_MSG,
 S_START_PSN, S_MSG_BYTES, S_MTU, S_LAST_LEN, S_BASE_VA, S_RKEY, S_RATE_LIMIT, S_BC_LEFT,
 S_STOP_AT_END, S_OUT_N, S_OUT_RETX, S_OUT_MSGS, S_OUT_BYTES, S_OUT_PAYLOAD, S_OUT_ACKREQS,
 S_OUT_LAST_END, S_OUT_AGAIN, S_SKIP,
 S_PEER_IP, S_SQPN, S_REACT, S_ACKED_MSN, S_RP_TIMER_ROUNDS, S_RP_BYTE_ROUNDS, S_RP_CNPS,
 S_RP_DECREASES, S_RP_PKTS, S_RP_BC_PKTS, S_RP_FR_ROUNDS,
 S_OUT_PROGRESS, S_OUT_ACKED_MSGS, S_OUT_CNPS, S_OUT_RX, S_WORDS) = range(42)
D_NOW, D_NEXT_AT, D_GAP, D_SLACK, D_FIRST_T, D_LAST_T, D_RX_FIRST_T, D_RX_LAST_T, D_WORDS = range(9)
# DCQCN reaction point words (dcqcn.ReactionPoint's state and DcqcnParams').
(RP_RATE, RP_TARGET, RP_ALPHA, RP_NOW, RP_NEXT_ALPHA, RP_NEXT_RATE, RP_LAST_DEC, RP_LINE, RP_MIN,
 RP_G, RP_ALPHA_TIMER, RP_RATE_TIMER, RP_AI, RP_HAI, RP_MIN_DEC, RP_WORDS) = range(16)
RP_OP_ADVANCE, RP_OP_SENT, RP_OP_CNP = range(3)
ACK_CAP = 256
"""ACK requests one QP may log in a burst (:meth:`NativeBurst.run`) before Python takes them."""
BURST_MAX_S = 0.003
"""The longest a sender's burst runs in C without Python (its stop flag, the agent's lock,
the metrics): a signal cuts it short at once. 3 ms, about as long as a burst ran when every
ACK ended one: the agent's lock is held for the burst, and with 20 ms GOR's moves waited
for it (quiet machine, 6 default stories each: loop 0.28-0.41 s in 4 of 6 with 3 ms, in 2 of
6 with 20 ms; scenarios/README.md)."""
BURST_WHY = ("deadline", "a frame for Python", "control", "nothing to send", "error")
RX_BURST_WHY = ("deadline", "a batch for Python", "a signal", "error")
RX_BURST_DEADLINE, RX_BURST_PYTHON, RX_BURST_SIGNAL, RX_BURST_ERROR = range(4)
"""Why a receiver's burst (:meth:`NativeReplies.burst`) ended, by ``out[2]``."""
# Record words of nicc_rx_recv, one record per frame.
(R_OFF, R_LEN, R_KIND, R_L3, R_DSCP, R_ECN, R_SPORT, R_OPCODE, R_BECN, R_DQPN, R_ACKREQ,
 R_PSN, R_PAYLOAD, R_EXT_AT, R_EXT_LEN, R_ICRC_OK, R_SRC_IP, R_DST_IP, R_FAST, R_WORDS) = range(20)
# Flow words of nicc_rx_fast, one row per receiver flow.
(F_IP, F_DQPN, F_SPORT, F_EXPECTED, F_MSN, F_ACK_PENDING, F_NAK_SENT, F_POISONED, F_TOUCHED,
 F_PKTS, F_BYTES, F_PAYLOAD, F_MSGS, F_CE, F_CNPS, F_ACKS, F_WORDS) = range(17)
RX_FLOWS = 256
"""Receiver flows the C accepts frames for; more are all handled in Python."""
KIND_OTHER, KIND_PFC, KIND_ROCE = 0, 1, 2
KIND_SLOTS = {"only": 0, "first": 1, "middle": 2, "last": 3}

log = logging.getLogger("host.nic.native")
_LOCK = threading.Lock()
_LIB: Optional[ctypes.CDLL] = None
_REASON: Optional[str] = None
_vp = ctypes.c_void_p
_i64p = ctypes.POINTER(ctypes.c_int64)
_dp = ctypes.POINTER(ctypes.c_double)


def _load() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(build(C_SOURCE.read_text(), "host.nic hot loop")), use_errno=True)
    i, i64, u32 = ctypes.c_int, ctypes.c_int64, ctypes.c_uint32
    sig = {
        "nicc_crc32": (u32, [u32, ctypes.c_char_p, i64]),
        "nicc_tx_new": (_vp, [i, i]), "nicc_tx_free": (None, [_vp]), "nicc_tx_count": (i, [_vp]),
        "nicc_tx_push": (i, [_vp, ctypes.c_char_p, i64]),
        "nicc_tx_frame": (_vp, [_vp, i, _i64p]),
        "nicc_tx_flush": (i, [_vp, i, _i64p]),
        "nicc_tpl_new": (_vp, []), "nicc_tpl_free": (None, [_vp]),
        "nicc_tpl_set": (i, [_vp, i, ctypes.c_char_p, i, u32, ctypes.c_char_p, i, i]),
        "nicc_qp_fill": (i, [_vp, _vp, _i64p, _dp, _i64p, i]),
        "nicc_burst": (i64, [_vp, i, i, ctypes.POINTER(_vp), ctypes.POINTER(_i64p), ctypes.POINTER(_dp),
                             ctypes.POINTER(_dp), ctypes.POINTER(_i64p), ctypes.POINTER(_dp), i, i, _vp, _i64p,
                             i, ctypes.c_double, _i64p]),
        "nicc_rp_op": (None, [_dp, _i64p, i, ctypes.c_double, i64]),
        "nicc_qp_instant": (None, [_vp, _vp, _i64p, _dp, _dp, _i64p, _dp, _i64p, _vp, i, i, ctypes.c_double,
                                   _i64p]),
        "nicc_rx_new": (_vp, [i, i, i]), "nicc_rx_free": (None, [_vp]), "nicc_rx_buf": (_vp, [_vp]),
        "nicc_rx_recv": (i, [_vp, i, i, i, _i64p]),
        "nicc_rx_fast": (i, [_i64p, i, _i64p, i, _i64p, i, i, _dp, ctypes.c_double, ctypes.c_double]),
        "nicc_rxr_new": (_vp, [i]), "nicc_rxr_free": (None, [_vp]),
        "nicc_rxr_set": (i, [_vp, i, ctypes.c_char_p, i, u32, ctypes.c_char_p, i, ctypes.c_char_p, i]),
        "nicc_rx_replies": (i, [_i64p, i, _i64p, i, _vp, _vp, i]),
        "nicc_rx_burst": (i, [_vp, i, i, i, _i64p, _i64p, i, _i64p, i, i, _dp, ctypes.c_double, _dp, _vp, _vp, i,
                              ctypes.c_double, _i64p]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def nic_lib() -> Optional[ctypes.CDLL]:
    """The compiled hot loop, or None (no GCC, or it failed: said once, with why)."""
    global _LIB, _REASON
    with _LOCK:
        if _LIB is None and _REASON is None:
            try:
                _LIB = _load()
            except (NativeBuildError, OSError) as exc:
                _REASON = str(exc)
                log.warning("host.nic: the native hot loop is off, the Python path runs: %s", _REASON)
        return _LIB


def native_status() -> tuple[bool, str]:
    """``(True, "")`` when the hot loop is built and loaded, else ``(False, why)``."""
    lib = nic_lib()
    return (True, "") if lib is not None else (False, _REASON or "not loaded")


def frame_bytes(head: bytes, tail: bytes, ext_len: int) -> int:
    """The bytes of a frame nicc_qp_fill makes from a template's parts (head, the BTH's
    PSN word, a RETH when ``ext_len`` is 16, the padded payload, the ICRC).

    >>> frame_bytes(bytes(50), bytes(1024), 16)
    1098
    """
    return len(head) + 4 + (16 if ext_len == 16 else 0) + len(tail) + 4


class NativeTx:
    """One tx arena: frames pushed or filled in order, sent by :meth:`flush`.

    >>> import socket
    >>> if native_status()[0]:
    ...     a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    ...     tx = NativeTx(nic_lib())
    ...     _ = tx.push(b"one"); _ = tx.push(b"two")
    ...     print(tx.count, tx.flush(a.fileno()), b.recv(9), b.recv(9))
    ... else:
    ...     print(2, 0, b'one', b'two')
    2 0 b'one' b'two'
    """

    def __init__(self, lib: ctypes.CDLL, slots: int = TX_SLOTS) -> None:
        self.lib = lib
        self.slots = slots
        self.ptr = lib.nicc_tx_new(slots, SLOT_BYTES)
        if not self.ptr:
            raise MemoryError("nicc_tx_new")
        self._refused = ctypes.c_int64()

    @property
    def count(self) -> int:
        """Frames waiting in the arena."""
        return int(self.lib.nicc_tx_count(self.ptr))

    def push(self, frame: bytes) -> bool:
        """Copy ``frame`` into the next slot; False when it does not fit (flush first;
        a frame over a slot goes alone)."""
        return self.lib.nicc_tx_push(self.ptr, frame, len(frame)) == 0

    def frames(self) -> list[bytes]:
        """The frames waiting (a copy, for tests)."""
        out, size = [], ctypes.c_int64()
        for i in range(self.count):
            at = self.lib.nicc_tx_frame(self.ptr, i, ctypes.byref(size))
            out.append(ctypes.string_at(at, size.value))
        return out

    def flush(self, fd: int) -> int:
        """Send every waiting frame (each tried once, in order); returns how many the
        kernel refused. OSError for another error."""
        err = self.lib.nicc_tx_flush(self.ptr, fd, ctypes.byref(self._refused))
        if err:
            raise OSError(err, f"sendmmsg: {errno.errorcode.get(err, err)}")
        return self._refused.value

    def close(self) -> None:
        if self.ptr:
            self.lib.nicc_tx_free(self.ptr)
            self.ptr = None

    def __del__(self) -> None:
        self.close()


class NativeQP:
    """The C side of one sender QP: its templates and the state words of a fill."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.tpl = lib.nicc_tpl_new()
        if not self.tpl:
            raise MemoryError("nicc_tpl_new")
        self.s = (ctypes.c_int64 * S_WORDS)()
        self.d = (ctypes.c_double * D_WORDS)()
        self.rp = (ctypes.c_double * RP_WORDS)()
        self.ackreqs = (ctypes.c_int64 * ACK_CAP)()
        self.acktimes = (ctypes.c_double * ACK_CAP)()
        self._out = (ctypes.c_int64 * 3)()

    def set_template(self, kind: str, head: bytes, crc_head: int, tail: bytes, ext_len: int) -> None:
        """Template ``kind`` (only, first, middle, last): frames.FrameTemplate's parts.
        ValueError for a frame larger than an arena slot (:func:`frame_bytes`)."""
        size = frame_bytes(head, tail, ext_len)
        if size > SLOT_BYTES:
            raise ValueError(f"template {kind}: a frame of {size} bytes exceeds the native arena's "
                             f"{SLOT_BYTES}-byte slot")
        if self.lib.nicc_tpl_set(self.tpl, KIND_SLOTS[kind], head, len(head), crc_head & 0xFFFFFFFF,
                                 tail, len(tail), ext_len) != 0:
            raise ValueError(f"template {kind}: head of {len(head)} bytes does not fit")

    def fill(self, tx: NativeTx, limit: int) -> int:
        """Frames into ``tx`` as the state words say (see nicc_qp_fill)."""
        return int(self.lib.nicc_qp_fill(tx.ptr, self.tpl, self.s, self.d, self.ackreqs,
                                         min(limit, FILL_MAX)))

    def rp_op(self, op: int, now: float, packets: int = 0) -> None:
        """One DCQCN reaction-point operation in C on :attr:`rp` and :attr:`s` (for tests:
        ``RP_OP_ADVANCE``, ``RP_OP_SENT`` of ``packets``, ``RP_OP_CNP``)."""
        self.lib.nicc_rp_op(self.rp, self.s, op, now, packets)

    def instant(self, tx: NativeTx, rx: "NativeRx", n: int, limit: int, now: float) -> tuple[int, int, bool]:
        """One instant of a burst (for tests): the first ``n`` records of ``rx``'s last
        :meth:`NativeRx.recv` taken while they are this QP's ACKs and CNPs, then its frames
        into ``tx``; returns (replies taken, frames made, Python's turn)."""
        out = self._out
        self.lib.nicc_qp_instant(tx.ptr, self.tpl, self.s, self.d, self.rp, self.ackreqs, self.acktimes,
                                 rx.rec, self.lib.nicc_rx_buf(rx.ptr), n, limit, now, out)
        return int(out[0]), int(out[1]), bool(out[2])

    def close(self) -> None:
        if self.tpl:
            self.lib.nicc_tpl_free(self.tpl)
            self.tpl = None

    def __del__(self) -> None:
        self.close()


class NativeBurst:
    """The sender's wait-and-send loop in C over a fixed list of QPs (see nicc_burst)."""

    def __init__(self, lib: ctypes.CDLL, qps: "list[NativeQP]") -> None:
        n = len(qps)
        self.lib, self.n = lib, n
        self.tpls = (_vp * n)(*[q.tpl for q in qps])
        self.ss = (_i64p * n)(*[ctypes.cast(q.s, _i64p) for q in qps])
        self.ds = (_dp * n)(*[ctypes.cast(q.d, _dp) for q in qps])
        self.rps = (_dp * n)(*[ctypes.cast(q.rp, _dp) for q in qps])
        self.acks = (_i64p * n)(*[ctypes.cast(q.ackreqs, _i64p) for q in qps])
        self.ackt = (_dp * n)(*[ctypes.cast(q.acktimes, _dp) for q in qps])
        self.out = (ctypes.c_int64 * 6)()

    def run(self, tx: NativeTx, fd: int, tx_burst: int, rx: "NativeRx", rx_limit: int, deadline: float) -> int:
        """Run until ``deadline`` (monotonic s) or Python's turn; returns frames made
        (``out``: frames flushed, refused, why, errno, frames left in ``rx``'s records for
        Python, replies taken in C)."""
        return int(self.lib.nicc_burst(tx.ptr, fd, self.n, self.tpls, self.ss, self.ds, self.rps, self.acks,
                                       self.ackt, ACK_CAP, tx_burst, rx.ptr, rx.rec, min(rx_limit, rx.slots),
                                       deadline, self.out))


class NativeRx:
    """One rx arena: :meth:`recv` reads and classifies; the frames stay in :attr:`mv`
    (slot ``R_OFF``, ``R_LEN`` bytes) until the next call."""

    def __init__(self, lib: ctypes.CDLL, names: bool, slots: int = RX_SLOTS) -> None:
        self.lib = lib
        self.slots = slots
        self.names = names
        self.ptr = lib.nicc_rx_new(slots, SLOT_BYTES, int(names))
        if not self.ptr:
            raise MemoryError("nicc_rx_new")
        buf = (ctypes.c_uint8 * (slots * SLOT_BYTES)).from_address(lib.nicc_rx_buf(self.ptr))
        self.mv = memoryview(buf).cast("B")
        self.rec = (ctypes.c_int64 * (slots * R_WORDS))()

    def recv(self, fd: int, limit: int, rounds: int) -> int:
        """Up to ``limit`` frames in at most ``rounds`` ``recvmmsg`` calls (a packet
        socket's own transmissions left out; ENETDOWN skipped); returns how many, whose
        records are ``rec[i * R_WORDS:(i + 1) * R_WORDS]``. OSError for another error."""
        got = self.lib.nicc_rx_recv(self.ptr, fd, min(limit, self.slots), rounds, self.rec)
        if got < 0:
            raise OSError(-got, f"recvmmsg: {errno.errorcode.get(-got, -got)}")
        return int(got)

    def fast(self, got: int, flows: "ctypes.Array[ctypes.c_int64]", nflows: int,
             local: "ctypes.Array[ctypes.c_int64]", nlocal: int, verify: bool,
             last_cnp: "Optional[ctypes.Array[ctypes.c_double]]" = None, now: float = 0.0,
             cnp_interval_s: float = 0.0) -> int:
        """Accept in C the data frames of the last :meth:`recv` that the receiver would
        simply accept (see nicc_rx_fast); returns how many (their ``R_FAST`` is 1, or 2
        where a CNP is due). ``last_cnp`` (each flow's last CNP, -inf for none): CE-marked
        frames too, with the notification point's rule at ``now``."""
        return int(self.lib.nicc_rx_fast(self.rec, got, flows, nflows, local, nlocal, int(verify), last_cnp,
                                         now, cnp_interval_s))

    def close(self) -> None:
        if self.ptr:
            self.mv.release()
            self.lib.nicc_rx_free(self.ptr)
            self.ptr = None

    def __del__(self) -> None:
        self.close()


class NativeReplies:
    """A receiver's reply templates in C, one row per flow of :meth:`NativeRx.fast`: the
    ACK template (:meth:`FrameTemplate.parts <host.nic.frames.FrameTemplate.parts>`) and
    the CNP bytes of each flow's path. :meth:`make` puts the replies of a batch C accepted
    whole into the tx arena (nicc_rx_replies), as ``qp.Receiver`` would make them."""

    def __init__(self, lib: ctypes.CDLL, rows: int = RX_FLOWS) -> None:
        self.lib = lib
        self.rows = rows
        self.ptr = lib.nicc_rxr_new(rows)
        if not self.ptr:
            raise MemoryError("nicc_rxr_new")
        self.seen = (ctypes.c_double * rows)()
        """Each row's last instant a burst accepted a frame of it."""
        self.out = (ctypes.c_int64 * 9)()

    def set(self, row: int, ack_parts: tuple[bytes, int, bytes, int], cnp: bytes) -> bool:
        """Row ``row``'s ACK template (``(head, crc_head, tail, ext_len)``, an AETH's 4
        extension bytes) and CNP; False (the row keeps its old ones) when they do not fit."""
        head, crc_head, tail, ext_len = ack_parts
        if ext_len != 4:
            return False
        return self.lib.nicc_rxr_set(self.ptr, row, head, len(head), crc_head, tail, len(tail),
                                     cnp, len(cnp)) == 0

    def burst(self, rx: NativeRx, fd: int, rx_limit: int, rounds: int, flows: "ctypes.Array[ctypes.c_int64]",
              nflows: int, local: "ctypes.Array[ctypes.c_int64]", nlocal: int, verify: bool,
              last_cnp: "ctypes.Array[ctypes.c_double]", cnp_interval_s: float, tx: NativeTx, syndrome: int,
              deadline: float) -> int:
        """A receiver's wait-read-accept-answer loop in C until ``deadline`` (monotonic s),
        the first batch not accepted whole (left in ``rx``'s records, through
        :meth:`NativeRx.fast` already), a signal or an error (nicc_rx_burst); returns the
        batches answered in C. ``out``: frames flushed, refused, why
        (:data:`RX_BURST_WHY`), errno, frames left, how many of those C accepted, batches,
        replies, frames answered in C; :attr:`seen` each row's last accept."""
        return int(self.lib.nicc_rx_burst(rx.ptr, fd, min(rx_limit, rx.slots), rounds, rx.rec, flows, nflows, local,
                                          nlocal, int(verify), last_cnp, cnp_interval_s, self.seen, self.ptr,
                                          tx.ptr, syndrome, deadline, self.out))

    def clear(self, row: int) -> None:
        """Row ``row`` without templates (:meth:`make` then refuses a batch that needs them)."""
        self.lib.nicc_rxr_set(self.ptr, row, b"", 0, 0, b"", 0, b"", 0)

    def make(self, rx: NativeRx, got: int, flows: "ctypes.Array[ctypes.c_int64]", nflows: int,
             tx: NativeTx, syndrome: int) -> int:
        """The CNPs due and the coalesced ACKs (AETH ``syndrome``) of a batch of ``got``
        frames all accepted by :meth:`NativeRx.fast`, pushed onto ``tx`` in the
        receiver's order; returns how many, or -1 (nothing done: the caller makes them)."""
        return int(self.lib.nicc_rx_replies(rx.rec, got, flows, nflows, self.ptr, tx.ptr, syndrome))

    def close(self) -> None:
        if self.ptr:
            self.lib.nicc_rxr_free(self.ptr)
            self.ptr = None

    def __del__(self) -> None:
        self.close()


__all__ = ["C_SOURCE", "NativeBurst", "NativeQP", "NativeReplies", "NativeRx", "NativeTx", "RX_BURST_ERROR", "RX_BURST_WHY",
           "frame_bytes", "native_status", "nic_lib"]
