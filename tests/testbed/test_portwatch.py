"""testbed.portwatch.CarrierWatch: a change that could not be reported (GOR down, say) is
reported again at the next poll, and the watch keeps running."""
from __future__ import annotations

from testbed.portwatch import CarrierWatch


def test_a_refused_report_is_retried_at_the_next_poll() -> None:
    carrier = {"s0-eth1": True}
    got: list[tuple[str, int, bool]] = []
    refuse = [True]

    def report(sw: str, port: int, up: bool, _why: str) -> None:
        if refuse[0]:
            raise RuntimeError("GOR is not running")
        got.append((sw, port, up))

    w = CarrierWatch({("s0", 1): "s0-eth1"}, report, read=lambda i: carrier[i])
    assert w.poll() == 0                      # the reference state
    carrier["s0-eth1"] = False
    assert w.poll() == 0 and got == [] and w.events == []     # refused: not taken
    refuse[0] = False
    assert w.poll() == 1 and got == [("s0", 1, False)]       # reported again, once
    assert w.poll() == 0 and len(w.events) == 1
