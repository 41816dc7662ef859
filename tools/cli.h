/*
 * cli.h - the two argument helpers cdslc and cdslrun share: reading an option's value and
 * reporting bad usage the same way. Header-only, so that tools/ keeps one .c per tool.
 */
#ifndef CDSL_CLI_H
#define CDSL_CLI_H

#include <stdio.h>
#include <string.h>

#include "cdsl.h"

/* The value of an option given as "--opt VALUE" or "--opt=VALUE"; NULL if argv[*i] is another
 * option; "" when the value is missing (the caller reports it). */
static inline const char *cli_option_value(int argc, char **argv, int *i, const char *name)
{
    size_t len = strlen(name);
    if (!strncmp(argv[*i], name, len) && argv[*i][len] == '=')
        return argv[*i] + len + 1;
    if (strcmp(argv[*i], name))
        return NULL;
    return *i + 1 < argc ? argv[++*i] : "";
}

/* "TOOL: error: <fmt with arg>" and a pointer to --help, on stderr; returns 2 (bad usage).
 * arg is the user's text: shown escaped (cdsl_escape), cut at 1 KiB. */
static inline int cli_usage(const char *tool, const char *fmt, const char *arg)
{
    char shown[1024];
    cdsl_escape(arg, shown, sizeof shown);
    fprintf(stderr, "%s: error: ", tool);
    fprintf(stderr, fmt, shown);
    fprintf(stderr, "\n(see %s --help)\n", tool);
    return 2;
}

#endif
