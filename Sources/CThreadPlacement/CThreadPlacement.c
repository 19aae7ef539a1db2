// glibc declares sched_getcpu and the CPU_* macros only with _GNU_SOURCE, which Swift's Glibc
// module does not define: these few calls are made here.
#define _GNU_SOURCE
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "CThreadPlacement.h"

int scorebook_current_cpu(void) { return sched_getcpu(); }

int scorebook_allowed_cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    return CPU_COUNT(&set);
}

int scorebook_keep_thread_off_cpu(pthread_t thread, int cpu) {
    cpu_set_t set;
    if (cpu < 0 || sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    CPU_CLR(cpu, &set);
    if (CPU_COUNT(&set) == 0) return -1;
    return pthread_setaffinity_np(thread, sizeof set, &set) == 0 ? 0 : -1;
}

int scorebook_set_current_thread_nice(int nice) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
}
