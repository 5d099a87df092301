/* tensor.c - TensorProto decoding: typed fields, raw_data, external data,
 * and the serialized-TensorProto file loader (the ONNX test data format).
 *
 * Every size is checked before anything is allocated: dims must be
 * non-negative with a product that does not overflow in any order, the
 * byte size must stay under IR_MAX_TENSOR_BYTES, and the backing data
 * (typed field count, raw_data length, or the external file's range) must
 * match the declared size exactly. External data is resolved inside the
 * model's folder only: no absolute paths, no `..`, no symlinks (each path
 * component is opened with O_NOFOLLOW relative to its parent), regular
 * files only, and offset+length checked against fstat before reading.
 * A large external payload is mapped, not read (fe_tensor_map), so a
 * model's weights are never all on the heap at once.
 */
#include "frontend/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The typed field that backs a dtype when raw_data is absent; ONNX stores
 * every type narrower than 32 bits (and the 16-bit floats' bit patterns)
 * in int32_data, and unsigned 32/64-bit types in uint64_data. */
typedef enum { F_FLOAT, F_INT32, F_INT64, F_DOUBLE, F_UINT64 } typed_field;

static const char *const field_names[] = {"float_data", "int32_data", "int64_data",
                                          "double_data", "uint64_data"};

static typed_field field_of(ir_dtype t)
{
    switch (t) {
    case IR_F32: return F_FLOAT;
    case IR_I64: return F_INT64;
    case IR_F64: return F_DOUBLE;
    case IR_U32:
    case IR_U64: return F_UINT64;
    default: return F_INT32;
    }
}

static size_t field_count(const Onnx__TensorProto *tp, typed_field f)
{
    switch (f) {
    case F_FLOAT: return tp->n_float_data;
    case F_INT32: return tp->n_int32_data;
    case F_INT64: return tp->n_int64_data;
    case F_DOUBLE: return tp->n_double_data;
    case F_UINT64: return tp->n_uint64_data;
    }
    return 0;
}

/* Strict decimal for external_data's offset and length. */
static bool parse_u63(const char *s, int64_t *out)
{
    if (!*s)
        return false;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || !ir_mul_ok(v, 10, &v) || !ir_add_ok(v, *s - '0', &v))
            return false;
    }
    *out = v;
    return true;
}

/* Opens location below base_dir, refusing anything that could leave it. */
static int open_inside(const char *base_dir, const char *loc, const char *label, icc_diag *d)
{
    if (!*loc)
        return ir_errorf(d, "%s: external data location is empty", label);
    if (loc[0] == '/')
        return ir_errorf(d, "%s: external data location '%.200s' is an absolute path", label, loc);
    for (const char *p = loc; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return ir_errorf(d, "%s: external data location '%.200s' leaves the model's folder",
                             label, loc);
        p += n;
        if (*p == '/')
            p++;
    }
    int dfd = open(base_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return ir_errorf(d, "%s: cannot open the model's folder '%.200s': %s", label, base_dir,
                         strerror(errno));
    const char *p = loc;
    char comp[256];
    for (;;) {
        size_t n = strcspn(p, "/");
        bool last = p[n] == 0;
        if (n >= sizeof comp) {
            close(dfd);
            return ir_errorf(d, "%s: external data location '%.200s' has a component that is "
                             "too long", label, loc);
        }
        memcpy(comp, p, n);
        comp[n] = 0;
        p += n + !last;
        if ((n == 0 || (n == 1 && comp[0] == '.')) && !last)
            continue;
        if (n == 0 || (n == 1 && comp[0] == '.')) {
            close(dfd);
            return ir_errorf(d, "%s: external data location '%.200s' names a folder", label, loc);
        }
        /* O_NONBLOCK: a FIFO must not block the open; it fails S_ISREG. */
        int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY);
        int fd = openat(dfd, comp, flags);
        int e = errno;
        close(dfd);
        if (fd < 0) {
            if (e == ELOOP || (e == ENOTDIR && !last))
                return ir_errorf(d, "%s: external data location '%.200s': '%.200s' is a symlink "
                                 "or not a folder", label, loc, comp);
            return ir_errorf(d, "%s: external data '%.200s': %s", label, loc, strerror(e));
        }
        if (last)
            return fd;
        dfd = fd;
    }
}

/* Parses external_data and opens the file; checks the range fits. */
static int prepare_external(const Onnx__TensorProto *tp, const char *base_dir, const char *label,
                            fe_tensor_src *s, icc_diag *d)
{
    const char *loc = NULL;
    int64_t offset = 0, length = -1;
    bool have_off = false;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        const char *k = e->key ? e->key : "", *v = e->value ? e->value : "";
        if (!strcmp(k, "location")) {
            if (loc)
                return ir_errorf(d, "%s: external data key 'location' given twice", label);
            loc = v;
        } else if (!strcmp(k, "offset") || !strcmp(k, "length")) {
            bool is_off = k[0] == 'o';
            if ((is_off && have_off) || (!is_off && length >= 0))
                return ir_errorf(d, "%s: external data key '%s' given twice", label, k);
            int64_t x;
            if (!parse_u63(v, &x))
                return ir_errorf(d, "%s: external data %s '%.40s' is not a valid byte count",
                                 label, k, v);
            if (is_off) {
                offset = x;
                have_off = true;
            } else {
                length = x;
            }
        }
        /* "checksum" and keys from newer writers carry nothing we need. */
    }
    if (!loc)
        return ir_errorf(d, "%s: external data has no 'location'", label);
    if (!base_dir)
        return ir_errorf(d, "%s: external data '%.200s' is not allowed when loading from memory",
                         label, loc);
    if (length >= 0 && (uint64_t)length != s->t.nbytes)
        return ir_errorf(d, "%s: external data length %lld does not match the declared size of "
                         "%zu bytes", label, (long long)length, s->t.nbytes);
    int fd = open_inside(base_dir, loc, label, d);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ir_errorf(d, "%s: external data '%.200s' is not a regular file", label, loc);
    }
    int64_t end;
    if (!ir_add_ok(offset, (int64_t)s->t.nbytes, &end) || end > (int64_t)st.st_size) {
        close(fd);
        return ir_errorf(d, "%s: external data '%.200s': offset %lld + length %zu is past the end "
                         "of the file (%lld bytes)", label, loc, (long long)offset, s->t.nbytes,
                         (long long)st.st_size);
    }
    s->fd = fd;
    s->offset = offset;
    return 0;
}

int fe_tensor_prepare(const Onnx__TensorProto *tp, const char *base_dir, const char *label,
                      fe_tensor_src *s, icc_diag *d)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    int code = tp->has_data_type ? tp->data_type : 0;
    ir_dtype dt = ir_dtype_from_onnx(code);
    if (dt == IR_UNDEF)
        return ir_errorf(d, "%s: dtype %s (%d) is not supported", label, ir_onnx_dtype_name(code),
                         code);
    if (tp->n_dims > IR_MAX_RANK)
        return ir_errorf(d, "%s: %zu dims exceed the maximum rank of %d", label, tp->n_dims,
                         IR_MAX_RANK);
    for (size_t i = 0; i < tp->n_dims; i++)
        if (tp->dims[i] < 0)
            return ir_errorf(d, "%s: dim %zu is negative (%lld)", label, i, (long long)tp->dims[i]);
    int64_t numel, bytes;
    if (!ir_numel_ok(tp->dims, (int)tp->n_dims, &numel))
        return ir_errorf(d, "%s: the product of the dims overflows", label);
    if (!ir_mul_ok(numel, (int64_t)ir_dtype_size(dt), &bytes) || bytes > IR_MAX_TENSOR_BYTES)
        return ir_errorf(d, "%s: %lld elements of %s exceed the tensor size limit", label,
                         (long long)numel, ir_dtype_name(dt));
    if (ir_tensor_init(&s->t, dt, (int)tp->n_dims, tp->dims, d) < 0)
        return -1;
    if (tp->segment)
        return ir_errorf(d, "%s: segmented tensors are not supported", label);

    size_t typed = tp->n_float_data + tp->n_int32_data + tp->n_int64_data + tp->n_double_data +
                   tp->n_uint64_data + tp->n_string_data;
    bool external = tp->has_data_location &&
                    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (external || tp->has_raw_data) {
        if (typed)
            return ir_errorf(d, "%s: has both %s and typed data fields", label,
                             external ? "external data" : "raw_data");
        if (external && tp->has_raw_data)
            return ir_errorf(d, "%s: has both external data and raw_data", label);
    }
    if (external)
        return prepare_external(tp, base_dir, label, s, d);
    if (tp->has_raw_data) {
        if (tp->raw_data.len != s->t.nbytes)
            return ir_errorf(d, "%s: raw_data has %zu bytes, expected %zu for %lld elements of %s",
                             label, tp->raw_data.len, s->t.nbytes, (long long)numel,
                             ir_dtype_name(dt));
        return 0;
    }
    typed_field f = field_of(dt);
    size_t have = field_count(tp, f);
    if (have != (uint64_t)numel)
        return ir_errorf(d, "%s: %s has %zu values, expected %lld (dtype %s)", label,
                         field_names[f], have, (long long)numel, ir_onnx_dtype_name(code));
    if (typed != have)
        return ir_errorf(d, "%s: has data in fields other than %s", label, field_names[f]);
    return 0;
}

void fe_tensor_close(fe_tensor_src *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

/* ONNX stores raw_data little-endian; swap on big-endian hosts. */
static void from_little_endian(void *p, size_t esize, int64_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    uint8_t *b = p;
    for (int64_t i = 0; i < n; i++, b += esize)
        for (size_t k = 0; k < esize / 2; k++) {
            uint8_t t = b[k];
            b[k] = b[esize - 1 - k];
            b[esize - 1 - k] = t;
        }
#else
    (void)p, (void)esize, (void)n;
#endif
}

static int read_external(fe_tensor_src *s, void *dst, const char *label, icc_diag *d)
{
    size_t got = 0;
    while (got < s->t.nbytes) {
        ssize_t r = pread(s->fd, (uint8_t *)dst + got, s->t.nbytes - got,
                          (off_t)(s->offset + (int64_t)got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return ir_errorf(d, "%s: reading external data failed: %s", label,
                             r < 0 ? strerror(errno) : "file shrank while reading");
        got += (size_t)r;
    }
    return 0;
}

int fe_tensor_read(const Onnx__TensorProto *tp, fe_tensor_src *s, void *dst, const char *label,
                   icc_diag *d)
{
    ir_tensor *t = &s->t;
    size_t es = ir_dtype_size(t->dtype);
    int rc = 0;
    if (s->fd >= 0) {
        rc = read_external(s, dst, label, d);
        fe_tensor_close(s);
        if (rc < 0)
            return -1;
        from_little_endian(dst, es, t->numel);
    } else if (tp->has_raw_data) {
        if (t->nbytes)
            memcpy(dst, tp->raw_data.data, t->nbytes);
        from_little_endian(dst, es, t->numel);
    } else if (t->numel) {
        switch (field_of(t->dtype)) {
        case F_FLOAT:
            memcpy(dst, tp->float_data, t->nbytes);
            break;
        case F_INT64:
            memcpy(dst, tp->int64_data, t->nbytes);
            break;
        case F_DOUBLE:
            memcpy(dst, tp->double_data, t->nbytes);
            break;
        case F_UINT64:
            for (int64_t i = 0; i < t->numel; i++) {
                if (t->dtype == IR_U64)
                    ((uint64_t *)dst)[i] = tp->uint64_data[i];
                else
                    ((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i];
            }
            break;
        case F_INT32:
            for (int64_t i = 0; i < t->numel; i++) {
                int32_t v = tp->int32_data[i];
                switch (es) {
                case 1: ((uint8_t *)dst)[i] = (uint8_t)v; break;
                case 2: ((uint16_t *)dst)[i] = (uint16_t)v; break;
                default: ((int32_t *)dst)[i] = v; break;
                }
            }
            break;
        }
    }
    /* Any non-zero byte is true; the IR keeps bools as exactly 0 or 1. */
    if (t->dtype == IR_BOOL)
        for (int64_t i = 0; i < t->numel; i++)
            ((uint8_t *)dst)[i] = ((uint8_t *)dst)[i] != 0;
    return 0;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define FE_LITTLE_ENDIAN 0
#else
#define FE_LITTLE_ENDIAN 1
#endif

void *fe_tensor_map(fe_tensor_src *s, ir_arena *a)
{
    /* Only where the file's bytes are the IR's bytes (little-endian, not
     * bool, which is normalised to 0/1) and the payload is aligned for
     * its dtype (the mapping keeps the offset's alignment within a page;
     * onnx packs tensors back to back, so 64 would miss most); small
     * tensors are cheaper to read. */
    size_t es = ir_dtype_size(s->t.dtype);
    if (s->fd < 0 || !FE_LITTLE_ENDIAN || s->t.dtype == IR_BOOL || s->t.nbytes < FE_MAP_MIN_BYTES ||
        (es > 1 && s->offset % (int64_t)es))
        return NULL;
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0)
        return NULL;
    int64_t start = s->offset - s->offset % pg;
    size_t len = (size_t)(s->offset - start) + s->t.nbytes;
    /* private and writable: a pass that writes a constant in place changes
     * this process's copy of the page, never the model's file */
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, s->fd, (off_t)start);
    if (m == MAP_FAILED)
        return NULL;
    if (ir_arena_adopt_mapping(a, m, len) < 0) {
        munmap(m, len);
        return NULL;
    }
    fe_tensor_close(s);
    return (unsigned char *)m + (s->offset - start);
}

int fe_tensor_decode(const Onnx__TensorProto *tp, const char *base_dir, const char *label,
                     ir_arena *a, ir_tensor *out, icc_diag *d)
{
    fe_tensor_src s;
    if (fe_tensor_prepare(tp, base_dir, label, &s, d) < 0)
        return -1;
    void *data = ir_arena_alloc(a, s.t.nbytes);
    if (!data) {
        fe_tensor_close(&s);
        return ir_errorf(d, "%s: out of memory (%zu bytes)", label, s.t.nbytes);
    }
    if (fe_tensor_read(tp, &s, data, label, d) < 0)
        return -1;
    *out = s.t;
    out->data = data;
    return 0;
}

int icc_onnx_load_tensor_file(const char *path, ir_tensor *out, char **name, icc_diag *d)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    Onnx__TensorProto *tp = NULL;
    char *dir = NULL, *nm = NULL;
    void *data = NULL;
    char label[256];
    fe_tensor_src s = {.fd = -1};

    if (name)
        *name = NULL;
    if (fe_read_file(path, FE_MAX_PROTO_BYTES, &buf, &len, d) < 0 ||
        fe_wire_check(buf, len, &onnx__tensor_proto__descriptor, d) < 0)
        goto fail;
    tp = onnx__tensor_proto__unpack(NULL, len, buf);
    if (!tp) {
        ir_errorf(d, "malformed protobuf: not a TensorProto");
        goto fail;
    }
    free(buf);
    buf = NULL;
    snprintf(label, sizeof label, "tensor '%.200s'", tp->name ? tp->name : "");
    if (!(dir = fe_dirname(path)) || (name && !(nm = strdup(tp->name ? tp->name : "")))) {
        ir_errorf(d, "out of memory");
        goto fail;
    }
    if (fe_tensor_prepare(tp, dir, label, &s, d) < 0)
        goto fail;
    data = malloc(s.t.nbytes ? s.t.nbytes : 1);
    if (!data) {
        fe_tensor_close(&s);
        ir_errorf(d, "%s: out of memory (%zu bytes)", label, s.t.nbytes);
        goto fail;
    }
    if (fe_tensor_read(tp, &s, data, label, d) < 0)
        goto fail;
    *out = s.t;
    out->data = data;
    if (name)
        *name = nm;
    onnx__tensor_proto__free_unpacked(tp, NULL);
    free(dir);
    return 0;
fail:
    ir_diag_prefix(d, "%s", path);
    free(buf);
    free(data);
    free(dir);
    free(nm);
    if (tp)
        onnx__tensor_proto__free_unpacked(tp, NULL);
    return -1;
}
