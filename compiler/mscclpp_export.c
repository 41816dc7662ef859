/* mscclpp_export.c - placeholder */
#include "mscclpp.h"

bool mscclpp_export(const IrProgram *p, FILE *out, Diag *d)
{
    (void)out;
    diag_error(d, p->loc, "not yet");
    return false;
}
