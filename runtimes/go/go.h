/* The Go runtime's pieces used outside its own files (the unit tests). */
#ifndef PP_GO_H
#define PP_GO_H

/* Go executables: an ELF note named "Go" of type 4 (NT_GO_BUILDID) in a PT_NOTE segment or
 * SHT_NOTE section, or a .go.buildinfo section (the detector caches the answer per executable:
 * base/execache.h). For an open file: 1 Go, 0 not Go, -1 unreadable or not ELF. */
int pp_go_check_fd(int fd);

#endif
