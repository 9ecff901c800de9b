/*
 * routes_misc.c: /v1/devices, /healthz and /metrics (see routes.h).
 */
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "routes.h"

enum MHD_Result routes_devices(struct MHD_Connection *c, const http_server_config *cfg)
{
    static const char *const names[] = {NULL};
    enum MHD_Result q = MHD_NO;
    if (!routes_only_params(c, names, &q))
        return q;
    char *s = cfg->cluster ? json_dumps(cfg->cluster, JSON_COMPACT) : strdup("{}");
    return http_reply_json(c, 200, s);
}

enum MHD_Result routes_healthz(struct MHD_Connection *c, const http_server_config *cfg)
{
    int draining = cfg->draining && *cfg->draining;
    json_t *o = json_pack("{s:s, s:b}", "status", draining ? "draining" : "ok", "accepting",
                          !draining);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return http_reply_json(c, 200, s);
}

enum MHD_Result routes_metrics(struct MHD_Connection *c, const http_server_config *cfg)
{
    char *text = metrics_render(cfg->store);
    if (!text)
        return http_reply_problem(c, 500, "internal", "out of memory rendering metrics", 0);
    return http_reply(c, 200, "text/plain; version=0.0.4; charset=utf-8", text, strlen(text));
}
