/* Definitions shared by the kernel-symbol resolver program and its user-space side. */
#ifndef PP_BPF_KSYM_DEFS_H
#define PP_BPF_KSYM_DEFS_H

#define PP_KSYM_BATCH 64 /* addresses named per program run */
#define PP_KSYM_LEN 128  /* bytes per name ("name [module]" as the kernel's %ps prints it) */

#endif
