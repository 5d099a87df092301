/* calibrate.c - reads calibration sets from a folder and feeds them to
 * the calibrator (tools/calibrate.h). Sets are the subfolders 0, 1, 2, ...
 * up to the first number that is missing. */
#include "tools/calibrate.h"
#include "runtime/npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

icc_calibration *icc_calibrate_dir(const ir_graph *g, const char *dir, const icc_calib_opts *o, icc_diag *d)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/0", dir);
    if (!is_dir(dir)) {
        ir_errorf(d, "--calibrate=%s: not a directory", dir);
        return NULL;
    }
    if (!is_dir(path)) {
        ir_errorf(d, "--calibrate=%s: no input set %s (sets are folders 0, 1, ... holding NAME.npy per input)",
                  dir, path);
        return NULL;
    }
    icc_calibrator *c = icc_calibrator_create(g, o, d);
    ir_tensor *in = calloc((size_t)g->ninputs + 1, sizeof *in);
    if (!c || !in) {
        if (c && !in)
            ir_errorf(d, "out of memory");
        icc_calibrator_destroy(c);
        free(in);
        return NULL;
    }
    int set = 0;
    for (;; set++) {
        snprintf(path, sizeof path, "%s/%d", dir, set);
        if (!is_dir(path))
            break;
        int rc = 0;
        for (int i = 0; i < g->ninputs && rc == 0; i++) {
            snprintf(path, sizeof path, "%s/%d/%s.npy", dir, set, g->inputs[i]->name);
            rc = icc_npy_read(path, &in[i], d);
            if (rc == 0) {
                /* the interpreter's check, named by file */
                const ir_type *t = &g->inputs[i]->type;
                bool fits = in[i].dtype == t->dtype && (t->rank < 0 || in[i].rank == t->rank);
                for (int k = 0; fits && t->rank >= 0 && k < t->rank; k++)
                    fits = !ir_dim_is_const(t->dims[k]) || t->dims[k].v == in[i].dims[k];
                if (!fits) {
                    char got[128] = "", want[128] = "";
                    size_t a = 0, b = 0;
                    for (int k = 0; k < in[i].rank && a < sizeof got; k++)
                        a += (size_t)snprintf(got + a, sizeof got - a, "%s%lld", k ? "x" : "", (long long)in[i].dims[k]);
                    for (int k = 0; k < t->rank && b < sizeof want; k++)
                        b += (size_t)snprintf(want + b, sizeof want - b, "%s%lld", k ? "x" : "",
                                              ir_dim_is_const(t->dims[k]) ? (long long)t->dims[k].v : -1LL);
                    ir_errorf(d, "%s: %s[%s] does not fit input '%s' (%s[%s])", path, ir_dtype_name(in[i].dtype),
                              got, g->inputs[i]->name, ir_dtype_name(t->dtype), want);
                    free(in[i].data);
                    in[i].data = NULL;
                    rc = -1;
                }
            } else {
                in[i].data = NULL;
            }
            if (rc < 0)
                for (int k = 0; k < i; k++) {
                    free(in[k].data);
                    in[k].data = NULL;
                }
        }
        if (rc == 0) {
            rc = icc_calibrator_add(c, in, d);
            if (rc < 0)
                ir_diag_prefix(d, "%s/%d", dir, set);
            for (int i = 0; i < g->ninputs; i++) {
                free(in[i].data);
                in[i].data = NULL;
            }
        }
        if (rc < 0) {
            icc_calibrator_destroy(c);
            free(in);
            return NULL;
        }
        fprintf(stderr, "calibrate: set %d (%s/%d) done\n", set, dir, set);
    }
    free(in);
    icc_calibration *cal = icc_calibrator_finish(c, d);
    if (cal)
        fprintf(stderr, "calibrate: %d sets, %d ranges (%s)\n", set, cal->n, icc_calib_method_name(o->method));
    return cal;
}
