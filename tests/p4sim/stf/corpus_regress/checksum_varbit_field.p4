// update_checksum over a field list holding a varbit field: the varbit contributes
// its extracted bits (here 0, 16 or 32 bits of options).
#include <core.p4>
#include <v1model.p4>

header opt_hdr_t {
    bit<8>      len_bytes;
    bit<16>     csum;
    varbit<32>  opts;
}
struct hdrs_t { opt_hdr_t o; }
struct meta_t {}

parser Prs(packet_in pkt, out hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.o, (bit<32>)pkt.lookahead<bit<8>>() * 8);
        transition accept;
    }
}
control Vrf(inout hdrs_t h, inout meta_t m) { apply {} }
control Ing(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 2; }
}
control Egr(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) { apply {} }
control Upd(inout hdrs_t h, inout meta_t m) {
    apply {
        update_checksum(true, { h.o.len_bytes, 8w0, h.o.opts }, h.o.csum, HashAlgorithm.csum16);
    }
}
control Dep(packet_out pkt, in hdrs_t h) { apply { pkt.emit(h.o); } }
V1Switch(Prs(), Vrf(), Ing(), Egr(), Upd(), Dep()) main;
