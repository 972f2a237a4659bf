/* Reading HotSpot's exported layout out of a JVM's memory, checking it, caching it per libjvm
 * build-id, and opening a JVM for reading (hotspot.h). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/elfinfo.h"
#include "runtimes/java/hotspot.h"
#include "runtimes/modules.h"

const char *const pp_hs_sym_names[PP_HS_NSYMS] = {
    [PP_HS_STRUCTS] = "gHotSpotVMStructs",
    [PP_HS_ST_STRIDE] = "gHotSpotVMStructEntryArrayStride",
    [PP_HS_ST_TYPE] = "gHotSpotVMStructEntryTypeNameOffset",
    [PP_HS_ST_FIELD] = "gHotSpotVMStructEntryFieldNameOffset",
    [PP_HS_ST_STATIC] = "gHotSpotVMStructEntryIsStaticOffset",
    [PP_HS_ST_OFFSET] = "gHotSpotVMStructEntryOffsetOffset",
    [PP_HS_ST_ADDRESS] = "gHotSpotVMStructEntryAddressOffset",
    [PP_HS_TYPES] = "gHotSpotVMTypes",
    [PP_HS_TY_STRIDE] = "gHotSpotVMTypeEntryArrayStride",
    [PP_HS_TY_NAME] = "gHotSpotVMTypeEntryTypeNameOffset",
    [PP_HS_TY_SIZE] = "gHotSpotVMTypeEntrySizeOffset",
    [PP_HS_INTS] = "gHotSpotVMIntConstants",
    [PP_HS_IC_STRIDE] = "gHotSpotVMIntConstantEntryArrayStride",
    [PP_HS_IC_NAME] = "gHotSpotVMIntConstantEntryNameOffset",
    [PP_HS_IC_VALUE] = "gHotSpotVMIntConstantEntryValueOffset",
    [PP_HS_LONGS] = "gHotSpotVMLongConstants",
    [PP_HS_LC_STRIDE] = "gHotSpotVMLongConstantEntryArrayStride",
    [PP_HS_LC_NAME] = "gHotSpotVMLongConstantEntryNameOffset",
    [PP_HS_LC_VALUE] = "gHotSpotVMLongConstantEntryValueOffset",
};

#define MAX_ENTRIES 20000 /* JDK 17 exports ~1,900 fields, 25 ~1,300: far below */
#define MAX_STRIDE 256
#define NAME_MAX_LEN 80 /* longer names match nothing we want */

/* What is wanted from the tables: types and fields by name ('|' separates the names a version
 * may use), stored at off in pp_hs_layout. */
enum { W_OFF, W_STATIC, W_SIZE, W_INT };
typedef struct want {
    const char *types, *fields;
    size_t off;
    unsigned char what;
} want;

#define O(f) offsetof(pp_hs_layout, f)
static const want wants[] = {
    {"CodeCache", "_heaps", O(cc_heaps), W_STATIC},
    {"CodeCache", "_low_bound", O(cc_low), W_STATIC},
    {"CodeCache", "_high_bound", O(cc_high), W_STATIC},
    {"ThreadsSMRSupport", "_java_thread_list", O(threads_list), W_STATIC},
    {"AbstractInterpreter", "_code", O(interp_code), W_STATIC},
    {"Abstract_VM_Version", "_vm_major_version", O(vm_major), W_STATIC},
    {"Abstract_VM_Version", "_s_vm_release", O(vm_release), W_STATIC},
    {"GrowableArrayBase|GenericGrowableArray", "_len", O(ga_len), W_OFF},
    {"GrowableArray<int>", "_data", O(ga_data), W_OFF},
    {"CodeHeap", "_memory", O(heap_memory), W_OFF},
    {"CodeHeap", "_segmap", O(heap_segmap), W_OFF},
    {"CodeHeap", "_log2_segment_size", O(heap_log2seg), W_OFF},
    {"VirtualSpace", "_low", O(vs_low), W_OFF},
    {"VirtualSpace", "_high", O(vs_high), W_OFF},
    {"HeapBlock", NULL, O(heapblock_size), W_SIZE},
    {"CodeBlob", "_name", O(blob_name), W_OFF},
    {"CodeBlob", "_size", O(blob_size), W_OFF},
    {"CodeBlob", "_frame_size", O(blob_frame_size), W_OFF},
    {"CodeBlob", "_code_begin", O(blob_code_begin), W_OFF},
    {"CodeBlob", "_code_end", O(blob_code_end), W_OFF},
    {"CodeBlob", "_code_offset", O(blob_code_offset), W_OFF},
    {"CodeBlob", "_data_offset", O(blob_data_offset), W_OFF},
    {"CodeBlob", "_kind", O(blob_kind), W_OFF},
    {"CodeBlob", "_frame_complete_offset", O(blob_fco), W_OFF},
    {"CodeBlobKind::Nmethod", NULL, O(kind_nmethod), W_INT},
    {"nmethod|CompiledMethod", "_method", O(nm_method), W_OFF},
    {"nmethod", "_comp_level", O(nm_comp_level), W_OFF},
    {"nmethod", "_compile_id", O(nm_compile_id), W_OFF},
    {"nmethod", "_scopes_pcs_offset", O(nm_scopes_pcs), W_OFF},
    {"nmethod|CompiledMethod", "_scopes_data_offset|_scopes_data_begin", O(nm_scopes_data), W_OFF},
    {"nmethod", "_metadata_offset", O(nm_metadata), W_OFF},
    {"nmethod", "_immutable_data", O(nm_immutable_data), W_OFF},
    {"nmethod", "_orig_pc_offset", O(nm_orig_pc), W_OFF},
    {"CompiledMethod|nmethod", "_scopes_data_begin", O(nm_sd_begin), W_OFF},
    {"nmethod", "_dependencies_offset", O(nm_deps), W_OFF},
    {"nmethod", "_scopes_data_offset", O(nm_sd_offset), W_OFF},
    {"nmethod", "_immutable_data_size", O(nm_imm_size), W_OFF},
    {"CodeBlob", "_mutable_data", O(blob_mutable), W_OFF},
    {"CodeBlob", "_mutable_data_size", O(blob_mutable_size), W_OFF},
    {"CodeBlob", "_relocation_size", O(blob_reloc_size), W_OFF},
    {"PcDesc", "_pc_offset", O(pcd_pc), W_OFF},
    {"PcDesc", "_scope_decode_offset", O(pcd_scope), W_OFF},
    {"PcDesc", NULL, O(pcd_size), W_SIZE},
    {"Method", "_constMethod", O(method_const), W_OFF},
    {"ConstMethod", "_constants", O(cm_constants), W_OFF},
    {"ConstMethod", "_name_index", O(cm_name_index), W_OFF},
    {"ConstMethod", "_signature_index", O(cm_sig_index), W_OFF},
    {"ConstMethod", NULL, O(cm_size), W_SIZE},
    {"ConstantPool", "_pool_holder", O(cp_holder), W_OFF},
    {"ConstantPool", "_length", O(cp_length), W_OFF},
    {"ConstantPool", NULL, O(cp_size), W_SIZE},
    {"Klass", "_name", O(klass_name), W_OFF},
    {"Symbol", "_length", O(sym_length), W_OFF},
    {"Symbol", "_body", O(sym_body), W_OFF},
    {"JavaThread", "_anchor", O(jt_anchor), W_OFF},
    {"JavaThread", "_threadObj", O(jt_thread_obj), W_OFF},
    {"JavaThread|Thread", "_osthread", O(jt_osthread), W_OFF},
    {"JavaThread", "_thread_state", O(jt_state), W_OFF},
    {"JavaFrameAnchor", "_last_Java_sp", O(anchor_sp), W_OFF},
    {"JavaFrameAnchor", "_last_Java_pc", O(anchor_pc), W_OFF},
    {"JavaFrameAnchor", "_last_Java_fp", O(anchor_fp), W_OFF},
    {"OSThread", "_thread_id", O(os_tid), W_OFF},
    {"ThreadsList", "_length", O(tl_length), W_OFF},
    {"ThreadsList", "_threads", O(tl_threads), W_OFF},
    {"StubQueue", "_stub_buffer", O(sq_buffer), W_OFF},
    {"StubQueue", "_buffer_limit", O(sq_limit), W_OFF},
    {"frame::interpreter_frame_sender_sp_offset", NULL, O(if_sender_sp), W_INT},
    {"frame::interpreter_frame_last_sp_offset", NULL, O(if_last_sp), W_INT},
    {"_thread_in_native", NULL, O(st_native), W_INT},
    {"_thread_in_vm", NULL, O(st_vm), W_INT},
    {"_thread_in_Java", NULL, O(st_java), W_INT},
};
#define NWANTS (sizeof(wants) / sizeof(wants[0]))
#define INT_UNSET INT32_MIN

static void init_layout(pp_hs_layout *L)
{
    memset(L, 0, sizeof(*L));
    for (size_t i = 0; i < NWANTS; i++) {
        void *dst = (char *)L + wants[i].off;
        if (wants[i].what == W_OFF || wants[i].what == W_SIZE)
            *(uint32_t *)dst = PP_HS_NONE;
        else if (wants[i].what == W_INT)
            *(int32_t *)dst = INT_UNSET;
    }
    L->if_method = INT_UNSET;
    L->major = -1;
}

/* Whether name is one of the '|'-separated alternatives. */
static bool name_in(const char *name, const char *alts)
{
    size_t n = strlen(name);
    for (const char *p = alts; p && *p;) {
        const char *e = strchr(p, '|');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && memcmp(p, name, n) == 0)
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

/* A NUL-terminated string of at most NAME_MAX_LEN-1 bytes at addr: 0, or -1 (unreadable, or
 * longer: it matches nothing wanted). */
static int read_name(pp_rmem *m, uint64_t addr, char *out)
{
    if (!pp_rmem_valid_ptr(addr, 1))
        return -1;
    size_t got = 0;
    while (got < NAME_MAX_LEN) {
        /* up to the next 64-byte boundary: never past a page that may end the mapping */
        size_t n = 64 - ((addr + got) & 63);
        if (n > NAME_MAX_LEN - got)
            n = NAME_MAX_LEN - got;
        if (pp_rmem_read_cached(m, addr + got, out + got, n) != 0)
            return -1;
        void *z = memchr(out + got, 0, n);
        if (z)
            return 0;
        got += n;
    }
    return -1;
}

static int get_u64(pp_rmem *m, uint64_t addr, uint64_t *v)
{
    return addr ? pp_rmem_read_cached(m, addr, v, 8) : -1;
}

static uint64_t field_u64(const uint8_t *e, uint64_t off)
{
    uint64_t v;
    memcpy(&v, e + off, 8);
    return v;
}

/* The geometry of one table: its first entry, stride and the offsets of up to 4 fields of its
 * entries, each checked to fit in the stride (width bytes). */
typedef struct table {
    uint64_t base, stride, off[5];
} table;

static int table_open(pp_rmem *m, const uint64_t *syms, int arr, int stride, const int *offs,
                      const unsigned *widths, int n, table *t, char *why, size_t len)
{
    const char *name = pp_hs_sym_names[arr];
    if (get_u64(m, syms[arr], &t->base) != 0 || get_u64(m, syms[stride], &t->stride) != 0) {
        snprintf(why, len, "cannot read %s or its stride in the JVM's memory", name);
        return -1;
    }
    if (!pp_rmem_valid_ptr(t->base, 8) || t->stride < 8 || t->stride > MAX_STRIDE) {
        snprintf(why, len, "implausible %s (at 0x%llx, stride %llu)", name,
                 (unsigned long long)t->base, (unsigned long long)t->stride);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (get_u64(m, syms[offs[i]], &t->off[i]) != 0 || t->off[i] > t->stride ||
            widths[i] > t->stride - t->off[i]) { /* no wrap: the offset is the target's */
            snprintf(why, len, "implausible %s (cannot read it, or past the stride)",
                     pp_hs_sym_names[offs[i]]);
            return -1;
        }
    return 0;
}

/* Calls fn for each entry of t until its first field (a name pointer) is NULL. -1 with why when
 * an entry is unreadable or the table has no end within MAX_ENTRIES. */
static int table_each(pp_rmem *m, const table *t, const char *name,
                      void (*fn)(pp_rmem *m, const table *t, const uint8_t *e, uint64_t bias,
                                 pp_hs_layout *L),
                      uint64_t bias, pp_hs_layout *L, char *why, size_t len)
{
    uint8_t e[MAX_STRIDE];
    for (size_t i = 0; i < MAX_ENTRIES; i++) {
        if (pp_rmem_read_cached(m, t->base + i * t->stride, e, t->stride) != 0) {
            snprintf(why, len, "cannot read entry %zu of %s", i, name);
            return -1;
        }
        if (!field_u64(e, t->off[0]))
            return 0;
        fn(m, t, e, bias, L);
    }
    snprintf(why, len, "%s has no end within %d entries", name, MAX_ENTRIES);
    return -1;
}

static void on_struct(pp_rmem *m, const table *t, const uint8_t *e, uint64_t bias, pp_hs_layout *L)
{
    char type[NAME_MAX_LEN], fld[NAME_MAX_LEN];
    if (read_name(m, field_u64(e, t->off[0]), type) != 0 ||
        read_name(m, field_u64(e, t->off[1]), fld) != 0)
        return;
    int32_t is_static;
    memcpy(&is_static, e + t->off[2], 4);
    for (size_t i = 0; i < NWANTS; i++) {
        const want *w = &wants[i];
        if ((w->what != W_OFF && w->what != W_STATIC) || !name_in(type, w->types) ||
            !name_in(fld, w->fields))
            continue;
        void *dst = (char *)L + w->off;
        if (w->what == W_STATIC) {
            uint64_t a = field_u64(e, t->off[4]);
            if (is_static && a > bias)
                *(uint64_t *)dst = a - bias;
        } else {
            uint64_t off = field_u64(e, t->off[3]);
            if (!is_static && off < (1u << 20))
                *(uint32_t *)dst = (uint32_t)off;
        }
    }
}

static void on_type(pp_rmem *m, const table *t, const uint8_t *e, uint64_t bias, pp_hs_layout *L)
{
    (void)bias;
    char type[NAME_MAX_LEN];
    if (read_name(m, field_u64(e, t->off[0]), type) != 0)
        return;
    uint64_t size = field_u64(e, t->off[1]);
    for (size_t i = 0; i < NWANTS; i++)
        if (wants[i].what == W_SIZE && name_in(type, wants[i].types) && size < (1u << 20))
            *(uint32_t *)((char *)L + wants[i].off) = (uint32_t)size;
}

static void on_int(pp_rmem *m, const table *t, const uint8_t *e, uint64_t bias, pp_hs_layout *L)
{
    (void)bias;
    char name[NAME_MAX_LEN];
    if (read_name(m, field_u64(e, t->off[0]), name) != 0)
        return;
    int32_t v;
    memcpy(&v, e + t->off[1], 4);
    for (size_t i = 0; i < NWANTS; i++)
        if (wants[i].what == W_INT && name_in(name, wants[i].types))
            *(int32_t *)((char *)L + wants[i].off) = v;
}

int pp_hs_layout_parse(pp_rmem *m, const uint64_t *syms, uint64_t bias, pp_hs_layout *L, char *why,
                       size_t len)
{
    init_layout(L);
    for (int i = 0; i < PP_HS_NSYMS; i++)
        if (i < PP_HS_LONGS && !syms[i]) {
            snprintf(why, len, "libjvm.so exports no %s (not a HotSpot JVM, or a stripped one)",
                     pp_hs_sym_names[i]);
            return -1;
        }
    /* structs: off[] = type name, field name, isStatic (int32), offset, address */
    static const int st_offs[] = {PP_HS_ST_TYPE, PP_HS_ST_FIELD, PP_HS_ST_STATIC, PP_HS_ST_OFFSET,
                                  PP_HS_ST_ADDRESS};
    static const unsigned st_w[] = {8, 8, 4, 8, 8};
    static const int ty_offs[] = {PP_HS_TY_NAME, PP_HS_TY_SIZE};
    static const int ic_offs[] = {PP_HS_IC_NAME, PP_HS_IC_VALUE};
    static const unsigned w88[] = {8, 8}, w84[] = {8, 4};
    table st, ty, ic;
    if (table_open(m, syms, PP_HS_STRUCTS, PP_HS_ST_STRIDE, st_offs, st_w, 5, &st, why, len) ||
        table_open(m, syms, PP_HS_TYPES, PP_HS_TY_STRIDE, ty_offs, w88, 2, &ty, why, len) ||
        table_open(m, syms, PP_HS_INTS, PP_HS_IC_STRIDE, ic_offs, w84, 2, &ic, why, len) ||
        table_each(m, &st, "gHotSpotVMStructs", on_struct, bias, L, why, len) ||
        table_each(m, &ty, "gHotSpotVMTypes", on_type, bias, L, why, len) ||
        table_each(m, &ic, "gHotSpotVMIntConstants", on_int, bias, L, why, len))
        return -1;
    /* x86_64 exports the sender-sp and last-sp slots; the method's is the one below last_sp
     * (frame_x86.hpp), checked end to end by pp_hs_selfcheck. */
    if (L->if_last_sp != INT_UNSET)
        L->if_method = L->if_last_sp - 1;
    int32_t major = -1;
    if (L->vm_major && pp_rmem_read_cached(m, bias + L->vm_major, &major, 4) == 0 && major > 0 &&
        major < 1000)
        L->major = major;
    uint64_t rel = 0;
    if (L->vm_release && get_u64(m, bias + L->vm_release, &rel) == 0 &&
        read_name(m, rel, L->release) != 0)
        L->release[0] = '\0';
    for (char *c = L->release; *c; c++)
        if (*c < 0x20 || *c > 0x7e)
            *c = '?';
    return 0;
}

#define NEED(cond, ...)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            snprintf(why, len, __VA_ARGS__);                                                       \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

int pp_hs_layout_check(const pp_hs_layout *L, char *why, size_t len)
{
    static const struct {
        size_t off;
        const char *name;
    } needed[] = {
        {O(ga_len), "GrowableArrayBase._len"},
        {O(ga_data), "GrowableArray<int>._data"},
        {O(heap_memory), "CodeHeap._memory"},
        {O(heap_segmap), "CodeHeap._segmap"},
        {O(heap_log2seg), "CodeHeap._log2_segment_size"},
        {O(vs_low), "VirtualSpace._low"},
        {O(vs_high), "VirtualSpace._high"},
        {O(heapblock_size), "HeapBlock (its size)"},
        {O(blob_name), "CodeBlob._name"},
        {O(blob_size), "CodeBlob._size"},
        {O(blob_frame_size), "CodeBlob._frame_size"},
        {O(nm_method), "nmethod._method"},
        {O(nm_comp_level), "nmethod._comp_level"},
        {O(nm_scopes_pcs), "nmethod._scopes_pcs_offset"},
        {O(method_const), "Method._constMethod"},
        {O(cm_constants), "ConstMethod._constants"},
        {O(cm_name_index), "ConstMethod._name_index"},
        {O(cm_sig_index), "ConstMethod._signature_index"},
        {O(cp_holder), "ConstantPool._pool_holder"},
        {O(cp_length), "ConstantPool._length"},
        {O(cp_size), "ConstantPool (its size)"},
        {O(klass_name), "Klass._name"},
        {O(sym_length), "Symbol._length"},
        {O(sym_body), "Symbol._body"},
        {O(jt_anchor), "JavaThread._anchor"},
        {O(jt_osthread), "JavaThread._osthread"},
        {O(jt_state), "JavaThread._thread_state"},
        {O(anchor_sp), "JavaFrameAnchor._last_Java_sp"},
        {O(anchor_pc), "JavaFrameAnchor._last_Java_pc"},
        {O(anchor_fp), "JavaFrameAnchor._last_Java_fp"},
        {O(os_tid), "OSThread._thread_id"},
        {O(tl_length), "ThreadsList._length"},
        {O(tl_threads), "ThreadsList._threads"},
        {O(sq_buffer), "StubQueue._stub_buffer"},
        {O(sq_limit), "StubQueue._buffer_limit"},
    };
    for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
        NEED(*(const uint32_t *)((const char *)L + needed[i].off) != PP_HS_NONE,
             "no %s in this JVM's vmstructs", needed[i].name);
    NEED(L->cc_heaps && L->cc_low && L->cc_high, "no CodeCache::_heaps/_low_bound/_high_bound");
    NEED(L->threads_list, "no ThreadsSMRSupport::_java_thread_list in this JVM's vmstructs");
    NEED(L->interp_code, "no AbstractInterpreter::_code in this JVM's vmstructs");
    NEED((L->blob_code_begin != PP_HS_NONE && L->blob_code_end != PP_HS_NONE) ||
             (L->blob_code_offset != PP_HS_NONE && L->blob_data_offset != PP_HS_NONE),
         "no CodeBlob._code_begin/_code_end nor _code_offset/_data_offset");
    NEED(L->nm_metadata != PP_HS_NONE || L->nm_immutable_data != PP_HS_NONE,
         "no nmethod._metadata_offset nor _immutable_data");
    NEED(L->if_sender_sp != INT_UNSET && L->if_last_sp != INT_UNSET,
         "no frame::interpreter_frame_sender_sp_offset/last_sp_offset");
    NEED(L->st_native != INT_UNSET && L->st_vm != INT_UNSET && L->st_java != INT_UNSET,
         "no _thread_in_native/_thread_in_vm/_thread_in_Java constants");
    /* plausibility: what HotSpot has been on x86_64 since JDK 8, with room */
    NEED(L->sym_length < 16 && L->sym_body < 16 && L->sym_body >= L->sym_length + 2,
         "implausible Symbol layout (_length at %u, _body at %u)", L->sym_length, L->sym_body);
    NEED(L->cp_size >= 16 && L->cp_size <= 512, "implausible ConstantPool size %u", L->cp_size);
    NEED(L->heapblock_size >= 8 && L->heapblock_size <= 64, "implausible HeapBlock size %u",
         L->heapblock_size);
    NEED(L->if_sender_sp < 0 && L->if_sender_sp > -16 && L->if_last_sp < 0 && L->if_last_sp > -16,
         "implausible interpreter frame slots (sender_sp %d, last_sp %d)", L->if_sender_sp,
         L->if_last_sp);
    NEED(L->major >= 8, "cannot read the JVM's major version");
    return 0;
}

/* ---- the per-build-id cache ---- */

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pp_hs_layout cache[PP_HS_CACHE_MAX];
static size_t cache_n, cache_next;
static unsigned long cache_hit_count;

bool pp_hs_cache_get(const char *buildid, pp_hs_layout *out)
{
    bool found = false;
    pthread_mutex_lock(&cache_lock);
    for (size_t i = 0; i < cache_n && !found; i++)
        if (strcmp(cache[i].buildid, buildid) == 0) {
            *out = cache[i];
            found = true;
            cache_hit_count++;
        }
    pthread_mutex_unlock(&cache_lock);
    return found;
}

void pp_hs_cache_put(const pp_hs_layout *L)
{
    if (!L->buildid[0])
        return;
    pthread_mutex_lock(&cache_lock);
    size_t i;
    for (i = 0; i < cache_n; i++)
        if (strcmp(cache[i].buildid, L->buildid) == 0)
            break;
    if (i == cache_n) {
        if (cache_n < PP_HS_CACHE_MAX)
            i = cache_n++;
        else
            i = cache_next++ % PP_HS_CACHE_MAX;
    }
    cache[i] = *L;
    pthread_mutex_unlock(&cache_lock);
}

void pp_hs_cache_reset(void)
{
    pthread_mutex_lock(&cache_lock);
    cache_n = cache_next = 0;
    cache_hit_count = 0;
    pthread_mutex_unlock(&cache_lock);
}

unsigned long pp_hs_cache_hits(void)
{
    pthread_mutex_lock(&cache_lock);
    unsigned long n = cache_hit_count;
    pthread_mutex_unlock(&cache_lock);
    return n;
}

/* ---- opening a JVM ---- */

static int fail(pp_hs_proc *p, char *why, size_t len, const char *fmt, const char *a, int b)
{
    snprintf(why, len, fmt, a, b);
    pp_hs_close(p);
    return -1;
}

int pp_hs_open(pp_hs_proc *p, int pid, char *why, size_t len)
{
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    pp_rmem_init(&p->mem, pid);
    pp_hs_methods_init(p);
    pp_rt_module lib, exe;
    if (pid <= 0 || pp_rt_find_modules(pid, "libjvm", &lib, &exe) != 0)
        return fail(p, why, len, "cannot read the maps of %spid %d (exited?)", "", pid);
    if (!lib.path[0])
        return fail(p, why, len, "no libjvm.so mapped in %spid %d", "", pid);
    char file[PATH_MAX + 64];
    int fd = pp_rt_module_file(pid, &lib, false, file, sizeof(file));
    uint64_t syms[PP_HS_NSYMS] = {0}, first_load = 0;
    pp_elfinfo info;
    long found =
        file[0] ? pp_elf_symbol_values(file, pp_hs_sym_names, PP_HS_NSYMS, syms, &first_load) : -1;
    bool have_info = found > 0 && pp_elfinfo_read(file, &info) == 0;
    if (fd >= 0)
        close(fd);
    if (found <= 0)
        return fail(p, why, len, "cannot read the symbols of %s (pid %d)", lib.path, pid);
    p->bias = lib.start - first_load;
    for (int i = 0; i < PP_HS_NSYMS; i++)
        if (syms[i])
            syms[i] += p->bias;
    /* The layout is read from the target's own (writable) memory: a JVM's owner could make it
     * lie, so a cached layout is shared only by JVMs of the same build and the same owner, never
     * handed from one user's process to another's. */
    char bid[sizeof(p->L.buildid)] = "";
    struct stat owner;
    char proc[32];
    snprintf(proc, sizeof(proc), "/proc/%d", pid);
    if (have_info && info.buildid[0] && stat(proc, &owner) == 0)
        snprintf(bid, sizeof(bid), "%.72s/uid:%u", info.buildid, (unsigned)owner.st_uid);
    if (bid[0] && pp_hs_cache_get(bid, &p->L)) {
        p->cached = true;
        return 0; /* checked before it was cached */
    }
    char r[200];
    if (pp_hs_layout_parse(&p->mem, syms, p->bias, &p->L, r, sizeof(r)) != 0 ||
        pp_hs_layout_check(&p->L, r, sizeof(r)) != 0)
        return fail(p, why, len, "unverified HotSpot layout: %s (pid %d)", r, pid);
    snprintf(p->L.buildid, sizeof(p->L.buildid), "%s", bid);
    pp_hs_cache_put(&p->L);
    return 0;
}

void pp_hs_close(pp_hs_proc *p)
{
    pp_hs_methods_free(p);
    pp_rmem_free(&p->mem);
}
