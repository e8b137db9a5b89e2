/* Wrapper: the STF test next to this file runs against p4src/fabric.p4. */
#include "../../../../p4src/fabric.p4"
