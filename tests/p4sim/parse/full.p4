// A program exercising most of the P4_16 grammar (p4sim parser test fixture).
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x800;
typedef bit<48> macAddr_t;
type bit<32> ip4Addr_t;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
    varbit<320> options;
}

header_union ip_u { ipv4_t v4; }
struct pair<T> { T a; T b; }
enum Color { RED, GREEN }
enum bit<8> Proto { TCP = 6, UDP = 17 }
error { MyError }

struct metadata {
    @field_list(1) bit<32> x;
    pair<bit<8>> p;
}
struct headers {
    ethernet_t   ethernet;
    ipv4_t       ipv4;
    ethernet_t[2] stack;
}

extern MyExt<T> {
    MyExt(bit<32> size);
    T get<U>(in U x);
    abstract bit<8> cb(in bit<8> v);
}

bit<8> add1(in bit<8> x) { return x + 1; }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    value_set<bit<16>>(4) pvs;
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType, meta.x[7:0]) {
            (TYPE_IPV4, _): parse_ipv4;
            (0x86dd &&& 0xffff, 1..5): accept;
            (pvs, default): accept;
            default: reject;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) * 32));
        verify(hdr.ipv4.version == 4, error.MyError);
        transition select(packet.lookahead<bit<8>>()) {
            8w0 .. 8w10: accept;
            default: accept;
        }
    }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    counter(64, CounterType.packets) c;
    register<bit<32>>(1024) r;
    direct_counter(CounterType.packets_and_bytes) dc;
    action_selector(HashAlgorithm.crc16, 32w1024, 32w14) sel;
    MyExt<bit<8>>(4) ext = {
        bit<8> cb(in bit<8> v) { return v; }
    };
    bit<32> tmp = 0;

    action drop() { mark_to_drop(standard_metadata); }
    action fwd(macAddr_t dst, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dst;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr : lpm @name("dst");
            hdr.ipv4.srcAddr : ternary;
        }
        actions = { fwd; @defaultonly drop; NoAction(); }
        size = 1024;
        default_action = drop();
        counters = dc;
        const entries = {
            (0x0a000001, 0x0a000000 &&& 0xff000000) : fwd(1, 2);
            priority = 10 : (_, default) : drop();
        }
        implementation = sel;
        my_custom_prop = 3;
    }
    apply {
        bit<8> v = (bit<8>)(tmp >> 2);
        bool b = v < 3 && v > 1 || !(v <= 2) ? true : false;
        tmp = tmp |+| 1 |-| 2;
        tmp = (bit<32>)(v ++ v ++ 16w0) << 1;
        hash(tmp, HashAlgorithm.crc32, 32w0, { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr }, 32w65536);
        r.read(tmp, 0);
        r.write(index = 0, value = tmp);
        metadata m2 = { x = 1, p = { a = 1, b = 2 } };
        pair<bit<8>> p2 = (pair<bit<8>>){ a = 1, b = 2 };
        hdr.stack[0].setValid();
        hdr.stack.push_front(1);
        log_msg("x={}", { tmp });
        if (hdr.ipv4.isValid()) {
            switch (ipv4_lpm.apply().action_run) {
                fwd:
                drop: { tmp = 1; }
                default: {}
            }
        } else if (hdr.ethernet.isValid()) {
            exit;
        } else { ; }
        @atomic { tmp = tmp - ~tmp; }
        if (ipv4_lpm.apply().hit) { return; }
        clone_preserving_field_list(CloneType.I2E, 5, 1);
        tmp = add1(v) == 8w3 ? 1 : -1;
        tmp[7:0] = v;
        b = Color.RED == Color.GREEN;
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr); }
}
control MyEmpty<H>(inout H hdr, inout metadata meta) { apply { } }
control E2(inout headers hdr, inout metadata meta, inout standard_metadata_t s) { apply {} }

V1Switch(MyParser(), MyEmpty(), MyIngress(), E2(), MyEmpty<headers>(), MyDeparser()) main;
