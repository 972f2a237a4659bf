/* The Ruby reader, inside runtimes/ruby/: a Ruby process (module, version, layout), its iseqs
 * (label, path, line table) read from its memory and cached, and the line of a pc
 * (docs/ruby.md). Every read is bounded and validated: garbage memory gives an error, never a
 * crash. */
#ifndef PP_RUBY_INT_H
#define PP_RUBY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hashtab.h"
#include "base/remote_mem.h"

/* The offsets of one Ruby minor version (x86_64). */
typedef struct pp_rb_layout {
    int major, minor;
    bool tested; /* checked on a real Ruby; otherwise a process needs the self-check */
    int root_ec; /* >= 0: offset of running_ec in the main ractor (3.x); -1: 2.x global */
    unsigned vm_main_ractor, vm_main_thread;
    unsigned ec_vm_stack, ec_vm_stack_size, ec_cfp, ec_thread;
    unsigned th_ec, th_nt, th_thread_id;
    unsigned th_root_fiber; /* rb_thread_t.root_fiber (the self-check's main context) */
    unsigned cfp_size, cfp_pc, cfp_iseq, cfp_ep;
    unsigned iseq_body;
    unsigned body_iseq_size, body_iseq_encoded, body_pathobj, body_label, body_first_lineno;
    bool first_lineno_int; /* location.first_lineno: a C int (3.2+), else a Fixnum VALUE */
    unsigned body_insns_body, body_insns_positions, body_insns_size, body_succ;
    unsigned insn_entry_size; /* iseq_insn_info_entry; line_no at 0 */
    int string_kind;          /* 0: 2.6-3.1 (embedded length in the flags), 1: 3.2, 2: 3.3+ */
} pp_rb_layout;

/* The table of major.minor, NULL when unknown. */
const pp_rb_layout *pp_rb_layout_for(int major, int minor);
/* The i-th table (all versions, for tests), NULL past the last. */
const pp_rb_layout *pp_rb_layout_at(size_t i);

/* One iseq, read once (and validated again once per drain). */
typedef struct pp_rb_iseq {
    uint64_t addr, body;
    unsigned checked_gen;
    bool bad; /* could not be read as an iseq */
    char *label, *path;
    int first_lineno;
    uint64_t encoded;
    uint32_t size;       /* iseq_size, VALUE words */
    uint32_t ninfo;      /* insns_info.size */
    int32_t *lines;      /* ninfo line numbers */
    uint64_t *succ;      /* the succinct bitvector (words), or NULL */
    size_t nsucc;        /* words */
    uint32_t *positions; /* or the positions array (when no succinct table), or NULL */
} pp_rb_iseq;

typedef struct pp_rb_proc {
    int pid;
    pp_rmem mem;
    pp_rb_layout L;
    char version[16]; /* "3.1.2" */
    uint64_t vm;      /* *ruby_current_vm_ptr */
    uint64_t ec_ptr;  /* 2.x: &ruby_current_execution_context_ptr */
    pp_htab iseqs;    /* of pp_rb_iseq* */
} pp_rb_proc;

typedef enum { PP_RB_OK, PP_RB_GONE, PP_RB_NOT_RUBY, PP_RB_UNSUPPORTED, PP_RB_ERROR } pp_rb_status;

/* Opens pid: finds libruby (or a static ruby), its version and symbols. NULL with *st and err
 * otherwise (unsupported: err is "unsupported Ruby X.Y"). */
pp_rb_proc *pp_rb_open(int pid, pp_rb_status *st, char *err, size_t errlen);
void pp_rb_close(pp_rb_proc *p);

/* The iseq at addr (cached; validated again when gen differs from its last check). NULL when it
 * cannot be read as one. */
pp_rb_iseq *pp_rb_iseq_get(pp_rb_proc *p, uint64_t addr, unsigned gen);
/* The line of pc in iseq (first_lineno when pc is 0 or outside it). */
int pp_rb_iseq_line(const pp_rb_iseq *q, uint64_t pc);
/* A Ruby String's bytes (at most cap-1), NUL-terminated; -1 when addr is not a String. */
int pp_rb_read_string(pp_rmem *m, const pp_rb_layout *L, uint64_t addr, char *out, size_t cap);

/* The self-check of an untested layout: the main thread's outermost Ruby frame, read with the
 * layout, is `<main>` of the script on the command line. 0 when it is, else -1 with why. */
int pp_rb_self_check(pp_rb_proc *p, char *why, size_t len);

/* The line table lookups (pure, for tests): the succinct bitvector's rank of pos (Ruby's
 * succ_index_lookup) over a table of nwords words; -1 when pos is outside it. */
long pp_rb_succ_rank(const uint64_t *tab, size_t nwords, uint32_t pos);
/* The index of the last position <= pos in a sorted positions array (-1 if none). */
long pp_rb_positions_index(const uint32_t *pos, uint32_t n, uint32_t at);

/* "<label> - <path>:<line>_[rb]" into out; rbspy's text for a C function when label is NULL. */
void pp_rb_frame_text(char *out, size_t len, const char *label, const char *path, int line);

#endif
