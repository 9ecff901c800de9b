/*
 * log.c: one JSON object per line on stderr (see log.h).
 */
#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

int log_enabled(void)
{
    static int state = -1;
    if (state < 0) {
        const char *e = getenv("CLSOLVE_LOG");
        state = !(e && !strcmp(e, "off"));
    }
    return state;
}

void log_event(const char *event, json_t *fields)
{
    if (!log_enabled()) {
        json_decref(fields);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40], stamp[64];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(stamp, sizeof stamp, "%.32s.%03dZ", when, (int)(ts.tv_nsec / 1000000L));
    json_t *o = json_object();
    json_object_set_new(o, "ts", json_string(stamp));
    json_object_set_new(o, "event", json_string(event));
    if (json_is_object(fields))
        json_object_update(o, fields);
    json_decref(fields);
    char *line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(o);
    if (!line)
        return;
    size_t n = strlen(line);
    char *buf = malloc(n + 2);
    if (buf) {
        memcpy(buf, line, n);
        buf[n] = '\n';
        pthread_mutex_lock(&log_mu);
        for (size_t off = 0; off < n + 1;) { /* one write for a whole line, as a rule */
            ssize_t w = write(STDERR_FILENO, buf + off, n + 1 - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        pthread_mutex_unlock(&log_mu);
    }
    free(buf);
    free(line);
}
