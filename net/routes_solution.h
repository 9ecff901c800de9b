/*
 * routes_solution.h: GET /v1/jobs/ID/solution, a handler of its own
 * because it is the one route that streams a large answer (formats,
 * gzip, ETag: routes_solution.c).
 */
#ifndef CLS_NET_ROUTES_SOLUTION_H
#define CLS_NET_ROUTES_SOLUTION_H

#include "http_call.h"

enum MHD_Result routes_jobs_solution(http_call *call);
/* The format an Accept header asks for (not NULL, not empty): 0 Matrix
 * Market, 1 JSON, 2 float64, 3 .npy; -2 none we make (406). */
int routes_solution_accept(const char *accept);

#endif
