/* sampling.p4 — sFlow-like 1-in-N flow sampling for elephant detection
 * (instance FabricIngress.sampling; digests exist only in ingress in v1model).
 *
 * FabricIngress.sampling.config is keyed on the egress port chosen by forwarding:
 *   sample(one_in_n): a sampled packet sends digest flow_sample_t (receiver 1);
 *   sample_to_cpu(one_in_n): a sampled packet is cloned (I2E, session 255 -> CPU port)
 *     and arrives at the controller as a PacketIn with reason 0 (PUNT_SAMPLED).
 * A packet is sampled when random(0 .. one_in_n - 1) == 0; one_in_n = 0 never samples.
 * Only IPv4 packets that are forwarded (not dropped) are sampled. qdepth in the digest
 * is the enq_qdepth of the last packet sent on that egress port. A packet that carries an
 * alarm or elephant digest already sends no sample (v1model keeps one digest per packet).
 */
#ifndef FABRIC_SAMPLING_P4
#define FABRIC_SAMPLING_P4

control Sampling(inout headers_t hdr, inout fabric_metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    bit<1>  to_cpu = 0;
    bit<32> n = 0;

    action sample(bit<32> one_in_n) {
        to_cpu = 0;
        n = one_in_n;
    }

    action sample_to_cpu(bit<32> one_in_n) {
        to_cpu = 1;
        n = one_in_n;
    }

    table config {
        key = { standard_metadata.egress_spec: exact; }
        actions = { sample; sample_to_cpu; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        if (meta.dropped == 0 && hdr.ipv4.isValid()) {
            if (config.apply().hit && n != 0) {
                bit<32> r;
                random(r, 0, n - 1);
                if (r == 0) {
                    if (to_cpu == 1) {
                        meta.punt_reason = PUNT_SAMPLED;
                        meta.sample_to_cpu = 1;
                        clone_preserving_field_list(CloneType.I2E, CPU_SESSION, FL_CLONE);
                    } else if (meta.digest_taken == 0) {
                        meta.digest_taken = 1;
                        bit<32> qdepth;
                        // ports 0 without a UDP header (BMv2 reuses PHVs: an invalid
                        // header's fields hold an earlier packet's values)
                        bit<16> l4_src = hdr.udp.isValid() ? hdr.udp.src_port : 16w0;
                        bit<16> l4_dst = hdr.udp.isValid() ? hdr.udp.dst_port : 16w0;
                        sampling_last_qdepth.read(qdepth,
                            (bit<32>) standard_metadata.egress_spec);
                        digest<flow_sample_t>(SAMPLE_DIGEST_RECEIVER, {
                            meta.switch_id,
                            hdr.ipv4.src_addr,
                            hdr.ipv4.dst_addr,
                            hdr.ipv4.protocol,
                            l4_src,
                            l4_dst,
                            standard_metadata.ingress_port,
                            standard_metadata.egress_spec,
                            qdepth,
                            standard_metadata.packet_length });
                    }
                }
            }
        }
    }
}

#endif
