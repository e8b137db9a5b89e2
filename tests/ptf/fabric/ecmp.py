"""ECMP against the published hash model (``p4src.hashmodel``): for 1000 random UDP
5-tuples the uplink equals the model's prediction, another seed changes the mapping
(and is still predicted exactly), and a group selected with ``select_member_ports_first``
(a three-tier fabric's core and spine-down groups) follows the model's ports-first list."""
from __future__ import annotations

import random

import ptf.testutils as tu

from fabric_base import UPLINKS, FabricTest, host_ip, peer_mac, port_mac, routed, udp_packet
from p4src.hashmodel import PORTS_FIRST_FIELDS, GroupModel, SwitchHashModel, predict_member

FLOWS = 1000


def random_flows(n: int, rng: random.Random) -> list[tuple[str, str, int, int]]:
    """(src, dst, sport, dport): sources on the leaf, destinations in other blocks/rails."""
    return [(host_ip(rng.choice((1, 2))),
             f"10.{rng.randrange(0, 8)}.{rng.randrange(1, 8)}.{rng.randrange(1, 250)}",
             rng.randrange(1024, 65536), rng.choice((4791, rng.randrange(1, 65536))))
            for _ in range(n)]


class EcmpBase(FabricTest):
    ports_first = False

    def check_flows(self, flows: list[tuple[str, str, int, int]]) -> list[int]:
        """Send each flow once; assert the uplink is the model's; the uplinks taken."""
        model = SwitchHashModel("leaf", seed=self.seed, groups={1: GroupModel(
            0, [str(p) for p in UPLINKS], PORTS_FIRST_FIELDS if self.ports_first else None)})
        taken = []
        for src, dst, sport, dport in flows:
            in_port = int(src.rsplit(".", 1)[1])
            pkt = udp_packet(src, dst, sport=sport, dport=dport, eth_src="02:00:00:aa:00:01",
                             eth_dst=port_mac(self.switch_id, in_port))
            want = int(predict_member(model, 1, src, dst, 17, sport, dport))
            tu.send_packet(self, in_port, pkt)
            tu.verify_packet(self, routed(pkt, port_mac(self.switch_id, want), peer_mac(want)),
                             want)
            taken.append(want)
        tu.verify_no_other_packets(self)
        return taken


class EcmpMatchesHashModel(EcmpBase):
    """1000 random 5-tuples: every uplink is the hash model's prediction; all are used."""

    def runTest(self) -> None:
        self.leaf_config()
        taken = self.check_flows(random_flows(FLOWS, random.Random(4)))
        self.assertEqual(set(taken), set(UPLINKS))


class EcmpSeedChangesMapping(EcmpBase):
    """Re-seeding the switch moves flows and the switch still follows the model.

    With CRC and the seed as a leading field, another seed XORs every hash with one
    constant (CRC is affine), so for a power-of-two group it permutes the members: the
    new seed is chosen so that the permutation is not the identity."""

    def runTest(self) -> None:
        self.leaf_config()
        flows = random_flows(200, random.Random(5))
        first = self.check_flows(flows)
        src, dst, sport, dport = flows[0]
        members = [str(p) for p in UPLINKS]
        old = SwitchHashModel("leaf", seed=self.seed, groups={1: GroupModel(0, members)})
        new_seed = next(s for s in range(1, 1 << 16) if predict_member(
            SwitchHashModel("leaf", seed=s, groups={1: GroupModel(0, members)}),
            1, src, dst, 17, sport, dport) != predict_member(old, 1, src, dst, 17, sport, dport))
        self.seed = new_seed
        self.set_switch(self.switch_id, self.role, self.seed)
        second = self.check_flows(flows)
        moved = sum(a != b for a, b in zip(first, second))
        self.assertGreater(moved, len(flows) // 2, f"only {moved} of {len(flows)} flows moved")


class EcmpPortsFirstMatchesHashModel(EcmpBase):
    """Group 1 re-written with ``select_member_ports_first``: every uplink is the model's
    prediction with the ports-first field list, and most flows take another uplink than
    with the default list (the orders are different functions of the 5-tuple)."""

    def runTest(self) -> None:
        self.leaf_config()
        flows = random_flows(300, random.Random(6))
        first = self.check_flows(flows)
        self.sw.modify(self.sw.table_entry("FabricIngress.ecmp.groups", {"meta.ecmp_group_id": 1},
                                           "FabricIngress.ecmp.select_member_ports_first",
                                           {"base": 0, "size": len(UPLINKS)}))
        self.ports_first = True
        second = self.check_flows(flows)
        self.assertEqual(set(second), set(UPLINKS))
        moved = sum(a != b for a, b in zip(first, second))
        self.assertGreater(moved, len(flows) // 2, f"only {moved} of {len(flows)} flows moved")
