/*
 * job_files.c: refuses job options that name files on the daemon's host
 * (see job_files.h). A table of (kind, option, what to do instead), so a
 * new path option of a physics kind is one line here.
 */
#include "job_files.h"

#include <ctype.h>
#include <string.h>

static const struct {
    const char *kind, *option, *instead;
} job_files_paths[] = {
    {"deform", "q_file", "give q inline as the option \"q\" (one array of numbers per frame)"},
    {"deform", "mesh",
     "a deform job uploads only its basis (the part 'input'); to update a mesh, run "
     "'clsolve deform --mesh' where the mesh is"},
    {"deform", "domains",
     "a deform job uploads only its basis (the part 'input'); for a deformer with domains, "
     "run 'clsolve deform --domains' where the domains file is"},
};

int job_files_check(const char *kind, const json_t *options, cls_error *err)
{
    if (!kind || !json_is_object(options))
        return CLS_OK;
    for (size_t i = 0; i < sizeof job_files_paths / sizeof job_files_paths[0]; i++) {
        if (strcmp(kind, job_files_paths[i].kind) != 0)
            continue;
        if (json_object_get(options, job_files_paths[i].option))
            return cls_fail(err, CLS_EUSAGE,
                            "%s option '%s': a job cannot name a file on the daemon's host; "
                            "every file of a job is uploaded with it: %s",
                            kind, job_files_paths[i].option, job_files_paths[i].instead);
    }
    return CLS_OK;
}

/* Walks both names together; at two digit runs compares their values
 * (length without leading zeros, then digits: no overflow for any length),
 * then goes on after them. Ties between runs of the same value but other
 * padding are kept for the end, so "a01b" and "a1b" still differ. */
int job_files_natural_cmp(const char *a, const char *b)
{
    const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
    int pad = 0; /* first difference in leading zeros, the last tie-break */
    while (*p && *q) {
        if (isdigit(*p) && isdigit(*q)) {
            const unsigned char *p0 = p, *q0 = q;
            while (*p == '0')
                p++;
            while (*q == '0')
                q++;
            size_t np = 0, nq = 0;
            while (isdigit(p[np]))
                np++;
            while (isdigit(q[nq]))
                nq++;
            if (np != nq)
                return np < nq ? -1 : 1;
            int d = memcmp(p, q, np);
            if (d)
                return d < 0 ? -1 : 1;
            if (!pad && (p - p0) != (q - q0))
                pad = (p - p0) < (q - q0) ? -1 : 1;
            p += np;
            q += nq;
            continue;
        }
        if (*p != *q)
            return *p < *q ? -1 : 1;
        p++;
        q++;
    }
    if (*p || *q)
        return *p ? 1 : -1;
    return pad;
}
