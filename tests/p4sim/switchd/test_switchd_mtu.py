"""A port's giant limit follows its interface's MTU while the port is open (review2).

The limit (MTU + 14, + 4 tagged: ``RawSocketPort.oversize``) was read once, when the port
opened: an MTU raised afterwards (``ip link set IF mtu 9000`` on a running switch, no
reopen) made p4sim drop, as giants, frames the interface now takes and BMv2 forwards.
Here the stale limit is set by hand on ``lo`` (MTU 65536 on Linux): no root, no veth."""
from __future__ import annotations

import types

from p4sim.switchd.device import SwitchDevice
from p4sim.switchd.ports import RawSocketPort, interface_max_frame


def test_a_raised_mtu_counts_without_a_reopen() -> None:
    port = RawSocketPort(1, "lo")
    port.max_frame = 1514                       # what a 1500 MTU gave when the port opened
    frame = bytes(12) + b"\x08\x00" + bytes(2000 - 14)
    assert not port.oversize(frame), "a frame the interface takes now was dropped as a giant"
    assert port.max_frame == interface_max_frame("lo") > 2000
    assert port.oversize(bytes(port.max_frame + 1))   # a real giant still is one


def test_the_mtu_is_read_again_at_most_once_a_recheck_period() -> None:
    port = RawSocketPort(1, "lo")
    port.max_frame = 1514
    port._mtu_read_at = 1e18                    # just read: the limit held is taken as is
    assert port.oversize(bytes(2000))
    assert port.max_frame == 1514


def test_the_native_data_plane_is_given_a_changed_limit() -> None:
    port = RawSocketPort(3, "lo")
    port.max_frame = 1514
    port._sock = object()                       # open, as far as the refresh is concerned
    calls: list[tuple[object, int, int]] = []
    lib = types.SimpleNamespace(dp_set_max_frame=lambda dp, no, limit: calls.append((dp, no, limit)))
    dev = types.SimpleNamespace(ports={3: port}, _dp="dp")
    SwitchDevice._refresh_max_frames(dev, lib)       # type: ignore[arg-type]
    assert calls == [("dp", 3, interface_max_frame("lo"))]
    SwitchDevice._refresh_max_frames(dev, lib)       # type: ignore[arg-type]
    assert len(calls) == 1, "an unchanged limit is not sent again"
