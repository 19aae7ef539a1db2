#include <sqlite3.h>

/// Turns off SQLite's memory statistics before the library initializes: with them on, every
/// allocation of every connection takes one process-wide mutex. (`sqlite3_config` is variadic,
/// which Swift cannot call.) Returns SQLITE_MISUSE once SQLite is initialized.
static inline int scorebook_sqlite3_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
