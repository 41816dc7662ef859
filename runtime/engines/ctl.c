/*
 * ctl.c - the control plane of one host's ranks (see ctl.h): rendezvous, star collectives
 * through rank 0 over SOCK_SEQPACKET Unix-domain sockets in the abstract namespace, file
 * descriptors passed with SCM_RIGHTS, and liveness through pidfds.
 *
 * Every message is one packet: a header (magic, type, step number and name, sender or subject
 * rank, payload length) and the payload, with at most one descriptor attached. Packets keep
 * their boundaries, so a descriptor always travels with the record it belongs to. Sends use
 * MSG_NOSIGNAL (a dead peer is an error, not a SIGPIPE) and every receive and send waits in
 * poll() with the call's deadline. Ranks other than 0 wait a little longer than rank 0 does
 * (CTL_GRACE_S), so that when rank 0 gives up on a missing rank, its message reaches them
 * before their own deadline passes: every rank then prints the same explanation.
 */
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "log.h"
#include "sha256.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434      /* the same number on every architecture (Linux 5.3) */
#endif

enum {
    CTL_MAGIC = 0x4c534443,     /* "CDSL" */
    CTL_VERSION = 1,
    CTL_HELLO = 1, CTL_WELCOME = 2, CTL_DATA = 3, CTL_ERROR = 4,
    CTL_WHAT_BYTES = 36,
    CTL_MAX_MSG = 64 * 1024,
    CTL_MAX_PROBLEMS = 8,
};
#define CTL_GRACE_S 2.0
#define CTL_SHARED_BYTES 4096

typedef struct CtlHdr {
    uint32_t magic;
    uint16_t type;
    uint16_t nfds;              /* 0 or 1 */
    int32_t rank;               /* HELLO, DATA to rank 0: the sender; DATA from rank 0: whose record */
    uint32_t seq;               /* the collective's number, 0 for the rendezvous */
    uint32_t len;               /* payload bytes after the header */
    char what[CTL_WHAT_BYTES];  /* the step, for messages */
} CtlHdr;

typedef struct CtlHello {
    unsigned char nonce[CTL_NONCE_BYTES];
    int32_t rank, nranks;
    int64_t pid;
    uint32_t version, pad;
} CtlHello;

struct RtCtl {
    int rank, nranks;
    double timeout_s;
    FILE *log;
    int *sock;                  /* rank 0: [n] connections (sock[0] = -1); else sock[0] = rank 0 */
    long *pid;                  /* [n] */
    int *pidfd;                 /* [n]: -1 for ourselves, or where pidfds are missing */
    unsigned seq;
    bool broken;                /* an earlier collective failed: every later one fails at once */
    char *buf;                  /* one received message */
    _Atomic uint64_t *shared;   /* a page every rank maps: [0] = 1 + the first rank found dead */
};

/* A received packet, pointing into c->buf. */
typedef struct CtlMsg {
    CtlHdr h;
    const char *payload;
    int fd;                     /* -1 when none came */
} CtlMsg;

/* ---- time, text ------------------------------------------------------------------------------ */

static double ctl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int ctl_ms_left(double deadline)
{
    double left = deadline - ctl_now();
    return left <= 0 ? 0 : left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
}

static void ctl_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Problems found by rank 0, joined into one message for every rank. */
typedef struct CtlProblems {
    char text[2048];
    size_t len;
    int count;
} CtlProblems;

static void ctl_problem(CtlProblems *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void ctl_problem(CtlProblems *p, const char *fmt, ...)
{
    if (p->count++ >= CTL_MAX_PROBLEMS || p->len + 8 >= sizeof p->text)
        return;
    if (p->len)
        p->len += (size_t)snprintf(p->text + p->len, sizeof p->text - p->len, "; ");
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(p->text + p->len, sizeof p->text - p->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        p->len += (size_t)n < sizeof p->text - p->len ? (size_t)n : sizeof p->text - p->len - 1;
}

/* ---- addresses ------------------------------------------------------------------------------- */

uint64_t rt_ctl_host_id(void)
{
    char boot[128] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot, sizeof boot, f))
            boot[0] = 0;
        fclose(f);
    }
    if (!boot[0])
        gethostname(boot, sizeof boot - 1);
    unsigned char d[32];
    rt_sha256(boot, strlen(boot), d);
    uint64_t h;
    memcpy(&h, d, sizeof h);
    return h;
}

int rt_ctl_address_new(CtlAddress *a)
{
    unsigned char r[16];
    memset(a, 0, sizeof *a);
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r || getrandom(a->nonce, sizeof a->nonce, 0) != (ssize_t)sizeof a->nonce)
        return -1;
    int n = snprintf(a->name, sizeof a->name, "cdsl-");
    for (size_t i = 0; i < sizeof r; i++)
        n += snprintf(a->name + n, sizeof a->name - (size_t)n, "%02x", r[i]);
    a->host = rt_ctl_host_id();
    return 0;
}

static socklen_t ctl_sockaddr(const CtlAddress *a, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    size_t n = strnlen(a->name, sizeof a->name);
    memcpy(sa->sun_path + 1, a->name, n);    /* sun_path[0] = 0: the abstract namespace */
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* ---- packets ---------------------------------------------------------------------------------- */

static int ctl_wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, ctl_ms_left(deadline));
        if (r > 0)
            return 0;
        if (r == 0)
            return -ETIMEDOUT;
        if (errno != EINTR)
            return -errno;
    }
}

/* One packet; 0, -ETIMEDOUT, or -errno (-EPIPE when the peer is gone). */
static int ctl_send(int sock, uint16_t type, int rank, unsigned seq, const char *what, const void *payload,
                    size_t len, int fd, double deadline)
{
    CtlHdr h = {.magic = CTL_MAGIC, .type = type, .nfds = fd >= 0, .rank = rank, .seq = seq, .len = (uint32_t)len};
    snprintf(h.what, sizeof h.what, "%s", what ? what : "");
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)payload, len}};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
    if (fd >= 0) {
        memset(&u, 0, sizeof u);
        m.msg_control = u.buf;
        m.msg_controllen = sizeof u.buf;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    }
    for (;;) {
        int w = ctl_wait_fd(sock, POLLOUT, deadline);
        if (w)
            return w;
        ssize_t n = sendmsg(sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n == (ssize_t)(sizeof h + len))
            return 0;
        if (n >= 0)
            return -EMSGSIZE;
        if (errno != EINTR && errno != EAGAIN)
            return errno == ECONNRESET ? -EPIPE : -errno;
    }
}

/* Every descriptor that came with m but `keep`: a header may say it carries none, or one, and
 * still come with more, each of which would otherwise stay open here for good. */
static void ctl_close_fds(struct msghdr *m, int keep)
{
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR(m, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
            size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < n; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
                if (fd != keep)
                    close(fd);
            }
        }
}

/* One packet into buf; 0, -ETIMEDOUT, -EPIPE (the peer closed), -EPROTO (not ours). A peer
 * that closed with our packet unread leaves ECONNRESET in front of the packets it sent before
 * (Linux reports the error first, once): those are read all the same, since its last one is
 * often the error message that explains why it left. */
static int ctl_recv(int sock, char *buf, CtlMsg *out, double deadline)
{
    out->fd = -1;
    union {
        char b[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } u;
    bool reset = false;
    for (;;) {
        int w = ctl_wait_fd(sock, POLLIN, deadline);
        if (w)
            return w;
        struct iovec iov = {buf, CTL_MAX_MSG};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof u.b};
        ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0 && errno == ECONNRESET && !reset) {
            reset = true;
            continue;
        }
        if (n < 0)
            return errno == ECONNRESET ? -EPIPE : -errno;
        if (n == 0)
            return -EPIPE;
        memcpy(&out->h, buf, (size_t)n < sizeof out->h ? (size_t)n : sizeof out->h);
        bool bad = (size_t)n < sizeof out->h || out->h.magic != CTL_MAGIC || out->h.len != (size_t)n - sizeof out->h ||
                   (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || out->h.nfds > 1;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
        if (!bad && out->h.nfds) {
            bad = !cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int));
            if (!bad)
                memcpy(&out->fd, CMSG_DATA(cm), sizeof out->fd);
        }
        if (bad)
            out->fd = -1;
        ctl_close_fds(&m, out->fd);
        if (bad)
            return -EPROTO;
        out->h.what[CTL_WHAT_BYTES - 1] = 0;
        out->payload = buf + sizeof out->h;
        return 0;
    }
}

/* ---- the communicator's state ----------------------------------------------------------------- */

static RtCtl *ctl_new(int rank, int nranks, double timeout_s, FILE *log)
{
    RtCtl *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->rank = rank;
    c->nranks = nranks;
    c->timeout_s = timeout_s;
    c->log = log;
    c->sock = malloc((size_t)nranks * sizeof *c->sock);
    c->pid = calloc((size_t)nranks, sizeof *c->pid);
    c->pidfd = malloc((size_t)nranks * sizeof *c->pidfd);
    c->buf = malloc(CTL_MAX_MSG);
    if (!c->sock || !c->pid || !c->pidfd || !c->buf) {
        free(c->sock);
        free(c->pid);
        free(c->pidfd);
        free(c->buf);
        free(c);
        return NULL;
    }
    for (int q = 0; q < nranks; q++)
        c->sock[q] = c->pidfd[q] = -1;
    return c;
}

void rt_ctl_close(RtCtl *c)
{
    if (!c)
        return;
    for (int q = 0; q < c->nranks; q++) {
        if (c->sock[q] >= 0)
            close(c->sock[q]);
        if (c->pidfd[q] >= 0)
            close(c->pidfd[q]);
    }
    if (c->shared)
        munmap((void *)c->shared, CTL_SHARED_BYTES);
    free(c->sock);
    free(c->pid);
    free(c->pidfd);
    free(c->buf);
    free(c);
}

int rt_ctl_rank(const RtCtl *c)
{
    return c->rank;
}

int rt_ctl_nranks(const RtCtl *c)
{
    return c->nranks;
}

long rt_ctl_pid(const RtCtl *c, int rank)
{
    return rank >= 0 && rank < c->nranks ? c->pid[rank] : 0;
}

/* Watch every peer's process: a pidfd becomes readable when the process exits. */
static void ctl_watch_pids(RtCtl *c)
{
    for (int q = 0; q < c->nranks; q++)
        if (q != c->rank && c->pid[q] > 0) {
            long fd = syscall(SYS_pidfd_open, (pid_t)c->pid[q], 0);
            c->pidfd[q] = fd >= 0 ? (int)fd : -1;
            if (fd >= 0)
                fcntl((int)fd, F_SETFD, FD_CLOEXEC);
        }
}

/* Without a pidfd: gone, or a zombie that nobody has reaped yet. */
static bool ctl_pid_gone(long pid)
{
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return true;
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = 0;
    const char *paren = strrchr(stat, ')');
    return paren && (paren[2] == 'Z' || paren[2] == 'X');
}

static int ctl_find_dead(RtCtl *c, bool (*counts)(void *ctx, int q), void *ctx)
{
    for (int q = 0; q < c->nranks; q++) {
        if (q == c->rank || c->pid[q] <= 0 || (counts && !counts(ctx, q)))
            continue;
        if (c->pidfd[q] >= 0) {
            struct pollfd p = {c->pidfd[q], POLLIN, 0};
            if (poll(&p, 1, 0) > 0)
                return q;
        } else if (ctl_pid_gone(c->pid[q])) {
            return q;
        }
    }
    return -1;
}

/* The first rank any process found dead: a rank that exits after reporting that death is
 * dead too, but it is not the news. */
int rt_ctl_dead(RtCtl *c)
{
    return rt_ctl_dead_among(c, NULL, NULL);
}

int rt_ctl_dead_among(RtCtl *c, bool (*counts)(void *ctx, int q), void *ctx)
{
    int q = ctl_find_dead(c, counts, ctx);
    if (q < 0 || !c->shared)
        return q;
    uint64_t none = 0;
    atomic_compare_exchange_strong(&c->shared[0], &none, (uint64_t)q + 1);
    return (int)atomic_load(&c->shared[0]) - 1;
}

/* Rank 0 makes a page of shared memory (a memfd: no name to leak) and every rank maps it. */
static int ctl_share_page(RtCtl *c)
{
    int fd = -1, *fds = calloc((size_t)c->nranks, sizeof *fds);
    char none = 0;
    if (!fds)
        return CDSL_ERR_SYSTEM;
    if (c->rank == 0 && ((fd = memfd_create("cdsl-ctl", MFD_CLOEXEC)) < 0 || ftruncate(fd, CTL_SHARED_BYTES) != 0)) {
        rt_error(c->log, "rank 0: cannot make a shared page: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    int st = rt_ctl_allgather(c, "init: the shared page", &none, 0, &none, fd, fds);
    int mine = c->rank == 0 ? fd : fds[0];
    if (!st && mine >= 0) {
        void *p = mmap(NULL, CTL_SHARED_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, mine, 0);
        c->shared = p == MAP_FAILED ? NULL : p;
    }
    if (!st && !c->shared) {
        rt_error(c->log, "rank %d: cannot map the shared page", c->rank);
        st = CDSL_ERR_SYSTEM;
    }
    if (fd >= 0)
        close(fd);
    for (int q = 1; q < c->nranks; q++)
        if (q != c->rank && fds[q] >= 0)
            close(fds[q]);
    if (c->rank != 0 && fds[0] >= 0)
        close(fds[0]);
    free(fds);
    return st;
}

/* ---- the rendezvous: rank 0 -------------------------------------------------------------------- */

/* Anyone on the host can see the socket's name (/proc/net/unix) and connect. A connection is a
 * stranger until it says a hello with the id's nonce, from our user (SO_PEERCRED): strangers
 * that fail either test, or that send something else, are closed quietly (a TRACE line each,
 * one INFO line in all), because they say nothing about the job. Strangers wait in a few slots
 * of their own, each for CTL_HELLO_S at most (a rank says hello as soon as it connects), and
 * the oldest gives way to a newer one: connections that never speak cannot keep a rank out. */
enum { CTL_MAX_STRANGERS = 16, CTL_BACKLOG = 128 };
#define CTL_HELLO_S 2
#define CTL_STR(x) CTL_STR_(x)
#define CTL_STR_(x) #x

typedef enum CtlDrop {
    DROP_USER,                  /* another user, or no credentials */
    DROP_NONCE,                 /* another id's nonce */
    DROP_NOT_HELLO,             /* not a cdsl packet, or not a hello */
    DROP_SILENT,                /* said nothing within CTL_HELLO_S */
    DROP_CROWDED,               /* gave way to a newer stranger */
    DROP_GONE,                  /* closed before saying anything */
    DROP_KINDS
} CtlDrop;

static const char *const ctl_drop_why[DROP_KINDS] = {
    "from another user", "with another id's nonce", "not a cdsl hello",
    "silent for " CTL_STR(CTL_HELLO_S) " s", "crowded out by newer ones", "closed before a hello",
};

typedef struct CtlStranger {
    int fd;
    long pid;                   /* SO_PEERCRED's, for the log */
    double until;               /* when it is dropped if it has not said hello */
} CtlStranger;

typedef struct CtlHub {
    RtCtl *c;
    const CtlAddress *a;
    int lsock;
    CtlStranger pending[CTL_MAX_STRANGERS];
    int npending;
    int arrived;                /* ranks with a socket, including bad ones */
    int dropped[DROP_KINDS];
    CtlProblems pr;
} CtlHub;

/* A process that cannot be one of our ranks hears why before its connection closes. */
static void hub_refuse(CtlHub *hb, int fd, const char *why)
{
    ctl_send(fd, CTL_ERROR, 0, 0, "init", why, strlen(why) + 1, -1, ctl_now() + 0.5);
    close(fd);
}

static void hub_forget(CtlHub *hb, int i)
{
    hb->pending[i] = hb->pending[--hb->npending];
}

static void hub_drop(CtlHub *hb, int fd, long pid, CtlDrop why)
{
    close(fd);
    hb->dropped[why]++;
    log_msg(LOG_TRACE, "control plane: rank 0 dropped a connection of pid %ld (%s)", pid, ctl_drop_why[why]);
}

/* The one line that says, at the end of the rendezvous, what was dropped. */
static void hub_log_drops(const CtlHub *hb)
{
    char text[512] = "";
    int total = 0;
    size_t len = 0;
    for (int k = 0; k < DROP_KINDS; k++)
        if (hb->dropped[k]) {
            total += hb->dropped[k];
            len += (size_t)snprintf(text + len, sizeof text - len, "%s%d %s", len ? ", " : "", hb->dropped[k],
                                    ctl_drop_why[k]);
            if (len >= sizeof text)
                break;
        }
    if (total)
        log_msg(LOG_INFO, "control plane: rank 0 dropped %d connection%s that were not this job's ranks (%s)", total,
                total == 1 ? "" : "s", text);
}

static void hub_take(CtlHub *hb, int fd, const CtlHello *h, long pid)
{
    RtCtl *c = hb->c;
    char why[256];
    if (h->rank <= 0 || h->rank >= c->nranks) {
        if (h->rank == 0)
            snprintf(why, sizeof why, "two processes are rank 0 (pids %ld and %ld)", (long)getpid(), pid);
        else
            snprintf(why, sizeof why, "a process (pid %ld) says it is rank %d of %d, but rank 0 was started with "
                     "nranks = %d", pid, h->rank, h->nranks, c->nranks);
        ctl_problem(&hb->pr, "%s", why);
        hub_refuse(hb, fd, why);
        return;
    }
    if (c->sock[h->rank] >= 0) {
        snprintf(why, sizeof why, "two processes are rank %d (pids %ld and %ld)", h->rank, c->pid[h->rank], pid);
        ctl_problem(&hb->pr, "%s", why);
        hub_refuse(hb, fd, why);
        return;
    }
    if (h->nranks != c->nranks)
        ctl_problem(&hb->pr, "rank %d (pid %ld) was started with nranks = %d, rank 0 with nranks = %d", h->rank, pid,
                    h->nranks, c->nranks);
    c->sock[h->rank] = fd;
    c->pid[h->rank] = pid;
    hb->arrived++;
}

/* In time independent of where the nonces differ. */
static bool ctl_same_nonce(const unsigned char *x, const unsigned char *y)
{
    unsigned char d = 0;
    for (int i = 0; i < CTL_NONCE_BYTES; i++)
        d |= (unsigned char)(x[i] ^ y[i]);
    return d == 0;
}

/* A stranger spoke: a hello from one of our ranks, or something to drop. */
static void hub_hello(CtlHub *hb, int i)
{
    CtlStranger s = hb->pending[i];
    hub_forget(hb, i);
    CtlMsg m = {.fd = -1};
    int r = ctl_recv(s.fd, hb->c->buf, &m, ctl_now());
    if (r == 0 && m.fd >= 0)
        close(m.fd);
    if (r == -ETIMEDOUT) {      /* woken for nothing: it keeps its slot and its deadline */
        hb->pending[hb->npending++] = s;
        return;
    }
    CtlHello h;
    if (r || m.h.type != CTL_HELLO || m.h.len != sizeof h) {
        hub_drop(hb, s.fd, s.pid, r == -EPIPE ? DROP_GONE : DROP_NOT_HELLO);
        return;
    }
    memcpy(&h, m.payload, sizeof h);
    if (!ctl_same_nonce(h.nonce, hb->a->nonce)) {
        hub_drop(hb, s.fd, s.pid, DROP_NONCE);
        return;
    }
    if (h.version != CTL_VERSION)
        ctl_problem(&hb->pr, "rank %d (pid %ld) runs another version of libcdsl's control plane (%u, here %d)", h.rank,
                    s.pid, h.version, CTL_VERSION);
    hub_take(hb, s.fd, &h, s.pid ? s.pid : (long)h.pid);
}

/* Whether stranger i has said something (or closed): then it is read (hub_hello) rather than
 * dropped unheard, however late rank 0 comes to it (rank 0 stalled, not the stranger). */
static bool hub_heard(CtlHub *hb, int i)
{
    struct pollfd p = {hb->pending[i].fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0)
        return false;
    hub_hello(hb, i);
    return true;
}

static int hub_oldest(const CtlHub *hb)
{
    int oldest = 0;
    for (int i = 1; i < hb->npending; i++)
        if (hb->pending[i].until < hb->pending[oldest].until)
            oldest = i;
    return oldest;
}

/* A connection of our user waits for its hello in a slot; when all are taken, the oldest
 * stranger's, unless it has spoken meanwhile. */
static void hub_admit(CtlHub *hb, int fd, long pid)
{
    if (hb->npending == CTL_MAX_STRANGERS)
        hub_heard(hb, hub_oldest(hb));
    if (hb->npending == CTL_MAX_STRANGERS) {
        int oldest = hub_oldest(hb);
        hub_drop(hb, hb->pending[oldest].fd, hb->pending[oldest].pid, DROP_CROWDED);
        hub_forget(hb, oldest);
    }
    hb->pending[hb->npending++] = (CtlStranger){fd, pid, ctl_now() + CTL_HELLO_S};
}

/* New connections: another user's are dropped at once, as many as wait in the backlog, so that
 * they cannot keep a rank out of it; the first of our user's takes a slot and ends the turn,
 * so that the hellos of the slots are read between it and the next. Out of descriptors,
 * rank 0 waits a little rather than spin on a listening socket it cannot accept from. */
static void hub_accept(CtlHub *hb)
{
    for (int k = 0; k < CTL_BACKLOG; k++) {
        int fd = accept4(hb->lsock, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                log_msg(LOG_TRACE, "control plane: rank 0 cannot accept a connection now: %s", strerror(errno));
                ctl_sleep_ms(20);
            }
            return;
        }
        struct ucred cred;
        socklen_t clen = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 && clen == sizeof cred && cred.uid == geteuid()) {
            hub_admit(hb, fd, (long)cred.pid);
            return;
        }
        hub_drop(hb, fd, clen == sizeof cred ? (long)cred.pid : 0, DROP_USER);
    }
}

/* Strangers past their time go, unless they have spoken meanwhile; the wait until the next
 * one's time (or the deadline), in ms. */
static int hub_expire(CtlHub *hb, double deadline)
{
    double now = ctl_now(), next = deadline;
    for (int i = hb->npending - 1; i >= 0; i--) {
        if (hb->pending[i].until <= now) {
            if (hub_heard(hb, i))   /* backwards: it moved the last one, already seen, to i */
                continue;
            hub_drop(hb, hb->pending[i].fd, hb->pending[i].pid, DROP_SILENT);
            hub_forget(hb, i);
        } else if (hb->pending[i].until < next) {
            next = hb->pending[i].until;
        }
    }
    return ctl_ms_left(next);
}

/* "ranks 2, 3 never arrived at init" */
static void hub_missing(CtlHub *hb, const char *what)
{
    RtCtl *c = hb->c;
    char list[512] = "";
    int n = 0, len = 0;
    for (int q = 1; q < c->nranks; q++)
        if (c->sock[q] < 0) {
            if (n < 16 && len < (int)sizeof list - 16)
                len += snprintf(list + len, sizeof list - (size_t)len, "%s%d", n ? ", " : "", q);
            n++;
        }
    if (n)
        ctl_problem(&hb->pr, "rank%s %s%s never arrived at %s within %.0f s", n > 1 ? "s" : "", list, n > 16 ? ", ..." : "",
                    what, c->timeout_s);
}

static void hub_send_all(RtCtl *c, uint16_t type, const void *payload, size_t len, double deadline)
{
    for (int q = 1; q < c->nranks; q++)
        if (c->sock[q] >= 0)
            ctl_send(c->sock[q], type, 0, c->seq, "", payload, len, -1, deadline);
}

static int hub_listen(CtlHub *hb)
{
    RtCtl *c = hb->c;
    struct sockaddr_un sa;
    socklen_t sl = ctl_sockaddr(hb->a, &sa);
    hb->lsock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (hb->lsock < 0 || bind(hb->lsock, (struct sockaddr *)&sa, sl) != 0 || listen(hb->lsock, CTL_BACKLOG) != 0) {
        int e = errno;
        if (hb->lsock >= 0)
            close(hb->lsock);
        hb->lsock = -1;
        if (e == EADDRINUSE)
            rt_error(c->log, "rank 0: another communicator is already using this unique id (an id serves one "
                     "communicator: make a new one with cdsl_get_unique_id)");
        else
            rt_error(c->log, "rank 0: cannot listen for the other ranks: %s", strerror(e));
        return CDSL_ERR_SYSTEM;
    }
    return CDSL_OK;
}

static int ctl_open_hub(RtCtl *c, const CtlAddress *a)
{
    CtlHub hb = {.c = c, .a = a, .lsock = -1};
    c->pid[0] = (long)getpid();
    if (hub_listen(&hb))
        return CDSL_ERR_SYSTEM;
    double deadline = ctl_now() + c->timeout_s;
    while (hb.arrived < c->nranks - 1 && ctl_ms_left(deadline) > 0) {
        struct pollfd p[1 + CTL_MAX_STRANGERS];
        int np = 0, wait_ms = hub_expire(&hb, deadline);
        p[np++] = (struct pollfd){hb.lsock, POLLIN, 0};
        for (int i = 0; i < hb.npending; i++)
            p[np++] = (struct pollfd){hb.pending[i].fd, POLLIN, 0};
        int r = poll(p, (nfds_t)np, wait_ms < 200 ? wait_ms : 200);
        if (r < 0 && errno != EINTR)
            break;
        for (int i = np - 1; r > 0 && i >= 1; i--)      /* backwards: hub_hello moves the last one to i */
            if (p[i].revents)
                hub_hello(&hb, i - 1);
        if (r > 0 && p[0].revents)
            hub_accept(&hb);
    }
    close(hb.lsock);    /* the name is gone now: nobody else can join */
    for (int i = 0; i < hb.npending; i++)
        close(hb.pending[i].fd);
    hub_log_drops(&hb);
    hub_missing(&hb, "init");
    double send_by = ctl_now() + CTL_GRACE_S;
    if (hb.pr.count) {
        rt_error(c->log, "%s", hb.pr.text);
        hub_send_all(c, CTL_ERROR, hb.pr.text, hb.pr.len + 1, send_by);
        return CDSL_ERR_RUNTIME;
    }
    int64_t pids[4096];
    for (int q = 0; q < c->nranks; q++)
        pids[q] = c->pid[q];
    hub_send_all(c, CTL_WELCOME, pids, (size_t)c->nranks * sizeof pids[0], send_by);
    return CDSL_OK;
}

/* ---- the rendezvous: the other ranks ------------------------------------------------------------ */

/* Whether the process listening at fd's other end runs as our user. Anyone can bind the
 * id's name (it is listed in /proc/net/unix) while rank 0 is not there yet, or after it left;
 * such a listener would read the hello's nonce and could answer for rank 0. */
static bool ctl_peer_is_ours(int fd, struct ucred *cred)
{
    socklen_t clen = sizeof *cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &clen) == 0 && clen == sizeof *cred &&
           cred->uid == geteuid();
}

static int ctl_connect(RtCtl *c, const CtlAddress *a, double deadline)
{
    struct sockaddr_un sa;
    socklen_t sl = ctl_sockaddr(a, &sa);
    int wait_ms = 2;
    struct ucred other = {.pid = 0};
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            rt_error(c->log, "rank %d: cannot make a socket: %s", c->rank, strerror(errno));
            return CDSL_ERR_SYSTEM;
        }
        struct ucred cred = {.pid = 0};
        int e = connect(fd, (struct sockaddr *)&sa, sl) == 0 ? 0 : errno;
        if (!e && ctl_peer_is_ours(fd, &cred)) {
            c->sock[0] = fd;
            return CDSL_OK;
        }
        if (!e) {               /* not our rank 0: it says nothing; ours may yet come */
            other = cred;
            e = ECONNREFUSED;
        }
        close(fd);
        if (e != ECONNREFUSED && e != ENOENT && e != EAGAIN && e != EINTR) {
            rt_error(c->log, "rank %d: cannot reach rank 0: %s", c->rank, strerror(e));
            return CDSL_ERR_SYSTEM;
        }
        if (ctl_ms_left(deadline) == 0 && other.pid) {
            rt_error(c->log, "rank %d: rank 0 never arrived at init within %.0f s: what listened at the id's address "
                     "was a process of another user (pid %ld, uid %ld), which was not sent the hello", c->rank,
                     c->timeout_s, (long)other.pid, (long)other.uid);
            return CDSL_ERR_RUNTIME;
        }
        if (ctl_ms_left(deadline) == 0) {
            rt_error(c->log, "rank %d: rank 0 never arrived at init: nothing listened at the id's address for "
                     "%.0f s (was rank 0 started, with this id, on this host?)", c->rank, c->timeout_s);
            return CDSL_ERR_RUNTIME;
        }
        ctl_sleep_ms(wait_ms);
        wait_ms = wait_ms < 50 ? wait_ms * 2 : 50;
    }
}

/* When rank 0 left without a word: another rank (not 0, not us) whose process is gone too, or -1. */
static int ctl_find_dead_peer(RtCtl *c)
{
    for (int q = 1; q < c->nranks; q++)
        if (q != c->rank && c->pid[q] > 0 && ctl_pid_gone(c->pid[q]))
            return q;
    return -1;
}

/* Whether rank 0's process is gone, given a moment: its connection closes before it has
 * quite finished exiting. */
static bool ctl_rank0_gone(RtCtl *c)
{
    for (int i = 0; c->pid[0] > 0 && i < 50; i++) {
        if (ctl_pid_gone(c->pid[0]))
            return true;
        ctl_sleep_ms(5);
    }
    return false;
}

/* An error text from rank 0, or ours about rank 0. */
static int ctl_report_from_hub(RtCtl *c, int r, const CtlMsg *m, const char *what)
{
    if (r == 0 && m->h.type == CTL_ERROR) {
        rt_error(c->log, "%.*s", (int)m->h.len, m->payload);
        return CDSL_ERR_RUNTIME;
    }
    int dead = r == -EPIPE && ctl_rank0_gone(c) ? ctl_find_dead_peer(c) : -1;
    if (r == -ETIMEDOUT)
        rt_error(c->log, "rank %d: rank 0 did not answer at %s within %.0f s", c->rank, what, c->timeout_s);
    else if (dead > 0)
        rt_error(c->log, "rank %d: rank %d (pid %ld) and rank 0 (pid %ld) have exited during %s", c->rank, dead,
                 c->pid[dead], c->pid[0], what);
    else if (r == -EPIPE && c->pid[0] > 0)
        rt_error(c->log, "rank %d: rank 0 has exited (pid %ld) during %s", c->rank, c->pid[0], what);
    else if (r == -EPIPE)
        rt_error(c->log, "rank %d: rank 0 closed the connection during %s without an answer (rank 0 drops a "
                 "hello with another id's nonce, or one that does not come within %d s of connecting)", c->rank, what,
                 CTL_HELLO_S);
    else if (r)
        rt_error(c->log, "rank %d: the connection to rank 0 failed during %s: %s", c->rank, what,
                 r == -EPROTO ? "a message that is not cdsl's" : strerror(-r));
    else
        rt_error(c->log, "rank %d: rank 0 answered %s with an unexpected message", c->rank, what);
    return r == -EPIPE || r == -ETIMEDOUT ? CDSL_ERR_RUNTIME : CDSL_ERR_SYSTEM;
}

static int ctl_open_spoke(RtCtl *c, const CtlAddress *a)
{
    double deadline = ctl_now() + c->timeout_s;
    int st = ctl_connect(c, a, deadline);
    if (st)
        return st;
    CtlHello h = {.rank = c->rank, .nranks = c->nranks, .pid = (int64_t)getpid(), .version = CTL_VERSION};
    memcpy(h.nonce, a->nonce, sizeof h.nonce);
    int r = ctl_send(c->sock[0], CTL_HELLO, c->rank, 0, "init", &h, sizeof h, -1, deadline);
    CtlMsg m = {.fd = -1};
    if (!r)
        r = ctl_recv(c->sock[0], c->buf, &m, deadline + CTL_GRACE_S);
    if (m.fd >= 0)
        close(m.fd);
    if (r || m.h.type != CTL_WELCOME || m.h.len != (size_t)c->nranks * sizeof(int64_t))
        return ctl_report_from_hub(c, r, &m, "init");
    for (int q = 0; q < c->nranks; q++) {
        int64_t pid;
        memcpy(&pid, m.payload + q * sizeof pid, sizeof pid);
        c->pid[q] = (long)pid;
    }
    return CDSL_OK;
}

int rt_ctl_open(RtCtl **out, const CtlAddress *a, int rank, int nranks, double timeout_s, FILE *log)
{
    *out = NULL;
    if (nranks < 1 || nranks > 4096 || rank < 0 || rank >= nranks) {
        rt_error(log, "rank %d of %d: ranks are 0 to nranks - 1, and nranks is 1 to 4096", rank, nranks);
        return CDSL_ERR_USAGE;
    }
    RtCtl *c = ctl_new(rank, nranks, timeout_s, log);
    if (!c) {
        rt_error(log, "out of memory");
        return CDSL_ERR_SYSTEM;
    }
    c->pid[rank] = (long)getpid();
    int st = nranks == 1 ? CDSL_OK : rank == 0 ? ctl_open_hub(c, a) : ctl_open_spoke(c, a);
    if (!st && nranks > 1)
        st = ctl_share_page(c);
    if (st) {
        rt_ctl_close(c);
        return st;
    }
    ctl_watch_pids(c);
    *out = c;
    return CDSL_OK;
}

/* ---- collectives ------------------------------------------------------------------------------- */

/* After a problem: read (and drop) what the other ranks have sent already, so that rank 0
 * leaving never turns their pending message into a reset connection that hides our error. */
static void hub_drain(RtCtl *c, const bool *have)
{
    for (int q = 1; have && q < c->nranks; q++) {
        CtlMsg m = {.fd = -1};
        if (!have[q] && ctl_recv(c->sock[q], c->buf, &m, ctl_now() + 0.05) == 0 && m.fd >= 0)
            close(m.fd);
    }
}

/* rank 0: every other rank's record for this step, in the order they come. */
static void hub_gather(RtCtl *c, const char *what, size_t len, char *all, int *fds, double deadline)
{
    CtlProblems pr = {.len = 0};
    bool *have = calloc((size_t)c->nranks, sizeof *have);
    int left = c->nranks - 1;
    if (!have) {
        ctl_problem(&pr, "rank 0: out of memory");
        left = 0;
    }
    while (left > 0 && !pr.count) {
        int q, r = 0;
        CtlMsg m = {.fd = -1};
        struct pollfd *p = malloc((size_t)c->nranks * sizeof *p);
        for (q = 1; p && q < c->nranks; q++)
            p[q - 1] = (struct pollfd){have[q] ? -1 : c->sock[q], POLLIN, 0};
        int n = p ? poll(p, (nfds_t)(c->nranks - 1), ctl_ms_left(deadline)) : -1;
        for (q = 1; n > 0 && q < c->nranks && !p[q - 1].revents; q++) {
        }
        free(p);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            for (q = 1; q < c->nranks; q++)
                if (!have[q])
                    ctl_problem(&pr, "rank %d did not reach %s within %.0f s", q, what, c->timeout_s);
            break;
        }
        r = ctl_recv(c->sock[q], c->buf, &m, deadline);
        if (r == -EPIPE)
            ctl_problem(&pr, "rank %d has exited (pid %ld) before %s", q, c->pid[q], what);
        else if (r)
            ctl_problem(&pr, "rank %d: %s", q, r == -EPROTO ? "a message that is not cdsl's" : strerror(-r));
        else if (m.h.type != CTL_DATA || m.h.seq != c->seq || strncmp(m.h.what, what, CTL_WHAT_BYTES - 1))
            ctl_problem(&pr, "rank %d is at %s while rank 0 is at %s: every rank must make the same calls in "
                        "the same order", q, m.h.what[0] ? m.h.what : "another step", what);
        else if (m.h.len != len)
            ctl_problem(&pr, "rank %d sent %u bytes at %s, rank 0 %zu", q, m.h.len, what, len);
        if (r == 0 && !pr.count) {
            memcpy(all + (size_t)q * len, m.payload, len);
            if (fds)
                fds[q] = m.fd;
            have[q] = true;
            left--;
        } else if (m.fd >= 0) {
            close(m.fd);
        }
    }
    if (pr.count)
        hub_drain(c, have);
    free(have);
    if (pr.count) {
        rt_error(c->log, "%s", pr.text);
        hub_send_all(c, CTL_ERROR, pr.text, pr.len + 1, ctl_now() + CTL_GRACE_S);
        c->broken = true;
    }
}

/* rank 0: every record (and descriptor) to every other rank. A rank that cannot take its
 * records is named to every other one: the ranks still waiting hear it now, the ones already
 * served at their next step, instead of finding rank 0 gone without a word. */
static void hub_scatter(RtCtl *c, const char *what, size_t len, const char *all, const int *fds, double deadline)
{
    for (int d = 1; d < c->nranks && !c->broken; d++)
        for (int q = 0; q < c->nranks && !c->broken; q++) {
            if (q == d)
                continue;
            int r = ctl_send(c->sock[d], CTL_DATA, q, c->seq, what, all + (size_t)q * len, len, fds ? fds[q] : -1,
                             deadline);
            if (!r)
                continue;
            CtlProblems pr = {.len = 0};
            if (r == -EPIPE)
                ctl_problem(&pr, "rank %d has exited (pid %ld) during %s", d, c->pid[d], what);
            else if (r == -ETIMEDOUT)
                ctl_problem(&pr, "rank %d stopped reading during %s", d, what);
            else
                ctl_problem(&pr, "rank 0 cannot send to rank %d during %s: %s", d, what, strerror(-r));
            rt_error(c->log, "%s", pr.text);
            close(c->sock[d]);
            c->sock[d] = -1;
            hub_send_all(c, CTL_ERROR, pr.text, pr.len + 1, ctl_now() + CTL_GRACE_S);
            c->broken = true;
        }
}

/* Any other rank: our record to rank 0, then everyone's back. */
static int spoke_exchange(RtCtl *c, const char *what, size_t len, char *all, int myfd, int *fds, double deadline)
{
    int r = ctl_send(c->sock[0], CTL_DATA, c->rank, c->seq, what, all + (size_t)c->rank * len, len, myfd, deadline);
    if (r == -EPIPE) {          /* rank 0 may have said why before it went */
        CtlMsg m = {.fd = -1};
        int e = ctl_recv(c->sock[0], c->buf, &m, ctl_now() + 0.5);
        if (m.fd >= 0 && e == 0)
            close(m.fd);
        c->broken = true;
        return ctl_report_from_hub(c, e == 0 && m.h.type == CTL_ERROR ? 0 : r, &m, what);
    }
    for (int got = 0; !r && got < c->nranks - 1; got++) {
        CtlMsg m = {.fd = -1};
        r = ctl_recv(c->sock[0], c->buf, &m, deadline + CTL_GRACE_S);
        if (r || m.h.type != CTL_DATA || m.h.seq != c->seq || m.h.len != len || m.h.rank < 0 ||
            m.h.rank >= c->nranks || m.h.rank == c->rank) {
            if (m.fd >= 0)
                close(m.fd);
            c->broken = true;
            return ctl_report_from_hub(c, r, &m, what);
        }
        memcpy(all + (size_t)m.h.rank * len, m.payload, len);
        if (fds)
            fds[m.h.rank] = m.fd;
        else if (m.fd >= 0)
            close(m.fd);
    }
    if (r) {
        c->broken = true;
        CtlMsg none = {.fd = -1};
        return ctl_report_from_hub(c, r, &none, what);
    }
    return CDSL_OK;
}

static void ctl_close_received(RtCtl *c, int *fds)
{
    for (int q = 0; fds && q < c->nranks; q++) {
        if (q != c->rank && fds[q] >= 0)
            close(fds[q]);
        fds[q] = -1;
    }
}

int rt_ctl_allgather(RtCtl *c, const char *what, const void *mine, size_t len, void *all, int fd, int *fds)
{
    if (c->broken) {
        rt_error(c->log, "rank %d: the communicator failed earlier; destroy it", c->rank);
        return CDSL_ERR_RUNTIME;
    }
    if (len > CTL_MAX_RECORD) {
        rt_error(c->log, "internal: a control record of %zu bytes (at most %d)", len, CTL_MAX_RECORD);
        return CDSL_ERR_USAGE;
    }
    char *out = all;
    if (len)
        memmove(out + (size_t)c->rank * len, mine, len);
    for (int q = 0; fds && q < c->nranks; q++)
        fds[q] = -1;
    c->seq++;
    if (c->nranks == 1)
        return CDSL_OK;
    double deadline = ctl_now() + c->timeout_s;
    int st = CDSL_OK;
    if (c->rank == 0) {
        hub_gather(c, what, len, out, fds, deadline);
        if (fds)
            fds[0] = fd;        /* ours goes out with the others'... */
        if (!c->broken)
            hub_scatter(c, what, len, out, fds, deadline + CTL_GRACE_S);
        if (fds)
            fds[0] = -1;        /* ...and stays the caller's */
        st = c->broken ? CDSL_ERR_RUNTIME : CDSL_OK;
    } else {
        st = spoke_exchange(c, what, len, out, fd, fds, deadline);
    }
    if (st)
        ctl_close_received(c, fds);
    return st;
}

int rt_ctl_barrier(RtCtl *c, const char *what)
{
    char none[1] = {0};
    return rt_ctl_allgather(c, what, none, 0, none, -1, NULL);
}
