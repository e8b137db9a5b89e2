"""The switch's ingress buffer (:class:`p4sim.switchd.ingress.IngressBuffer`, BMv2's input
buffer): bounded, blocking for received frames, every refused frame counted,
``enqueued == dequeued + depth`` always; and the switch under a burst larger than the
buffer: the port waits, nothing is dropped after it was processed, everything is
forwarded; a pullable port is read by the worker itself, in order, only into free room."""
from __future__ import annotations

import threading
import time
from collections import deque

import pytest

from conftest import qm_fields, qm_frame
from p4sim.switchd.ingress import DEFAULT_CAPACITY_PKTS, IngressBuffer
from p4sim.switchd.ports import Port


def _consistent(buf: IngressBuffer) -> dict[str, int]:
    s = buf.stats()
    assert s["enqueued"] == s["dequeued"] + s["depth"]
    assert s["depth"] <= s["capacity_pkts"] and s["high_water"] <= s["capacity_pkts"]
    return s


def _pop_n(buf: IngressBuffer, n: int, timeout_s: float = 5.0) -> list[tuple[int, bytes]]:
    """Pop ``n`` items, waiting on the buffer's ``ready`` condition (bounded)."""
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + timeout_s
    with buf.ready:
        while len(got) < n:
            item = buf.pop_nowait()
            if item is not None:
                got.append(item)
                continue
            left = deadline - time.monotonic()
            assert left > 0, f"only {len(got)} of {n} frames arrived"
            buf.ready.wait(left)
    return got


def test_default_capacity_is_bmv2s() -> None:
    assert DEFAULT_CAPACITY_PKTS == 1024 and IngressBuffer().capacity_pkts == 1024


def test_bounded_refusals_are_counted() -> None:
    buf = IngressBuffer(capacity_pkts=4)
    assert buf.put_many(1, [b"a", b"b", b"c", b"d"]) == 4
    assert buf.put_nowait(2, b"e") is False
    s = _consistent(buf)
    assert (s["depth"], s["enqueued"], s["dropped"], s["high_water"]) == (4, 4, 1, 4)
    assert buf.pop_nowait() == (1, b"a")
    assert buf.put_nowait(2, b"e") is True
    assert [buf.pop_nowait() for _ in range(5)] == [(1, b"b"), (1, b"c"), (1, b"d"),
                                                    (2, b"e"), None]
    s = _consistent(buf)
    assert (s["enqueued"], s["dequeued"], s["dropped"], s["depth"]) == (5, 5, 1, 0)


def test_a_full_buffer_makes_the_producer_wait_then_takes_everything_in_order() -> None:
    buf = IngressBuffer(capacity_pkts=2)
    frames = [bytes([i]) for i in range(50)]
    accepted: list[int] = []
    producer = threading.Thread(target=lambda: accepted.append(buf.put_many(3, frames)))
    producer.start()
    got = _pop_n(buf, len(frames))
    producer.join(5.0)
    assert not producer.is_alive() and accepted == [50]
    assert [f for _, f in got] == frames and {p for p, _ in got} == {3}
    s = _consistent(buf)
    assert s["full_waits"] >= 1 and s["dropped"] == 0 and s["high_water"] == 2


def test_put_with_a_timeout_counts_what_did_not_fit() -> None:
    buf = IngressBuffer(capacity_pkts=2)
    assert buf.put_many(1, [b"a", b"b", b"c", b"d", b"e"], timeout_s=0.01) == 2
    s = _consistent(buf)
    assert (s["enqueued"], s["dropped"], s["full_waits"]) == (2, 3, 1)


def test_close_releases_a_waiting_producer_and_refuses_the_rest() -> None:
    buf = IngressBuffer(capacity_pkts=1)
    buf.put_many(1, [b"x"])
    accepted: list[int] = []
    producer = threading.Thread(target=lambda: accepted.append(buf.put_many(1, [b"y", b"z"])))
    producer.start()
    with buf.lock:                      # wait (bounded) until it is blocked on the full buffer
        deadline = time.monotonic() + 5
        while buf.full_waits == 0:
            assert time.monotonic() < deadline
            buf.ready.wait(0.05)
    buf.close()
    producer.join(5.0)
    assert not producer.is_alive() and accepted == [0]
    assert buf.put_nowait(1, b"w") is False
    s = _consistent(buf)
    assert (s["enqueued"], s["dropped"], s["depth"]) == (1, 3, 1)


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_bad_capacity_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="ingress buffer capacity"):
        IngressBuffer(capacity_pkts=bad)  # type: ignore[arg-type]


def test_switch_under_a_burst_larger_than_its_buffer_forwards_everything(make_rig) -> None:
    rig = make_rig(ingress_buffer_pkts=8)
    n = 400
    for i in range(n):
        rig.p1.inject(qm_frame(seq=i))
    got = rig.take_all(rig.p2, n)
    assert [qm_fields(f)["seq"] for f in got] == [i % 65536 for i in range(n)]
    rig.p1.wait_idle(5.0)
    st = rig.dev.switch_stats()
    assert st["tm_drops"] == 0 and st["errors"] == 0 and st["rx_dropped"] == 0
    assert st["ingress_buffer_capacity"] == 8 and st["ingress_buffer_high_water"] <= 8
    assert st["ingress_buffer_enqueued"] == st["ingress_buffer_dequeued"] == n
    assert st["ingress_buffer_dropped"] == 0
    ports = rig.dev.port_status()
    assert ports[1]["rx_frames"] == n == ports[2]["tx_frames"]
    assert ports[1]["rx_dropped"] == 0


def test_command_line_ingress_buffer() -> None:
    from p4sim.switchd.main import parse_args

    assert parse_args(["--no-p4"]).ingress_buffer == DEFAULT_CAPACITY_PKTS
    assert parse_args(["--no-p4", "--ingress-buffer", "16"]).ingress_buffer == 16
    with pytest.raises(SystemExit, match="--ingress-buffer 0: give a positive number"):
        parse_args(["--no-p4", "--ingress-buffer", "0"])


class _QueuePort(Port):
    """A pullable port whose frames wait in a deque and whose receive thread never reads:
    only the switch's worker pulls from it."""

    pullable = True

    def __init__(self, number: int) -> None:
        super().__init__(number, f"pull{number}")
        self.waiting: deque[bytes] = deque()

    def rx_pending(self) -> bool:
        return bool(self.waiting)

    def read_frames(self, max_frames: int) -> list[bytes]:
        out = [self.waiting.popleft() for _ in range(min(max_frames, len(self.waiting)))]
        self._count_received(out)
        return out

    def send(self, frame: bytes) -> bool:
        return True

    def _run(self) -> None:
        self._stop.wait()


def test_worker_pulls_a_port_itself_in_order_and_only_into_free_room(make_rig) -> None:
    rig = make_rig(ingress_buffer_pkts=16)
    port = _QueuePort(3)
    rig.dev.add_port(port)
    got: list[bytes] = []
    rig.dev.on_packet_in = got.append
    n = 200                                            # qfwd sends dst ...cc to CPU port 64
    port.waiting.extend(qm_frame(seq=i, dst=bytes.fromhex("0000000000cc"))
                        for i in range(n))
    deadline = time.monotonic() + 10
    while len(got) < n:
        assert time.monotonic() < deadline, f"{len(got)} of {n} forwarded"
        with rig.dev.ingress_buffer.ready:
            rig.dev.ingress_buffer.ready.wait(0.05)
    assert [qm_fields(f)["seq"] for f in got] == list(range(n))
    st = rig.dev.switch_stats()
    assert st["ingress_buffer_high_water"] <= 16 and st["ingress_buffer_dropped"] == 0
    assert st["ingress_buffer_enqueued"] == n and port.counters.rx_frames == n
