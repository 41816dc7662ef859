/*
 * perf_launch.c - cdsl-perf under mpirun, srun or torchrun: each process is one rank, and rank
 * 0's unique id reaches the others through a file, so that cdsl-perf needs no MPI library (it
 * runs the same under torchrun, which has none, and builds where mpicc is not).
 *
 * The launcher is known by its environment: Open MPI's OMPI_COMM_WORLD_SIZE/RANK, PMI's
 * PMI_SIZE/PMI_RANK (MPICH, Intel MPI), Slurm's SLURM_NTASKS/SLURM_PROCID, torchrun's
 * WORLD_SIZE/RANK/LOCAL_RANK. The file is CDSL_ID_FILE when set (a shared filesystem's, for
 * ranks on several hosts), else ${TMPDIR:-/tmp}/cdsl-perf-<uid>-<job>.id, where <job> is a hash
 * of what the launcher says identifies this job (Open MPI's PMIx namespace and HNP address,
 * Slurm's job and step, torchrun's run id, master address, port and restart count; the parent
 * process as a last resort): every process of one launch computes the same name, and two
 * launches at once do not meet. Rank 0 writes it whole and renames it into place with mode
 * 0600 (the id holds the control plane's nonce); the others poll for it within the time bound,
 * and ignore a file older than their own start (a launch before that died without removing
 * its file). Rank 0 removes it once every rank has joined.
 */
#include "perf_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A file this much older than our start is another launch's (launchers start every process
 * within seconds of each other). */
enum { STALE_S = 30 };

typedef struct Launcher {
    const char *name, *size, *rank, *local_rank;
    const char *job[4];         /* what names one launch */
} Launcher;

static const Launcher launchers[] = {
    {"mpirun", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
     {"PMIX_NAMESPACE", "OMPI_MCA_orte_hnp_uri", "OMPI_MCA_ess_base_jobid", NULL}},
    {"PMI", "PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID", {"PMI_KVSNAME", "PMI_JOBID", "SLURM_JOB_ID", "SLURM_STEP_ID"}},
    {"srun", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID", {"SLURM_JOB_ID", "SLURM_STEP_ID", NULL, NULL}},
    {"torchrun", "WORLD_SIZE", "RANK", "LOCAL_RANK",
     {"TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT"}},
};

static time_t started;

static bool env_int(const char *name, int lo, int hi, int *out)
{
    const char *s = getenv(name);
    char *end;
    if (!s || !*s)
        return false;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

/* FNV-1a over the job's names and values: the same in every process of one launch. */
static uint64_t job_hash(const Launcher *l)
{
    uint64_t h = 1469598103934665603ull;
    bool any = false;
    for (int i = 0; i < 4 && l->job[i]; i++) {
        const char *v = getenv(l->job[i]);
        if (!v)
            continue;
        any = true;
        for (const char *s = l->job[i]; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
        for (const char *s = v; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
        h = (h ^ '\n') * 1099511628211ull;
    }
    if (!any)       /* one launcher process starts every rank of this host */
        h = (h ^ (uint64_t)getppid()) * 1099511628211ull;
    return h;
}

bool perf_launch_detect(PerfLaunch *L, char *why, size_t why_len)
{
    memset(L, 0, sizeof *L);
    started = time(NULL);
    why[0] = 0;
    for (size_t i = 0; i < sizeof launchers / sizeof *launchers; i++) {
        const Launcher *l = &launchers[i];
        if (!getenv(l->size))
            continue;
        if (!env_int(l->size, 1, CDSL_MAX_RANKS, &L->size) || !env_int(l->rank, 0, L->size - 1, &L->rank)) {
            snprintf(why, why_len, "%s=%s and %s=%s (%s) are not a rank of at most %d", l->size, getenv(l->size),
                     l->rank, getenv(l->rank) ? getenv(l->rank) : "unset", l->name, CDSL_MAX_RANKS);
            return false;
        }
        if (L->size == 1)
            return false;
        if (!env_int(l->local_rank, 0, INT_MAX, &L->local_rank))
            L->local_rank = L->rank;
        L->launcher = l->name;
        const char *file = getenv("CDSL_ID_FILE");
        const char *dir = getenv("TMPDIR");
        if (file && *file)
            snprintf(L->id_file, sizeof L->id_file, "%s", file);
        else
            snprintf(L->id_file, sizeof L->id_file, "%s/cdsl-perf-%u-%016llx.id", dir && *dir ? dir : "/tmp",
                     (unsigned)getuid(), (unsigned long long)job_hash(l));
        return true;
    }
    return false;
}

static int write_id(const PerfLaunch *L, const cdsl_unique_id *id, char *why, size_t why_len)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.%d.part", L->id_file, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, why_len, "cannot write the unique id to %s: %s (set CDSL_ID_FILE or TMPDIR)", tmp, strerror(errno));
        return -1;
    }
    ssize_t n = write(fd, id, sizeof *id);
    int err = n == (ssize_t)sizeof *id ? 0 : n < 0 ? errno : EIO;
    if (close(fd) && !err)
        err = errno;
    if (!err && rename(tmp, L->id_file))
        err = errno;
    if (err) {
        unlink(tmp);
        snprintf(why, why_len, "cannot write the unique id to %s: %s", L->id_file, strerror(err));
        return -1;
    }
    return 0;
}

/* The id when the file is there, whole, this launch's and valid; else false. */
static bool read_id(const PerfLaunch *L, cdsl_unique_id *id)
{
    int fd = open(L->id_file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && st.st_size == (off_t)sizeof *id && st.st_mtime + STALE_S >= started &&
              read(fd, id, sizeof *id) == (ssize_t)sizeof *id && cdsl_unique_id_engine(id) >= 0;
    close(fd);
    return ok;
}

int perf_launch_share_id(const PerfLaunch *L, cdsl_unique_id *id, double timeout_s, char *why, size_t why_len)
{
    if (L->rank == 0)
        return write_id(L, id, why, why_len);
    struct timespec pause = {0, 10 * 1000 * 1000};
    for (double waited = 0; waited <= timeout_s; waited += 0.01) {
        if (read_id(L, id))
            return 0;
        nanosleep(&pause, NULL);
    }
    snprintf(why, why_len, "rank %d waited %g s for rank 0's unique id in %s; did rank 0 start (and with the same "
             "CDSL_ID_FILE or TMPDIR)?", L->rank, timeout_s, L->id_file);
    return -1;
}

void perf_launch_done(const PerfLaunch *L)
{
    if (L->launcher && L->rank == 0)
        unlink(L->id_file);
}
