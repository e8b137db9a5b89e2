// Benchmark program of the switch-process figures (bench/switch_bench.py): L2 forwarding.
// Parser: ethernet only. Ingress: an exact table on the destination MAC (the P4Runtime
// write benchmark fills it with thousands of entries) and, on a miss, an exact table on
// the ingress port (the veth packet-rate benchmark forwards port 1 -> port 2 with it).
// Unknown ports drop.

#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct metadata_t { }

struct headers_t {
    ethernet_t ethernet;
}

parser FwdParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control FwdVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FwdIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    table dmac {
        key = {
            hdr.ethernet.dstAddr: exact;
        }
        actions = {
            forward;
            NoAction;
        }
        size = 65536;
        default_action = NoAction();
    }

    table port_fwd {
        key = {
            standard_metadata.ingress_port: exact;
        }
        actions = {
            forward;
            drop;
        }
        size = 512;
        default_action = drop();
    }

    apply {
        if (!dmac.apply().hit) {
            port_fwd.apply();
        }
    }
}

control FwdEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}

control FwdComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FwdDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

V1Switch(FwdParser(), FwdVerifyChecksum(), FwdIngress(), FwdEgress(),
         FwdComputeChecksum(), FwdDeparser()) main;
