/* ecmp.p4 — ECMP with a published, per-switch seeded hash.
 *
 * FabricIngress.ecmp.groups: group id -> select_member(base, size); then
 *     H      = ALGO(seed ++ ipv4.src ++ ipv4.dst ++ ipv4.protocol ++ udp.src_port ++ udp.dst_port)
 *     member = H % size + base
 * with the fields packed MSB-first without padding (32+32+32+8+16+16 = 136 bits); the
 * UDP ports hash as 0 when the packet has no UDP header: written so, since a field of
 * an invalid header reads on BMv2 what an earlier packet left in its reused PHV
 * (p4sim/README.md, "Fields of invalid headers"). ALGO is crc16 (CRC-16/ARC) unless the
 * controller sets the keyless table FabricIngress.ecmp.algorithm to use_crc32()
 * (CRC-32/IEEE). Why it exists: a CRC is affine over GF(2), so the seed alone only XORs
 * H with a constant; with power-of-two group sizes a spine using the same CRC as the
 * leaves would give every flow a leaf sent to it the same member (polarisation). crc16
 * on leaves + crc32 on spines decorrelates the tiers; the hash model records each
 * switch's algorithm.
 * select_member_ports_first(base, size) hashes the same fields in another order,
 *     H      = ALGO(seed ++ udp.src_port ++ udp.dst_port ++ ipv4.protocol ++ ipv4.src ++ ipv4.dst)
 * (same 136 bits, the ports first): the "B" hash of the group. Why: a seed only XORs H
 * with a constant, so two hops with the same CRC and field order pick their members from
 * the same linear function of the source port (their choices are correlated, whatever
 * the seeds). With the ports at another bit position the CRC is another linear function
 * of the port. A three-tier fabric hashes its core groups and its spines' groups towards
 * the leaves with it (controller/fabric/ecmp.py, ports_first_group), so leaf (crc16),
 * spine up (crc32), core (crc16, B) and spine down (crc32, B) are four independent
 * functions of the source port; a two-tier fabric never uses it (its hashing unchanged).
 * FabricIngress.ecmp.members: member index -> set_nexthop(nexthop_id).
 * A group with n members owns member indices base .. base + n - 1.
 */
#ifndef FABRIC_ECMP_P4
#define FABRIC_ECMP_P4

control Ecmp(inout headers_t hdr, inout fabric_metadata_t meta,
             inout standard_metadata_t standard_metadata) {
    bit<16> member_base = 0;
    bit<32> member_count = 0;
    bit<1>  crc32_selected = 0;
    bit<1>  ports_first = 0;
    bit<1>  selected = 0;

    action use_crc16() {
        crc32_selected = 0;
    }

    action use_crc32() {
        crc32_selected = 1;
    }

    table algorithm {
        actions = { use_crc16; use_crc32; }
        default_action = use_crc16();
        size = 1;
    }

    action drop() {
        mark_to_drop(standard_metadata);
        meta.dropped = 1;
    }

    action select_member(bit<16> base, bit<16> size) {
        member_base = base;
        member_count = (bit<32>) size;
        selected = 1;
    }

    action select_member_ports_first(bit<16> base, bit<16> size) {
        member_base = base;
        member_count = (bit<32>) size;
        ports_first = 1;
        selected = 1;
    }

    table groups {
        key = { meta.ecmp_group_id: exact; }
        actions = { select_member; select_member_ports_first; drop; }
        default_action = drop();
        size = 1024;
    }

    action set_nexthop(bit<16> nexthop_id) {
        meta.nexthop_id = nexthop_id;
        meta.has_nexthop = 1;
    }

    table members {
        key = { meta.ecmp_member: exact; }
        actions = { set_nexthop; drop; }
        default_action = drop();
        size = 4096;
    }

    apply {
        if (meta.dropped == 0 && meta.has_ecmp_group == 1) {
            groups.apply();
            if (selected == 1) {
                algorithm.apply();
                bit<16> l4_src = hdr.udp.isValid() ? hdr.udp.src_port : 16w0;
                bit<16> l4_dst = hdr.udp.isValid() ? hdr.udp.dst_port : 16w0;
                if (ports_first == 1) {
                    if (crc32_selected == 1) {
                        hash(meta.ecmp_member, HashAlgorithm.crc32, member_base,
                             { meta.ecmp_seed, l4_src, l4_dst, hdr.ipv4.protocol,
                               hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
                             member_count);
                    } else {
                        hash(meta.ecmp_member, HashAlgorithm.crc16, member_base,
                             { meta.ecmp_seed, l4_src, l4_dst, hdr.ipv4.protocol,
                               hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
                             member_count);
                    }
                } else if (crc32_selected == 1) {
                    hash(meta.ecmp_member, HashAlgorithm.crc32, member_base,
                         { meta.ecmp_seed, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                           hdr.ipv4.protocol, l4_src, l4_dst },
                         member_count);
                } else {
                    hash(meta.ecmp_member, HashAlgorithm.crc16, member_base,
                         { meta.ecmp_seed, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                           hdr.ipv4.protocol, l4_src, l4_dst },
                         member_count);
                }
                members.apply();
            }
        }
    }
}

#endif
