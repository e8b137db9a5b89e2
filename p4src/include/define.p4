/* define.p4 — constants shared by every part of the fabric pipeline.
 *
 * Ports are bit<9> (v1model). Register and counter arrays indexed by port have
 * PORT_CELLS cells; the per (port, priority) arrays of PFC have PFC_CELLS cells with
 * index = port * 8 + priority.
 */
#ifndef FABRIC_DEFINE_P4
#define FABRIC_DEFINE_P4

typedef bit<9>  port_t;
typedef bit<48> mac_t;
typedef bit<32> ipv4_addr_t;

const port_t CPU_PORT  = 255;          /* packet_in / packet_out (simple_switch --cpu-port 255) */
const port_t DROP_PORT = 511;          /* egress_spec value set by mark_to_drop */

const bit<32> PORT_CELLS = 512;        /* one cell per 9-bit port */
const bit<32> PFC_CELLS  = 4096;       /* 512 ports x 8 priorities */

/* Queue-depth histogram (FabricEgress.telemetry.qdepth_hist): QDEPTH_BINS cells per
 * egress port, index = port * QDEPTH_BINS + bin, bin = min(enq_qdepth >> QDEPTH_BIN_SHIFT,
 * QDEPTH_BINS - 1): bins of 4 packets, [0-3], [4-7], ..., [56-59], and [60+] (BMv2's
 * default queue holds 64). A counter, not a register, so that the controller can read it
 * over P4Runtime on BMv2 (which reads no register) and never has to clear it. */
const bit<32> QDEPTH_BINS = 16;
const bit<8>  QDEPTH_BIN_SHIFT = 2;    /* 4 packets per bin (a shift amount: at most 8 bits wide on BMv2) */
const bit<32> QDEPTH_HIST_CELLS = PORT_CELLS * QDEPTH_BINS;   /* 8192 */

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP  = 0x0806;
const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<16> ETHERTYPE_MAC_CONTROL = 0x8808;   /* 802.3x / 802.1Qbb */
const bit<16> PFC_OPCODE = 0x0101;
const mac_t   PFC_DST_MAC = 0x0180C2000001;
const bit<32> PFC_FRAME_BYTES = 60;    /* minimum Ethernet frame without FCS */

const bit<8>  IP_PROTO_UDP = 17;
const bit<16> UDP_PORT_ROCEV2 = 4791;

const bit<16> ARP_OP_REQUEST = 1;
const bit<16> ARP_OP_REPLY   = 2;

/* packet_in.reason */
const bit<7> PUNT_SAMPLED = 0;
const bit<7> PUNT_ARP     = 1;
const bit<7> PUNT_TTL     = 2;

/* Clone sessions: PAUSE/RESUME frames leave through session PFC_SESSION_BASE + port
 * (the controller maps session 100 + p to egress port p); flow samples to the CPU use
 * CPU_SESSION (mapped to CPU_PORT). */
const bit<32> PFC_SESSION_BASE = 100;
const bit<32> CPU_SESSION = 255;

/* Digest receivers (the P4Runtime digests are told apart by name; BMv2 logs the id). */
const bit<32> SAMPLE_DIGEST_RECEIVER = 1;
const bit<32> ALARM_DIGEST_RECEIVER = 2;
const bit<32> ELEPHANT_DIGEST_RECEIVER = 3;

/* Heavy-hitter table of FabricIngress.elephants: cells per stage (a power of two), the
 * fingerprint space (a 31-bit fingerprint; 0 marks a cell never used), the reasons. */
const bit<32> ELEPHANT_SLOTS = 1024;
const bit<32> ELEPHANT_FP_SPACE = 0x80000000;
const bit<8>  ELEPHANT_CROSSED = 1;    /* its count reached threshold_pkts in its window */
const bit<8>  ELEPHANT_ALARMED = 2;    /* its port rose to a new alarm level */

/* Index of the @field_list kept by the clones (see metadata.p4). */
const bit<8> FL_CLONE = 1;
/* ... and the @field_list of an alarm report's copy (alarms.p4). */
const bit<8> FL_ALARM = 2;

/* standard_metadata.instance_type values of BMv2 simple_switch. */
const bit<32> INSTANCE_NORMAL = 0;
const bit<32> INSTANCE_INGRESS_CLONE = 1;
const bit<32> INSTANCE_EGRESS_CLONE = 2;
const bit<32> INSTANCE_RECIRC = 4;

/* switch_info role */
const bit<8> ROLE_LEAF  = 0;
const bit<8> ROLE_SPINE = 1;

/* ECN field values */
const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_ECT1 = 1;
const bit<2> ECN_ECT0 = 2;
const bit<2> ECN_CE = 3;

#endif
