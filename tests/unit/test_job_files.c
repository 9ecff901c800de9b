/*
 * test_job_files.c: net/job_files.c. The order GET /v1/jobs/ID/files lists
 * a job's outputs in (job_files_natural_cmp): frames by their step as
 * numbers, whatever the padding; a total order (antisymmetric, equal only
 * for equal names), so qsort gives one listing; a readdir-like shuffle of
 * frames comes out by step. And the refusal of options that name a file on
 * the daemon's host (job_files_check).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "net/job_files.h"

static int sgn(int x)
{
    return (x > 0) - (x < 0);
}

static int cmp(const void *a, const void *b)
{
    return job_files_natural_cmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    /* pairs in the order they must come */
    static const char *before[][2] = {
        {"springs_000000.ply", "springs_000050.ply"},
        {"springs_000050.ply", "springs_000100.ply"},
        {"springs_000150.ply", "springs_000200.ply"},
        {"f_9.vtk", "f_10.vtk"},               /* unpadded: 9 < 10, not "1" < "9" */
        {"f_99.vtk", "f_0100.vtk"},            /* mixed padding */
        {"f_1.vtk", "f_01.vtk"},               /* equal value: fewer zeros first */
        {"a01b2", "a1b3"},                     /* a later difference beats padding */
        {"springs.pvd", "springs_000000.ply"}, /* '.' < '_' */
        {"bodies_1.csv", "bodies_1.ply"},
        {"x", "x1"},
        {"", "a"},
        {"f_18446744073709551616.ply", "f_18446744073709551617.ply"}, /* past 64 bits */
        {"f_99999999999999999999.ply", "f_100000000000000000000.ply"},
    };
    for (size_t i = 0; i < sizeof before / sizeof before[0]; i++) {
        const char *a = before[i][0], *b = before[i][1];
        CHECK_MSG(job_files_natural_cmp(a, b) < 0, "%s before %s", a, b);
        CHECK_MSG(job_files_natural_cmp(b, a) > 0, "%s after %s", b, a);
        CHECK_MSG(job_files_natural_cmp(a, a) == 0, "%s equal to itself", a);
    }

    /* a total order on a mixed set: antisymmetric, equal only when the same */
    static const char *set[] = {"a",     "a0",   "a00", "a1",      "a01",          "a10",
                                "a2b",   "a02b", "b",   "f_0.ply", "f_000000.ply", "f_1.ply",
                                "u.mtx", "9",    "09",  "10"};
    size_t ns = sizeof set / sizeof set[0];
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < ns; j++) {
            int x = job_files_natural_cmp(set[i], set[j]),
                y = job_files_natural_cmp(set[j], set[i]);
            CHECK_MSG(sgn(x) == -sgn(y), "%s / %s: %d, %d", set[i], set[j], x, y);
            CHECK_MSG((x == 0) == (i == j), "%s / %s: %d", set[i], set[j], x);
            for (size_t k = 0; k < ns; k++) /* transitive */
                if (x < 0 && job_files_natural_cmp(set[j], set[k]) < 0)
                    CHECK_MSG(job_files_natural_cmp(set[i], set[k]) < 0, "%s < %s < %s", set[i],
                              set[j], set[k]);
        }

    /* the order the issue saw from readdir, and its collection file */
    const char *seen[] = {"springs_000050.ply", "springs_000000.ply", "springs_000200.ply",
                          "springs_000150.ply", "springs.pvd",        "springs_000100.ply"};
    const char *want[] = {"springs.pvd",        "springs_000000.ply", "springs_000050.ply",
                          "springs_000100.ply", "springs_000150.ply", "springs_000200.ply"};
    qsort(seen, 6, sizeof seen[0], cmp);
    for (int i = 0; i < 6; i++)
        CHECK_MSG(!strcmp(seen[i], want[i]), "position %d: %s, want %s", i, seen[i], want[i]);

    /* 1000 unpadded frames in reverse: by number */
    char names[1000][16];
    char *ptr[1000];
    for (int i = 0; i < 1000; i++) {
        snprintf(names[i], sizeof names[i], "b_%d.csv", 999 - i);
        ptr[i] = names[i];
    }
    qsort(ptr, 1000, sizeof ptr[0], cmp);
    int sorted = 1;
    for (int i = 0; i < 1000; i++)
        sorted &= atoi(ptr[i] + 2) == i;
    CHECK(sorted);

    /* options naming a host file are refused for deform, not elsewhere */
    cls_error err;
    cls_error_clear(&err);
    json_t *o = json_pack("{s:s}", "mesh", "/etc/passwd");
    CHECK(job_files_check("deform", o, &err) == CLS_EUSAGE && strstr(err.msg, "mesh"));
    CHECK(job_files_check("springs", o, &err) == CLS_OK);
    CHECK(job_files_check("deform", NULL, &err) == CLS_OK);
    json_decref(o);
    return check_done("test_job_files");
}
