// Benchmark program (b): IPv4 LPM + hash-based ECMP + ECN marking + per-port counters.
//
// Ingress: the LPM table on the destination address selects an ECMP group
// (base index and number of paths); hash() with crc16 over a seed and the 5-tuple
// (src/dst address, protocol, UDP ports) picks one of the group's next hops, and the
// next-hop table rewrites the MACs and sets the egress port. TTL is decremented.
// Egress: ECN-capable packets (ECT(0)/ECT(1)) are marked CE when the queue depth at
// enqueue is at least the threshold held in register ecn_threshold[0]; an indexed
// counter counts packets and bytes per egress port.
// The hash seed lives in register hash_seed[0] so the control plane can give each switch
// its own hash.

#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x0800;
const bit<8>  PROTO_UDP = 17;
const bit<2>  ECN_NOT_ECT = 0;
const bit<2>  ECN_CE = 3;
const bit<32> NUM_PORTS = 512;

typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;
typedef bit<32> ip4Addr_t;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

header ipv4_t {
    bit<4>    version;
    bit<4>    ihl;
    bit<6>    dscp;
    bit<2>    ecn;
    bit<16>   totalLen;
    bit<16>   identification;
    bit<3>    flags;
    bit<13>   fragOffset;
    bit<8>    ttl;
    bit<8>    protocol;
    bit<16>   hdrChecksum;
    ip4Addr_t srcAddr;
    ip4Addr_t dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

struct metadata_t {
    bit<16> ecmp_index;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
}

parser EcmpParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            PROTO_UDP: parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
}

control EcmpVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control EcmpIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    register<bit<32>>(1) hash_seed;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_ecmp_group(bit<16> base, bit<16> count) {
        bit<32> seed;
        hash_seed.read(seed, 0);
        hash(meta.ecmp_index, HashAlgorithm.crc16, base,
             { seed,
               hdr.ipv4.srcAddr,
               hdr.ipv4.dstAddr,
               hdr.ipv4.protocol,
               hdr.udp.srcPort,
               hdr.udp.dstPort },
             count);
    }

    action set_nhop(macAddr_t dstAddr, egressSpec_t port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            set_ecmp_group;
            drop;
        }
        size = 1024;
        default_action = drop();
    }

    table ecmp_nhop {
        key = {
            meta.ecmp_index: exact;
        }
        actions = {
            set_nhop;
            drop;
        }
        size = 64;
        default_action = drop();
    }

    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            if (ipv4_lpm.apply().hit) {
                ecmp_nhop.apply();
            }
        } else {
            drop();
        }
    }
}

control EcmpEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    register<bit<19>>(1) ecn_threshold;
    counter(NUM_PORTS, CounterType.packets_and_bytes) port_counter;

    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ecn != ECN_NOT_ECT && hdr.ipv4.ecn != ECN_CE) {
            bit<19> threshold;
            ecn_threshold.read(threshold, 0);
            if (standard_metadata.enq_qdepth >= threshold) {
                hdr.ipv4.ecn = ECN_CE;
            }
        }
        port_counter.count((bit<32>)standard_metadata.egress_port);
    }
}

control EcmpComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.dscp,
              hdr.ipv4.ecn,
              hdr.ipv4.totalLen,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.fragOffset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.srcAddr,
              hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control EcmpDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
    }
}

V1Switch(EcmpParser(), EcmpVerifyChecksum(), EcmpIngress(), EcmpEgress(),
         EcmpComputeChecksum(), EcmpDeparser()) main;
