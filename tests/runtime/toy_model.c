/* toy_model.c - hand-written "compiled models" for the runtime's tests.
 *
 * They export descriptors the way generated code does, with no writable
 * globals and no library calls. model_model: y[n][j] = 2*x[n][j] + 1 +
 * w[n] for x: f32 [N, 4], w: f32 [N]; it stages 2*x in the arena (so an
 * arena too small shows up under ASan) and splits rows over
 * env->parallel_for. toy2_model needs an imaginary CPU feature; toy3_model
 * claims ABI version 999; toyw_model has external weights (8 floats added
 * to its input).
 */
#include "icc/runtime.h"

enum { ROWS_PER_CHUNK = 64 };

struct job {
    const float *x, *w;
    float *y, *tmp;
    int64_t n;
};

static void chunk(void *arg, int64_t c)
{
    const struct job *j = arg;
    int64_t end = (c + 1) * ROWS_PER_CHUNK < j->n ? (c + 1) * ROWS_PER_CHUNK : j->n;
    for (int64_t r = c * ROWS_PER_CHUNK; r < end; r++)
        for (int k = 0; k < 4; k++)
            j->tmp[r * 4 + k] = 2.0f * j->x[r * 4 + k];
    for (int64_t r = c * ROWS_PER_CHUNK; r < end; r++)
        for (int k = 0; k < 4; k++)
            j->y[r * 4 + k] = j->tmp[r * 4 + k] + 1.0f + j->w[r];
}

static int toy_run(const void *const *inputs, void *const *outputs, const int64_t *dims,
                   void *arena, const icc_kernel_env *env)
{
    if (!arena || (uintptr_t)arena % 64 || env->nthreads < 1)
        return ICC_ERR_INTERNAL;
    struct job j = {inputs[0], inputs[1], outputs[0], arena, dims[0]};
    env->parallel_for(env->pool, (j.n + ROWS_PER_CHUNK - 1) / ROWS_PER_CHUNK, chunk, &j);
    return ICC_OK;
}

static uint64_t toy_arena(const int64_t *dims) { return (uint64_t)dims[0] * 4 * sizeof(float); }

static const int64_t x_dims[] = {-1, 4}, w_dims[] = {-1};
static const char *const x_names[] = {"N", 0}, *const w_names[] = {"N"};
static const char *const syms[] = {"N"};
static const icc_tensor_desc ins[] = {
    {"x", ICC_F32, 2, x_dims, x_names},
    {"w", ICC_F32, 1, w_dims, w_names},
};
static const icc_tensor_desc outs[] = {{"y", ICC_F32, 2, x_dims, x_names}};

const icc_model_desc model_model = {
    .abi_version = ICC_ABI_VERSION, .desc_size = sizeof(icc_model_desc),
    .compiler_version = "toy", .name = "model", .cpu_features = "",
    .ninputs = 2, .noutputs = 1, .inputs = ins, .outputs = outs,
    .nsymbols = 1, .symbols = syms,
    .arena_bytes = 16, .arena_size = toy_arena, .run = toy_run,
};

const icc_model_desc toy2_model = {
    .abi_version = ICC_ABI_VERSION, .desc_size = sizeof(icc_model_desc),
    .compiler_version = "toy", .name = "toy2", .cpu_features = "+avx512-imaginary",
    .ninputs = 2, .noutputs = 1, .inputs = ins, .outputs = outs,
    .nsymbols = 1, .symbols = syms,
    .arena_bytes = 16, .arena_size = toy_arena, .run = toy_run,
};

const icc_model_desc toy3_model = {
    .abi_version = 999, .desc_size = sizeof(icc_model_desc),
    .compiler_version = "toy", .name = "toy3",
    .ninputs = 2, .noutputs = 1, .inputs = ins, .outputs = outs,
    .nsymbols = 1, .symbols = syms,
    .arena_bytes = 16, .arena_size = toy_arena, .run = toy_run,
};

/* y = x + weights, x and y f32 [8]. */
static int toyw_run(const void *const *inputs, void *const *outputs, const int64_t *dims,
                    void *arena, const icc_kernel_env *env)
{
    const float *x = inputs[0], *wt = env->weights;
    float *y = outputs[0];
    for (int i = 0; i < 8; i++)
        y[i] = x[i] + wt[i];
    return ICC_OK;
}

static const int64_t v8[] = {8};
static const icc_tensor_desc w_ins[] = {{"x", ICC_F32, 1, v8, 0}};
static const icc_tensor_desc w_outs[] = {{"y", ICC_F32, 1, v8, 0}};

const icc_model_desc toyw_model = {
    .abi_version = ICC_ABI_VERSION, .desc_size = sizeof(icc_model_desc),
    .compiler_version = "toy", .name = "toyw", .cpu_features = "",
    .ninputs = 1, .noutputs = 1, .inputs = w_ins, .outputs = w_outs,
    .arena_bytes = 0, .run = toyw_run,
    /* FNV-1a 64 of the floats 0.5, 1.5, ..., 7.5 (little-endian). */
    .weights_checksum = 0x5ac7651ee94d10d5ull, .weights_bytes = 32, .weights = 0,
};
