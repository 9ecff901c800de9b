/*
 * http_client.h: the HTTP client of the clsolve commands that talk to a
 * daemon (submit, status, wait, fetch, cancel, rm), on libcurl: http and
 * https (the system's CA store, or --cacert), proxies from the environment
 * (http_proxy, https_proxy, no_proxy, as every libcurl program), a
 * connect timeout and a stall timeout, and retries of a 503 after its
 * Retry-After.
 *
 * A request is checked whole before anything is sent: the bearer token
 * (length, characters) and every file part (a readable regular file, whose
 * size is the Content-Length), so no local failure leaves a half-sent
 * request for the daemon to wait on. A request body is a list of parts,
 * each in memory or a file streamed from disk, so a multi-GB upload is
 * never held in memory. The response body goes to memory (at most 64 MiB)
 * or, for a 2xx answer, straight to a file descriptor.
 */
#ifndef CLS_CLI_HTTP_CLIENT_H
#define CLS_CLI_HTTP_CLIENT_H

#include <stddef.h>

#include "common/error.h"

/* The longest bearer token sent (the daemon reads at most 4096 bytes of its
 * token file). */
#define HTTP_CLIENT_MAX_TOKEN 4096

typedef struct http_url {
    char scheme[8]; /* "http" or "https" */
    char host[256]; /* without the brackets of an IPv6 address */
    char port[16];
    char prefix[512]; /* path prefix without the trailing '/', usually "" */
    int ipv6;
} http_url;

/* "http[s]://HOST[:PORT][/PREFIX]"; "[v6]" hosts too. Default port 80 or
 * 443. CLS_EUSAGE naming what is wrong. */
int http_url_parse(const char *url, http_url *u, cls_error *err);

typedef struct http_client_opts {
    const char *cacert;       /* PEM file of the CAs to trust; NULL: the system's store */
    double connect_timeout_s; /* giving up on a connection (TCP, TLS, proxy) */
    double stall_timeout_s;   /* a request that moves no byte for this long fails */
    int retries;              /* a 503 is retried this many times */
    double max_retry_wait_s;  /* the longest Retry-After waited */
    const char *cmd;          /* "submit": for the retry notes on stderr */
    /* called while a body is sent (bytes sent, of total), when set */
    void (*upload_progress)(void *ctx, double sent, double total);
    void *progress_ctx;
} http_client_opts;

/* connect 10 s, stall 60 s, 3 retries waiting at most 60 s each */
void http_client_opts_default(http_client_opts *o);

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
    int retried; /* 503 answers retried before this one */
} http_response;

/* A bearer token is at most HTTP_CLIENT_MAX_TOKEN characters, none of them
 * a control character; CLS_EUSAGE naming source ("--token-file: F",
 * "$CLSOLVE_TOKEN") otherwise. */
int http_token_check(const char *token, const char *source, cls_error *err);

/* target: path and query ("/v1/jobs?tol=1e-8"), appended to the prefix.
 * token: bearer token or NULL. header: one extra request header line
 * ("Content-Disposition: ...") or NULL. out_fd >= 0: a 2xx body is written
 * there. Fails before connecting (CLS_EUSAGE) on a bad token, and
 * (CLS_EOTHER) on a file part that is not a readable regular file; then
 * CLS_EOTHER with what went wrong on the way (resolving, connecting, TLS,
 * a proxy, a stall). An HTTP error status is a success here: r->status. */
int http_request(const http_url *u, const http_client_opts *o, const char *method,
                 const char *target, const char *token, const char *content_type,
                 const char *header, const http_part *parts, int nparts, int out_fd,
                 http_response *r, cls_error *err);
void http_response_free(http_response *r);

/* The problem+json "detail" (and "line") of an error response, or its
 * first line of text; for messages. */
void http_problem_detail(const http_response *r, char *out, size_t cap, long long *line);

#endif
