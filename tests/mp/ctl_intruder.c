/*
 * ctl_intruder.c - a local process that is not one of a job's ranks, talking to rank 0's
 * control-plane socket while the job starts (tests/mp/ctl_attacks.sh). Anyone on the host can
 * read the socket's name in /proc/net/unix, so this is what any local user can do.
 *
 *     ctl_intruder hello NAME RANK NRANKS [NONCE_HEX]   a well-formed hello claiming RANK, with
 *                                                        a random nonce (or NONCE_HEX)
 *     ctl_intruder garbage NAME                          bytes that are not a cdsl packet
 *     ctl_intruder idle NAME COUNT SECONDS               COUNT connections that never speak,
 *                                                        held SECONDS
 *     ctl_intruder listen NAME SECONDS                   binds NAME itself (rank 0 gone, or not
 *                                                        there yet) and listens SECONDS
 *     ctl_intruder fds NAME COUNT                        COUNT connections in turn, each a hello
 *                                                        with a random nonce whose header says
 *                                                        it carries no descriptor, with 4 attached
 *
 * NAME is the abstract socket's name without its leading NUL ("cdsl-..."). hello and garbage
 * wait (at most 10 s) for rank 0 to close the connection and print "closed" or "answered: TEXT"
 * when an error message came first. idle prints "connected COUNT" once every connection is up
 * (or "refused after K" when connect fails), then, after SECONDS, "closed by rank 0: K of COUNT".
 * listen prints "listening", then "heard a hello" as soon as a connection sends one (the nonce
 * is in it), or "no hello" after SECONDS.
 * fds prints "sent COUNT" when rank 0 closed every connection, or "rank 0 stopped closing
 * connections after K" when one stays open 3 s.
 *
 * The packet layout is written out here on purpose, as an intruder would (runtime/engines/ctl.c's
 * CtlHdr and CtlHello): a change there that this misses makes the hello tests fail loudly,
 * because rank 0 then drops the packet as "not cdsl's" before reading the nonce.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef struct Hdr {
    uint32_t magic;
    uint16_t type, nfds;
    int32_t rank;
    uint32_t seq, len;
    char what[36];
} Hdr;

typedef struct Hello {
    unsigned char nonce[16];
    int32_t rank, nranks;
    int64_t pid;
    uint32_t version, pad;
} Hello;

static int connect_to(const char *name)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    if (n + 1 > sizeof sa.sun_path)
        return -1;
    memcpy(sa.sun_path + 1, name, n);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Until rank 0 closes fd (10 s at most): what it said first, if anything. */
static int wait_closed(int fd)
{
    char buf[65536];
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) {
        printf("still open after 10 s\n");
        return 1;
    }
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) {
        printf("closed\n");
        return 0;
    }
    buf[n] = 0;
    printf("answered: %s\n", (size_t)n > sizeof(Hdr) ? buf + sizeof(Hdr) : "(a header)");
    return 0;
}

/* Rank 0 may close the connection before the packet goes out: that is "closed" too. */
static int send_then_wait(const char *name, const void *pkt, size_t len)
{
    int fd = connect_to(name);
    if (fd < 0) {
        printf("cannot connect: %s\n", strerror(errno));
        return 1;
    }
    int st = 0;
    if (send(fd, pkt, len, MSG_NOSIGNAL) != (ssize_t)len && errno != EPIPE && errno != ECONNRESET) {
        printf("cannot send: %s\n", strerror(errno));
        st = 1;
    } else {
        st = wait_closed(fd);
    }
    close(fd);
    return st;
}

static int hex_nonce(const char *hex, unsigned char *out)
{
    for (int i = 0; i < 16; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (unsigned char)v;
    }
    return 0;
}

static int say_hello(const char *name, int rank, int nranks, const char *nonce_hex)
{
    struct {
        Hdr h;
        Hello b;
    } pkt;
    memset(&pkt, 0, sizeof pkt);
    pkt.h = (Hdr){.magic = 0x4c534443, .type = 1, .rank = rank, .len = sizeof pkt.b};
    snprintf(pkt.h.what, sizeof pkt.h.what, "init");
    pkt.b = (Hello){.rank = rank, .nranks = nranks, .pid = getpid(), .version = 1};
    if (nonce_hex ? hex_nonce(nonce_hex, pkt.b.nonce) : getrandom(pkt.b.nonce, 16, 0) != 16) {
        fprintf(stderr, "ctl_intruder: no nonce\n");
        return 2;
    }
    return send_then_wait(name, &pkt, sizeof pkt);
}

/* A hello (wrong nonce) whose header says nfds = 0, with 4 descriptors of /dev/null attached:
 * what rank 0 does not hand out, it must close, or it runs out of descriptors. */
static int send_fds(const char *name, int count)
{
    int fds[4];
    for (int i = 0; i < 4; i++)
        if ((fds[i] = open("/dev/null", O_RDONLY)) < 0)
            return 2;
    struct {
        Hdr h;
        Hello b;
    } pkt;
    memset(&pkt, 0, sizeof pkt);
    pkt.h = (Hdr){.magic = 0x4c534443, .type = 1, .rank = 1, .len = sizeof pkt.b};
    pkt.b = (Hello){.rank = 1, .nranks = 3, .pid = getpid(), .version = 1};
    union {
        char buf[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct iovec iov = {&pkt, sizeof pkt};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(cm), fds, sizeof fds);
    for (int k = 0; k < count; k++) {
        int fd = connect_to(name);
        if (fd < 0 || getrandom(pkt.b.nonce, 16, 0) != 16) {
            printf("cannot connect after %d: %s\n", k, strerror(errno));
            return 1;
        }
        struct pollfd p = {fd, POLLIN, 0};
        char b;
        if (sendmsg(fd, &m, MSG_NOSIGNAL) != (ssize_t)sizeof pkt || poll(&p, 1, 3000) <= 0 ||
            recv(fd, &b, 1, MSG_DONTWAIT) > 0) {
            printf("rank 0 stopped closing connections after %d\n", k);
            close(fd);
            return 1;
        }
        close(fd);
    }
    printf("sent %d\n", count);
    return 0;
}

static int listen_as(const char *name, double seconds)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    if (n + 1 > sizeof sa.sun_path)
        return 2;
    memcpy(sa.sun_path + 1, name, n);
    int ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) ||
        listen(ls, 16)) {
        printf("cannot listen: %s\n", strerror(errno));
        return 1;
    }
    printf("listening\n");
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        double left = seconds - (double)(t.tv_sec - t0.tv_sec) - (double)(t.tv_nsec - t0.tv_nsec) * 1e-9;
        if (left <= 0)
            break;
        struct pollfd p = {ls, POLLIN, 0};
        if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            continue;
        int fd = accept(ls, NULL, NULL);
        struct pollfd q = {fd, POLLIN, 0};
        char buf[512];
        if (fd >= 0 && poll(&q, 1, 1000) > 0 && recv(fd, buf, sizeof buf, 0) == (ssize_t)(sizeof(Hdr) + sizeof(Hello))) {
            printf("heard a hello\n");
            return 0;
        }
        if (fd >= 0)
            close(fd);
    }
    printf("no hello\n");
    return 0;
}

static int send_garbage(const char *name)
{
    char junk[100];
    memset(junk, 'x', sizeof junk);
    return send_then_wait(name, junk, sizeof junk);
}

static int hold_idle(const char *name, int count, double seconds)
{
    int *fds = calloc((size_t)count, sizeof *fds), up = 0;
    if (!fds)
        return 2;
    for (; up < count; up++)
        if ((fds[up] = connect_to(name)) < 0)
            break;
    if (up < count)
        printf("refused after %d: %s\n", up, strerror(errno));
    else
        printf("connected %d\n", up);
    fflush(stdout);
    nanosleep(&(struct timespec){(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)}, NULL);
    int closed = 0;
    for (int i = 0; i < up; i++) {
        struct pollfd p = {fds[i], POLLIN, 0};
        char b;
        closed += poll(&p, 1, 0) > 0 && recv(fds[i], &b, 1, MSG_DONTWAIT) <= 0;
        close(fds[i]);
    }
    printf("closed by rank 0: %d of %d\n", closed, up);
    free(fds);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 5 && !strcmp(argv[1], "hello"))
        return say_hello(argv[2], atoi(argv[3]), atoi(argv[4]), argc > 5 ? argv[5] : NULL);
    if (argc == 3 && !strcmp(argv[1], "garbage"))
        return send_garbage(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "listen"))
        return listen_as(argv[2], atof(argv[3]));
    if (argc == 4 && !strcmp(argv[1], "fds"))
        return send_fds(argv[2], atoi(argv[3]));
    if (argc == 5 && !strcmp(argv[1], "idle"))
        return hold_idle(argv[2], atoi(argv[3]), atof(argv[4]));
    fprintf(stderr, "usage: ctl_intruder hello NAME RANK NRANKS [NONCE_HEX] | garbage NAME | idle NAME COUNT SECONDS | listen NAME SECONDS | fds NAME COUNT\n");
    return 2;
}
