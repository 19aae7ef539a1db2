#ifndef SCOREBOOK_THREAD_PLACEMENT_H
#define SCOREBOOK_THREAD_PLACEMENT_H

#include <pthread.h>

/// The CPU the calling thread runs on, or -1.
int scorebook_current_cpu(void);

/// How many CPUs the calling thread may run on.
int scorebook_allowed_cpu_count(void);

/// Lets `thread` run on the CPUs the calling thread may use except `cpu`; 0 when done, -1 when
/// that would leave none (or the mask could not be read or set).
int scorebook_keep_thread_off_cpu(pthread_t thread, int cpu);

/// Sets the calling thread's nice value (Linux keeps one per thread); 0 when done, -1 if refused.
int scorebook_set_current_thread_nice(int nice);

#endif
