/* icc_runner.c - runs any model.so compiled by icc, found by path at run
 * time, and times it.
 *
 *     cc -O2 -Iinclude examples/runner/icc_runner.c build/libiccrt.a -lpthread -ldl -o icc_runner
 *     ./icc_runner model.so [--name=P] [--dim=SYM=V]... [--threads=N] [--runs=N] [--save=DIR [--save-inputs]]
 *
 * It prints the model's inputs and outputs, feeds every input a fixed
 * pseudo-random pattern (floats in [0, 1), integers in [0, 4), symbolic
 * dims 1 unless given with --dim), runs the model --runs times after one
 * warm-up run, and prints latency percentiles and a summary of each
 * output (element count, sum, first values); --save=DIR also writes each
 * output as DIR/<name>.npy (a character a file name should not hold
 * becomes '_'), and with --save-inputs each input as DIR/in_<name>.npy. Everything goes through the
 * public runtime API (include/icc/runtime.h): nothing model-specific is
 * compiled in.
 */
#include <icc/runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_IO 64
#define MAX_DIMS 16

static const char *dtype_name(int32_t t)
{
    switch (t) {
    case ICC_F32: return "f32";
    case ICC_F64: return "f64";
    case ICC_F16: return "f16";
    case ICC_BF16: return "bf16";
    case ICC_I8: return "i8";
    case ICC_U8: return "u8";
    case ICC_I16: return "i16";
    case ICC_U16: return "u16";
    case ICC_I32: return "i32";
    case ICC_U32: return "u32";
    case ICC_I64: return "i64";
    case ICC_U64: return "u64";
    case ICC_BOOL: return "bool";
    default: return "?";
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Element i of a buffer as double (f16/bf16 are shown by their bits' sum only). */
static double elem(const void *p, int32_t t, int64_t i)
{
    switch (t) {
    case ICC_F32: return ((const float *)p)[i];
    case ICC_F64: return ((const double *)p)[i];
    case ICC_I8: return ((const int8_t *)p)[i];
    case ICC_U8: case ICC_BOOL: return ((const uint8_t *)p)[i];
    case ICC_I16: return ((const int16_t *)p)[i];
    case ICC_U16: case ICC_F16: case ICC_BF16: return ((const uint16_t *)p)[i];
    case ICC_I32: return ((const int32_t *)p)[i];
    case ICC_U32: return ((const uint32_t *)p)[i];
    case ICC_I64: return (double)((const int64_t *)p)[i];
    case ICC_U64: return (double)((const uint64_t *)p)[i];
    default: return 0;
    }
}

/* A fixed pattern: floats in [0, 1), integers in [0, 4), bools 0/1. */
static void fill(void *p, int32_t t, int64_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double u = (double)(x >> 11) / 9007199254740992.0;
        int64_t k = (int64_t)(x >> 62);
        switch (t) {
        case ICC_F32: ((float *)p)[i] = (float)u; break;
        case ICC_F64: ((double *)p)[i] = u; break;
        case ICC_I8: ((int8_t *)p)[i] = (int8_t)k; break;
        case ICC_U8: ((uint8_t *)p)[i] = (uint8_t)k; break;
        case ICC_BOOL: ((uint8_t *)p)[i] = (uint8_t)(k & 1); break;
        case ICC_I16: ((int16_t *)p)[i] = (int16_t)k; break;
        case ICC_U16: ((uint16_t *)p)[i] = (uint16_t)k; break;
        case ICC_F16: ((uint16_t *)p)[i] = (uint16_t)(0x3800 + (x >> 54)); break;   /* ~[0.5, 1) */
        case ICC_BF16: ((uint16_t *)p)[i] = (uint16_t)(0x3f00 + (x >> 57)); break;
        case ICC_I32: ((int32_t *)p)[i] = (int32_t)k; break;
        case ICC_U32: ((uint32_t *)p)[i] = (uint32_t)k; break;
        case ICC_I64: ((int64_t *)p)[i] = k; break;
        case ICC_U64: ((uint64_t *)p)[i] = (uint64_t)k; break;
        }
    }
}

/* numpy's name of an element type; NULL for one numpy lacks (bf16). */
static const char *npy_descr(int32_t t)
{
    switch (t) {
    case ICC_F32: return "<f4";
    case ICC_F64: return "<f8";
    case ICC_F16: return "<f2";
    case ICC_I8: return "|i1";
    case ICC_U8: return "|u1";
    case ICC_BOOL: return "|b1";
    case ICC_I16: return "<i2";
    case ICC_U16: return "<u2";
    case ICC_I32: return "<i4";
    case ICC_U32: return "<u4";
    case ICC_I64: return "<i8";
    case ICC_U64: return "<u8";
    default: return NULL;
    }
}

/* Writes a buffer as a .npy file (format 1.0); 0 or -1. */
static int save_npy(const char *dir, const char *name, int32_t t, const int64_t *dims, int rank, const void *p,
                    int64_t n)
{
    const char *descr = npy_descr(t);
    char path[4096], hdr[512];
    if (!descr)
        return -1;
    /* the name as a file name: anything but letters, digits, '-' and '.' becomes '_' */
    int at = snprintf(path, sizeof path, "%s/", dir);
    for (const char *c = name; *c && at < (int)sizeof path - 5; c++)
        path[at++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
                             (*c == '.' && c != name)
                         ? *c
                         : '_';
    snprintf(path + at, sizeof path - (size_t)at, ".npy");
    int len = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int k = 0; k < rank; k++)
        len += snprintf(hdr + len, sizeof hdr - (size_t)len, "%lld,%s", (long long)dims[k], k + 1 < rank ? " " : "");
    len += snprintf(hdr + len, sizeof hdr - (size_t)len, "), }");
    while ((10 + len + 1) % 64)
        hdr[len++] = ' ';
    hdr[len++] = '\n';
    FILE *f = fopen(path, "wb");
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(len & 0xff), (unsigned char)(len >> 8)};
    size_t bytes = (size_t)n * icc_dtype_size(t);
    int ok = f && fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)len, f) == (size_t)len &&
             fwrite(p, 1, bytes, f) == bytes;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

static void put_shape(const int64_t *dims, int rank)
{
    printf("[");
    for (int k = 0; k < rank; k++)
        printf("%s%lld", k ? "," : "", (long long)dims[k]);
    printf("]");
}

int main(int argc, char **argv)
{
    const char *path = NULL, *prefix = NULL, *save = NULL, *dimv[MAX_DIMS];
    int ndimv = 0, threads = 0, runs = 20, save_inputs = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--name=", 7))
            prefix = a + 7;
        else if (!strncmp(a, "--dim=", 6) && ndimv < MAX_DIMS)
            dimv[ndimv++] = a + 6;
        else if (!strncmp(a, "--threads=", 10))
            threads = atoi(a + 10);
        else if (!strncmp(a, "--runs=", 7))
            runs = atoi(a + 7);
        else if (!strncmp(a, "--save=", 7))
            save = a + 7;
        else if (!strcmp(a, "--save-inputs"))
            save_inputs = 1;
        else if (a[0] != '-' && !path)
            path = a;
        else {
            fprintf(stderr, "usage: %s model.so [--name=P] [--dim=SYM=V]... [--threads=N] [--runs=N] [--save=DIR [--save-inputs]]\n", argv[0]);
            return 2;
        }
    }
    if (!path || runs < 1) {
        fprintf(stderr, "usage: %s model.so [--name=P] [--dim=SYM=V]... [--threads=N] [--runs=N] [--save=DIR [--save-inputs]]\n", argv[0]);
        return 2;
    }
    icc_model *m;
    if (icc_model_open(path, prefix, &m) != ICC_OK) {
        fprintf(stderr, "%s\n", icc_last_error());
        return 1;
    }
    const icc_model_desc *d = icc_model_describe(m);
    int nin = d->ninputs, nout = d->noutputs, rc = 1;
    if (nin > MAX_IO || nout > MAX_IO) {
        fprintf(stderr, "%s: more than %d inputs or outputs\n", path, MAX_IO);
        icc_model_close(m);
        return 1;
    }
    printf("%s: model '%s' compiled by icc %s, needs [%s]\n", path, d->name, d->compiler_version,
           d->cpu_features);
    static int64_t in_dims[MAX_IO][8], out_dims[MAX_IO][8];
    const int64_t *dims_p[MAX_IO];
    void *in[MAX_IO] = {0}, *out[MAX_IO] = {0};
    int64_t out_n[MAX_IO];
    icc_context *ctx = NULL;
    for (int i = 0; i < nin; i++) {
        const icc_tensor_desc *t = icc_model_input(m, i);
        int64_t n = 1;
        for (int k = 0; k < t->rank && k < 8; k++) {
            int64_t v = t->dims[k];
            if (v < 0) {
                v = 1;
                for (int j = 0; j < ndimv; j++) {
                    size_t len = strlen(t->dim_names[k]);
                    if (!strncmp(dimv[j], t->dim_names[k], len) && dimv[j][len] == '=')
                        v = atoll(dimv[j] + len + 1);
                }
            }
            in_dims[i][k] = v;
            n *= v;
        }
        dims_p[i] = in_dims[i];
        printf("  input  %-16s %s", t->name, dtype_name(t->dtype));
        put_shape(in_dims[i], t->rank);
        printf("\n");
        if (!(in[i] = malloc((size_t)n * icc_dtype_size(t->dtype) + 1)))
            goto done;
        fill(in[i], t->dtype, n, (uint64_t)i + 1);
        char iname[300];
        snprintf(iname, sizeof iname, "in_%s", t->name);
        if (save && save_inputs && save_npy(save, iname, t->dtype, in_dims[i], t->rank, in[i], n) < 0) {
            fprintf(stderr, "%s: cannot write input '%s' as .npy\n", save, t->name);
            goto done;
        }
    }
    for (int i = 0; i < nout; i++) {
        const icc_tensor_desc *t = icc_model_output(m, i);
        if (icc_output_dims(m, dims_p, i, out_dims[i]) != ICC_OK) {
            fprintf(stderr, "%s\n", icc_last_error());
            goto done;
        }
        out_n[i] = 1;
        for (int k = 0; k < t->rank; k++)
            out_n[i] *= out_dims[i][k];
        printf("  output %-16s %s", t->name, dtype_name(t->dtype));
        put_shape(out_dims[i], t->rank);
        printf("\n");
        if (!(out[i] = malloc((size_t)out_n[i] * icc_dtype_size(t->dtype) + 1)))
            goto done;
    }
    if (icc_context_create(m, NULL, &ctx) != ICC_OK ||
        (threads > 0 && icc_context_set_threads(ctx, threads) != ICC_OK)) {
        fprintf(stderr, "%s\n", icc_last_error());
        goto done;
    }
    double *ms = malloc(sizeof *ms * (size_t)runs);
    if (!ms)
        goto done;
    for (int r = -1; r < runs; r++) {
        double t0 = now_ms();
        if (icc_run(ctx, (const void *const *)in, dims_p, out) != ICC_OK) {
            fprintf(stderr, "%s\n", icc_context_error(ctx));
            free(ms);
            goto done;
        }
        if (r >= 0)
            ms[r] = now_ms() - t0;
    }
    qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
    printf("%d runs on %d thread%s: p50 %.3f ms, p90 %.3f ms, min %.3f ms, max %.3f ms\n", runs,
           icc_context_threads(ctx), icc_context_threads(ctx) == 1 ? "" : "s", ms[runs / 2],
           ms[(runs * 9) / 10 < runs ? (runs * 9) / 10 : runs - 1], ms[0], ms[runs - 1]);
    free(ms);
    for (int i = 0; i < nout; i++) {
        const icc_tensor_desc *t = icc_model_output(m, i);
        double sum = 0;
        for (int64_t k = 0; k < out_n[i]; k++)
            sum += elem(out[i], t->dtype, k);
        printf("  %s: %lld elements, sum %.6g, first:", t->name, (long long)out_n[i], sum);
        for (int64_t k = 0; k < out_n[i] && k < 4; k++)
            printf(" %.6g", elem(out[i], t->dtype, k));
        printf("\n");
        if (save && save_npy(save, t->name, t->dtype, out_dims[i], t->rank, out[i], out_n[i]) < 0) {
            fprintf(stderr, "%s: cannot write output '%s' as .npy\n", save, t->name);
            goto done;
        }
    }
    rc = 0;
done:
    icc_context_destroy(ctx);
    for (int i = 0; i < nin; i++)
        free(in[i]);
    for (int i = 0; i < nout; i++)
        free(out[i]);
    icc_model_close(m);
    return rc;
}
