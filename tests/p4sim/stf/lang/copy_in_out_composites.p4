// Copy-in/copy-out of headers and of arguments left by exit (P4_16 6.8 and 12.4; p4c's
// front end and inliner implement both, so BMv2 shows them). Selected by k:
//   1: the same header to two inout parameters: copied out left to right (y wins);
//   2: an action writes hdr.h directly and its inout parameter (a copy of hdr.h) is
//      copied back over it when the action returns;
//   3: an in parameter keeps the value of hdr.h at the call;
//   4: setInvalid() through the global name is undone by the copy-out of a valid copy;
//   5: exit in an action still copies out its scalar inout and out arguments;
//   6: exit in an action still copies out a header inout argument;
//   7: exit in a control applied from ingress copies out none of its arguments (BMv2:
//      p4c inlines the control, and the copy-out after its body is skipped by exit).
// Cases 5 and 6 are what p4c's own BMv2 tests issue2225-bmv2 and gauntlet_exit_combination_3
// pin (p4c testdata/p4_16_samples: `val = 3; exit;` in an action leaves 3 in the argument).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> a;
    bit<8> b;
    bit<8> c;
}
struct headers_t { h_t h; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control Leave(inout bit<8> x, out bit<8> y, inout h_t h) {
    apply {
        x = 0x71;
        y = 0x72;
        h.k = 0x77;
        exit;
    }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    Leave() leave;
    action two(inout h_t x, inout h_t y) {
        x.a = 1;
        y.a = y.a + 1;
    }
    action overwrite(inout h_t x) {
        hdr.h.b = 0x55;
        x.a = x.b;
    }
    action read_in(in h_t x) {
        hdr.h.a = 0x77;
        hdr.h.b = x.a;
    }
    action revalidate(inout h_t x) {
        hdr.h.setInvalid();
        x.a = 3;
    }
    action leave_scalars(inout bit<8> x, out bit<8> y) {
        x = 0x51;
        y = 0x52;
        exit;
    }
    action leave_header(inout h_t x) {
        hdr.h.b = 0x99;
        x.a = 0x61;
        exit;
    }
    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.h.k == 1) {
            two(hdr.h, hdr.h);
        } else if (hdr.h.k == 2) {
            overwrite(hdr.h);
        } else if (hdr.h.k == 3) {
            read_in(hdr.h);
        } else if (hdr.h.k == 4) {
            revalidate(hdr.h);
        } else if (hdr.h.k == 5) {
            leave_scalars(hdr.h.a, hdr.h.b);
        } else if (hdr.h.k == 6) {
            leave_header(hdr.h);
        } else if (hdr.h.k == 7) {
            leave.apply(hdr.h.a, hdr.h.b, hdr.h);
        }
        hdr.h.c = 0xCC;   // skipped after exit
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
