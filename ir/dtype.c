/* dtype.c - the dtype table, element access and half-precision conversion. */
#include "ir/ir.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int onnx;
    size_t size;
    char cls;
} dtype_info;

static const dtype_info dtypes[IR_DTYPE_COUNT] = {
    [IR_UNDEF] = {"undef", 0, 0, '?'},
#define DT(id, nm, onnx, sz, cl) [IR_##id] = {nm, onnx, sz, #cl[0]},
#include "ir/dtypes.def"
#undef DT
};

const char *ir_dtype_name(ir_dtype t)
{
    return (unsigned)t < IR_DTYPE_COUNT ? dtypes[t].name : "undef";
}

size_t ir_dtype_size(ir_dtype t)
{
    return (unsigned)t < IR_DTYPE_COUNT ? dtypes[t].size : 0;
}

ir_dtype ir_dtype_from_name(const char *s, size_t len)
{
    for (int i = 1; i < IR_DTYPE_COUNT; i++)
        if (strlen(dtypes[i].name) == len && !memcmp(dtypes[i].name, s, len))
            return (ir_dtype)i;
    return IR_UNDEF;
}

ir_dtype ir_dtype_from_onnx(int code)
{
    for (int i = 1; i < IR_DTYPE_COUNT; i++)
        if (dtypes[i].onnx == code)
            return (ir_dtype)i;
    return IR_UNDEF;
}

int ir_dtype_to_onnx(ir_dtype t)
{
    return (unsigned)t < IR_DTYPE_COUNT ? dtypes[t].onnx : 0;
}

const char *ir_onnx_dtype_name(int code)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32",
        "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64",
        "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
        "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4",
        "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2",
    };
    if (code >= 0 && code < (int)(sizeof names / sizeof names[0]))
        return names[code];
    return "unknown";
}

bool ir_dtype_is_float(ir_dtype t) { return (unsigned)t < IR_DTYPE_COUNT && dtypes[t].cls == 'F'; }
bool ir_dtype_is_signed(ir_dtype t) { return (unsigned)t < IR_DTYPE_COUNT && dtypes[t].cls == 'S'; }
bool ir_dtype_is_int(ir_dtype t)
{
    return (unsigned)t < IR_DTYPE_COUNT && (dtypes[t].cls == 'S' || dtypes[t].cls == 'U');
}

/* ---- half precision ----------------------------------------------------- */

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float ir_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f)
        return u2f(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t ir_f32_to_f16(float f)
{
    uint32_t u = f2u(f);
    uint16_t sign = (u >> 16) & 0x8000;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) /* inf or nan (keep nan quiet and non-zero) */
        return sign | 0x7c00 | (a > 0x7f800000u ? 0x200 | ((a >> 13) & 0x3ff) : 0);
    if (a >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return sign | 0x7c00;
    if (a < 0x38800000u) {
        /* result is subnormal in f16: scale so the integer part is the
         * mantissa, and let the FPU round to nearest even. */
        float v = u2f(a) * 0x1p24f;
        return sign | (uint16_t)nearbyintf(v);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1); /* round to nearest even */
    return sign | (uint16_t)((r - 0x38000000u) >> 13);
}

float ir_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t ir_f32_to_bf16(float f)
{
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* ---- element access ------------------------------------------------------ */

double ir_tensor_getf(const ir_tensor *t, int64_t i)
{
    const void *p = t->data;
    switch (t->dtype) {
    case IR_F32: return ((const float *)p)[i];
    case IR_F64: return ((const double *)p)[i];
    case IR_F16: return ir_f16_to_f32(((const uint16_t *)p)[i]);
    case IR_BF16: return ir_bf16_to_f32(((const uint16_t *)p)[i]);
    case IR_U64: return (double)((const uint64_t *)p)[i];
    default: return (double)ir_tensor_geti(t, i);
    }
}

int64_t ir_tensor_geti(const ir_tensor *t, int64_t i)
{
    const void *p = t->data;
    switch (t->dtype) {
    case IR_I8: return ((const int8_t *)p)[i];
    case IR_U8: return ((const uint8_t *)p)[i];
    case IR_I16: return ((const int16_t *)p)[i];
    case IR_U16: return ((const uint16_t *)p)[i];
    case IR_I32: return ((const int32_t *)p)[i];
    case IR_U32: return ((const uint32_t *)p)[i];
    case IR_I64: return ((const int64_t *)p)[i];
    case IR_U64: return (int64_t)((const uint64_t *)p)[i];
    case IR_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: {
        double v = ir_tensor_getf(t, i);
        if (isnan(v))
            return 0;
        if (v >= 9.2233720368547758e18)
            return INT64_MAX;
        if (v <= -9.2233720368547758e18)
            return INT64_MIN;
        return (int64_t)v;
    }
    }
}

void ir_tensor_setf(ir_tensor *t, int64_t i, double v)
{
    void *p = t->data;
    switch (t->dtype) {
    case IR_F32: ((float *)p)[i] = (float)v; return;
    case IR_F64: ((double *)p)[i] = v; return;
    case IR_F16: ((uint16_t *)p)[i] = ir_f32_to_f16((float)v); return;
    case IR_BF16: ((uint16_t *)p)[i] = ir_f32_to_bf16((float)v); return;
    case IR_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    case IR_U64:
        ((uint64_t *)p)[i] = (isnan(v) || v <= 0) ? 0
                             : v >= 1.8446744073709552e19 ? UINT64_MAX : (uint64_t)v;
        return;
    default: {
        int64_t x;
        if (isnan(v))
            x = 0;
        else if (v >= 9.2233720368547758e18)
            x = INT64_MAX;
        else if (v <= -9.2233720368547758e18)
            x = INT64_MIN;
        else
            x = (int64_t)v;
        ir_tensor_seti(t, i, x);
    }
    }
}

void ir_tensor_seti(ir_tensor *t, int64_t i, int64_t v)
{
    void *p = t->data;
    switch (t->dtype) {
    case IR_I8: ((int8_t *)p)[i] = (int8_t)v; return;
    case IR_U8: ((uint8_t *)p)[i] = (uint8_t)v; return;
    case IR_I16: ((int16_t *)p)[i] = (int16_t)v; return;
    case IR_U16: ((uint16_t *)p)[i] = (uint16_t)v; return;
    case IR_I32: ((int32_t *)p)[i] = (int32_t)v; return;
    case IR_U32: ((uint32_t *)p)[i] = (uint32_t)v; return;
    case IR_I64: ((int64_t *)p)[i] = v; return;
    case IR_U64: ((uint64_t *)p)[i] = (uint64_t)v; return;
    case IR_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    default: ir_tensor_setf(t, i, (double)v); return;
    }
}

int ir_tensor_init(ir_tensor *t, ir_dtype dt, int rank, const int64_t *dims, icc_diag *d)
{
    if (rank < 0 || rank > IR_MAX_RANK)
        return ir_errorf(d, "rank %d exceeds the maximum of %d", rank, IR_MAX_RANK);
    if (dt <= IR_UNDEF || dt >= IR_DTYPE_COUNT)
        return ir_errorf(d, "tensor has no valid dtype");
    int64_t n, bytes;
    if (!ir_numel_ok(dims, rank, &n))
        return ir_errorf(d, "tensor dims are negative or their product overflows");
    if (!ir_mul_ok(n, (int64_t)ir_dtype_size(dt), &bytes) || bytes > IR_MAX_TENSOR_BYTES)
        return ir_errorf(d, "tensor of %lld elements of %s is too large",
                         (long long)n, ir_dtype_name(dt));
    t->dtype = dt;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->numel = n;
    t->nbytes = (size_t)bytes;
    return 0;
}

void ir_type_of_tensor(const ir_tensor *t, ir_type *out)
{
    out->dtype = t->dtype;
    out->rank = t->rank;
    for (int i = 0; i < t->rank; i++)
        out->dims[i] = ir_dim_const(t->dims[i]);
}

bool ir_type_is_static(const ir_type *t)
{
    if (t->rank < 0)
        return false;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i].sym != 0)
            return false;
    return true;
}

bool ir_type_dims_known(const ir_type *t)
{
    if (t->rank < 0)
        return false;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i].sym == IR_DIM_UNKNOWN)
            return false;
    return true;
}

bool ir_type_numel(const ir_type *t, int64_t *n)
{
    if (!ir_type_is_static(t))
        return false;
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        dims[i] = t->dims[i].v;
    return ir_numel_ok(dims, t->rank, n);
}

bool ir_type_eq(const ir_type *a, const ir_type *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i].sym != b->dims[i].sym || (a->dims[i].sym == 0 && a->dims[i].v != b->dims[i].v))
            return false;
    return true;
}

bool ir_type_same(const ir_type *a, const ir_type *b)
{
    if (a->dtype == IR_UNDEF || a->dtype != b->dtype || a->rank == IR_RANK_UNKNOWN || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (!ir_dim_eq(a->dims[i], b->dims[i]))
            return false;
    return true;
}
