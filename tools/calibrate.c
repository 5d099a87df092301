/* calibrate.c - reads calibration sets from a folder and feeds them to
 * the calibrator (tools/calibrate.h). Sets are the subfolders 0, 1, 2, ...
 * up to the first number that is missing. */
#include "tools/calibrate.h"
#include "tools/verify.h"

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
        /* the same files `icc verify --inputs` reads: NAME.npy, or NAME with
         * characters a file name cannot hold written '_' */
        int rc = icc_verify_load_set(path, g, in, d);
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
