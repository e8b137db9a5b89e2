"""The software-centric baseline on its own build of the program (p4sim, in-process): two
flow entries per connection, installed on the first packet; the periodic walk ages idle
connections, finds a corrupt entry, and applies a policy change to every flow — and
nothing happens between walks."""
from __future__ import annotations

import time
from typing import Any, Iterator

import pytest
from scapy.layers.l2 import Ether
from scapy.layers.vxlan import VXLAN

from fornax.baseline import BaselineConfig, BaselineManager
from fornax.policy import parse_policy
from nicrig import NicRig
from test_fornax_manager import A3_MAC, POLICY, a1_tcp, from_b1, until


class BaseRig:
    def __init__(self, build: tuple[Any, Any], **cfg: Any) -> None:
        self.nic = NicRig(ports=(1, 2, 3, 4))
        self.mgr = BaselineManager(
            BaselineConfig(nic="nicA", grpc_addr=self.nic.addr, device_id=1,
                           policy_path=None, p4info=build[0],  # type: ignore[arg-type]
                           device_config=build[1], **cfg),
            policy=parse_policy(POLICY, "test.policy"))
        self.mgr.start()

    def close(self) -> None:
        self.mgr.stop()
        self.nic.stop()


@pytest.fixture()
def base(baseline_build: tuple[Any, Any]) -> Iterator[BaseRig]:
    r = BaseRig(baseline_build, walk_period_s=3600.0, idle_timeout_s=0.2)
    try:
        yield r
    finally:
        r.close()


def test_two_flows_per_connection_and_the_walk_ages_them(base: BaseRig) -> None:
    base.nic.port(2).inject(a1_tcp("S"))
    assert Ether(base.nic.take(1))[VXLAN].vni == 100
    base.nic.port(1).inject(from_b1("SA"))            # the reverse flow is in already
    assert base.nic.take(2) is not None
    assert len(base.mgr.flows) == 2 and len(base.mgr.nic.read_all_sessions()) == 2
    assert base.mgr.counters.get("punt_miss") == 1
    assert base.mgr.walk()["aged"] == 0               # the counters moved since the install
    time.sleep(0.25)                                  # idle longer than idle_timeout_s
    stats = base.mgr.walk()
    assert stats["aged"] == 1 and stats["entries"] == 2
    assert base.mgr.flows == {} and base.mgr.nic.read_all_sessions() == []


def test_corruption_is_found_only_by_the_walk(base: BaseRig) -> None:
    base.nic.port(2).inject(a1_tcp("S"))
    assert base.nic.take(1) is not None
    base.mgr.inject_corruption(next(k for k in base.mgr.flows if k.ip_lo == 0x0a000001))
    base.nic.port(2).inject(a1_tcp("A"))
    assert base.nic.take(1, 0.3) is None              # forwarded wrongly, nobody told
    assert base.mgr.walk()["fixed"] == 1
    base.nic.port(2).inject(a1_tcp("A"))
    assert base.nic.take(1) is not None


def test_policy_change_is_applied_by_the_walk_to_every_flow(base: BaseRig) -> None:
    base.mgr.cfg.idle_timeout_s = 3600.0
    base.nic.port(4).inject(a1_tcp("S", src="10.0.0.3", mac=A3_MAC, sport=41000))
    assert base.nic.take(1) is not None
    base.mgr.reload(parse_policy(POLICY.replace(
        "rule db egress allow any to 0.0.0.0/0", "rule db egress deny tcp 80 to 0.0.0.0/0"),
        "test2.policy"))
    base.nic.port(4).inject(a1_tcp("A", src="10.0.0.3", mac=A3_MAC, sport=41000))
    assert base.nic.take(1) is not None               # still allowed until the walk
    assert base.mgr.walk()["rewritten"] == 2
    base.nic.port(4).inject(a1_tcp("A", src="10.0.0.3", mac=A3_MAC, sport=41000))
    assert base.nic.take(1, 0.3) is None
    assert until(lambda: base.mgr.counters.get("walks") == 1)
