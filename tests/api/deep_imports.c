/*
 * deep_imports.c - cdsl_compile from a host thread with a small stack: a thread created with a
 * 1 MiB stack compiles FILE (a chain of imports as deep as the loader allows) and prints
 * "rc=N". The loader recurses once per import level; its frames must fit.
 *
 *     deep_imports FILE NRANKS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cdsl.h"
#include "fixture.h"

typedef struct Job {
    const char *path;
    int nranks, rc;
} Job;

static void *compile_job(void *arg)
{
    Job *j = arg;
    cdsl_compile_opts o = compile_opts(j->path, j->nranks);
    cdsl_program *p = NULL;
    j->rc = cdsl_compile(&o, &p);
    cdsl_program_destroy(p);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 99;
    Job j = {argv[1], atoi(argv[2]), -1};
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)1 << 20);
    if (pthread_create(&t, &attr, compile_job, &j) != 0)
        return 98;
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);
    printf("rc=%d\n", j.rc);
    return 0;
}
