/*
 * routes_misc.h: the routes about the daemon rather than a job: what it
 * runs on, whether it lives and is ready, its metrics.
 */
#ifndef CLS_NET_ROUTES_MISC_H
#define CLS_NET_ROUTES_MISC_H

#include "http_call.h"

enum MHD_Result routes_devices(http_call *call);
enum MHD_Result routes_healthz(http_call *call);
/* 200 when jobs can be taken and run: not draining, the devices up, the job
 * store writable; else 503 with the reasons. */
enum MHD_Result routes_readyz(http_call *call);
enum MHD_Result routes_metrics(http_call *call);

#endif
