/* parser.p4 — SmartNicParser and SmartNicDeparser.
 *
 * From the CPU port a packet_out comes first; the frame behind it is then parsed as if it
 * arrived on packet_out.in_port. From the uplink (port 1) the underlay comes first
 * (Ethernet, IPv4, UDP 4789, VXLAN), then the tenant frame; from a VM port the tenant
 * frame alone. Tenant IPv4 with options or a non-first fragment stops after IPv4 (no
 * ports: it goes to software, PUNT_OTHER). A frame that is not what the port expects is
 * accepted as parsed so far; ingress drops or punts it and counts it.
 */
#ifndef SMARTNIC_PARSER_P4
#define SMARTNIC_PARSER_P4

#include "headers.p4"
#include "metadata.p4"

parser SmartNicParser(packet_in packet, out headers_t hdr, inout smartnic_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    state start {
        meta.in_port = standard_metadata.ingress_port;
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            UPLINK_PORT: parse_u_ethernet;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        meta.in_port = hdr.packet_out.in_port;
        transition select(hdr.packet_out.op, hdr.packet_out.in_port) {
            (OP_PIPELINE, UPLINK_PORT): parse_u_ethernet;
            (OP_PIPELINE, _): parse_ethernet;
            default: accept;
        }
    }

    state parse_u_ethernet {
        packet.extract(hdr.u_ethernet);
        transition select(hdr.u_ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_u_ipv4;
            default: accept;
        }
    }

    state parse_u_ipv4 {
        packet.extract(hdr.u_ipv4);
        transition select(hdr.u_ipv4.ihl, hdr.u_ipv4.frag_offset, hdr.u_ipv4.protocol) {
            (5, 0, IP_PROTO_UDP): parse_u_udp;
            default: accept;
        }
    }

    state parse_u_udp {
        packet.extract(hdr.u_udp);
        transition select(hdr.u_udp.dst_port) {
            VXLAN_UDP_PORT: parse_vxlan;
            default: accept;
        }
    }

    state parse_vxlan {
        packet.extract(hdr.vxlan);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }

    state parse_arp {
        packet.extract(hdr.arp);
        transition accept;
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_TCP): parse_tcp;
            (5, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
}

control SmartNicDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.u_ethernet);
        packet.emit(hdr.u_ipv4);
        packet.emit(hdr.u_udp);
        packet.emit(hdr.vxlan);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.arp);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
    }
}

#endif
