/*
 * http_guard.c: connection tracking, deadlines, per-address limits and the
 * health reserve (see http_guard.h for the policy and why).
 *
 * State: one list of every connection libmicrohttpd has opened, in arrival
 * order, under one mutex. A connection is WAITING (for a request's headers,
 * `since` = when the wait began; `served` tells an idle keep-alive one from
 * one that never completed a request), BODY (headers complete, its body
 * arriving: `body_since`, `body_bytes` give its rate) or BUSY (being
 * answered, until its answer has been sent). `dropped` marks one whose socket has been shut
 * down and that libmicrohttpd has not closed yet: it no longer counts.
 * The lists are short (max_connections + reserve), so every decision is a
 * linear scan.
 */
#define _GNU_SOURCE /* memmem */
#include "http_guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../common/timer.h"

#define GUARD_RESERVE_HEADER_S 2.0  /* header deadline in the reserve */
#define GUARD_GRACE_S 0.25          /* a new connection's time to send its request */
#define GUARD_PRESSURE_S 0.02       /* the same when every slot is taken (guard_victim_pressure) */
#define GUARD_ADDR_PRESSURE_S 0.125 /* the same when an address's slots are (guard_trim_addr) */

enum { GC_WAITING, GC_BODY, GC_BUSY };
enum {
    DROP_HEADER_TIMEOUT,
    DROP_BODY_RATE,
    DROP_PER_ADDRESS,
    DROP_CAPACITY,
    DROP_RESERVE_FULL,
    DROP_NREASONS
};
static const char *const drop_names[DROP_NREASONS] = {"header_timeout", "body_rate", "per_address",
                                                      "capacity", "reserve_full"};

typedef struct guard_conn {
    struct guard_conn *prev, *next;
    int fd;
    char addr[INET6_ADDRSTRLEN];
    int state;
    int served;  /* has completed a request (an idle keep-alive connection) */
    int reserve; /* admitted into the health reserve */
    int dropped;
    double opened; /* when libmicrohttpd accepted it */
    double since;
    double body_since; /* GC_BODY: when its headers were complete */
    uint64_t body_bytes;
    uint64_t body_expect; /* its Content-Length (0: chunked, unknown) */
} guard_conn;

struct http_guard {
    http_guard_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t timer;
    int timer_live, stop;
    guard_conn *head, *tail;
    unsigned live;         /* connections not dropped */
    unsigned reserve_live; /* of which in the reserve */
    uint64_t opened;
    uint64_t dropped[DROP_NREASONS];
    uint64_t reserve_admitted;
};

static void guard_unlink(http_guard *g, guard_conn *gc)
{
    if (gc->prev)
        gc->prev->next = gc->next;
    else
        g->head = gc->next;
    if (gc->next)
        gc->next->prev = gc->prev;
    else
        g->tail = gc->prev;
}

/* Shuts the connection's socket down: libmicrohttpd reads the end of the
 * stream at its next poll and closes it (a connection waiting for headers
 * gets no answer: it has asked nothing). Called with mu held. */
static void guard_drop(http_guard *g, guard_conn *gc, int reason)
{
    if (gc->dropped)
        return;
    gc->dropped = 1;
    g->live--;
    if (gc->reserve)
        g->reserve_live--;
    g->dropped[reason]++;
    if (gc->fd >= 0)
        shutdown(gc->fd, SHUT_RDWR);
}

/* 1 when a complete request head (up to its blank line) waits in the
 * socket for libmicrohttpd to read it: that connection has a complete
 * request, it is only not parsed yet (a health probe sends its request in
 * one piece, a slow client never completes one). */
static int guard_head_pending(int fd)
{
    char buf[4096];
    if (fd < 0)
        return 0;
    ssize_t n = recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 && (memmem(buf, (size_t)n, "\r\n\r\n", 4) || memmem(buf, (size_t)n, "\n\n", 2));
}

/* 1 when `c` may be dropped: it waits for a request head and has none in
 * its socket, and it is either past its grace (GUARD_GRACE_S: a newcomer
 * may not have sent its request yet) or an idle keep-alive connection that
 * was served already (its grace is spent: a client that closed it after
 * its reply is often not yet seen closed on a loaded machine, and it must
 * not hold a reserve slot against the next probe). Called with mu held. */
static int guard_droppable(const guard_conn *c, double now)
{
    return !c->dropped && c->state == GC_WAITING &&
           (c->served || now - c->opened >= GUARD_GRACE_S) && !guard_head_pending(c->fd);
}

/* 1 when every byte `c`'s Content-Length announced has come: the client
 * has sent its whole body, and what is left (libmicrohttpd's last call of
 * the handler, on a loaded daemon a poll round or more later) is the
 * daemon's to do. A 2.5 KB POST from the probes' own address was judged
 * slow there (2.5 KB is below a quarter second at 16 KiB/s) and closed
 * unanswered in the sanitized CI's test_daemon_attack (1 of 8). */
static int guard_body_whole(const guard_conn *c)
{
    return c->body_expect && c->body_bytes >= c->body_expect;
}

/* 1 when `c` receives a body below the minimum rate: fewer bytes than
 * min_body_rate x its age, counting at least GUARD_GRACE_S of age (so a
 * body just begun is judged on what a quarter second at the minimum rate
 * would bring, 4 KiB at 16 KiB/s), once it is `grace` old. A 1138_bus
 * upload on loopback arrives whole within a millisecond; a slow-body
 * attacker has sent a few dozen bytes. Called with mu held. */
static int guard_body_slow(const http_guard *g, const guard_conn *c, double now, double grace)
{
    double age = now - c->body_since;
    if (c->dropped || c->state != GC_BODY || !g->cfg.min_body_rate || age < grace ||
        guard_body_whole(c))
        return 0;
    return (double)c->body_bytes <
           g->cfg.min_body_rate * (age > GUARD_GRACE_S ? age : GUARD_GRACE_S);
}

/* The connection to drop first (from `addr` only, when not NULL): the
 * slowest body below the minimum rate, then, among those waiting for
 * headers, one that never completed a request before an idle keep-alive
 * one, oldest first; only droppable ones (above). Slow bodies go first
 * because they are attackers beyond doubt (a complete head, then a
 * trickle), while a silent newcomer past its grace may be an honest
 * probe whose client was descheduled between connect and send: the
 * sanitized CI's test_daemon_attack lost 1 of 30 /healthz probes that way
 * during the slow chunked bodies from the probes' own address.
 * Called with mu held. */
static guard_conn *guard_victim(http_guard *g, const char *addr, double now)
{
    guard_conn *idle = NULL, *body = NULL, *waiting = NULL;
    double body_rate = 0;
    for (guard_conn *c = g->head; c; c = c->next) {
        if (addr && strcmp(c->addr, addr) != 0)
            continue;
        if (guard_body_slow(g, c, now, GUARD_GRACE_S)) {
            double rate = (double)c->body_bytes / (now - c->body_since);
            if (!body || rate < body_rate) {
                body = c;
                body_rate = rate;
            }
            continue;
        }
        if (!guard_droppable(c, now))
            continue;
        if (!c->served) {
            if (!waiting)
                waiting = c;
            continue;
        }
        if (!idle || c->since < idle->since)
            idle = c;
    }
    return body ? body : waiting ? waiting : idle;
}

/* Every slot is taken (of the daemon, or of `addr` when not NULL) and
 * nothing is droppable by the rules above: the oldest connection that has
 * not sent a request head in GUARD_PRESSURE_S (20 ms), or whose body has
 * not brought a quarter second's worth at the minimum rate by then, goes;
 * never `gc`, the newcomer being admitted. Attackers that reconnect at once
 * (4,000 a second from one Python process) keep hundreds of connections
 * within their 250 ms grace, from the honest clients' own address too
 * (behind a proxy, every client's); a connection is then judged by what it
 * did in its first `age` seconds (20 ms when the daemon is full), which an
 * honest client that sends its request at once passes. An address over its
 * own limit judges its connections at 125 ms: there the newcomers may
 * overflow (the daemon has room), and at 20 ms a health probe from the
 * attacker's address whose client was descheduled between connect and send
 * on a loaded machine was closed unanswered (the sanitized CI's
 * test_daemon_attack, 1 of 39). Called with mu held. */
static guard_conn *guard_victim_pressure(http_guard *g, const char *addr, const guard_conn *gc,
                                         double now, double age)
{
    for (guard_conn *c = g->head; c; c = c->next) {
        if (c == gc || c->dropped || c->reserve || (addr && strcmp(c->addr, addr) != 0))
            continue;
        if (c->state == GC_WAITING && now - c->opened >= age && !guard_head_pending(c->fd))
            return c;
        if (guard_body_slow(g, c, now, age))
            return c;
    }
    return NULL;
}

static void guard_addr(struct MHD_Connection *c, char *out, size_t cap)
{
    snprintf(out, cap, "?");
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (!sa)
        return;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)cap);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)cap);
}

static unsigned guard_count_addr(http_guard *g, const char *addr)
{
    unsigned n = 0;
    for (guard_conn *c = g->head; c; c = c->next)
        n += !c->dropped && !strcmp(c->addr, addr);
    return n;
}

/* An address above its limit: its oldest droppable connections go. A
 * newcomer that finds none (the others are busy, new, or have a request
 * waiting) stays for now: the timer trims the address once its grace is
 * over. Called with mu held. */
static void guard_trim_addr(http_guard *g, const char *addr, const guard_conn *gc, double now)
{
    unsigned n = guard_count_addr(g, addr);
    while (n > g->cfg.per_address) {
        guard_conn *v = guard_victim(g, addr, now);
        if (!v)
            v = guard_victim_pressure(g, addr, gc, now, GUARD_ADDR_PRESSURE_S);
        if (!v)
            return;
        guard_drop(g, v, DROP_PER_ADDRESS);
        n--;
    }
}

/* At capacity with nothing droppable by age: the address holding the most
 * connections gives one up (its oldest waiting without a request in its
 * socket, however new) when the newcomer's address holds fewer, so that
 * one client churning its connections cannot crowd the others out (its
 * grace protects it against its own newcomers only). Called with mu held. */
static guard_conn *guard_victim_heaviest(http_guard *g, const guard_conn *gc, double now)
{
    const char *heavy = NULL;
    unsigned most = 0;
    for (guard_conn *c = g->head; c; c = c->next) {
        if (c->dropped || (heavy && !strcmp(c->addr, heavy)))
            continue;
        unsigned n = guard_count_addr(g, c->addr);
        if (n > most) {
            most = n;
            heavy = c->addr;
        }
    }
    if (!heavy || most <= guard_count_addr(g, gc->addr))
        return NULL;
    for (guard_conn *c = g->head; c; c = c->next)
        if (!c->dropped && !c->reserve && c != gc && !strcmp(c->addr, heavy) &&
            ((c->state == GC_WAITING && !guard_head_pending(c->fd)) ||
             guard_body_slow(g, c, now, 0)))
            return c;
    return NULL;
}

/* Connections the rules cannot judge yet: a request head waiting in the
 * socket (libmicrohttpd has not parsed it: on a loaded machine, hundreds
 * when attackers reconnect thousands of times a second with a POST head
 * in their first packet), or a body younger than GUARD_PRESSURE_S. They
 * do not count against capacity: a newcomer that finds every slot held by
 * them is admitted over it (the timer trims the excess once they are
 * judged), where the reserve would have answered an honest POST 503.
 * Called with mu held. */
static unsigned guard_count_judging(http_guard *g, const guard_conn *gc, double now)
{
    unsigned n = 0;
    for (guard_conn *c = g->head; c; c = c->next) {
        if (c == gc || c->dropped || c->reserve)
            continue;
        if ((c->state == GC_BODY && now - c->body_since < GUARD_PRESSURE_S) ||
            (c->state == GC_WAITING && guard_head_pending(c->fd)))
            n++;
    }
    return n;
}

/* A new connection: the per-address limit, then capacity (see the top). */
static void guard_admit(http_guard *g, guard_conn *gc, double now)
{
    guard_trim_addr(g, gc->addr, gc, now);
    if (g->live - g->reserve_live <= g->cfg.max_connections)
        return;
    guard_conn *v = guard_victim(g, NULL, now);
    if (!v || v->reserve)
        v = guard_victim_heaviest(g, gc, now);
    if (!v || v->reserve)
        v = guard_victim_pressure(g, NULL, gc, now, GUARD_PRESSURE_S);
    if (v && !v->reserve) {
        guard_drop(g, v, DROP_CAPACITY);
        return;
    }
    if (g->live - g->reserve_live <= g->cfg.max_connections + guard_count_judging(g, gc, now))
        return; /* over capacity by connections about to be judged: the timer trims */
    if (guard_head_pending(gc->fd)) {
        /* the newcomer's complete request is in its socket already (an
         * honest client sends at once, before a loaded daemon accepts): a
         * connection without one goes however young. Thousands of slow
         * clients a second from the probes' own address kept every slot
         * under 20 ms old, and the reserve, full of them too, closed
         * complete /healthz requests unanswered (bench/attack.sh
         * slow-capacity-same). Slots held by real requests are not given
         * up: the newcomer goes to the reserve as before. */
        for (guard_conn *c = g->head; c; c = c->next)
            if (c != gc && !c->dropped && !c->reserve && c->state == GC_WAITING &&
                !guard_head_pending(c->fd)) {
                guard_drop(g, c, DROP_CAPACITY);
                return;
            }
    }
    if (g->reserve_live >= g->cfg.reserve) {
        /* the reserve is full: its oldest droppable connection goes */
        guard_conn *r = NULL;
        for (guard_conn *c = g->head; c && !r; c = c->next)
            if (c->reserve && guard_droppable(c, now))
                r = c;
        if (!r && g->reserve_live >= 2 * g->cfg.reserve) {
            guard_drop(g, gc, DROP_RESERVE_FULL);
            return;
        }
        /* none droppable below twice the reserve: the newcomer comes in
         * over it. A probe whose previous answer the client has read, but
         * whose completion this daemon has not processed yet (a loaded
         * machine), still counts as busy; dropping the next probe for it
         * closed /readyz without an answer (stop 31 and its successor's
         * CI). The header deadline of the reserve (2 s) trims the excess. */
        if (r)
            guard_drop(g, r, DROP_RESERVE_FULL);
    }
    gc->reserve = 1;
    g->reserve_live++;
    g->reserve_admitted++;
}

void http_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                       enum MHD_ConnectionNotificationCode code)
{
    http_guard *g = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        guard_conn *gc = calloc(1, sizeof *gc);
        *socket_context = gc;
        if (!gc)
            return; /* untracked: it lives by libmicrohttpd's own limits */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        gc->fd = ci ? ci->connect_fd : -1;
        guard_addr(c, gc->addr, sizeof gc->addr);
        gc->state = GC_WAITING;
        gc->opened = gc->since = cls_now();
        pthread_mutex_lock(&g->mu);
        gc->prev = g->tail;
        if (g->tail)
            g->tail->next = gc;
        else
            g->head = gc;
        g->tail = gc;
        g->live++;
        g->opened++;
        guard_admit(g, gc, gc->opened);
        pthread_mutex_unlock(&g->mu);
        return;
    }
    guard_conn *gc = *socket_context;
    if (!gc)
        return;
    pthread_mutex_lock(&g->mu);
    if (!gc->dropped) {
        g->live--;
        if (gc->reserve)
            g->reserve_live--;
    }
    guard_unlink(g, gc);
    pthread_mutex_unlock(&g->mu);
    free(gc);
    *socket_context = NULL;
}

static guard_conn *guard_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Moves the connection to `state` (see the top): its body's bytes counted
 * from the first GC_BODY; back to GC_WAITING once answered (served, its
 * header deadline from now). Returns 1 when it is in the reserve. */
static int guard_move(http_guard *g, struct MHD_Connection *c, int state, size_t body_bytes,
                      uint64_t expect)
{
    guard_conn *gc = g ? guard_of(c) : NULL;
    if (!gc)
        return 0;
    pthread_mutex_lock(&g->mu);
    if (state == GC_BODY && gc->state != GC_BODY) {
        gc->body_since = cls_now();
        gc->body_bytes = 0;
        gc->body_expect = expect;
    }
    if (state == GC_BODY)
        gc->body_bytes += body_bytes;
    if (state == GC_WAITING) {
        gc->served = 1;
        gc->since = cls_now();
    }
    gc->state = state;
    int reserve = gc->reserve;
    pthread_mutex_unlock(&g->mu);
    return reserve;
}

int http_guard_request(http_guard *g, struct MHD_Connection *c)
{
    return guard_move(g, c, GC_BUSY, 0, 0);
}

void http_guard_body_begin(http_guard *g, struct MHD_Connection *c, uint64_t content_length)
{
    guard_move(g, c, GC_BODY, 0, content_length);
}

void http_guard_body(http_guard *g, struct MHD_Connection *c, size_t n)
{
    guard_move(g, c, GC_BODY, n, 0);
}

void http_guard_body_end(http_guard *g, struct MHD_Connection *c)
{
    guard_move(g, c, GC_BUSY, 0, 0);
}

void http_guard_idle(http_guard *g, struct MHD_Connection *c)
{
    guard_move(g, c, GC_WAITING, 0, 0);
}

static void *guard_timer(void *arg)
{
    http_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        double now = cls_now();
        for (guard_conn *c = g->head; c; c = c->next) {
            double limit = g->cfg.header_timeout_s;
            if (c->reserve && limit > GUARD_RESERVE_HEADER_S)
                limit = GUARD_RESERVE_HEADER_S;
            if (!c->dropped && c->state == GC_WAITING && now - c->since > limit)
                guard_drop(g, c, DROP_HEADER_TIMEOUT);
            /* a body's deadline, as Apache's mod_reqtimeout: the header
             * timeout, extended by a second per min_body_rate bytes */
            if (!c->dropped && c->state == GC_BODY && g->cfg.min_body_rate &&
                !guard_body_whole(c) &&
                (double)c->body_bytes <
                    g->cfg.min_body_rate * (now - c->body_since - g->cfg.header_timeout_s))
                guard_drop(g, c, DROP_BODY_RATE);
        }
        /* the addresses and the capacity that admission left above their
         * limits (newcomers within their grace) */
        for (guard_conn *c = g->head; c; c = c->next)
            if (!c->dropped)
                guard_trim_addr(g, c->addr, NULL, now);
        while (g->live - g->reserve_live > g->cfg.max_connections) {
            guard_conn *v = guard_victim(g, NULL, now);
            if (!v || v->reserve)
                break;
            guard_drop(g, v, DROP_CAPACITY);
        }
        struct timespec ts = cls_deadline(CLOCK_MONOTONIC, 0.1);
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

int http_guard_start(http_guard **out, const http_guard_config *cfg, cls_error *err)
{
    *out = NULL;
    http_guard *g = calloc(1, sizeof *g);
    if (!g)
        return cls_fail(err, CLS_EOTHER, "out of memory");
    g->cfg = *cfg;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    int e = pthread_create(&g->timer, NULL, guard_timer, g);
    if (e) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return cls_fail(err, CLS_EOTHER, "cannot start the connection timer: %s", strerror(e));
    }
    g->timer_live = 1;
    *out = g;
    return CLS_OK;
}

void http_guard_stop(http_guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    if (g->timer_live)
        pthread_join(g->timer, NULL);
    /* libmicrohttpd has closed every connection (and notified) by now */
    while (g->head) {
        guard_conn *c = g->head;
        guard_unlink(g, c);
        free(c);
    }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

char *http_guard_metrics(void *arg)
{
    http_guard *g = arg;
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    pthread_mutex_lock(&g->mu);
    fprintf(f,
            "# HELP clsolve_http_connections Open HTTP connections (not yet dropped).\n"
            "# TYPE clsolve_http_connections gauge\nclsolve_http_connections %u\n"
            "# HELP clsolve_http_connections_reserve Connections in the health reserve.\n"
            "# TYPE clsolve_http_connections_reserve gauge\n"
            "clsolve_http_connections_reserve %u\n"
            "# HELP clsolve_http_connections_opened_total HTTP connections accepted.\n"
            "# TYPE clsolve_http_connections_opened_total counter\n"
            "clsolve_http_connections_opened_total %llu\n"
            "# HELP clsolve_http_connections_dropped_total Connections dropped by the guard, by "
            "reason.\n# TYPE clsolve_http_connections_dropped_total counter\n",
            g->live, g->reserve_live, (unsigned long long)g->opened);
    for (int r = 0; r < DROP_NREASONS; r++)
        fprintf(f, "clsolve_http_connections_dropped_total{reason=\"%s\"} %llu\n", drop_names[r],
                (unsigned long long)g->dropped[r]);
    pthread_mutex_unlock(&g->mu);
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}
