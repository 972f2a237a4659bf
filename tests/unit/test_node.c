/* Unit tests: the parsers of the Node attach (runtimes/node/nodeproc.c, cdp.c): the caught-signal
 * mask, NSpid, listening sockets of /proc/<pid>/net/tcp{,6}, Node's inspector flags (command line
 * and NODE_OPTIONS) and the WebSocket path of a /json/list body; and the listeners of a real
 * socket this test opens. */
#include "tests/unit/testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtimes/node/node.h"

TestSuite(node, .init = pp_test_quiet_log);

/* Node 20's mask (INT, USR1, SEGV, TERM, 33) and PID 1's (no USR1). */
Test(node, sigcgt)
{
    const char *node = "Name:\tnode\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000001000\n"
                       "SigCgt:\t0000000100004602\nCapInh:\t0\n";
    cr_expect_eq(pp_node_sig_caught(node, SIGUSR1), 1);
    cr_expect_eq(pp_node_sig_caught(node, SIGTERM), 1);
    cr_expect_eq(pp_node_sig_caught(node, SIGUSR2), 0);
    cr_expect_eq(pp_node_sig_caught(node, 33), 1);
    cr_expect_eq(pp_node_sig_caught("SigCgt:\t00000000000004e8\n", SIGUSR1), 0);
    cr_expect_eq(pp_node_sig_caught("Name:\tx\n", SIGUSR1), -1, "no mask: unknown");
    cr_expect_eq(pp_node_sig_caught("SigCgt:\tzz\n", SIGUSR1), -1);
    cr_expect_eq(pp_node_sig_caught("SigCgt:\t12\n", 0), -1);
    cr_expect_eq(pp_node_sig_caught("SigCgt:\t12\n", 65), -1);
    cr_expect_eq(pp_node_sig_caught("XSigCgt:\t200\n", SIGUSR1), -1, "whole key only");
}

Test(node, nspid)
{
    cr_expect_eq(pp_node_nspid("Name:\tnode\nPid:\t4242\nNSpid:\t4242\t17\n"), 17);
    cr_expect_eq(pp_node_nspid("Pid:\t4242\nNSpid:\t4242\n"), 4242);
    cr_expect_eq(pp_node_nspid("Pid:\t99\n"), 99, "kernels without NSpid");
    cr_expect_eq(pp_node_nspid("Name:\tx\n"), -1);
    cr_expect_eq(pp_node_nspid("NSpid:\t1\t99999999999\n"), -1, "out of range");
}

static const char tcp4[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
    "inode\n"
    "   0: 0100007F:240D 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "312568 1 0000000016b8ab2f 100 0 0 10 0\n"
    "   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 "
    "4444 1 0000000016b8ab2f 100 0 0 10 0\n"
    "   2: 0100007F:240D 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 "
    "5555 1 0000000016b8ab2f 20 4 30 10 -1\n"
    "   3: 0A00020F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "6666 1 0000000016b8ab2f 100 0 0 10 0\n"
    "   4: garbage\n"
    "   5: 0100007F:0000 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "7777 1 0 100 0 0 10 0\n";

Test(node, listeners_v4)
{
    pp_node_listener l[8];
    size_t n = pp_node_parse_listeners(tcp4, false, l, 8);
    cr_assert_eq(n, 3, "listening sockets only (an established one, garbage and port 0 not)");
    cr_expect_eq(l[0].port, 9229);
    cr_expect_eq(l[0].inode, 312568);
    cr_expect_str_eq(l[0].addr, "127.0.0.1");
    cr_expect_eq(l[1].port, 8080);
    cr_expect_str_eq(l[1].addr, "127.0.0.1", "the wildcard is reached on loopback");
    cr_expect_str_eq(l[2].addr, "15.2.0.10");
    cr_expect_eq(pp_node_parse_listeners(tcp4, false, l, 1), 1, "bounded by max");
    cr_expect_eq(pp_node_parse_listeners("", false, l, 8), 0);
    cr_expect_eq(pp_node_parse_listeners("header only", false, l, 8), 0);
}

Test(node, listeners_v6)
{
    const char *t = "  sl  local_address                         remote_address                   "
                    "     st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
                    "   0: 00000000000000000000000001000000:240D "
                    "00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 "
                    "00000000     0        0 9001 1 0000000000000000 100 0 0 10 0\n"
                    "   1: 00000000000000000000000000000000:1F90 "
                    "00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 "
                    "00000000     0        0 9002 1 0000000000000000 100 0 0 10 0\n"
                    "   2: B80D0120000000000000000001000000:0050 "
                    "00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 "
                    "00000000     0        0 9003 1 0000000000000000 100 0 0 10 0\n";
    pp_node_listener l[8];
    cr_assert_eq(pp_node_parse_listeners(t, true, l, 8), 3);
    cr_expect_str_eq(l[0].addr, "::1");
    cr_expect_eq(l[0].port, 9229);
    cr_expect(l[0].v6);
    cr_expect_str_eq(l[1].addr, "::1");
    cr_expect_str_eq(l[2].addr, "", "another address: not reachable on loopback");
}

/* A socket this process listens on is found through its fd table and its net/tcp. */
Test(node, listeners_of_a_process)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(s, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t al = sizeof(a);
    getsockname(s, (struct sockaddr *)&a, &al);
    pp_node_listener l[16];
    cr_expect_eq(pp_node_listeners(getpid(), l, 16), 0, "bound, not listening");
    cr_assert_eq(listen(s, 1), 0);
    size_t n = pp_node_listeners(getpid(), l, 16);
    bool found = false;
    for (size_t i = 0; i < n; i++)
        found |= l[i].port == ntohs(a.sin_port) && !strcmp(l[i].addr, "127.0.0.1");
    cr_expect(found, "port %d among %zu listeners", ntohs(a.sin_port), n);
    close(s);
    cr_expect_eq(pp_node_listeners(getpid(), l, 16), 0);
}

static pp_node_flags flags_of(const char *nopts, int argc, ...)
{
    char *argv[16];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc && i < 16; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    pp_node_flags f;
    pp_node_parse_flags(argv, argc, nopts, &f);
    return f;
}

Test(node, flags)
{
    pp_node_flags f = flags_of(NULL, 2, "node", "app.js");
    cr_expect_eq(f.port, 9229);
    cr_expect(!f.inspect_at_start && !f.disable_sigusr1 && !f.perf_basic_prof && !f.perf_prof);
    f = flags_of(NULL, 3, "node", "--disable-sigusr1", "app.js");
    cr_expect(f.disable_sigusr1);
    f = flags_of(NULL, 3, "node", "app.js", "--disable-sigusr1");
    cr_expect(!f.disable_sigusr1, "the script's own arguments are not node's");
    f = flags_of(NULL, 3, "node", "--inspect=0.0.0.0:9333", "app.js");
    cr_expect(f.inspect_at_start);
    cr_expect_eq(f.port, 9333);
    f = flags_of(NULL, 3, "node", "--inspect-port=7000", "app.js");
    cr_expect(!f.inspect_at_start);
    cr_expect_eq(f.port, 7000);
    f = flags_of(NULL, 4, "node", "--inspect-port", "7001", "app.js");
    cr_expect_eq(f.port, 7001);
    f = flags_of(NULL, 3, "node", "--inspect-brk", "app.js");
    cr_expect(f.inspect_at_start);
    cr_expect_eq(f.port, 9229);
    f = flags_of(NULL, 5, "node", "-r", "--perf-prof", "--perf-basic-prof", "app.js");
    cr_expect(!f.perf_prof, "-r takes the next word");
    cr_expect(f.perf_basic_prof);
    f = flags_of(NULL, 3, "node", "--perf-prof", "app.mjs");
    cr_expect(f.perf_prof);
    f = flags_of("--perf-basic-prof --inspect-port=1234", 2, "node", "app.js");
    cr_expect(f.perf_basic_prof, "NODE_OPTIONS");
    cr_expect_eq(f.port, 1234);
    f = flags_of("--inspect-port=1234", 3, "node", "--inspect-port=4321", "app.js");
    cr_expect_eq(f.port, 4321, "the command line wins over NODE_OPTIONS");
    f = flags_of(NULL, 3, "node", "--inspect=bad", "app.js");
    cr_expect_eq(f.port, 9229, "not a port");
}

Test(node, ws_path)
{
    const char *body =
        "[ {\n  \"description\": \"node.js instance\",\n  \"id\": \"1e469b09\",\n  \"type\": "
        "\"node\",\n  \"webSocketDebuggerUrl\": \"ws://127.0.0.1:9229/1e469b09-80fd\"\n} ]\n\n";
    char p[64];
    cr_assert_eq(pp_cdp_ws_path(body, strlen(body), p, sizeof(p)), 0);
    cr_expect_str_eq(p, "/1e469b09-80fd");
    cr_expect_eq(pp_cdp_ws_path("[]", 2, p, sizeof(p)), -1);
    cr_expect_eq(pp_cdp_ws_path("{}", 2, p, sizeof(p)), -1);
    cr_expect_eq(pp_cdp_ws_path("[{\"webSocketDebuggerUrl\":\"http://x/y\"}]", 38, p, sizeof(p)),
                 -1);
    const char *crlf = "[{\"webSocketDebuggerUrl\":\"ws://h/a\\r\\nX: y\"}]";
    cr_expect_eq(pp_cdp_ws_path(crlf, strlen(crlf), p, sizeof(p)), -1, "no header injection");
    cr_expect_eq(pp_cdp_ws_path(body, strlen(body), p, 8), -1, "too long for out");
    cr_expect_eq(pp_cdp_ws_path("not json", 8, p, sizeof(p)), -1);
}

Test(node, reply_value)
{
    bool match;
    const char *ok =
        "{\"id\":2,\"result\":{\"result\":{\"type\":\"string\",\"value\":\"started\"}}}";
    char *v = pp_cdp_reply_value(ok, strlen(ok), 2, &match);
    cr_expect(match);
    cr_expect_str_eq(v, "\"started\"");
    free(v);
    v = pp_cdp_reply_value(ok, strlen(ok), 1, &match);
    cr_expect(!match && !v, "another call's reply");
    const char *undef = "{\"id\":1,\"result\":{\"result\":{\"type\":\"undefined\"}}}";
    v = pp_cdp_reply_value(undef, strlen(undef), 1, &match);
    cr_expect_str_eq(v, "null");
    free(v);
    const char *thrown = "{\"id\":1,\"result\":{\"result\":{\"type\":\"object\"},"
                         "\"exceptionDetails\":{\"text\":\"Uncaught\",\"exception\":{"
                         "\"description\":\"Error: failed to map segment\"}}}}";
    v = pp_cdp_reply_value(thrown, strlen(thrown), 1, &match);
    cr_expect_str_eq(v, "{\"exception\":\"Error: failed to map segment\"}");
    free(v);
    const char *event = "{\"method\":\"Runtime.executionContextCreated\",\"params\":{}}";
    v = pp_cdp_reply_value(event, strlen(event), 1, &match);
    cr_expect(!match && !v, "an event");
    v = pp_cdp_reply_value("{bad", 4, 1, &match);
    cr_expect(!match && !v);
}
