#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H

#include <libpq-fe.h>

// PG_DIAG_SQLSTATE is a character-literal macro; Swift does not import it as a constant.
static inline int CLibPQ_diagSQLState(void) { return PG_DIAG_SQLSTATE; }

#endif
