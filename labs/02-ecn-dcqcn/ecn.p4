/* Lab 02 — ECN marking (your file: complete the TODO in MyEgress).
 *
 * Port 1 = sender, port 2 = receiver (MyIngress.ports: ingress port -> egress port).
 * In egress, an ECN-capable packet (ECT(0) = 2 or ECT(1) = 1) that found at least
 * kmin_pkts packets in its egress queue (standard_metadata.enq_qdepth) leaves with
 * CE (3), as the fabric's FabricEgress.ecn does (p4src/include/control/ecn.p4).
 * Not-ECT (0) packets are never marked: their senders would not understand it.
 *
 * Tables (set by the checker over P4Runtime):
 *   MyIngress.ports          (exact ingress_port) set_port(port)
 *   MyEgress.ecn_thresholds  (exact egress_port)  set_ecn_threshold(kmin_pkts)
 */
#include <core.p4>
#include <v1model.p4>

const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_ECT1 = 1;
const bit<2> ECN_ECT0 = 2;
const bit<2> ECN_CE = 3;

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
}

struct metadata_t {
    bit<19> kmin_pkts;
}

parser MyParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol, hdr.ipv4.frag_offset) {
            (17, 0): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    table ports {
        key = { standard_metadata.ingress_port: exact; }
        actions = { set_port; drop; }
        default_action = drop();
        size = 16;
    }

    apply {
        ports.apply();
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    action set_ecn_threshold(bit<19> kmin_pkts) {
        meta.kmin_pkts = kmin_pkts;
    }

    table ecn_thresholds {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_ecn_threshold; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    apply {
        if (hdr.ipv4.isValid() && ecn_thresholds.apply().hit) {
            // TODO: set hdr.ipv4.ecn to ECN_CE when
            //   - the packet is ECN-capable (ECN_ECT0 or ECN_ECT1; never ECN_NOT_ECT), and
            //   - the queue it joined held at least meta.kmin_pkts packets
            //     (standard_metadata.enq_qdepth, in packets).
            // The IPv4 checksum is recomputed for you in MyComputeChecksum.
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
