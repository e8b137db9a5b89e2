// Numeric parser error codes as BMv2 sees them (table key on standard_metadata.parser_error):
// NoError 0, PacketTooShort 1, NoMatch 2, StackOutOfBounds 3, HeaderTooShort 4,
// ParserInvalidArgument 6, then user errors 7 and 8 in declaration order.
#include <core.p4>
#include <v1model.p4>

error { FirstUser, SecondUser }

header ctl_t {
    bit<8> kind;
    bit<8> len;
    bit<8> code;
}
header big_t {
    bit<32> v;
}
header e_t {
    bit<8> v;
}
header vb_t {
    varbit<16> data;
}
struct headers_t {
    ctl_t  ctl;
    big_t  big;
    e_t[2] hs;
    vb_t   vb;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ctl);
        transition select(hdr.ctl.kind) {
            1: too_short;
            2: no_match;
            3: overflow;
            4: too_long;
            6: bad_length;
            7: user1;
            8: user2;
            default: accept;
        }
    }
    state too_short {
        pkt.extract(hdr.big);
        transition accept;
    }
    state no_match {
        verify(false, error.NoMatch);
        transition accept;
    }
    state overflow {
        pkt.extract(hdr.hs.next);
        transition select(hdr.hs.last.v) {
            0xFF: accept;
            default: overflow;
        }
    }
    state too_long {
        pkt.extract(hdr.vb, (bit<32>)hdr.ctl.len * 8);
        transition accept;
    }
    state bad_length {
        pkt.extract(hdr.vb, (bit<32>)hdr.ctl.len);
        transition accept;
    }
    state user1 {
        verify(false, error.FirstUser);
        transition accept;
    }
    state user2 {
        verify(false, error.SecondUser);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    action set_code(bit<8> c) {
        hdr.ctl.code = c;
    }
    table errmap {
        key = { standard_metadata.parser_error : exact; }
        actions = { set_code; }
        default_action = set_code(0xFF);
    }
    apply {
        errmap.apply();
        standard_metadata.egress_spec = 1;
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
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.big);
        pkt.emit(hdr.hs);
        pkt.emit(hdr.vb);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
