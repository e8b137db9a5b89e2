/* checksum.p4 — IPv4 header checksums (tenant without options, and underlay) recomputed
 * before the deparser (a header with options keeps its own: only 20 bytes are parsed), and the tenant TCP/UDP checksum (with the pseudo-header and the payload) when
 * the load balancer changed addresses or ports. Nothing is verified on arrival: a tenant's
 * bad checksum is the tenant's (its receiver drops it), as on a NIC that forwards.
 */
#ifndef SMARTNIC_CHECKSUM_P4
#define SMARTNIC_CHECKSUM_P4

control SmartNicVerifyChecksum(inout headers_t hdr, inout smartnic_metadata_t meta) {
    apply { }
}

control SmartNicComputeChecksum(inout headers_t hdr, inout smartnic_metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(hdr.u_ipv4.isValid(),
            { hdr.u_ipv4.version, hdr.u_ipv4.ihl, hdr.u_ipv4.dscp, hdr.u_ipv4.ecn,
              hdr.u_ipv4.total_len, hdr.u_ipv4.identification, hdr.u_ipv4.flags,
              hdr.u_ipv4.frag_offset, hdr.u_ipv4.ttl, hdr.u_ipv4.protocol,
              hdr.u_ipv4.src_addr, hdr.u_ipv4.dst_addr },
            hdr.u_ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum_with_payload(hdr.tcp.isValid() && meta.l4_rewritten == 1,
            { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, 8w0, hdr.ipv4.protocol, meta.l4_len,
              hdr.tcp.src_port, hdr.tcp.dst_port, hdr.tcp.seq_no, hdr.tcp.ack_no,
              hdr.tcp.data_offset, hdr.tcp.res, hdr.tcp.flags, hdr.tcp.window,
              hdr.tcp.urgent_ptr },
            hdr.tcp.checksum, HashAlgorithm.csum16);
        update_checksum_with_payload(hdr.udp.isValid() && meta.l4_rewritten == 1,
            { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, 8w0, hdr.ipv4.protocol, meta.l4_len,
              hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length },
            hdr.udp.checksum, HashAlgorithm.csum16);
    }
}

#endif
