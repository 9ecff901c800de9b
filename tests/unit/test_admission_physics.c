/*
 * test_admission_physics.c: the physics estimate (physics/estimate.c) and
 * its verdict (adm_decide_physics) on made-up jobs and machines (issue 27):
 * the frame count and bytes per frame of each format; counts that would
 * overflow saturate instead of wrapping to a small estimate; the input scan
 * counts an OBJ's vertices and triangles and clamps a basis's declared size
 * by its text; a host too small (with a CPU device's buffers counted on it),
 * a GPU too small, outputs beyond the room and memory not free now.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "net/admission.h"
#include "physics/estimate.h"

#define MB ((uint64_t)1 << 20)
#define GB ((uint64_t)1 << 30)

static physics_estimate est(const char *kind, const char *opts, const physics_input_counts *in)
{
    physics_estimate e;
    cls_error err;
    json_t *o = json_loads(opts, 0, NULL);
    CHECK(physics_estimate_job(kind, o, in, &e, &err) == CLS_OK);
    json_decref(o);
    return e;
}

static json_t *one_device(const char *type, uint64_t mem)
{
    json_t *devs = json_pack("[{s:s, s:I}]", "type", type, "global_mem_bytes", (json_int_t)mem);
    return json_pack("{s:[{s:i, s:s, s:o}]}", "per_rank", "local_rank", 0, "device_spec", "auto",
                     "devices", devs);
}

int main(void)
{
    /* nbody: frames 0, 5, 10, ..., 20 and 112 bytes a body as csv */
    physics_estimate e = est("nbody", "{\"plummer\": 1000, \"steps\": 20, \"every\": 5}", NULL);
    CHECK(e.items == 1000 && e.frames == 5);
    CHECK(e.output_bytes == 5 * (1000 * 112 + 512) + 4 * 64);
    e = est("nbody", "{\"plummer\": 1000, \"steps\": 20}", NULL); /* every 0: the last */
    CHECK(e.frames == 1);
    physics_estimate ply = est("nbody", "{\"plummer\": 1000, \"format\": \"ply\"}", NULL);
    CHECK(ply.output_bytes > e.output_bytes);
    CHECK(ply.host_bytes == e.host_bytes && ply.device_bytes == e.device_bytes);
    /* the two jobs: 60 M bodies need gigabytes; 20000 bodies every
     * step for 100000 steps write over 200 GB */
    e = est("nbody", "{\"plummer\": 60000000, \"steps\": 1}", NULL);
    CHECK(e.host_bytes + e.device_bytes > 10 * GB);
    e = est("nbody", "{\"plummer\": 20000, \"steps\": 100000, \"every\": 1}", NULL);
    CHECK(e.output_bytes > 200 * GB);
    /* absurd counts saturate (the most bodies nbody takes, endless steps) */
    e = est("nbody",
            "{\"plummer\": 2147483647, \"steps\": 4000000000000000000, "
            "\"every\": 1}",
            NULL);
    CHECK(e.output_bytes == UINT64_MAX && e.host_bytes > 100 * GB);
    /* counts beyond what a kind takes get no estimate: the job's own check
     * refuses them in its own words (errors.md NBODY-TOO-MANY, SPRINGS-GRID) */
    {
        json_t *o = json_loads("{\"plummer\": 3000000000}", 0, NULL);
        physics_estimate x;
        cls_error err;
        CHECK(physics_estimate_job("nbody", o, NULL, &x, &err) != CLS_OK);
        json_decref(o);
        o = json_loads("{\"grid\": 50000}", 0, NULL);
        CHECK(physics_estimate_job("springs", o, NULL, &x, &err) != CLS_OK);
        json_decref(o);
    }
    /* springs on a grid: the 136 lattice points within the default reach 6.5, halved */
    e = est("springs", "{\"grid\": 100}", NULL);
    CHECK(e.items == 10000 && e.faces == 2 * 99 * 99);
    CHECK_MSG(e.springs == 10000 * 68, "springs %lld", (long long)e.springs);
    /* curvature of a saddle; a mesh with no input nor saddle costs the base */
    e = est("curvature", "{\"saddle\": 300, \"format\": \"ply\"}", NULL);
    CHECK(e.items == 90000 && e.frames == 1 && e.output_bytes > 90000 * 300);
    cls_error err;
    CHECK(physics_estimate_job("cg", NULL, NULL, &e, &err) == CLS_EUSAGE);

    /* the scan: an OBJ with a quad (2 triangles) and a triangle */
    const char *obj = "/tmp/test_admission_physics.obj";
    FILE *f = fopen(obj, "w");
    CHECK(f != NULL);
    fputs("# a quad and a triangle\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvn 0 0 1\n"
          "f 1 2 3 4\nf 1 3 4\n",
          f);
    fclose(f);
    physics_input_counts in;
    CHECK(physics_estimate_scan("curvature", obj, &in, &err) == CLS_OK);
    CHECK(in.present && in.verts == 4 && in.tris == 3 && in.lines == 8);
    remove(obj);
    /* a basis declaring 10^9 x 10^3 values in a few bytes: the text's bound */
    const char *mtx = "/tmp/test_admission_physics.mtx";
    f = fopen(mtx, "w");
    CHECK(f != NULL);
    fputs("%%MatrixMarket matrix array real general\n1000000000 1000\n1\n2\n", f);
    fclose(f);
    CHECK(physics_estimate_scan("deform", mtx, &in, &err) == CLS_OK);
    CHECK_MSG(in.basis_entries <= (int64_t)in.bytes / 2 && in.basis_rows <= (int64_t)in.bytes / 2,
              "entries %lld rows %lld bytes %llu", (long long)in.basis_entries,
              (long long)in.basis_rows, (unsigned long long)in.bytes);
    remove(mtx);

    /* verdicts */
    char why[512];
    int what;
    e = est("nbody", "{\"plummer\": 60000000, \"steps\": 1}", NULL);
    adm_machine m = {.host_total = 8 * GB, .host_available = 8 * GB, .nranks = 1};
    CHECK(adm_decide_physics("nbody", &e, &m, UINT64_MAX, &what, why, sizeof why) == ADM_NEVER);
    CHECK(what == ADM_NEED_MEMORY && strstr(why, "60000000 bodies") && strstr(why, "8192 MB"));
    /* 1 M bodies: fits 8 GB; on a CPU device its buffers count on the host */
    e = est("nbody", "{\"plummer\": 1000000, \"steps\": 1}", NULL);
    CHECK(adm_decide_physics("nbody", &e, &m, UINT64_MAX, &what, why, sizeof why) == ADM_RUN);
    m.host_total = m.host_available = e.host_bytes + e.device_bytes / 2;
    m.cluster = one_device("gpu", 64 * GB);
    CHECK(adm_decide_physics("nbody", &e, &m, UINT64_MAX, &what, why, sizeof why) != ADM_NEVER);
    json_decref(m.cluster);
    m.cluster = one_device("CPU", 64 * GB); /* as cluster.c writes it */
    CHECK(adm_decide_physics("nbody", &e, &m, UINT64_MAX, &what, why, sizeof why) == ADM_NEVER);
    json_decref(m.cluster);
    /* a GPU too small */
    m.host_total = m.host_available = 64 * GB;
    m.cluster = one_device("gpu", 64 * MB);
    CHECK(adm_decide_physics("nbody", &e, &m, UINT64_MAX, &what, why, sizeof why) == ADM_NEVER);
    CHECK(what == ADM_NEED_MEMORY && strstr(why, "device"));
    json_decref(m.cluster);
    m.cluster = NULL;
    /* outputs beyond the room; memory not free now: wait */
    CHECK(adm_decide_physics("nbody", &e, &m, e.output_bytes - 1, &what, why, sizeof why) ==
          ADM_NEVER);
    CHECK(what == ADM_NEED_DISK && strstr(why, "--disk-reserve"));
    CHECK(adm_decide_physics("nbody", &e, &m, e.output_bytes, &what, why, sizeof why) == ADM_RUN);
    m.host_available = e.host_bytes;
    CHECK(adm_decide_physics("nbody", &e, &m, UINT64_MAX, &what, why, sizeof why) == ADM_WAIT);
    return check_done("test_admission_physics");
}
