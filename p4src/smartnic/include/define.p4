/* define.p4 — constants of the SmartNIC pipeline (p4src/smartnic/smartnic.p4).
 *
 * Ports: 1 is the fabric uplink (underlay, VXLAN), 2..254 face the server's VMs, 255 is
 * the CPU port (P4Runtime packet I/O). The uplink's number is fixed so that the parser
 * can tell underlay frames from a VM's own UDP/4789 traffic.
 */
#ifndef SMARTNIC_DEFINE_P4
#define SMARTNIC_DEFINE_P4

#define CPU_PORT 255
#define UPLINK_PORT 1
#define DROP_PORT 511

/* The session table's size (and the TCP-state register's): a build may define it
 * (fornax/build.py writes a two-line wrapper); 2^18 holds the 10^5-session bench in the
 * software-centric build, which needs two entries per connection. */
#ifndef SESSION_TABLE_SIZE
#define SESSION_TABLE_SIZE 262144
#endif

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP  = 0x0806;
const bit<8>  IP_PROTO_TCP   = 6;
const bit<8>  IP_PROTO_UDP   = 17;
const bit<16> VXLAN_UDP_PORT = 4789;   /* RFC 7348 */
const bit<8>  VXLAN_FLAGS_VNI = 0x08;  /* the I flag: the VNI is valid */
const bit<16> ARP_OP_REQUEST = 1;
const bit<16> ARP_OP_REPLY   = 2;

/* packet_out.op: what the pipeline does with a PacketOut. */
const bit<6> OP_EMIT      = 0;   /* leave on packet_out.egress_port, untouched */
const bit<6> OP_PIPELINE  = 1;   /* process as if received on packet_out.in_port */
const bit<6> OP_HEARTBEAT = 2;   /* back to the CPU through ingress and egress */

/* packet_in.reason: why a packet reached software. */
const bit<7> PUNT_MISS      = 1;   /* no session: a new connection */
#ifndef FORNAX_BASELINE
const bit<7> PUNT_STALE     = 2;   /* the session's policy version is not its scope's */
const bit<7> PUNT_CORRUPT   = 3;   /* the session's check code does not match its data */
#endif
const bit<7> PUNT_SOFTWARE  = 4;   /* session, port or VPC pinned to software forwarding */
const bit<7> PUNT_HEARTBEAT = 5;   /* a heartbeat came back through the pipeline */
const bit<7> PUNT_OTHER     = 6;   /* IPv4 that is not TCP/UDP (or has options) */
const bit<7> PUNT_NO_ROUTE  = 7;   /* a session's next hop has no entry */

/* Session verdicts (action data). */
/* verdict 0 (and any other value): deny, the packet is dropped and counted (EV_DENIED) */
const bit<8> VERDICT_ALLOW    = 1;
const bit<8> VERDICT_SOFTWARE = 2;

/* nat_side (action data): which endpoint of the canonical key is a load balancer's VIP
 * that this NIC translates to nat_ip:nat_port (the backend is behind this NIC). */
const bit<8> NAT_NONE = 0;
const bit<8> NAT_LO   = 1;
const bit<8> NAT_HI   = 2;

/* TCP states kept per session in the data plane (register SmartNicIngress.tcp.states). */
#ifndef FORNAX_BASELINE
const bit<4> TCP_NONE    = 0;
const bit<4> TCP_SYN     = 1;   /* SYN seen */
const bit<4> TCP_SYNACK  = 2;   /* SYN+ACK seen */
const bit<4> TCP_EST     = 3;   /* established (an ACK after SYN+ACK, or picked up mid-stream) */
const bit<4> TCP_FIN1    = 4;   /* one side sent FIN */
const bit<4> TCP_CLOSED  = 5;   /* both sides sent FIN, or a RST */
#endif

/* Index of the drop/punt counter SmartNicIngress.events. */
const bit<32> EV_UNKNOWN_PORT = 8;
const bit<32> EV_NOT_VXLAN    = 9;
const bit<32> EV_UNKNOWN_VNI  = 10;
const bit<32> EV_DENIED       = 11;
const bit<32> EV_ARP_ANSWERED = 12;
const bit<32> EV_L2_DROPPED   = 13;
#ifndef FORNAX_BASELINE
const bit<32> EV_TCP_DIGEST   = 14;
#endif
#define EVENT_COUNTERS 16

#endif
