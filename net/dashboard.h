/*
 * dashboard.h: the static dashboard, its files embedded in the binary
 * (dashboard.c). The route table asks it which names it has, so that a
 * new file under net/dashboard/ is served without a new row.
 */
#ifndef CLS_NET_DASHBOARD_H
#define CLS_NET_DASHBOARD_H

#include "http_call.h"

/* 1 when name (a path without its leading '/'; "" is the page) is one of
 * the dashboard's files. */
int dashboard_has(const char *name);
/* GET of the file call->name. */
enum MHD_Result dashboard_serve(http_call *call);

#endif
