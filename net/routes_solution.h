/*
 * routes_solution.h: GET /v1/jobs/ID/solution, a handler of its own
 * because it is the one route that streams a large answer (formats,
 * gzip, ETag: routes_solution.c).
 */
#ifndef CLS_NET_ROUTES_SOLUTION_H
#define CLS_NET_ROUTES_SOLUTION_H

#include "http_call.h"

enum MHD_Result routes_jobs_solution(http_call *call);

#endif
