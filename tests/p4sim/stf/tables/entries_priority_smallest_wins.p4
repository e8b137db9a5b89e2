// Initial ternary entries with 'largest_priority_wins = false' (P4_16 1.2.4): p4c's front
// end (EntryPriorities) computes the missing priorities upwards (previous + 1) and, the
// list being out of order, sorts the entries smallest priority first; p4c-bm2-ss then
// gives each entry its position in that list as BMv2 priority (BMv2: the smallest wins).
// So the entry with the smallest 'priority' wins. The control plane cannot add entries
// here: BMv2 makes every table with initial entries immutable, const or not
// (IMMUTABLE_TABLE_ENTRIES; p4sim's STF 'add' and P4Runtime writes refuse them too).

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> k;
    bit<8>  r1;
    bit<8>  r2;
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
    action set_out(bit<9> port, bit<8> val) {
        standard_metadata.egress_spec = port;
        hdr.h.r1 = val;
    }
    table t {
        key = { hdr.h.k : ternary; }
        actions = { set_out; NoAction; }
        largest_priority_wins = false;
        entries = {
            priority = 10 : 16w0x1200 &&& 16w0xFF00 : set_out(1, 0x01);
            priority = 5  : 16w0x1234 &&& 16w0xFFFF : set_out(2, 0x02);
            priority = 20 : 16w0x0034 &&& 16w0x00FF : set_out(3, 0x03);
            16w0x1000 &&& 16w0xF000 : set_out(4, 0x04);   // no priority: 20 + 1 = 21
        }
        default_action = NoAction();
    }
    apply {
        t.apply();
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
