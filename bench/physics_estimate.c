/*
 * physics_estimate.c: bench_physics_estimate KIND OPTIONS_JSON OUT_DIR
 * [INPUT]: runs one physics job through physics_job_run (the daemon's own
 * entry point) and prints, as one JSON line, the admission's estimate
 * (physics/estimate.h) beside what the run took: this process's peak
 * resident memory (VmHWM of /proc/self/status, the OpenCL runtime's
 * included, as the estimate's base term counts it) and the bytes it wrote
 * into OUT_DIR. For bench/physics-estimate.sh.
 */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../physics/estimate.h"
#include "../physics/job.h"

static long long peak_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            kb = atoll(line + 6);
    if (f)
        fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

static long long dir_bytes(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    long long n = 0;
    char p[4096];
    struct stat st;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' && snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p &&
            !stat(p, &st) && S_ISREG(st.st_mode))
            n += st.st_size;
    if (d)
        closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s KIND OPTIONS_JSON OUT_DIR [INPUT]\n", argv[0]);
        return 2;
    }
    const char *kind = argv[1], *opts = argv[2], *out = argv[3];
    const char *input = argc > 4 ? argv[4] : NULL;
    cls_error err;
    cls_error_clear(&err);
    json_t *o = json_loads(opts, 0, NULL);
    physics_input_counts in, *inp = NULL;
    if (input) {
        if (physics_estimate_scan(kind, input, &in, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        inp = &in;
    }
    physics_estimate e;
    if (physics_estimate_job(kind, o, inp, &e, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    json_decref(o);
    char *result = NULL;
    int rc = physics_job_run(kind, opts, input, out, "auto", NULL, &result, &err);
    if (rc) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    /* the daemon also stores the result in the job's record */
    long long written = dir_bytes(out) + (long long)(result ? strlen(result) : 0);
    free(result);
    printf("{\"kind\": \"%s\", \"items\": %lld, \"frames\": %lld, \"est_host\": %llu, "
           "\"est_device\": %llu, \"est_output\": %llu, \"peak_rss\": %lld, \"output\": %lld}\n",
           kind, (long long)e.items, (long long)e.frames, (unsigned long long)e.host_bytes,
           (unsigned long long)e.device_bytes, (unsigned long long)e.output_bytes, peak_rss_bytes(),
           written);
    return 0;
}
