// Why C: a release build passes the commit as a preprocessor definition (`-Xcc
// -DATTESTD_COMMIT="..."`), which SwiftPM cannot hand to Swift code as a string.
#include "build_info.h"

#ifndef ATTESTD_COMMIT
#define ATTESTD_COMMIT ""
#endif

const char *attestd_build_commit(void) { return ATTESTD_COMMIT; }
