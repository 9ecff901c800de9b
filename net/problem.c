/*
 * problem.c: problem+json bodies (see problem.h).
 */
#include "problem.h"

#include <jansson.h>
#include <stdio.h>

const char *problem_status_title(unsigned status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 411:
        return "Length Required";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    case 507:
        return "Insufficient Storage";
    default:
        return status >= 500 ? "Server Error" : "Client Error";
    }
}

void problem_ascii(char *s)
{
    for (; s && *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            *s = '?';
}

char *problem_json(unsigned status, const char *slug, const char *detail, long long line)
{
    return problem_json_ext(status, slug, detail, line, NULL);
}

char *problem_json_ext(unsigned status, const char *slug, const char *detail, long long line,
                       json_t *extra)
{
    char type[128], d[2048];
    snprintf(d, sizeof d, "%s", detail ? detail : "");
    problem_ascii(d);
    detail = d;
    snprintf(type, sizeof type, "urn:clsolve:problem:%s", slug ? slug : "error");
    json_t *o =
        json_pack("{s:s, s:s, s:i, s:s}", "type", type, "title", problem_status_title(status),
                  "status", (int)status, "detail", detail ? detail : "");
    if (!o) {
        json_decref(extra);
        return NULL;
    }
    if (line > 0)
        json_object_set_new(o, "line", json_integer(line));
    if (json_is_object(extra))
        json_object_update_missing(o, extra);
    json_decref(extra);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}
