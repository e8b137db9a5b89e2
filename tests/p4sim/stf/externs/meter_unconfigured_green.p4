// An indexed meter and a direct meter (read by the action of a hit entry)
// that were never configured always return GREEN (0).

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<8>  r1;
    bit<16> r2;
}

struct headers_t {
    h_t h;
}

struct meta_t {
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    meter(32w4, MeterType.packets) m;
    direct_meter<bit<2>>(MeterType.bytes) dm;
    bit<2> dcolor = 3;
    action fwd(bit<9> port) {
        standard_metadata.egress_spec = port;
        dm.read(dcolor);
    }
    table t {
        key = { hdr.h.k : exact; }
        actions = { fwd; }
        default_action = fwd(9);
        meters = dm;
    }
    apply {
        bit<2> color = 3;
        m.execute_meter((bit<32>) hdr.h.k, color);
        hdr.h.r1 = 8w0x10 | (bit<8>) color;
        t.apply();
        hdr.h.r2 = 16w0x2000 | (bit<16>) dcolor;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
