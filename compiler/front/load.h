/*
 * load.h - reading .cdsl files and following their imports into one AstUnit.
 *
 * An import is looked up relative to the importing file's folder, then in each -I folder,
 * then in each folder of $CDSL_PATH (colon-separated), then in the installed stdlib, then in
 * the stdlib beside the running tool (a checkout's stdlib/, or PREFIX/share/cdsl/stdlib). Each
 * file is loaded once; an import cycle is an error that lists the chain.
 */
#ifndef CDSL_LOAD_H
#define CDSL_LOAD_H

#include "ast.h"

enum { LOAD_MAX_BYTES = 64 * 1024 * 1024, LOAD_MAX_FILES = 256 };

typedef struct LoadOptions {
    const char *const *include_dirs;
    int ninclude_dirs;
    const char *source;     /* the main file's text, given instead of read (standard input) */
} LoadOptions;

/* Loads path and everything it imports; NULL after reporting errors. */
AstUnit *load_unit(Arena *a, Diag *d, const char *path, const LoadOptions *opt);

#endif
