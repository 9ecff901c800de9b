/*
 * cluster.c: start-up gathering of hosts and devices (see cluster.h).
 * A rank whose OpenCL discovery fails reports the error instead of a
 * device list, so /v1/devices shows what is wrong where.
 */
#include "cluster.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kernels/la.h"
#include "../kernels/ocl.h"
#include "../kernels/tunedb.h"

json_t *cluster_device_json(const struct ocl_device *d)
{
    la_config cfg;
    la_config_default(d, &cfg);
    json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:b, s:{s:I, s:I, s:I, s:I, s:s}}",
                          "index", d->index, "name", d->name, "platform", d->platform_name, "type",
                          ocl_type_name(d->type), "driver", d->driver, "version", d->version,
                          "compute_units", (int)d->compute_units, "global_mem_bytes",
                          (json_int_t)d->global_mem, "local_mem_bytes", (json_int_t)d->local_mem,
                          "max_work_group", (json_int_t)d->max_work_group, "fp64", d->fp64,
                          "work_group", "local_size", (json_int_t)cfg.local_size, "groups_per_cu",
                          (json_int_t)cfg.groups_per_cu, "spmv_local_size",
                          (json_int_t)cfg.spmv_local_size, "vector_width",
                          (json_int_t)cfg.vector_width, "source", "default");
    /* admission (admission.c) checks a part's largest buffer against it */
    json_object_set_new(o, "max_alloc_bytes", json_integer((json_int_t)d->max_alloc));
    /* the tuning database (`clsolve tune`), which every solve on this device
     * applies: one entry per kernel, precision and size class */
    const tunedb *db = tunedb_for_device(d);
    json_t *tuned = json_array();
    for (int i = 0; db && i < db->n; i++) {
        const tunedb_entry *e = &db->e[i];
        json_array_append_new(
            tuned, json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:f}", "kernel", e->kernel,
                             "precision", e->precision, "size_class",
                             tunedb_class_name(e->size_class), "shape", e->shape, "local_size",
                             (json_int_t)e->local_size, "groups_per_cu",
                             (json_int_t)e->groups_per_cu, "param", (json_int_t)e->param,
                             "format", e->format, "ms", e->ms));
    }
    /* "work_group" is the untuned default; a solve uses the "tuned" entry of
     * its kernel and size class when there is one, and reports which */
    json_object_set_new(o, "tuned", tuned);
    return o;
}

static char *describe_self(int rank, int local_rank, const char *spec)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(rank));
    json_object_set_new(o, "host", json_string(host));
    json_object_set_new(o, "pid", json_integer(getpid()));
    json_object_set_new(o, "local_rank", json_integer(local_rank));
    json_object_set_new(o, "device_spec", json_string(spec));
    ocl_device *devs = NULL;
    int n = 0;
    cls_error err;
    cls_error_clear(&err);
    if (ocl_list_devices(&devs, &n, &err) == CLS_OK) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(arr, cluster_device_json(&devs[i]));
        json_object_set_new(o, "devices", arr);
    } else {
        json_object_set_new(o, "devices", json_array());
        json_object_set_new(o, "error", json_string(err.msg));
    }
    free(devs);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

int cluster_gather(MPI_Comm comm, const char *device_spec, json_t **out, cls_error *err)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (out)
        *out = NULL;
    /* the rank's place on its host: ranks sharing a host take different
     * devices of the --device class (solver/dvec.c), the job reports say
     * which each part used */
    int local_rank = 0;
    MPI_Comm node;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &local_rank);
        MPI_Comm_free(&node);
    }
    char *mine = describe_self(rank, local_rank, device_spec);
    int len = mine ? (int)strlen(mine) + 1 : 1;
    int *lens = NULL, *displs = NULL;
    char *all = NULL;
    if (rank == 0) {
        lens = calloc((size_t)size, sizeof *lens);
        displs = calloc((size_t)size, sizeof *displs);
    }
    int rc = MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, comm);
    long long total = 0;
    if (rank == 0 && lens && displs) {
        for (int i = 0; i < size; i++) {
            displs[i] = (int)total;
            total += lens[i];
        }
        all = malloc((size_t)total);
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Gatherv(mine ? mine : "", len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, comm);
    free(mine);
    if (rc != MPI_SUCCESS) {
        free(lens);
        free(displs);
        free(all);
        return cls_fail(err, CLS_EOTHER, "MPI_Gather of the device lists failed");
    }
    if (rank != 0)
        return CLS_OK;
    if (!all || !lens || !displs) {
        free(lens);
        free(displs);
        free(all);
        return cls_fail(err, CLS_EOTHER, "out of memory gathering the device lists");
    }
    json_t *o = json_object(), *per = json_array(), *hosts = json_array();
    for (int i = 0; i < size; i++) {
        json_t *r = json_loads(all + displs[i], 0, NULL);
        if (!r)
            r = json_pack("{s:i, s:s}", "rank", i, "error", "no description");
        const char *h = json_string_value(json_object_get(r, "host"));
        int seen = 0;
        for (size_t k = 0; h && k < json_array_size(hosts); k++)
            seen |= !strcmp(json_string_value(json_array_get(hosts, k)), h);
        if (h && !seen)
            json_array_append_new(hosts, json_string(h));
        json_array_append_new(per, r);
    }
    json_object_set_new(o, "ranks", json_integer(size));
    json_object_set_new(o, "hosts", hosts);
    json_object_set_new(o, "per_rank", per);
    free(lens);
    free(displs);
    free(all);
    *out = o;
    return CLS_OK;
}
