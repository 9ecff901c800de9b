/*
 * http_client.h: a small HTTP/1.1 client over plain sockets for the
 * clsolve commands that talk to the daemon (submit, status, wait, fetch,
 * cancel). No TLS: put a TLS-terminating proxy in front of a daemon that
 * must be reached over an untrusted network.
 *
 * One request per connection (Connection: close). A request body is a list
 * of parts, each in memory or a file streamed from disk, so a multi-GB
 * upload is never held in memory and its Content-Length is known up front.
 * The response body goes to memory (at most 64 MiB) or, for a 2xx answer,
 * straight to a file descriptor; chunked transfer coding is decoded.
 */
#ifndef CLS_NET_HTTP_CLIENT_H
#define CLS_NET_HTTP_CLIENT_H

#include <stddef.h>

#include "../common/error.h"

/* The longest bearer token sent (the daemon reads at most 4096 bytes of its
 * token file). */
#define HTTP_CLIENT_MAX_TOKEN 4096

typedef struct http_url {
    char host[256];
    char port[16];
    char prefix[512]; /* path prefix without the trailing '/', usually "" */
} http_url;

/* "http://HOST[:PORT][/PREFIX]"; "[v6]" hosts too. Default port 80. */
int http_url_parse(const char *url, http_url *u, cls_error *err);

typedef struct http_part {
    const char *data; /* memory part, or NULL */
    size_t len;
    const char *path; /* file part (data == NULL) */
} http_part;

typedef struct http_response {
    int status;
    char *body; /* NUL-terminated (memory responses) */
    size_t len;
    char content_type[128];
    char location[512];
    char retry_after[32];
} http_response;

/* A bearer token is at most HTTP_CLIENT_MAX_TOKEN characters, none of them
 * a control character (CR or LF would end the header line); CLS_EUSAGE naming source ("--token-file: F",
 * "$CLSOLVE_TOKEN") otherwise. */
int http_token_check(const char *token, const char *source, cls_error *err);

/* target: path and query ("/v1/jobs?tol=1e-8"), appended to the prefix.
 * token: bearer token or NULL. out_fd >= 0: a 2xx body is written there.
 * Fails before connecting (CLS_EUSAGE) on a bad token or a head that does
 * not fit, and (CLS_EOTHER) on a file part that is not a readable regular
 * file. */
int http_request(const http_url *u, const char *method, const char *target, const char *token,
                 const char *content_type, const http_part *parts, int nparts, int out_fd,
                 http_response *r, cls_error *err);
void http_response_free(http_response *r);

/* The problem+json "detail" (and "line") of an error response, or its
 * first line of text; for messages. */
void http_problem_detail(const http_response *r, char *out, size_t cap, long long *line);

#endif
