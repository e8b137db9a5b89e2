"""The StreamChannel of one P4Runtime connection: the request queue, the background
thread reading the switch's stream, and mastership arbitration.

:class:`StreamChannel` hands every PacketIn, DigestList and StreamError it reads to the
callbacks it was given (the connection decodes them with its P4Info); arbitration
answers it keeps for :meth:`StreamChannel.arbitrate`. Once this client is primary, every
later arbitration update is mastership news (P4Runtime spec, "Client Arbitration
Notifications"): a status other than OK means another client is primary now — its
election id is the update's — and OK that this client is primary again. They go to
``on_mastership(update)`` and set :attr:`StreamChannel.primary`. The reader thread ends when the
switch ends the stream or on :meth:`StreamChannel.close`.

Example::

    >>> ch = StreamChannel("127.0.0.1:9559", on_packet=print, on_digest=print,
    ...                    on_error=print)
    >>> ch.alive
    True
    >>> ch.start(stub)                                                  # doctest: +SKIP
    >>> ch.arbitrate(0, election_uint128((0, 1)), timeout_s=5)         # doctest: +SKIP
    >>> ch.close()                                                      # doctest: +SKIP
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Optional, Union

import grpc
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt.errors import NotPrimaryError, P4RuntimeClientError

READER_JOIN_TIMEOUT_S = 5.0


def election_uint128(eid: Union[int, tuple[int, int]]) -> p4runtime_pb2.Uint128:
    """An election id as P4Runtime's Uint128: an int is ``(0, eid)``.

    >>> election_uint128(5).low, election_uint128((1, 2)).high
    (5, 1)
    """
    high, low = (0, eid) if isinstance(eid, int) else eid
    return p4runtime_pb2.Uint128(high=high, low=low)


class StreamChannel:
    """One StreamChannel RPC (opened by :meth:`start`) and the thread reading it.

    ``on_packet``, ``on_digest``, ``on_error`` and ``on_idle`` are called on the reader
    thread with the raw ``PacketIn``, ``DigestList``, ``StreamError`` and
    ``IdleTimeoutNotification`` messages (idle-timeout notifications are dropped when
    ``on_idle`` is None).
    """

    def __init__(self, addr: str, *,
                 on_packet: Callable[[p4runtime_pb2.PacketIn], None],
                 on_digest: Callable[[p4runtime_pb2.DigestList], None],
                 on_error: Callable[[p4runtime_pb2.StreamError], None],
                 on_idle: Optional[Callable[[p4runtime_pb2.IdleTimeoutNotification], None]]
                 = None,
                 on_mastership: Optional[Callable[[p4runtime_pb2.MasterArbitrationUpdate], None]] = None,
                 ) -> None:
        self.addr = addr
        self._on_packet, self._on_digest, self._on_error = on_packet, on_digest, on_error
        self._on_idle = on_idle
        self._on_mastership = on_mastership
        self.primary = False
        """Whether the switch's last word on this stream made it the primary."""
        self._arbitrating = threading.Lock()
        self._requests: "queue.Queue[Optional[p4runtime_pb2.StreamMessageRequest]]" = queue.Queue()
        self._arbitration: "queue.Queue[p4runtime_pb2.MasterArbitrationUpdate]" = queue.Queue()
        self._closed = threading.Event()
        self._stream: Any = None
        self._reader: Optional[threading.Thread] = None

    def start(self, stub: Any) -> None:
        """Open the StreamChannel RPC on ``stub`` (a ``P4RuntimeStub``) and start the
        reader thread."""
        self._stream = stub.StreamChannel(iter(self._requests.get, None))
        self._reader = threading.Thread(target=self._read_stream, daemon=True,
                                        name=f"p4rt-stream-{self.addr}")
        self._reader.start()

    def _read_stream(self) -> None:
        try:
            for msg in self._stream:
                kind = msg.WhichOneof("update")
                if kind == "arbitration":
                    self._arbitration_update(msg.arbitration)
                elif kind == "packet":
                    self._on_packet(msg.packet)
                elif kind == "digest":
                    self._on_digest(msg.digest)
                elif kind == "error":
                    self._on_error(msg.error)
                elif kind == "idle_timeout_notification" and self._on_idle is not None:
                    self._on_idle(msg.idle_timeout_notification)
        except grpc.RpcError:
            pass
        finally:
            self._closed.set()

    def _arbitration_update(self, upd: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        """An answer :meth:`arbitrate` waits for, or (after it) mastership news."""
        if self._arbitrating.locked():
            self._arbitration.put(upd)
            return
        now = upd.status.code == code_pb2.OK
        changed = now != self.primary
        self.primary = now
        if changed and self._on_mastership is not None:
            self._on_mastership(upd)

    @property
    def alive(self) -> bool:
        """False once the stream ended (the switch went away or :meth:`close`)."""
        return not self._closed.is_set()

    def send(self, req: p4runtime_pb2.StreamMessageRequest) -> None:
        """Queue one request on the stream; P4RuntimeClientError once it is closed."""
        if self._closed.is_set():
            raise P4RuntimeClientError(f"{self.addr}: the stream is closed")
        self._requests.put(req)

    def arbitrate(self, device_id: int, election_id: p4runtime_pb2.Uint128,
                  timeout_s: float) -> None:
        """Send the arbitration request and wait up to ``timeout_s`` for the answer;
        raises NotPrimaryError unless it makes this client the primary controller."""
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = device_id
        req.arbitration.election_id.CopyFrom(election_id)
        with self._arbitrating:
            self.send(req)
            try:
                resp = self._arbitration.get(timeout=timeout_s)
            except queue.Empty:
                raise NotPrimaryError(self.addr, device_id,
                                      "no arbitration answer (stream closed or timed out)") from None
            self.primary = resp.status.code == code_pb2.OK
        if resp.status.code != code_pb2.OK:
            raise NotPrimaryError(self.addr, device_id,
                                  f"{code_pb2.Code.Name(resp.status.code)} {resp.status.message}")

    def close(self) -> None:
        """End the stream and join the reader thread (idempotent)."""
        self._requests.put(None)
        if self._stream is not None:
            self._stream.cancel()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=READER_JOIN_TIMEOUT_S)
        self._closed.set()


__all__ = ["READER_JOIN_TIMEOUT_S", "StreamChannel", "election_uint128"]
