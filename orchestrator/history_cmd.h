/* `polyprof history`: the merged profile of a window of the local history store
 * (history_store.h) written as .col, HTML flame graph or pprof. main dispatches to it when
 * argv[1] is "history". */
#ifndef PP_HISTORY_CMD_H
#define PP_HISTORY_CMD_H

/* argv[0] is "history". Returns the exit code: 0 written, 1 runtime failure, 2 bad usage. */
int pp_history_main(int argc, char **argv);

#endif
