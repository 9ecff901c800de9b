/*
 * http_guard.h: connection hygiene for the daemon's HTTP front end.
 *
 * libmicrohttpd 0.9.75 limits connections by count only: a connection that
 * trickles a header line every few seconds holds its slot until the idle
 * timeout, which each line resets, so a hundred of them lock every client
 * out (issue 18). The guard tracks every connection (libmicrohttpd's
 * connection notifications) in arrival order, knows which ones are waiting
 * for a request's headers, and drops them by shutdown(2) on their socket,
 * which libmicrohttpd sees as the peer hanging up:
 *
 *  - a deadline for a request's headers: a connection that has not sent
 *    complete headers within header_timeout_s of opening (or of its last
 *    answer, for an idle keep-alive connection) is dropped;
 *  - a per-address limit: beyond per_address connections from one address,
 *    that address's oldest droppable connection goes (at once, or when the
 *    timer finds one: a newcomer may briefly overflow the limit while the
 *    others are all busy or new);
 *  - capacity: beyond max_connections, the oldest droppable connection goes
 *    to make room; only when there is none does a newcomer go into the
 *    reserve: `reserve` more connections that may ask for /healthz or
 *    /readyz only (anything else is answered 503 at once), with a 2-second
 *    header deadline (a full reserve drops its own oldest droppable one).
 *    So the health routes are answered under connection pressure, and a
 *    complete request is never dropped for a slow one.
 *
 * Droppable: waiting for a request's headers (never one receiving a body or
 * being answered), older than GUARD_GRACE_S (250 ms: time to send a
 * request), and without a complete request head already in its socket
 * (peeked with MSG_PEEK: libmicrohttpd has not read it yet). So a health
 * probe from the attacker's own address (behind a proxy, every client's) is
 * not mistaken for a slow client while the attacker's reconnects churn the
 * address's slots. Among droppable connections, one that never completed a
 * request goes before an idle keep-alive one, oldest first. The timer
 * thread checks deadlines and limits every 100 ms. The per-chunk deadline
 * of a body is libmicrohttpd's own idle timeout (--timeout), which each
 * chunk resets.
 *
 * Why shutdown and not close: the descriptor stays libmicrohttpd's; it
 * closes it after its notification, which takes the guard's lock first, so
 * the guard never touches a descriptor that has been closed (and reused).
 */
#ifndef CLS_NET_HTTP_GUARD_H
#define CLS_NET_HTTP_GUARD_H

#include <microhttpd.h>

#include "../common/error.h"

typedef struct http_guard_config {
    unsigned max_connections; /* connections that may hold any request */
    unsigned reserve;         /* more, for /healthz and /readyz only */
    unsigned per_address;     /* connections per client address */
    double header_timeout_s;  /* a request's headers must arrive within this */
} http_guard_config;

typedef struct http_guard http_guard;

int http_guard_start(http_guard **out, const http_guard_config *cfg, cls_error *err);
void http_guard_stop(http_guard *g);

/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback (cls: the guard). */
void http_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                       enum MHD_ConnectionNotificationCode code);
/* A request's headers are complete. Returns 1 when the connection is in the
 * reserve (the caller answers anything but the health routes with 503). */
int http_guard_request(http_guard *g, struct MHD_Connection *c);
/* The request has been answered: the connection waits for the next one. */
void http_guard_idle(http_guard *g, struct MHD_Connection *c);

/* The guard's figures for /metrics (Prometheus text, malloc'ed). */
char *http_guard_metrics(void *g);

#endif
