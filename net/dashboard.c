/*
 * dashboard.c: the static dashboard (net/dashboard/index.html, app.js,
 * style.css, and the physics viewer viewer.js, viewer.css), embedded in
 * the binary at build time by cmake/embed_files.cmake, so the daemon needs
 * no install path and the page loads nothing from outside the daemon. The
 * files hold no data (the page fetches everything from the API with the
 * token the user types), so they are served without authentication;
 * browsers cannot send a bearer token when navigating to a page.
 */
#include "dashboard.h"

#include <string.h>

#include "http_reply.h"

/* generated: the embedded files by name */
const unsigned char *net_embedded_file(const char *name, size_t *len);

/* "" is index.html; NAME any embedded file whose name is lower-case
 * letters, a dot and html, js or css (so a new file under net/dashboard/
 * is served without a change here). */
static const char *dashboard_file(const char *n)
{
    if (!*n)
        return "index.html";
    const char *dot = strchr(n, '.');
    if (!dot || dot == n || strlen(n) > 40)
        return NULL;
    for (const char *c = n; c < dot; c++)
        if (*c < 'a' || *c > 'z')
            return NULL;
    if (strcmp(dot, ".html") != 0 && strcmp(dot, ".js") != 0 && strcmp(dot, ".css") != 0)
        return NULL;
    size_t len;
    return net_embedded_file(n, &len) ? n : NULL;
}

int dashboard_has(const char *name)
{
    return dashboard_file(name) != NULL;
}

enum MHD_Result dashboard_serve(http_call *call)
{
    struct MHD_Connection *c = call->conn;
    const char *name = dashboard_file(call->name);
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
    return http_queue_body(c, 200, r, (const char *)data, len);
}
