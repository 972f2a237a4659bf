/* The Ruby runtime's functions used outside its folder's files (tests included). */
#ifndef PP_RUBY_H
#define PP_RUBY_H

#include <jansson.h>
#include <stddef.h>

/* "ruby: <arg> (path)": the first argument ending in .rb, scanning from argv[0], skipping -r X
 * and -rX. */
char *pp_appid_ruby(char *const *argv, int argc, const char *cwd, const char *root);

/* Application metadata keys of a Ruby process (metadata.c): ruby_version, exe_elfid,
 * libruby_elfid. */
json_t *pp_ruby_metadata(int pid);

/* The version text `ruby --version` prints, read from the ELF at path (libruby, or a static
 * ruby): 0, or -1 when it has none. */
int pp_ruby_elf_version(const char *path, char *out, size_t len);

#endif
