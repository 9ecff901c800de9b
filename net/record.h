/*
 * record.h: every response the daemon sends, as data, for the test that
 * checks them against docs/openapi.yaml. With $CLSOLVE_RECORD_RESPONSES
 * naming a file, each answer appends one JSON line: method, route
 * template, path, status, the response's headers and its body (parsed when
 * it is JSON, else its kind: text, binary, stream or none). A streamed
 * JSON body (a solution as JSON) is recorded again, whole, by the stream
 * when it ends ("stream_body": true). Off (no cost but one branch) without
 * the variable; the tests turn it on (tests/cli/daemon_lib.sh).
 */
#ifndef CLS_NET_RECORD_H
#define CLS_NET_RECORD_H

#include <microhttpd.h>
#include <stddef.h>

int record_enabled(void);

/* A response being queued. body/len: its bytes when they are in memory
 * (NULL: a stream or a file). */
void record_response(const char *method, const char *route, const char *path, unsigned status,
                     struct MHD_Response *r, const char *body, size_t len);

/* A streamed JSON body, whole, once it has been sent. */
void record_stream_body(const char *method, const char *route, const char *path, unsigned status,
                        const char *content_type, const char *body, size_t len);

#endif
