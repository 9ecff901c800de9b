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
 * Droppable: waiting for a request's headers, older than GUARD_GRACE_S
 * (250 ms: time to send a request), and without a complete request head
 * already in its socket (peeked with MSG_PEEK: libmicrohttpd has not read
 * it yet); or receiving a body below the minimum rate (min_body_rate, 16
 * KiB/s by default: fewer bytes than that rate times its age, judged from
 * 250 ms on). So a health probe from the attacker's own address (behind a
 * proxy, every client's) is not mistaken for a slow client while the
 * attacker's reconnects churn the address's slots, and 500 connections
 * that send a POST's headers and then trickle its body (issue 27) hold no
 * slot an honest upload needs: the limits count connections in every
 * state, and the slow bodies are what goes. Among droppable connections,
 * one that never completed a request goes first, then an idle keep-alive
 * one (oldest first), then the slowest body. When every slot is taken and
 * none of these exists, the oldest connection that sent no request head
 * (or a quarter second's worth of body) within 20 ms goes: the attackers'
 * own churn no longer hides behind the grace; and connections that cannot
 * be judged yet (a request head not parsed yet, a body younger than 20 ms)
 * do not count against capacity, so an honest newcomer is admitted over it
 * instead of into the reserve. A connection being answered
 * is never dropped (its pace is the client's reading, bounded by
 * libmicrohttpd's --timeout).
 *
 * Deadlines: a body must keep its average above min_body_rate after the
 * header timeout (Apache mod_reqtimeout's rule: the deadline is the header
 * timeout plus a second per min_body_rate bytes received), and each chunk
 * must come within libmicrohttpd's idle timeout (--timeout). The timer
 * thread checks deadlines and limits every 100 ms.
 *
 * Why shutdown and not close: the descriptor stays libmicrohttpd's; it
 * closes it after its notification, which takes the guard's lock first, so
 * the guard never touches a descriptor that has been closed (and reused).
 */
#ifndef CLS_NET_HTTP_GUARD_H
#define CLS_NET_HTTP_GUARD_H

#include <microhttpd.h>
#include <stdint.h>

#include "../common/error.h"

typedef struct http_guard_config {
    unsigned max_connections; /* connections that may hold any request */
    unsigned reserve;         /* more, for /healthz and /readyz only */
    unsigned per_address;     /* connections per client address */
    double header_timeout_s;  /* a request's headers must arrive within this */
    double min_body_rate;     /* bytes/s a body must keep up (0: none) */
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
/* The request's body begins (content_length: its Content-Length, 0 when
 * chunked: a body that has brought all it announced is never slow); n more
 * bytes of it have come; and it is complete (the request is being
 * answered). */
void http_guard_body_begin(http_guard *g, struct MHD_Connection *c, uint64_t content_length);
void http_guard_body(http_guard *g, struct MHD_Connection *c, size_t n);
void http_guard_body_end(http_guard *g, struct MHD_Connection *c);
/* The request has been answered: the connection waits for the next one. */
void http_guard_idle(http_guard *g, struct MHD_Connection *c);

/* The guard's figures for /metrics (Prometheus text, malloc'ed). */
char *http_guard_metrics(void *g);

#endif
