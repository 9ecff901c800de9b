/*
 * problem.h: RFC 9457 problem details, the body of every error response:
 * {"type", "title", "status", "detail"} plus "line" for a parse error.
 * The type is "urn:clsolve:problem:SLUG"; docs/api.md lists the slugs.
 */
#ifndef CLS_NET_PROBLEM_H
#define CLS_NET_PROBLEM_H

#include <jansson.h>

/* The JSON text (malloc'ed). line <= 0: no line member. */
char *problem_json(unsigned status, const char *slug, const char *detail, long long line);
/* Same, with extra members (an object whose members are added to the
 * problem, RFC 9457 extensions such as "job_status"; stolen, may be NULL). */
char *problem_json_ext(unsigned status, const char *slug, const char *detail, long long line,
                       json_t *extra);
/* The reason phrase of a status code ("Not Found"). */
const char *problem_status_title(unsigned status);

/* Replaces control bytes and bytes >= 0x80 by '?' in place, so text
 * quoted from an upload is always valid JSON string content. */
void problem_ascii(char *s);

#endif
