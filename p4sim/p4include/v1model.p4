/* p4sim's v1model architecture description.
 *
 * Written for p4sim from the v1model documentation and the BMv2 simple_switch
 * behaviour: the names, signatures, enum member orders and struct field orders are the
 * same as in the v1model.p4 shipped with p4c, so v1model programs parse unchanged and
 * produce the same P4Info names.
 *
 * Define V1MODEL_VERSION (a date, e.g. 20200408) before including this file to get the
 * newer declarations: typed port numbers (PortId_t) and counters, meters and registers
 * generic in their index type. The default is the original 20180101 flavour. */

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

#include "core.p4"

/* Additional match kinds of v1model tables. */
match_kind {
    range,      /* lo..hi inclusive */
    optional,   /* an exact value or "any" */
    selector    /* key fields hashed by an action_selector */
}

/* Which flavour of this file a program was compiled against. */
const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9> PortId_t;
#endif

/* Per-packet intrinsic metadata of simple_switch. The field order matters: it is
 * the order of the standard_metadata header in BMv2. */
@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t ingress_port;
    PortId_t egress_spec;       /* set in ingress: output port, 511 = drop */
    PortId_t egress_port;       /* read in egress: the port the packet leaves on */
#else
    bit<9>  ingress_port;
    bit<9>  egress_spec;
    bit<9>  egress_port;
#endif
    bit<32> instance_type;      /* normal, clone, resubmit, recirculate, replica */
    bit<32> packet_length;      /* bytes, as received */
    @alias("queueing_metadata.enq_timestamp")
    bit<32> enq_timestamp;      /* microseconds, when enqueued */
    @alias("queueing_metadata.enq_qdepth")
    bit<19> enq_qdepth;         /* packets in the queue before this one */
    @alias("queueing_metadata.deq_timedelta")
    bit<32> deq_timedelta;      /* microseconds spent in the queue */
    @alias("queueing_metadata.deq_qdepth")
    bit<19> deq_qdepth;         /* packets left in the queue after this one */
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48> ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48> egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp")
    bit<16> mcast_grp;          /* multicast group to replicate to, 0 = none */
    @alias("intrinsic_metadata.egress_rid")
    bit<16> egress_rid;         /* replication id of a multicast copy */
    bit<1>  checksum_error;     /* set when verify_checksum found a mismatch */
    error   parser_error;       /* the error the parser stopped with */
    @alias("intrinsic_metadata.priority")
    bit<3>  priority;           /* egress queue priority */
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* An array of counters, updated by count(index). Out-of-range indexes do nothing. */
extern counter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    counter(bit<32> size, CounterType type);
#if V1MODEL_VERSION >= 20200408
    void count(in I index);
#else
    void count(in bit<32> index);
#endif
}

/* One counter per entry of the table whose `counters` property names it; the
 * matched entry's counter is updated whether or not count() is called. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

/* Colors written by meters. */
#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

/* An array of two-rate three-color meters. */
extern meter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    meter(bit<32> size, MeterType type);
#if V1MODEL_VERSION >= 20200408
    void execute_meter<T>(in I index, out T result);
#else
    void execute_meter<T>(in bit<32> index, out T result);
#endif
}

/* One meter per entry of the table whose `meters` property names it. */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* An array of size values of type T, kept across packets. */
extern register<T
#if V1MODEL_VERSION >= 20200408
              , I
#endif
              > {
    register(bit<32> size);
    @noSideEffects
#if V1MODEL_VERSION >= 20200408
    void read(out T result, in I index);
#else
    void read(out T result, in bit<32> index);
#endif
#if V1MODEL_VERSION >= 20200408
    void write(in I index, in T value);
#else
    void write(in bit<32> index, in T value);
#endif
}

/* A table `implementation`: actions are stored as shared members. */
extern action_profile {
    action_profile(bit<32> size);
}

/* result = a random value in lo..hi (inclusive). */
extern void random<T>(out T result, in T lo, in T hi);

/* Send data (a struct, whose name names the digest) to the control plane. */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

/* egress_spec = drop port, mcast_grp = 0. */
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + (H(data) % max), or base when max is 0. */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* A table `implementation` that picks a group member by hashing the selector keys. */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/* In the verify-checksum control: when condition holds and the checksum of data
 * differs from checksum, set standard_metadata.checksum_error. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* In the compute-checksum control: when condition holds, checksum = hash of data. */
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* As verify_checksum, with the unparsed payload appended to data. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* As update_checksum, with the payload appended to data. */
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Clone the packet to a clone session (ingress: I2E, egress: E2E). */
extern void clone(in CloneType type, in bit<32> session);

@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);

/* Re-run ingress on the original packet, keeping the user metadata fields tagged
 * @field_list(index). */
extern void resubmit_preserving_field_list(bit<8> index);

@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);

/* Send the deparsed packet back to the parser, keeping @field_list(index) fields. */
extern void recirculate_preserving_field_list(bit<8> index);

@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);

/* clone(), keeping the user metadata fields tagged @field_list(index) in the clone. */
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Send at most length bytes of the packet. */
extern void truncate(in bit<32> length);

/* Abort (assert) or assume a condition; BMv2 stops on a failed assert. */
extern void assert(in bool check);
extern void assume(in bool check);

/* Write a message to the switch log; "{}" in msg is replaced by data's fields. */
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* The six programmable blocks of the architecture. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep
                       );

#endif  /* _V1_MODEL_P4_ */
