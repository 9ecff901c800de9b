/*
 * version.h: the version and the commit a binary was built from. The
 * version is the one number in CMakeLists.txt's project(); the commit is
 * taken from git at every build (cmake/version.cmake). `clsolve --version`,
 * `clsolved --version`, /metrics' clsolve_build_info and the man pages all
 * read them from here.
 */
#ifndef CLS_COMMON_VERSION_H
#define CLS_COMMON_VERSION_H

/* "0.1.0" */
const char *cls_version(void);
/* "1a2b3c4d5e6f", with "-dirty" when the tree had uncommitted changes, or
 * "unknown" when it was not built from a git checkout */
const char *cls_commit(void);

#endif
