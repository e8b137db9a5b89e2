// Benchmark program of p4sim.p4rt_read_ms.counters_4096 (bench/switch_bench.py): one
// indexed counter of 4,096 cells (packets and bytes), counted by the ingress port, so a
// wildcard P4Runtime Read of it returns 4,096 CounterEntry messages (GOR's and the
// monitor's reads of a leaf's per-port counters, scaled up). Six small counters beside it
// give p4sim.p4rt_read_cpu_ms.poll_7_counters the shape of GOR's poll of a leaf: 4 ports'
// cells of 7 counters in one Read.

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

parser CntParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control CntVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control CntIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    counter(4096, CounterType.packets_and_bytes) cells;
    counter(64, CounterType.packets_and_bytes) tx;
    counter(64, CounterType.packets_and_bytes) rx;
    counter(64, CounterType.packets) ecn;
    counter(64, CounterType.packets) drops;
    counter(64, CounterType.packets) pfc_tx;
    counter(512, CounterType.packets) pfc_rx;

    apply {
        cells.count((bit<32>) standard_metadata.ingress_port);
        tx.count((bit<32>) standard_metadata.ingress_port);
        rx.count((bit<32>) standard_metadata.ingress_port);
        ecn.count((bit<32>) standard_metadata.ingress_port);
        drops.count((bit<32>) standard_metadata.ingress_port);
        pfc_tx.count((bit<32>) standard_metadata.ingress_port);
        pfc_rx.count((bit<32>) standard_metadata.ingress_port);
        mark_to_drop(standard_metadata);
    }
}

control CntEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}

control CntComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control CntDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

V1Switch(CntParser(), CntVerifyChecksum(), CntIngress(), CntEgress(), CntComputeChecksum(),
         CntDeparser()) main;
