/* The rbspy backend of the Ruby runtime (--ruby-mode rbspy; rbspy.c, docs/ruby.md "rbspy
 * mode"): one `rbspy record` child per Ruby process, its collapsed output parsed. */
#ifndef PP_RBSPY_H
#define PP_RBSPY_H

#include <stddef.h>

#include "runtimes/runtime.h"

#define PP_RBSPY_MAX_HZ 100 /* gProfiler's MAX_FREQUENCY for rbspy */

extern const pp_backend pp_ruby_rbspy_backend;

/* Parses rbspy's collapsed output ("frame;...;frame count" per line, root first) into dst, a pid
 * entry of out: each Ruby frame "<label> - <path>:<line>" gets gProfiler's "_[rb]" suffix (kept
 * once when rbspy already wrote it), C-function frames ("... [c function] - (unknown):0") none.
 * Malformed lines are skipped. text is modified. Returns the number of lines added. */
size_t pp_rbspy_parse(char *text, pp_profile *out, pp_pid_profile *dst);

/* The canonical path of the rbspy executable (pp_resource_tool("ruby/rbspy")), 0 or -1. */
int pp_rbspy_find(char *out, size_t len);

#endif
