/* The code protoc-c generates from merge/pprof.proto (build/pprof.pb-c.c, Makefile), compiled
 * here so that every flavour of the library gets it like its own sources. */
#include "pprof.pb-c.c"
