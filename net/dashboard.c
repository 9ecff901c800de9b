/*
 * dashboard.c: the static dashboard (net/dashboard/index.html, app.js,
 * style.css, and the physics viewer viewer.js, viewer.css), embedded in
 * the binary at build time by cmake/embed_files.cmake, so the daemon needs
 * no install path and the page loads nothing from outside the daemon. The
 * files hold no data (the page fetches everything from the API with the
 * token the user types), so they are served without authentication;
 * browsers cannot send a bearer token when navigating to a page.
 */
#include <string.h>

#include "routes.h"

/* generated: the embedded files by name */
const unsigned char *net_embedded_file(const char *name, size_t *len);

static const char *asset_name(const char *path)
{
    if (!strcmp(path, "/") || !strcmp(path, "/index.html"))
        return "index.html";
    if (!strcmp(path, "/app.js"))
        return "app.js";
    if (!strcmp(path, "/style.css"))
        return "style.css";
    if (!strcmp(path, "/viewer.js"))
        return "viewer.js";
    if (!strcmp(path, "/viewer.css"))
        return "viewer.css";
    return NULL;
}

int dashboard_is_asset(const char *path) { return asset_name(path) != NULL; }

enum MHD_Result dashboard_serve(struct MHD_Connection *c, const char *path)
{
    const char *name = asset_name(path);
    size_t len = 0;
    const unsigned char *data = name ? net_embedded_file(name, &len) : NULL;
    if (!data)
        return http_reply_problem(c, 404, "not-found", "no such dashboard file", 0);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    const char *ct = strstr(name, ".html") ? "text/html; charset=utf-8"
                     : strstr(name, ".js") ? "text/javascript; charset=utf-8"
                                           : "text/css; charset=utf-8";
    MHD_add_response_header(r, "Content-Type", ct);
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; img-src 'self' data:; connect-src 'self'");
    return http_queue(c, 200, r);
}
