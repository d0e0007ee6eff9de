#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <stddef.h>
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro that casts -1 to a destructor pointer; Swift cannot import it.
static inline sqlite3_destructor_type CSQLite_transient(void) { return SQLITE_TRANSIENT; }

// sqlite3_config is variadic, which Swift cannot call. Turns off SQLite's memory statistics, whose
// global mutex every allocation of every connection takes (the contention shows under load);
// SQLITE_MISUSE when SQLite is already initialised, and then it changes nothing.
static inline int CSQLite_disable_memory_statistics(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

// The first region of a WAL database's shared-memory index as this connection maps it, through
// the connection's own VFS (SQLITE_FCNTL_FILE_POINTER, then xShmMap without extending), or NULL.
// Mapping the -shm file independently would need a descriptor of our own, and closing it would
// drop every POSIX lock this process holds on the file, SQLite's included (another process could
// then reset the index under us). The pointer stays valid until the connection closes.
static inline const void *CSQLite_wal_index(sqlite3 *db)
{
    sqlite3_file *file = NULL;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || file == NULL) return NULL;
    const sqlite3_io_methods *methods = file->pMethods;
    if (methods == NULL || methods->iVersion < 2 || methods->xShmMap == NULL) return NULL;
    volatile void *region = NULL;
    if (methods->xShmMap(file, 0, 32768, 0, &region) != SQLITE_OK) return NULL;
    return (const void *)region;
}

#endif
