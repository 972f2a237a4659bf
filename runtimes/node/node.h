/* The Node.js runtime's functions used outside its folder's files (tests included). */
#ifndef PP_NODE_H
#define PP_NODE_H

/* "nodejs: <arg> (path)": the first argument after argv[0] ending in .js, skipping -r X,
 * --require X and --require=X. */
char *pp_appid_node(char *const *argv, int argc, const char *cwd, const char *root);

#endif
