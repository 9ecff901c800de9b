/*
 * dwarm.c: the warm set of device states and the prewarm (dvec.h says what
 * they are for). A warm state is a part's whole device context (ocl_ctx,
 * la_ctx, ld_ctx) with la's configuration as it was before a job's tuning
 * overlay; dsys_open takes one for its device, precision and kind, and
 * dsys_close gives a healthy part's back. Several states of one device
 * share its OpenCL context (ocl_ctx_create_shared): the daemon's lanes.
 */
#include "dwarm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/trace.h"

/* ----------------------------------------------------------- warm devices */

#define DSYS_WARM_MAX 8

typedef struct warm_dev {
    int used;
    cl_device_id id;
    la_precision prec;
    int flags;
    ocl_ctx ocl;
    la_ctx la;
    ld_ctx ld;
    la_config cfg0;
    size_t ngroups0;
} warm_dev;

static warm_dev warm_set[DSYS_WARM_MAX];
static pthread_mutex_t warm_mu = PTHREAD_MUTEX_INITIALIZER;

/* CLSOLVE_WARM=0 turns the warm set off (for measuring what it saves) */
int dwarm_enabled(void)
{
    const char *v = getenv("CLSOLVE_WARM");
    return !(v && !strcmp(v, "0"));
}

/* a warm state for p's device into p (its pointers fixed); 1 if found */
int dwarm_take(dpart *p, la_precision prec, int flags)
{
    int found = 0;
    if (!dwarm_enabled())
        return 0;
    pthread_mutex_lock(&warm_mu);
    for (int i = 0; i < DSYS_WARM_MAX && !found; i++) {
        warm_dev *w = &warm_set[i];
        if (!w->used || w->id != p->dev.id || w->prec != prec || w->flags != flags)
            continue;
        p->ocl = w->ocl;
        p->la = w->la;
        p->ld = w->ld;
        p->la.ocl = &p->ocl; /* the structs moved: their links follow */
        p->ld.la = &p->la;
        p->la.cfg = w->cfg0;
        p->la.ngroups = w->ngroups0;
        p->cfg0 = w->cfg0;
        p->ngroups0 = w->ngroups0;
        w->used = 0;
        found = 1;
    }
    pthread_mutex_unlock(&warm_mu);
    return found;
}

/* p's device state into the warm set; 0 (the caller releases it) if full */
int dwarm_put(dpart *p, la_precision prec, int flags)
{
    int put = 0;
    if (!dwarm_enabled())
        return 0;
    pthread_mutex_lock(&warm_mu);
    for (int i = 0; i < DSYS_WARM_MAX && !put; i++) {
        warm_dev *w = &warm_set[i];
        if (w->used)
            continue;
        *w = (warm_dev){1, p->dev.id, prec, flags, p->ocl, p->la, p->ld, p->cfg0, p->ngroups0};
        put = 1;
    }
    pthread_mutex_unlock(&warm_mu);
    return put;
}

/* ---------------------------------------------------------------- prewarm */

static struct {
    pthread_t tid;
    int started;
    char device[64];
    la_precision prec;
    int lr;    /* the node-local rank whose device it is; -1: one rank */
    int flags; /* the kind of state: LA_FLAG_ONE_PART or 0 (several parts) */
    int64_t input_bytes; /* the input file's size: its upload's staging is made too */
} prewarm;

static void *prewarm_run(void *arg)
{
    (void)arg;
    dpart p;
    cls_error e;
    memset(&p, 0, sizeof p);
    if (prewarm.lr < 0 ? ocl_pick_device(prewarm.device, &p.dev, &e) != CLS_OK
                       : dsys_pick_local(prewarm.device, prewarm.lr, 1, 1, &p.dev, &e) != CLS_OK)
        return NULL;
    cls_trace("prewarm: device picked"); /* the OpenCL platforms' start */
    if (ocl_ctx_create_shared(&p.dev, &p.ocl, &e) != CLS_OK)
        return NULL;
    cls_trace("prewarm: context made");
    if (la_init_flags(&p.la, &p.ocl, prewarm.prec, NULL, prewarm.flags, &e) != CLS_OK) {
        ocl_ctx_release(&p.ocl);
        return NULL;
    }
    p.cfg0 = p.la.cfg;
    p.ngroups0 = p.la.ngroups;
    cls_trace("prewarm: la_init done");
    /* a failure leaves the staging to the upload, which reports it */
    if (prewarm.input_bytes > 0)
        la_stage_prepare(&p.la, (size_t)prewarm.input_bytes, &e);
    if (ld_init(&p.ld, &p.la, &e) != CLS_OK) {
        la_release(&p.la);
        ocl_ctx_release(&p.ocl);
    } else if (!dwarm_put(&p, prewarm.prec, prewarm.flags)) {
        ld_release(&p.ld);
        la_release(&p.la);
        ocl_ctx_release(&p.ocl);
    }
    return NULL;
}

static void prewarm_launch(const char *device, la_precision prec, int lr, int flags,
                           int64_t input_bytes)
{
    if (prewarm.started || !dwarm_enabled())
        return;
    if (!device || !*device)
        device = "auto";
    if (strlen(device) >= sizeof prewarm.device)
        return;
    snprintf(prewarm.device, sizeof prewarm.device, "%s", device);
    prewarm.prec = prec;
    prewarm.lr = lr;
    prewarm.flags = flags;
    prewarm.input_bytes = input_bytes;
    prewarm.started = pthread_create(&prewarm.tid, NULL, prewarm_run, NULL) == 0;
}

void dsys_prewarm_start(const char *device, la_precision prec, int64_t input_bytes)
{
    if (device && strchr(device, ','))
        return; /* a list: several parts, not the one-part case */
    prewarm_launch(device, prec, -1, LA_FLAG_ONE_PART, input_bytes);
}

void dsys_prewarm_start_part(const char *device, la_precision prec, int lr, int64_t input_bytes)
{
    prewarm_launch(device, prec, lr, 0, input_bytes);
}

int dsys_prewarm_active(void)
{
    return prewarm.started;
}

void dsys_prewarm_join(void)
{
    if (prewarm.started) {
        pthread_join(prewarm.tid, NULL);
        prewarm.started = 0;
    }
}

void dsys_warm_release_all(void)
{
    pthread_mutex_lock(&warm_mu);
    for (int i = 0; i < DSYS_WARM_MAX; i++) {
        warm_dev *w = &warm_set[i];
        if (!w->used)
            continue;
        w->la.ocl = &w->ocl;
        w->ld.la = &w->la;
        ld_release(&w->ld);
        la_release(&w->la);
        ocl_ctx_release(&w->ocl);
        w->used = 0;
    }
    pthread_mutex_unlock(&warm_mu);
    ocl_shared_release_all();
}

/* ------------------------------------------------- one device, no system */

int dsys_device_open(const char *device, la_precision prec, dpart *p, cls_error *err)
{
    memset(p, 0, sizeof *p);
    int inited = 0;
    MPI_Initialized(&inited);
    /* the CLI's batch runs without MPI: the same first device of the spec */
    int rc = inited ? dsys_pick_devices(MPI_COMM_SELF, device, 1, 1, &p->dev, err)
                    : ocl_pick_device(device && *device ? device : "auto", &p->dev, err);
    if (rc)
        return rc;
    if (dwarm_take(p, prec, LA_FLAG_ONE_PART)) {
        p->warm = 1;
        p->have_ocl = p->have_la = p->have_ld = 1;
        return CLS_OK;
    }
    if ((rc = dwarm_enabled() ? ocl_ctx_create_shared(&p->dev, &p->ocl, err)
                              : ocl_ctx_create(&p->dev, &p->ocl, err)))
        return rc;
    p->have_ocl = 1;
    if ((rc = la_init_flags(&p->la, &p->ocl, prec, NULL, LA_FLAG_ONE_PART, err))) {
        dsys_device_close(p, prec, 1);
        return rc;
    }
    p->have_la = 1;
    p->cfg0 = p->la.cfg;
    p->ngroups0 = p->la.ngroups;
    if ((rc = ld_init(&p->ld, &p->la, err))) {
        dsys_device_close(p, prec, 1);
        return rc;
    }
    p->have_ld = 1;
    return CLS_OK;
}

void dwarm_release(dpart *p, la_precision prec, int flags, int failed)
{
    if (p->have_la) {
        la_finish(&p->la, NULL);
        la_pool_clear(&p->la);
    }
    if (!failed && p->have_ocl && p->have_la && p->have_ld && !p->ld.ev &&
        dwarm_put(p, prec, flags)) {
        p->have_ld = p->have_la = p->have_ocl = 0;
        return;
    }
    if (p->have_ld)
        ld_release(&p->ld);
    if (p->have_la)
        la_release(&p->la);
    if (p->have_ocl)
        ocl_ctx_release(&p->ocl);
    p->have_ld = p->have_la = p->have_ocl = 0;
}

void dsys_device_close(dpart *p, la_precision prec, int failed)
{
    dwarm_release(p, prec, LA_FLAG_ONE_PART, failed);
}
