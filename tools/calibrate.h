/* calibrate.h - the driver's `--calibrate=DIR`: reads the numbered input
 * sets DIR/0/NAME.npy, DIR/1/NAME.npy, ... (NAME: each graph input's
 * name) and collects activation ranges over them (passes/calibrate.h). */
#ifndef ICC_TOOLS_CALIBRATE_H
#define ICC_TOOLS_CALIBRATE_H

#include "passes/calibrate.h"

/* Runs g (borrowed, unchanged) on every set in dir, printing a progress
 * line per set on stderr. The caller owns the result
 * (icc_calibration_destroy). NULL with d naming the file or set on
 * failure: no set 0, a missing or unreadable .npy, an input that does not
 * fit, or an interpreter error. */
icc_calibration *icc_calibrate_dir(const ir_graph *g, const char *dir, const icc_calib_opts *o, icc_diag *d);

#endif
