/*
 * test_common.c: common/numfmt (shortest round-trip doubles, in JSON text
 * too) and common/eta (the time left, bounded by the iteration cap).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/eta.h"
#include "common/numfmt.h"

static void numfmt(void)
{
    char b[64];
    const double vs[] = {1e-12, 0.1, 1.0 / 3, 1e-8, 123456.789, 2.0 / 3e300, 5e-324, -0.0, 1e300};
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
        cls_fmt_double(b, sizeof b, vs[i]);
        CHECK_MSG(strtod(b, NULL) == vs[i], "%s does not read back as %.17g", b, vs[i]);
    }
    cls_fmt_double(b, sizeof b, 1e-12);
    CHECK_MSG(!strcmp(b, "1e-12"), "1e-12 as %s", b);
    cls_fmt_double(b, sizeof b, 0.1);
    CHECK_MSG(!strcmp(b, "0.1"), "0.1 as %s", b);

    /* reals shortened, still reals; integers and strings untouched */
    char j[] = "{\"tol\": 9.9999999999999998e-13, \"x\": [0.10000000000000001, 1.0, -2.5e+300, "
               "12345678901234567890], \"s\": \"0.10000000000000001 \\\" 9.9999999999999998e-13\", "
               "\"r\": 0.33333333333333331}";
    cls_json_shorten(j);
    const char *want = "{\"tol\": 1e-12, \"x\": [0.1, 1.0, -2.5e+300, 12345678901234567890], "
                       "\"s\": \"0.10000000000000001 \\\" 9.9999999999999998e-13\", "
                       "\"r\": 0.3333333333333333}";
    CHECK_MSG(!strcmp(j, want), "\n got  %s\n want %s", j, want);
    CHECK(cls_json_shorten(NULL) == NULL);
    /* a text shortened once is left as it is (a stored record served again) */
    cls_json_shorten(j);
    CHECK_MSG(!strcmp(j, want), "twice:\n got  %s\n want %s", j, want);
}

/* a solve that gains a decade every 10 s at 100 iterations a second */
static void eta(void)
{
    cls_eta e;
    cls_eta_reset(&e);
    double last = -1, capped = -1;
    for (int s = 0; s <= 40; s++) {
        double t = s * 0.5, r = pow(10, -t / 10);
        int64_t it = (int64_t)(t * 100);
        last = cls_eta_update(&e, t, it, 0, r, 1e-8);
    }
    /* at t = 20 s, r = 1e-2: six decades left, 60 s */
    CHECK_MSG(fabs(last - 60) < 1, "uncapped ETA %g, want 60", last);

    cls_eta_reset(&e);
    for (int s = 0; s <= 40; s++) {
        double t = s * 0.5, r = pow(10, -t / 10);
        capped = cls_eta_update(&e, t, (int64_t)(t * 100), 2500, r, 1e-8);
    }
    /* 2000 iterations run, 500 left of the cap: 5 s, not 60 */
    CHECK_MSG(fabs(capped - 5) < 0.1, "ETA %g past --maxiter 2500, want 5", capped);

    /* a residual that does not fall: the time to the cap alone */
    cls_eta_reset(&e);
    double flat = -1, flat_nocap = 0;
    for (int s = 0; s <= 8; s++) {
        flat = cls_eta_update(&e, s * 0.5, s * 50, 1000, 1e-3, 1e-8);
    }
    cls_eta_reset(&e);
    for (int s = 0; s <= 8; s++)
        flat_nocap = cls_eta_update(&e, s * 0.5, s * 50, 0, 1e-3, 1e-8);
    CHECK_MSG(fabs(flat - 6) < 0.1, "stalled ETA %g, want 6 (600 iterations at 100/s)", flat);
    CHECK_MSG(flat_nocap < 0, "stalled ETA without a cap %g, want unknown", flat_nocap);
    /* at the cap: nothing left */
    cls_eta_reset(&e);
    double at = -1;
    for (int s = 0; s <= 4; s++)
        at = cls_eta_update(&e, s * 0.5, 1000 + s, 1000, pow(10, -s * 0.1), 1e-8);
    CHECK_MSG(at == 0, "ETA %g at the cap, want 0", at);
}

int main(void)
{
    numfmt();
    eta();
    printf("test_common: %d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}
