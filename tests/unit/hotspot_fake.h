/* The HotSpot unit tests' synthetic method layout (test_hotspot_layout, test_hotspot_walker): the
 * offsets of Method, ConstMethod, ConstantPool, Klass and Symbol fields the method namer reads,
 * for methods laid out in fake memory (not a real JVM's offsets). */
#ifndef PP_TEST_HOTSPOT_FAKE_H
#define PP_TEST_HOTSPOT_FAKE_H

#include "runtimes/java/hotspot.h"

#define PP_TEST_HS_METHOD_LAYOUT                                                                   \
    ((pp_hs_layout){.method_const = 8,                                                             \
                    .cm_constants = 8,                                                             \
                    .cm_name_index = 34,                                                           \
                    .cm_sig_index = 36,                                                            \
                    .cp_holder = 24,                                                               \
                    .cp_length = 60,                                                               \
                    .cp_size = 72,                                                                 \
                    .klass_name = 24,                                                              \
                    .sym_length = 4,                                                               \
                    .sym_body = 6})

#endif
