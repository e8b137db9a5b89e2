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
    }

    table groups {
        key = { meta.ecmp_group_id: exact; }
        actions = { select_member; drop; }
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
            switch (groups.apply().action_run) {
                select_member: {
                    algorithm.apply();
                    bit<16> l4_src = hdr.udp.isValid() ? hdr.udp.src_port : 16w0;
                    bit<16> l4_dst = hdr.udp.isValid() ? hdr.udp.dst_port : 16w0;
                    if (crc32_selected == 1) {
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
                default: {}
            }
        }
    }
}

#endif
