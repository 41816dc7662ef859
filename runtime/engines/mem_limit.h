/*
 * mem_limit.h - how much memory this process may still take (mem_limit.c).
 */
#ifndef CDSL_MEM_LIMIT_H
#define CDSL_MEM_LIMIT_H

#include <stddef.h>

/* The least of: physical memory, the memory cgroup's limit, and what RLIMIT_AS and
 * RLIMIT_DATA leave beside what is mapped now. SIZE_MAX when none of them is known. */
size_t rt_memory_limit(void);

/* The cgroup part, from a /proc/self/cgroup file and a cgroup mount root (split out so that a
 * test can give a made-up tree): the least memory.max (v2) or memory/memory.limit_in_bytes
 * (v1) of the process's cgroup and its ancestors. SIZE_MAX when there is none. */
size_t rt_cgroup_limit(const char *self_cgroup, const char *root);

#endif
