#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro that casts -1 to a destructor pointer; Swift cannot import it.
static inline sqlite3_destructor_type CSQLite_transient(void) { return SQLITE_TRANSIENT; }

// sqlite3_config is variadic, which Swift cannot call. Turns off SQLite's memory statistics, whose
// global mutex every allocation of every connection takes (the contention shows under load);
// SQLITE_MISUSE when SQLite is already initialised, and then it changes nothing.
static inline int CSQLite_disable_memory_statistics(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

#endif
