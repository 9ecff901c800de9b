/*
 * routes_misc.c: /v1/devices, /healthz, /readyz and /metrics (see
 * routes_misc.h). /healthz says the process answers (liveness: always 200 while
 * it runs); /readyz says whether a job sent now would be taken and run:
 * 503 while draining, while the ranks' devices are still being set up
 * (the HTTP server starts before them), or while the job store cannot
 * write its records (job_store_healthy).
 */
#include "routes_misc.h"

#include <stdlib.h>
#include <string.h>

#include "http_reply.h"
#include "metrics.h"

enum MHD_Result routes_devices(http_call *call)
{
    json_t *cluster = http_cluster(call->cfg);
    char *s = cluster ? json_dumps(cluster, JSON_COMPACT) : strdup("{}");
    return http_reply_json(call->conn, 200, s);
}

enum MHD_Result routes_healthz(http_call *call)
{
    const http_server_config *cfg = call->cfg;
    int draining = cfg->draining && *cfg->draining;
    json_t *o =
        json_pack("{s:s, s:b}", "status", draining ? "draining" : "ok", "accepting", !draining);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return http_reply_json(call->conn, 200, s);
}

/* The devices the ranks reported (cluster.c: {"per_rank": [{"devices": [...]}]}). */
static size_t routes_cluster_devices(json_t *cluster)
{
    size_t n = 0, i;
    json_t *rank;
    json_array_foreach(json_object_get(cluster, "per_rank"), i, rank) n +=
        json_array_size(json_object_get(rank, "devices"));
    return n;
}

enum MHD_Result routes_readyz(http_call *call)
{
    struct MHD_Connection *c = call->conn;
    const http_server_config *cfg = call->cfg;
    json_t *checks = json_object(), *cluster = http_cluster(cfg);
    char why[320] = "";
    int draining = cfg->draining && *cfg->draining;
    size_t ndev = cluster ? routes_cluster_devices(cluster) : 0;
    int store_ok = job_store_healthy(cfg->store, why, sizeof why);
    json_object_set_new(checks, "draining", json_boolean(draining));
    json_object_set_new(checks, "devices", json_integer((json_int_t)ndev));
    json_object_set_new(checks, "devices_up", json_boolean(cluster != NULL && ndev > 0));
    json_object_set_new(checks, "store", json_string(store_ok ? "ok" : why));
    int ready = !draining && cluster && ndev > 0 && store_ok;
    const char *status = ready       ? "ready"
                         : draining  ? "draining"
                         : !cluster  ? "starting"
                         : ndev == 0 ? "no-devices"
                                     : "store-unhealthy";
    json_t *o = json_pack("{s:s, s:b, s:o}", "status", status, "ready", ready, "checks", checks);
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!text)
        return http_reply_problem(c, 500, "internal", "out of memory", 0);
    return http_reply_hdr(c, ready ? 200 : 503, "application/json", text, strlen(text),
                          ready ? NULL : "Retry-After", draining ? "30" : "5");
}

enum MHD_Result routes_metrics(http_call *call)
{
    struct MHD_Connection *c = call->conn;
    char *text = metrics_render(call->cfg->store);
    if (!text)
        return http_reply_problem(c, 500, "internal", "out of memory rendering metrics", 0);
    return http_reply(c, 200, "text/plain; version=0.0.4; charset=utf-8", text, strlen(text));
}
