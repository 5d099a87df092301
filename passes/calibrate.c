/* calibrate.c - collects activation ranges for int8 static quantization
 * by running the reference interpreter node by node over calibration sets
 * (calibrate.h describes the methods). Each float value keeps min, max
 * and a histogram of |x| whose bin width doubles (merging bin pairs)
 * whenever a later set goes past its top, so one pass over the sets
 * suffices.
 */
#include "passes/calibrate.h"
#include "ir/ops.h"
#include "ir/ref/interp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { QLEVELS = 128 };

typedef struct vstat {
    bool seen;
    double lo, hi, amax;
    double width;              /* histogram bin width; 0 until the first nonzero |x| */
    double *hist;              /* nbins counts, or NULL (minmax) */
} vstat;

struct icc_calibrator {
    const ir_graph *g;
    icc_calib_opts o;
    int nbins;
    int sets;
    vstat *st;                 /* by value id */
};

int icc_calib_method_parse(const char *text, icc_calib_opts *o, icc_diag *d)
{
    if (!strcmp(text, "minmax")) {
        o->method = ICC_CALIB_MINMAX;
        return 0;
    }
    if (!strcmp(text, "entropy")) {
        o->method = ICC_CALIB_ENTROPY;
        return 0;
    }
    if (!strncmp(text, "percentile", 10) && (!text[10] || text[10] == '=')) {
        o->method = ICC_CALIB_PERCENTILE;
        if (text[10] == '=') {
            char *end;
            double p = strtod(text + 11, &end);
            if (end == text + 11 || *end || !(p > 0 && p <= 100))
                return ir_errorf(d, "--calibrate-method=%s: the percentile must be a number in (0, 100]", text);
            o->percentile = p;
        }
        return 0;
    }
    return ir_errorf(d, "--calibrate-method=%s: unknown method (expected minmax, percentile[=P] or entropy)", text);
}

const char *icc_calib_method_name(icc_calib_method m)
{
    switch (m) {
    case ICC_CALIB_MINMAX:
        return "minmax";
    case ICC_CALIB_PERCENTILE:
        return "percentile";
    case ICC_CALIB_ENTROPY:
        return "entropy";
    }
    return "?";
}

void icc_calibrator_destroy(icc_calibrator *c)
{
    if (!c)
        return;
    for (int i = 0; c->st && i < c->g->nvalues; i++)
        free(c->st[i].hist);
    free(c->st);
    free(c);
}

icc_calibrator *icc_calibrator_create(const ir_graph *g, const icc_calib_opts *o, icc_diag *d)
{
    icc_calibrator *c = calloc(1, sizeof *c);
    if (!c || !(c->st = calloc((size_t)g->nvalues + 1, sizeof *c->st))) {
        free(c);
        ir_errorf(d, "out of memory");
        return NULL;
    }
    c->g = g;
    c->o = *o;
    if (c->o.percentile <= 0)
        c->o.percentile = 99.99;
    c->nbins = o->bins > 0 ? o->bins : 2048;
    if (c->nbins < 2 * QLEVELS || c->nbins > (1 << 20)) {
        icc_calibrator_destroy(c);
        ir_errorf(d, "calibration: %d histogram bins (expected %d..%d)", o->bins, 2 * QLEVELS, 1 << 20);
        return NULL;
    }
    return c;
}

/* Doubles the bin width until amax falls below the top. */
static void grow(vstat *s, int nbins, double amax)
{
    while (amax >= s->width * nbins) {
        for (int i = 0; i < nbins / 2; i++)
            s->hist[i] = s->hist[2 * i] + s->hist[2 * i + 1];
        memset(s->hist + nbins / 2, 0, sizeof(double) * (size_t)(nbins - nbins / 2));
        s->width *= 2;
    }
}

/* Adds the float tensor t's elements to v's statistics. */
static int observe(icc_calibrator *c, vstat *s, const ir_tensor *t, icc_diag *d)
{
    if (!ir_dtype_is_float(t->dtype) || t->numel == 0)
        return 0;
    const float *f = t->dtype == IR_F32 ? t->data : NULL;
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < t->numel; i++) {
        double x = f ? f[i] : ir_tensor_getf(t, i);
        if (x < lo)
            lo = x;
        if (x > hi)
            hi = x;
    }
    if (!isfinite(lo) || !isfinite(hi))
        return 0; /* NaN or inf: no range can represent it; leave it out */
    if (!s->seen || lo < s->lo)
        s->lo = lo;
    if (!s->seen || hi > s->hi)
        s->hi = hi;
    s->seen = true;
    double amax = fmax(fabs(lo), fabs(hi));
    if (amax > s->amax)
        s->amax = amax;
    if (c->o.method == ICC_CALIB_MINMAX || amax == 0)
        return 0;
    if (!s->hist) {
        if (!(s->hist = calloc((size_t)c->nbins, sizeof(double))))
            return ir_errorf(d, "out of memory");
    }
    if (s->width == 0)
        s->width = amax * 1.0000001 / c->nbins;
    grow(s, c->nbins, amax);
    for (int64_t i = 0; i < t->numel; i++) {
        double a = fabs(f ? f[i] : ir_tensor_getf(t, i));
        int64_t b = (int64_t)(a / s->width);
        s->hist[b < c->nbins ? b : c->nbins - 1] += 1;
    }
    return 0;
}

static int observe_value(void *ctx, const ir_value *v, const ir_tensor *t, icc_diag *d)
{
    icc_calibrator *c = ctx;
    return observe(c, &c->st[v->id], t, d);
}

int icc_calibrator_add(icc_calibrator *c, const ir_tensor *inputs, icc_diag *d)
{
    if (ir_interp_run_hooked(c->g, inputs, NULL, observe_value, c, d) < 0)
        return -1;
    c->sets++;
    return 0;
}

int icc_calib_entropy_bins(const double *hist, int nbins)
{
    double total = 0;
    for (int i = 0; i < nbins; i++)
        total += hist[i];
    if (total <= 0 || nbins <= QLEVELS)
        return nbins;
    double *p = malloc(sizeof(double) * (size_t)nbins * 2), *q = p ? p + nbins : NULL;
    if (!p)
        return nbins;
    double best = INFINITY, tail = total;
    int best_i = nbins;
    for (int i = 0; i < QLEVELS; i++)
        tail -= hist[i];
    for (int i = QLEVELS; i <= nbins; i++) {
        /* P: the first i bins, the clipped tail folded into the last */
        memcpy(p, hist, sizeof(double) * (size_t)i);
        p[i - 1] += tail;
        if (i < nbins)
            tail -= hist[i];
        /* Q: the same i bins (without the tail) merged into QLEVELS levels,
         * each level's mass spread evenly over its nonzero bins */
        for (int l = 0; l < QLEVELS; l++) {
            int b0 = (int)((int64_t)l * i / QLEVELS), b1 = (int)((int64_t)(l + 1) * i / QLEVELS);
            double sum = 0;
            int nz = 0;
            for (int b = b0; b < b1; b++) {
                sum += hist[b];
                nz += hist[b] != 0;
            }
            for (int b = b0; b < b1; b++)
                q[b] = hist[b] != 0 ? sum / nz : 0;
        }
        double ps = 0, qs = 0;
        for (int b = 0; b < i; b++) {
            ps += p[b];
            qs += q[b];
        }
        if (ps <= 0 || qs <= 0)
            continue;
        double kl = 0;
        for (int b = 0; b < i; b++) {
            if (p[b] == 0)
                continue;
            double pb = p[b] / ps, qb = q[b] / qs;
            /* a bin Q misses entirely (the tail bin): a small floor keeps
             * the divergence finite, as the TensorRT recipe smooths it */
            kl += pb * log(pb / (qb > 0 ? qb : 1e-10));
        }
        if (kl < best) {
            best = kl;
            best_i = i;
        }
    }
    free(p);
    return best_i;
}

/* The |x| threshold of s by the method (amax for minmax). */
static double threshold(const icc_calibrator *c, const vstat *s)
{
    if (!s->hist || s->width == 0)
        return s->amax;
    if (c->o.method == ICC_CALIB_PERCENTILE) {
        double total = 0, cum = 0;
        for (int i = 0; i < c->nbins; i++)
            total += s->hist[i];
        for (int i = 0; i < c->nbins; i++) {
            cum += s->hist[i];
            if (cum >= total * c->o.percentile / 100.0)
                return fmin(s->amax, (i + 1) * s->width);
        }
        return s->amax;
    }
    return fmin(s->amax, icc_calib_entropy_bins(s->hist, c->nbins) * s->width);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const icc_calib_range *)a)->name, ((const icc_calib_range *)b)->name);
}

icc_calibration *icc_calibrator_finish(icc_calibrator *c, icc_diag *d)
{
    icc_calibration *cal = NULL;
    if (!c->sets) {
        ir_errorf(d, "calibration: no input sets");
        goto done;
    }
    int n = 0;
    for (int i = 0; i < c->g->nvalues; i++)
        n += c->st[i].seen;
    if (!(cal = calloc(1, sizeof *cal)) || !(cal->ranges = calloc((size_t)n + 1, sizeof *cal->ranges))) {
        free(cal);
        cal = NULL;
        ir_errorf(d, "out of memory");
        goto done;
    }
    cal->method = c->o.method;
    cal->symmetric = c->o.symmetric;
    cal->sets = c->sets;
    for (int i = 0; i < c->g->nvalues; i++) {
        const vstat *s = &c->st[i];
        if (!s->seen)
            continue;
        icc_calib_range *r = &cal->ranges[cal->n];
        double t = threshold(c, s);
        r->lo = (float)fmax(s->lo, -t);
        r->hi = (float)fmin(s->hi, t);
        if (!(r->name = strdup(c->g->values[i]->name))) {
            icc_calibration_destroy(cal);
            cal = NULL;
            ir_errorf(d, "out of memory");
            goto done;
        }
        cal->n++;
    }
    qsort(cal->ranges, (size_t)cal->n, sizeof *cal->ranges, by_name);
done:
    icc_calibrator_destroy(c);
    return cal;
}

const icc_calib_range *icc_calibration_find(const icc_calibration *cal, const char *name)
{
    if (!cal || !name)
        return NULL;
    icc_calib_range key = {.name = name};
    return bsearch(&key, cal->ranges, (size_t)cal->n, sizeof key, by_name);
}

void icc_calibration_destroy(icc_calibration *cal)
{
    if (!cal)
        return;
    for (int i = 0; i < cal->n; i++)
        free((char *)cal->ranges[i].name);
    free(cal->ranges);
    free(cal);
}
