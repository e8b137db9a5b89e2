/* p4sim's core library (P4_16 language specification 1.2.x, appendix "core.p4").
 * Written for p4sim from the specification: the same names and signatures as the
 * core.p4 shipped with p4c, so programs written for p4c parse unchanged. */

#ifndef _CORE_P4_
#define _CORE_P4_

/* Built-in error codes, in the order the specification lists them. */
error {
    NoError,                /* no error */
    PacketTooShort,         /* not enough bits left in the packet to extract */
    NoMatch,                /* a select expression had no matching case */
    StackOutOfBounds,       /* a header stack index was out of range */
    HeaderTooShort,         /* a varbit extract asked for more bits than the field holds */
    ParserTimeout,          /* the parser ran for too long */
    ParserInvalidArgument   /* a parser operation got an unsupported argument */
}

/* The packet being parsed. */
extern packet_in {
    /* Read a fixed-size header (or header stack element) and make it valid. */
    void extract<T>(out T hdr);
    /* Read a header that ends in a varbit field of variableFieldSizeInBits bits. */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* Peek at the next bits as a T without moving the cursor. */
    T lookahead<T>();
    /* Skip sizeInBits bits. */
    void advance(in bit<32> sizeInBits);
    /* Total packet length in bytes (not supported by every target). */
    bit<32> length();
}

/* The packet being assembled by a deparser. */
extern packet_out {
    /* Append hdr when it is a valid header; a struct or stack emits each element. */
    void emit<T>(in T hdr);
}

/* In a parser: when check is false, stop parsing with error toSignal. */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing: the usual default action of a table. */
@noWarn("unused")
action NoAction() {}

/* Match kinds every target must support. */
match_kind {
    exact,
    ternary,
    lpm
}

/* Compile-time assertions (evaluated by the front end). */
@pure extern bool static_assert(bool check, string message);
@pure extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */
