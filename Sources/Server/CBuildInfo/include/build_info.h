#ifndef ATTESTD_BUILD_INFO_H
#define ATTESTD_BUILD_INFO_H

/// The commit the binary was built from (`git describe --always --dirty`), as scripts/package
/// passes it with `-Xcc -DATTESTD_COMMIT="..."`; empty for a build that was not given one.
const char *attestd_build_commit(void);

#endif
