/*
 * send_shim.c - an LD_PRELOAD library that makes one rank of a job die, or dawdle, at a chosen
 * control-plane message, for tests/mp/init_death.sh: the control plane (runtime/engines/ctl.c) sends
 * every message with sendmsg, so "the Nth sendmsg" is a place in the rendezvous and the
 * collectives that follow it, the same in every run.
 *
 *     SEND_SHIM_KILL_AFTER=N     SIGKILL this process right after its Nth sendmsg
 *     SEND_SHIM_DELAY=N:MS       sleep MS milliseconds before its Nth sendmsg
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static atomic_int sends;

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
    static ssize_t (*real)(int, const struct msghdr *, int);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "sendmsg");
    int n = atomic_fetch_add(&sends, 1) + 1, at = 0, ms = 0;
    const char *delay = getenv("SEND_SHIM_DELAY"), *kill_after = getenv("SEND_SHIM_KILL_AFTER");
    if (delay && sscanf(delay, "%d:%d", &at, &ms) == 2 && at == n)
        nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL);
    ssize_t r = real(fd, m, flags);
    if (kill_after && atoi(kill_after) == n)
        raise(SIGKILL);
    return r;
}
