/*
 * test_negotiate.c: net/http_reply.c's http_negotiate, the content
 * negotiation that both the solution's Accept (routes_solution_accept, its
 * real table) and gzip's Accept-Encoding (gzstream.c) go through: weights, the first of
 * equals, refusal by q=0 that a wildcard cannot undo, exact names beating
 * wildcards, case, parameters, and headers that are empty, odd or long.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "net/http_reply.h"
#include "net/routes_solution.h"

/* the solution route's table (routes_solution.c): 0 Matrix Market, 1 JSON,
 * 2 float64, 3 .npy; -2 none we make, here -1 as http_negotiate says */
static int neg_accept(const char *h)
{
    if (!h)
        return http_negotiate(NULL, NULL, NULL, 0);
    int f = routes_solution_accept(h);
    return f == -2 ? -1 : f;
}

static int neg_gzip(const char *h)
{
    static const char *const names[] = {"gzip", "*"};
    static const int values[] = {1, 1};
    return http_negotiate(h, names, values, 2) == 1;
}

int main(void)
{
    /* Accept-Encoding */
    CHECK(!neg_gzip(NULL));
    CHECK(!neg_gzip(""));
    CHECK(neg_gzip("gzip"));
    CHECK(neg_gzip("deflate, gzip;q=0.5"));
    CHECK(neg_gzip("GZip ; Q=0.2"));
    CHECK(neg_gzip("*"));
    CHECK(!neg_gzip("deflate, br"));
    CHECK(!neg_gzip("gzip;q=0"));
    CHECK(!neg_gzip("gzip;q=0.000"));
    CHECK(!neg_gzip("gzip;q=0, *")); /* refused by name: the wildcard does not undo it */
    CHECK(!neg_gzip("*, gzip;q=0"));
    CHECK(neg_gzip("gzip, *;q=0"));   /* named: the wildcard's refusal is for the others */
    CHECK(!neg_gzip("gzipx, xgzip")); /* whole names only */
    CHECK(!neg_gzip(" , ,,"));
    /* Accept */
    CHECK(neg_accept(NULL) == -1);
    CHECK(neg_accept("application/json") == 1);
    CHECK(neg_accept("application/x-npy;q=0.9, application/json") == 1);
    CHECK(neg_accept("application/json;q=0.5, application/x-npy;q=0.5") == 1); /* first of equals */
    CHECK(neg_accept("application/x-npy;q=0.5, application/json;q=0.5") == 3);
    CHECK(neg_accept("*/*;q=0.1, application/octet-stream") == 2);
    CHECK(neg_accept("*/*") == 0);
    CHECK(neg_accept("text/*") == 0);
    CHECK(neg_accept("TEXT/PLAIN") == 0);
    CHECK(neg_accept("application/json; charset=utf-8; q=0.3, text/plain;q=0.2") == 1);
    CHECK(neg_accept("image/png, application/xml") == -1);
    CHECK(neg_accept("application/json;q=0") == -1);
    CHECK(neg_accept("text/plain;q=0, */*") == -1); /* Matrix Market refused by name */
    /* two exact names of one value: the heavier counts */
    CHECK(neg_accept("text/plain;q=0.1, text/x-matrix-market, application/json;q=0.5") == 0);
    /* only the first 32 entries are looked at */
    char big[4096] = "";
    for (int i = 0; i < 40; i++)
        strcat(big, "image/png, ");
    strcat(big, "application/json");
    CHECK(neg_accept(big) == -1);
    CHECK(neg_accept("application/json, image/png, image/png, image/png") == 1);
    return check_done("test_negotiate");
}
