/* calibrate.h - activation ranges for int8 static quantization.
 *
 * A calibrator runs the reference interpreter over the fp32 graph for each
 * calibration input set and keeps, for every float activation (graph
 * inputs and node results, by value name), its min, max and a histogram of
 * |x|. Finishing turns that into one range [lo, hi] per value by the chosen
 * method: minmax (the observed extremes), percentile (the |x| below which
 * P% of the values fall) or entropy (the |x| threshold whose clipped and
 * 128-level quantized histogram is closest to the original in KL
 * divergence, as TensorRT's entropy calibrator picks it). The percentile
 * and entropy thresholds T clip the range to [max(min, -T), min(max, T)],
 * so an activation that is never negative keeps lo = 0.
 *
 *     icc_calibrator *c = icc_calibrator_create(g, &opts, &d);
 *     for (each set) icc_calibrator_add(c, inputs, &d);  // inputs[i] for g->inputs[i]
 *     icc_calibration *cal = icc_calibrator_finish(c, &d); // c is destroyed
 *     ... opts.calib = cal; run the precision pass ...
 *     icc_calibration_destroy(cal);
 *
 * Values are found again by name (icc_calibration_find), so the graph the
 * precision pass sees may differ from the calibrated one by passes that
 * keep value names (they do: new values get new names).
 */
#ifndef ICC_CALIBRATE_H
#define ICC_CALIBRATE_H

#include <stdbool.h>
#include "ir/ir.h"

typedef enum icc_calib_method { ICC_CALIB_MINMAX, ICC_CALIB_PERCENTILE, ICC_CALIB_ENTROPY } icc_calib_method;

typedef struct icc_calib_opts {
    icc_calib_method method;
    double percentile;         /* percentile: e.g. 99.99 (0: 99.99) */
    int bins;                  /* histogram bins (0: 2048; at least 256 for entropy) */
    bool symmetric;            /* int8: activations as symmetric i8 rather than asymmetric u8 */
} icc_calib_opts;

/* "minmax", "percentile" or "entropy"; "percentile=99.9" also sets the
 * percentile. 0, or -1 with d naming the text. */
int icc_calib_method_parse(const char *text, icc_calib_opts *o, icc_diag *d);
const char *icc_calib_method_name(icc_calib_method m);

typedef struct icc_calib_range {
    const char *name;          /* the value's name (owned by the calibration) */
    float lo, hi;              /* lo <= 0 <= hi is not guaranteed; the quantizer widens to include 0 */
} icc_calib_range;

struct icc_calibration {
    icc_calib_method method;
    bool symmetric;            /* from the options */
    int sets;                  /* input sets seen */
    int n;                     /* ranges, sorted by name */
    icc_calib_range *ranges;
};
typedef struct icc_calibration icc_calibration;

typedef struct icc_calibrator icc_calibrator;

/* A calibrator for g (borrowed: it must outlive the calibrator and stay
 * unchanged). NULL with d set on out of memory or bad options. */
icc_calibrator *icc_calibrator_create(const ir_graph *g, const icc_calib_opts *o, icc_diag *d);
/* Runs g on one input set (inputs[i] for g->inputs[i], borrowed) and adds
 * what it saw. -1 with d set when the interpreter fails or an input does
 * not fit. */
int icc_calibrator_add(icc_calibrator *c, const ir_tensor *inputs, icc_diag *d);
/* The ranges (the caller owns them: icc_calibration_destroy); c is
 * destroyed either way. NULL with d set when no set was added. */
icc_calibration *icc_calibrator_finish(icc_calibrator *c, icc_diag *d);
void icc_calibrator_destroy(icc_calibrator *c);

/* The range of the value named name, or NULL (borrowed). */
const icc_calib_range *icc_calibration_find(const icc_calibration *cal, const char *name);
void icc_calibration_destroy(icc_calibration *cal);

/* The entropy method's threshold on a histogram of |x| (nbins bins of
 * equal width from 0): the bin edge i*width, i in [128, nbins], that
 * minimizes KL(P || Q) where P is the histogram cut at i with the tail
 * added to its last bin and Q is P's first i bins merged into 128 levels
 * and spread back over their nonzero bins. Returns the edge in bins
 * (multiply by the bin width). Exposed for the tests. */
int icc_calib_entropy_bins(const double *hist, int nbins);

#endif
