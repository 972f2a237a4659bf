/* The EventPipe sessions polyprof has open in .NET processes, journaled in its scratch space
 * (base/child.h pp_tmp_base: root-owned, 0700) as "<pid> <start ticks> <session id>" lines, so
 * that a polyprof started after one that was killed stops them: a .NET Core 3.1 runtime notices a
 * dead client only when it next writes to its stream, which a session of JIT events may not do
 * for hours. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/child.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "base/safefile.h"
#include "runtimes/dotnet/dotnet.h"

#define JOURNAL "dotnet-sessions"

size_t pp_net_journal_parse(const char *text, pp_net_jent *out, size_t max)
{
    size_t n = 0;
    for (const char *l = text; l && *l && n < max;) {
        int pid;
        unsigned long long start;
        uint64_t id;
        if (sscanf(l, "%d %llu %" SCNu64, &pid, &start, &id) == 3 && pid > 0 && start && id)
            out[n++] = (pp_net_jent){pid, start, id};
        l = strchr(l, '\n');
        if (l)
            l++;
    }
    return n;
}

static int base_dir(void)
{
    char err[256];
    if (pp_tmp_ensure_base(err, sizeof(err)) < 0) {
        pp_log(PP_LOG_INFO, "the .NET session journal is not kept: %s", err);
        return -1;
    }
    return open(pp_tmp_base(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

void pp_net_journal_write(const pp_net_jent *e, size_t n)
{
    int dfd = base_dir();
    if (dfd < 0)
        return;
    size_t cap = n * 64 + 1, len = 0;
    char *buf = malloc(cap);
    for (size_t i = 0; buf && i < n; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%d %llu %" PRIu64 "\n", e[i].pid, e[i].start,
                                e[i].id);
    if (buf && pp_replace_file_at(dfd, JOURNAL, buf, len, 0600) < 0)
        pp_log(PP_LOG_INFO, "cannot write %s/%s: %s", pp_tmp_base(), JOURNAL, strerror(errno));
    free(buf);
    close(dfd);
}

int pp_net_stop_orphans(void)
{
    int dfd = base_dir();
    if (dfd < 0)
        return 0;
    int fd = openat(dfd, JOURNAL, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    size_t len = 0;
    char *text = fd >= 0 ? pp_read_fd(fd, 64 * 1024, PP_READ_TRUNCATE, &len) : NULL;
    if (fd >= 0)
        close(fd);
    close(dfd);
    if (!text)
        return 0;
    pp_net_jent e[256];
    size_t n = pp_net_journal_parse(text, e, 256);
    free(text);
    int stopped = 0;
    for (size_t i = 0; i < n; i++) {
        if (pp_proc_start_ticks(e[i].pid) != e[i].start)
            continue; /* gone, or the pid was reused */
        pp_net_session s = {.pid = e[i].pid, .fd = -1, .id = e[i].id};
        char err[512];
        if (pp_net_socket_name(s.pid, s.dir, sizeof(s.dir), s.name, sizeof(s.name), err,
                               sizeof(err)) == 0 &&
            pp_net_session_stop(&s, pp_mono_now() + 3, err, sizeof(err)) == 0)
            stopped++;
        else
            pp_log(PP_LOG_INFO,
                   "the EventPipe session a previous polyprof left in .NET process "
                   "%d: %s",
                   e[i].pid, err);
    }
    pp_net_journal_write(NULL, 0);
    return stopped;
}
