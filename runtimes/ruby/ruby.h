/* The Ruby runtime's functions used outside its folder's files (tests included). */
#ifndef PP_RUBY_H
#define PP_RUBY_H

/* "ruby: <arg> (path)": the first argument ending in .rb, scanning from argv[0], skipping -r X
 * and -rX. */
char *pp_appid_ruby(char *const *argv, int argc, const char *cwd, const char *root);

#endif
