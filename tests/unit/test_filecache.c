/* The per-file cache (runtimes/unwind/filecache.c): shared entries, files replaced on disk, the
 * byte cap, building off the caller's path. Files are mapped by the test and inherited by child
 * processes, which the cache reads through /proc/<pid>/map_files. */
#include <time.h>

#include "runtimes/unwind/filecache.h"
#include "testutil.h"

static char *tmpdir;

static void teardown(void)
{
    pp_test_rmtree(tmpdir), tmpdir = NULL;
}

TestSuite(filecache, .init = pp_test_quiet_log, .fini = teardown);

/* Compiles a small program into tmpdir/name whose code depends on variant (different rows,
 * different build-ids). */
static void compile(const char *name, int variant)
{
    if (!tmpdir)
        tmpdir = pp_test_mkdtemp();
    char src[600], cmd[1600];
    snprintf(src, sizeof(src), "%s/%s.c", tmpdir, name);
    FILE *f = fopen(src, "w");
    cr_assert(f);
    fprintf(f, "#include <stdio.h>\n#include <stdlib.h>\n");
    for (int i = 0; i <= variant * 3; i++)
        fprintf(f,
                "__attribute__((noinline)) long f%d(long a, long b, long c)\n"
                "{ long x = atol(getenv(\"A\") ?: \"1\") * a; long y = labs(x - b) + %d;\n"
                "  return x * y + c + (long)getenv(\"B\") * y; }\n",
                i, i);
    fprintf(f, "int main(int c, char **v) { long s = 0;\n");
    for (int i = 0; i <= variant * 3; i++)
        fprintf(f, "s += f%d(c, (long)v, s);\n", i);
    fprintf(f, "printf(\"%%ld\\n\", s); return 0; }\n");
    fclose(f);
    snprintf(cmd, sizeof(cmd), "gcc -O2 -fomit-frame-pointer -o %s/%s %s", tmpdir, name, src);
    cr_assert(system(cmd) == 0, "%s", cmd);
}

static char *path_of(const char *name)
{
    static char p[4][600];
    static int k;
    char *s = p[k++ % 4];
    snprintf(s, 600, "%s/%s", tmpdir, name);
    return s;
}

typedef struct {
    void *addr;
    size_t len;
    pp_fc_mapping m;
} mapped;

/* Maps the file in this process (children inherit it); m describes it as a maps line would. */
static mapped map_file(const char *path)
{
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0, "%s", path);
    struct stat st;
    cr_assert(fstat(fd, &st) == 0);
    mapped r = {.len = (size_t)st.st_size};
    r.addr = mmap(NULL, r.len, PROT_READ, MAP_PRIVATE, fd, 0);
    cr_assert(r.addr != MAP_FAILED);
    close(fd);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    r.m.start = (uint64_t)(uintptr_t)r.addr;
    r.m.end = r.m.start + (r.len + pg - 1) / pg * pg;
    r.m.dev = (uint64_t)st.st_dev;
    r.m.ino = (uint64_t)st.st_ino;
    r.m.path = path;
    return r;
}

/* A child holding this process's mappings until killed. */
static pid_t holder(void)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;)
            pause();
    }
    return pid;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Polls pp_filecache_map until the state is not BUILDING (bounded: 30 s). */
static pp_fc_state wait_done(pp_filecache *c, int pid, const pp_fc_mapping *m, uint32_t *id)
{
    double end = now() + 30;
    pp_fc_state st;
    while ((st = pp_filecache_map(c, pid, m, id)) == PP_FC_BUILDING && now() < end) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return st;
}

static long rows_of(const char *path, pp_cfi_table *t)
{
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0);
    char err[200];
    long n = pp_cfi_build(fd, t, err, sizeof(err));
    close(fd);
    cr_assert(n > 0, "%s: %s", path, err);
    return n;
}

/* The cache's packed rows are exactly the rows pp_cfi_build gives for the same file. */
static bool same_rows(const pp_cfi_packed *a, const pp_cfi_table *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        pp_cfi_row r = pp_cfi_packed_row(a, i);
        if (r.pc != b->rows[i].pc || r.kind != b->rows[i].kind || r.cfa_off != b->rows[i].cfa_off ||
            r.rbp_off != b->rows[i].rbp_off)
            return false;
    }
    return true;
}

/* The first lookup answers at once (BUILDING, no id yet); the rows come later from the worker. */
Test(filecache, built_off_the_callers_path)
{
    compile("a", 1);
    mapped a = map_file(path_of("a"));
    pid_t p = holder();
    pp_filecache *c = pp_filecache_new(0, 1);
    uint32_t id = 99;
    cr_assert_eq(pp_filecache_map(c, p, &a.m, &id), PP_FC_BUILDING,
                 "the first lookup must not build on the caller's path");
    cr_assert_eq(id, 0);
    uint64_t g0 = pp_filecache_generation(c);
    cr_assert_eq(wait_done(c, p, &a.m, &id), PP_FC_READY);
    cr_assert(id > 0);
    cr_assert(pp_filecache_generation(c) > g0, "READY moves the generation");
    const pp_fc_file *f = pp_filecache_acquire(c, id);
    cr_assert(f && f->cfi.n > 0 && f->id == id);
    cr_assert(!strncmp(f->key, "buildid:", 8), "key %s", f->key);
    pp_filecache_put(c, f);
    pp_fc_stats s;
    pp_filecache_stats(c, &s);
    cr_assert(s.bytes > 0 && s.ready == 1 && s.building == 0);
    cr_assert_eq(pp_filecache_pending(c), 0);
    pp_filecache_free(c);
    pp_test_kill(p);
    munmap(a.addr, a.len);
}

static void count_cb(void *arg, const pp_fc_info *in)
{
    pp_fc_info *last = arg;
    last[0].id++; /* entries seen */
    last[1] = *in;
    last[1].key = NULL;
}

/* Two processes mapping the file, and a copy of it (another inode, same build-id): one entry,
 * one id; releasing both processes leaves it unreferenced but cached. */
Test(filecache, shared_by_processes_and_copies)
{
    compile("a", 1);
    char cmd[1400];
    snprintf(cmd, sizeof(cmd), "cp %s %s", path_of("a"), path_of("a_copy"));
    cr_assert(system(cmd) == 0);
    mapped a = map_file(path_of("a")), b = map_file(path_of("a_copy"));
    cr_assert(a.m.ino != b.m.ino);
    pid_t p1 = holder(), p2 = holder();
    pp_filecache *c = pp_filecache_new(0, 2);
    uint32_t id1 = 0, id2 = 0, id3 = 0;
    cr_assert_eq(wait_done(c, p1, &a.m, &id1), PP_FC_READY);
    /* a second process, same inode: answered from memory */
    cr_assert_eq(pp_filecache_map(c, p2, &a.m, &id2), PP_FC_READY);
    cr_assert_eq(id1, id2);
    /* the copy: same build-id, same entry */
    cr_assert_eq(wait_done(c, p2, &b.m, &id3), PP_FC_READY);
    cr_assert_eq(id3, id1);
    pp_fc_info seen[2] = {0};
    pp_filecache_foreach(c, count_cb, seen);
    cr_assert_eq(seen[0].id, 1, "%u entries, want one", seen[0].id);
    cr_assert_eq(seen[1].refs, 2, "two identities (inodes) reference it");
    pp_filecache_release_pid(c, p1);
    pp_filecache_foreach(c, count_cb, memset(seen, 0, sizeof(seen)));
    cr_assert_eq(seen[1].refs, 2, "p2 still maps both inodes");
    /* p2 unmaps the copy: that inode's reference goes, a repeated unmap changes nothing */
    pp_filecache_unmap(c, p2, b.m.dev, b.m.ino);
    pp_filecache_unmap(c, p2, b.m.dev, b.m.ino);
    pp_filecache_foreach(c, count_cb, memset(seen, 0, sizeof(seen)));
    cr_assert_eq(seen[1].refs, 1, "after the unmap only p2's mapping of a references it");
    cr_assert_eq(pp_filecache_map(c, p2, &b.m, &id3), PP_FC_BUILDING,
                 "a new mapping of the released inode is identified again");
    cr_assert_eq(wait_done(c, p2, &b.m, &id3), PP_FC_READY);
    cr_assert_eq(id3, id1);
    pp_filecache_release_pid(c, p2);
    pp_filecache_foreach(c, count_cb, memset(seen, 0, sizeof(seen)));
    cr_assert_eq(seen[1].refs, 0, "released by both processes");
    cr_assert_eq(pp_filecache_state(c, id1), PP_FC_READY, "kept (under the cap) for reuse");
    pp_filecache_free(c);
    pp_test_kill(p1);
    pp_test_kill(p2);
    munmap(a.addr, a.len);
    munmap(b.addr, b.len);
}

/* A file renamed over the mapped one: the rows are the mapped file's, not the new file's. */
Test(filecache, file_replaced_on_disk_keeps_the_mapped_rows)
{
    compile("old", 1);
    compile("new", 3);
    pp_cfi_table old_rows, new_rows;
    rows_of(path_of("old"), &old_rows);
    rows_of(path_of("new"), &new_rows);
    pp_cfi_packed old_packed;
    char perr[128];
    cr_assert(pp_cfi_pack(&old_rows, &old_packed, perr, sizeof(perr)) == 0, "%s", perr);
    cr_assert(!same_rows(&old_packed, &new_rows), "the two programs must differ");
    pp_cfi_packed_free(&old_packed);

    char lib[600];
    snprintf(lib, sizeof(lib), "%s/lib.so", tmpdir);
    char cmd[1400];
    snprintf(cmd, sizeof(cmd), "cp %s %s", path_of("old"), lib);
    cr_assert(system(cmd) == 0);
    mapped m = map_file(lib);
    pid_t p = holder();
    munmap(m.addr, m.len); /* only the child maps it now */
    cr_assert(rename(path_of("new"), lib) == 0);

    pp_filecache *c = pp_filecache_new(0, 1);
    uint32_t id = 0;
    cr_assert_eq(wait_done(c, p, &m.m, &id), PP_FC_READY);
    const pp_fc_file *f = pp_filecache_acquire(c, id);
    cr_assert(f);
    cr_assert(!same_rows(&f->cfi, &new_rows), "rows were built from the file now on disk");
    cr_assert(same_rows(&f->cfi, &old_rows), "rows are not the mapped file's");
    pp_filecache_put(c, f);

    /* where map_files cannot be opened (a wrong range here), the path is used only when it is
     * the maps line's inode: the replaced file is refused */
    pp_fc_mapping bad = m.m;
    bad.start += 0x1000000000ULL;
    bad.end += 0x1000000000ULL;
    bad.ino = m.m.ino;
    pid_t p2 = holder();
    pp_filecache_release_pid(c, p);
    pp_filecache_free(c);
    c = pp_filecache_new(0, 1);
    pp_fc_state st = wait_done(c, p2, &bad, &id);
    cr_assert_eq(st, PP_FC_FAILED, "state %d: the new file under the old path was read", st);
    pp_filecache_free(c);
    pp_test_kill(p);
    pp_test_kill(p2);
    pp_cfi_free(&old_rows);
    pp_cfi_free(&new_rows);
}

/* The range the caller read in the maps now maps another file (unmapped and remapped before the
 * worker looked): map_files gives that other file, which is not taken for the maps line's. */
Test(filecache, range_remapped_to_another_file)
{
    compile("a", 1);
    compile("b", 2);
    mapped a = map_file(path_of("a"));
    struct stat sb;
    cr_assert(stat(path_of("b"), &sb) == 0);
    pid_t p = holder();
    pp_fc_mapping m = a.m; /* a's range, with b's identity as a stale maps line showed it */
    m.dev = (uint64_t)sb.st_dev;
    m.ino = (uint64_t)sb.st_ino;
    m.path = NULL;
    pp_filecache *c = pp_filecache_new(0, 1);
    uint32_t id = 0;
    pp_fc_state st = wait_done(c, p, &m, &id);
    cr_assert_eq(st, PP_FC_FAILED, "state %d: b's identity got the rows of a", st);
    /* the true maps line is accepted */
    cr_assert_eq(wait_done(c, p, &a.m, &id), PP_FC_READY);
    pp_filecache_free(c);
    pp_test_kill(p);
    munmap(a.addr, a.len);
}

static void bytes_cb(void *arg, const pp_fc_info *in)
{
    size_t *b = arg;
    b[in->id] = in->bytes;
}

/* Over the byte cap the least recently used unreferenced file is dropped, not a recent one. */
Test(filecache, byte_cap_evicts_lru)
{
    compile("a", 1);
    compile("b", 2);
    compile("x", 3);
    mapped a = map_file(path_of("a")), b = map_file(path_of("b")), x = map_file(path_of("x"));
    pid_t p = holder();

    /* the entries' sizes, from a cache without pressure */
    pp_filecache *c = pp_filecache_new(0, 1);
    uint32_t ia, ib, ix;
    cr_assert_eq(wait_done(c, p, &a.m, &ia), PP_FC_READY);
    cr_assert_eq(wait_done(c, p, &b.m, &ib), PP_FC_READY);
    cr_assert_eq(wait_done(c, p, &x.m, &ix), PP_FC_READY);
    size_t bytes[8] = {0};
    cr_assert(ia < 8 && ib < 8 && ix < 8);
    pp_filecache_foreach(c, bytes_cb, bytes);
    size_t cap = bytes[ia] + bytes[ib] + bytes[ix] - 1;
    pp_filecache_free(c);

    c = pp_filecache_new(cap, 1);
    cr_assert_eq(wait_done(c, p, &a.m, &ia), PP_FC_READY);
    cr_assert_eq(wait_done(c, p, &b.m, &ib), PP_FC_READY);
    pp_filecache_release_pid(c, p);                    /* a and b unreferenced */
    const pp_fc_file *f = pp_filecache_acquire(c, ia); /* a used after b */
    cr_assert(f);
    pp_filecache_put(c, f);
    cr_assert_eq(wait_done(c, p, &x.m, &ix), PP_FC_READY);
    cr_assert_eq(pp_filecache_state(c, ib), PP_FC_NONE, "b, the least recently used, stays");
    cr_assert_eq(pp_filecache_state(c, ia), PP_FC_READY, "a, used recently, was dropped");
    cr_assert_eq(pp_filecache_state(c, ix), PP_FC_READY);
    pp_fc_stats s;
    pp_filecache_stats(c, &s);
    cr_assert(s.bytes <= cap, "%zu bytes over the cap %zu", s.bytes, cap);
    cr_assert_eq(s.evicted, 1);

    /* b mapped again: rebuilt under a new id; a makes room even though it was used after x:
     * x is referenced by p, and a referenced entry is never dropped */
    f = pp_filecache_acquire(c, ia);
    cr_assert(f);
    pp_filecache_put(c, f);
    uint32_t ib2;
    cr_assert_eq(wait_done(c, p, &b.m, &ib2), PP_FC_READY);
    cr_assert(ib2 != ib, "a dropped entry's id is not reused");
    cr_assert_eq(pp_filecache_state(c, ix), PP_FC_READY);
    cr_assert_eq(pp_filecache_state(c, ia), PP_FC_NONE);
    pp_filecache_free(c);
    pp_test_kill(p);
    munmap(a.addr, a.len);
    munmap(b.addr, b.len);
    munmap(x.addr, x.len);
}

static void err_cb(void *arg, const pp_fc_info *in)
{
    snprintf(arg, 200, "%s", in->err);
}

/* A file with no CFI is FAILED with a reason; a vanished process leaves no entry behind. */
Test(filecache, failures)
{
    if (!tmpdir)
        tmpdir = pp_test_mkdtemp();
    char junk[600];
    snprintf(junk, sizeof(junk), "%s/junk", tmpdir);
    pp_test_write_file(junk, "not an ELF file at all, just some text\n", 39);
    mapped j = map_file(junk);
    pid_t p = holder();
    pp_filecache *c = pp_filecache_new(0, 1);
    uint32_t id = 0;
    cr_assert_eq(wait_done(c, p, &j.m, &id), PP_FC_FAILED);
    cr_assert(id > 0);
    char why[200] = "";
    pp_filecache_foreach(c, err_cb, why);
    cr_assert(strstr(why, "not an ELF"), "reason: '%s'", why);
    pp_filecache_free(c);
    pp_test_kill(p);
    munmap(j.addr, j.len);
}

/* A file no process has mapped for the idle time is dropped (its rows do not wait for the cap);
 * one still mapped, or unmapped for less, is kept. */
Test(filecache, unmapped_files_expire)
{
    compile("a", 1);
    compile("b", 2);
    mapped a = map_file(path_of("a")), b = map_file(path_of("b"));
    pid_t p1 = holder(), p2 = holder();
    pp_filecache *c = pp_filecache_new(0, 1);
    uint32_t ida = 0, idb = 0;
    cr_assert_eq(wait_done(c, p1, &a.m, &ida), PP_FC_READY);
    cr_assert_eq(wait_done(c, p2, &b.m, &idb), PP_FC_READY);
    pp_filecache_release_pid(c, p1); /* a unmapped; the default idle time is a minute */
    cr_assert_eq(pp_filecache_state(c, ida), PP_FC_READY, "dropped before its idle time");
    pp_filecache_set_idle(c, 0);
    pp_filecache_release_pid(c, 12345678); /* any release sweeps */
    cr_assert_eq(pp_filecache_state(c, ida), PP_FC_NONE, "an unmapped file's rows stay");
    cr_assert_eq(pp_filecache_state(c, idb), PP_FC_READY, "a mapped file's rows were dropped");
    pp_fc_stats s;
    pp_filecache_stats(c, &s);
    cr_assert_eq(s.expired, 1);
    cr_assert_eq(s.ready, 1);
    /* a live process unmaps b (dlclose): it expires too, at the next second's sweep */
    pp_filecache_unmap(c, p2, b.m.dev, b.m.ino);
    double until = now() + 5;
    while (pp_filecache_state(c, idb) != PP_FC_NONE && now() < until) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        pp_filecache_unmap(c, p2, b.m.dev, b.m.ino); /* a no-op that sweeps */
    }
    cr_assert_eq(pp_filecache_state(c, idb), PP_FC_NONE, "a file unmapped by a live process stays");
    pp_filecache_free(c);
    pp_test_kill(p1);
    pp_test_kill(p2);
    munmap(a.addr, a.len);
    munmap(b.addr, b.len);
}
