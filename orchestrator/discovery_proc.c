/* Process discovery helpers: /proc/<pid>/stat parsing. */
#include "orchestrator/discovery_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Next space-separated unsigned field; advances *p. */
static int next_ull(const char **p, const char *end, unsigned long long *v)
{
    const char *s = *p;
    while (s < end && *s == ' ')
        s++;
    if (s >= end)
        return -1;
    unsigned long long x = 0;
    bool neg = false, any = false;
    if (*s == '-') {
        neg = true;
        s++;
    }
    while (s < end && *s >= '0' && *s <= '9') {
        x = x * 10 + (unsigned long long)(*s - '0');
        s++;
        any = true;
    }
    if (!any && !(s < end && *s != ' '))
        return -1;
    while (s < end && *s != ' ') /* a non-numeric field (the state letter) */
        s++;
    *v = neg ? (unsigned long long)-(long long)x : x;
    *p = s;
    return 0;
}

int pp_disc_parse_stat(const char *buf, size_t len, pp_stat_info *out)
{
    const char *open_paren = memchr(buf, '(', len);
    const char *close_paren = memrchr(buf, ')', len);
    if (!open_paren || !close_paren || close_paren < open_paren)
        return -1;
    size_t clen = (size_t)(close_paren - open_paren - 1);
    if (clen > sizeof(out->comm) - 1)
        clen = sizeof(out->comm) - 1;
    memcpy(out->comm, open_paren + 1, clen);
    out->comm[clen] = '\0';

    /* Fields 3.. follow ") ": state(3) ppid(4) pgrp session tty_nr tpgid flags(9) minflt cminflt
     * majflt cmajflt utime stime cutime cstime priority nice num_threads itrealvalue
     * starttime(22) vsize(23). */
    const char *p = close_paren + 1, *end = buf + len;
    unsigned long long v[21];
    for (int i = 3; i <= 23; i++)
        if (next_ull(&p, end, &v[i - 3]) < 0)
            return -1;
    out->ppid = (int)v[4 - 3];
    out->flags = (unsigned long)v[9 - 3];
    out->start_ticks = v[22 - 3];
    out->vsize = v[23 - 3];
    return 0;
}
