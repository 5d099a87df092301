/* npy.c - NumPy .npy reading and writing.
 *
 * Format: magic "\x93NUMPY", version (1.0: u16 header length; 2.0/3.0:
 * u32), then a Python dict literal with 'descr', 'fortran_order' and
 * 'shape', padded so the data starts at a multiple of 64 (16 in old
 * files). Only little-endian or byte-order-free descrs are accepted.
 */
#include "runtime/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    const char *descr;
    ir_dtype dt;
} descrs[] = {
    {"<f4", IR_F32}, {"<f8", IR_F64}, {"<f2", IR_F16}, {"|i1", IR_I8},
    {"|u1", IR_U8}, {"<i2", IR_I16}, {"<u2", IR_U16}, {"<i4", IR_I32},
    {"<u4", IR_U32}, {"<i8", IR_I64}, {"<u8", IR_U64}, {"|b1", IR_BOOL},
    /* NumPy has no bfloat16; ml_dtypes writes it as raw 2-byte void. */
    {"<V2", IR_BF16},
};

/* Finds 'key': in the header dict and returns a pointer past the colon. */
static const char *dict_value(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

static int parse_header(const char *h, const char *path, ir_tensor *t, icc_diag *d)
{
    const char *p = dict_value(h, "descr");
    if (!p || *p != '\'')
        return ir_errorf(d, "%s: header has no 'descr'", path);
    p++;
    const char *e = strchr(p, '\'');
    if (!e)
        return ir_errorf(d, "%s: malformed 'descr'", path);
    size_t n = (size_t)(e - p);
    ir_dtype dt = IR_UNDEF;
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++) {
        const char *s = descrs[i].descr;
        /* '=' and '<' mean the same on little-endian hosts; '|' as well
         * for one-byte types. */
        if (n == 3 && !strncmp(p + 1, s + 1, 2) &&
            (p[0] == s[0] || p[0] == '=' || (p[0] == '<' && s[0] == '|') || (p[0] == '|' && s[0] == '<')))
            dt = descrs[i].dt;
    }
    if (dt == IR_UNDEF)
        return ir_errorf(d, "%s: unsupported dtype '%.*s'", path, (int)(n > 32 ? 32 : n), p);
    p = dict_value(h, "fortran_order");
    if (!p)
        return ir_errorf(d, "%s: header has no 'fortran_order'", path);
    if (!strncmp(p, "True", 4))
        return ir_errorf(d, "%s: Fortran-order arrays are not supported", path);
    if (strncmp(p, "False", 5) || !(p[5] == ',' || p[5] == ' ' || p[5] == '}'))
        return ir_errorf(d, "%s: malformed 'fortran_order' (True or False)", path);
    p = dict_value(h, "shape");
    if (!p || *p != '(')
        return ir_errorf(d, "%s: header has no 'shape'", path);
    p++;
    int64_t dims[IR_MAX_RANK];
    int rank = 0;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            break;
        if (*p < '0' || *p > '9')
            return ir_errorf(d, "%s: malformed 'shape'", path);
        if (rank == IR_MAX_RANK)
            return ir_errorf(d, "%s: rank exceeds the maximum of %d", path, IR_MAX_RANK);
        errno = 0;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (errno)
            return ir_errorf(d, "%s: dim out of range", path);
        dims[rank++] = v;
        p = end;
        if (*p == 'L')
            p++;
    }
    if (ir_tensor_init(t, dt, rank, dims, d) < 0) {
        ir_diag_prefix(d, "%s", path);
        return -1;
    }
    return 0;
}

int icc_npy_read(const char *path, ir_tensor *out, icc_diag *d)
{
    memset(out, 0, sizeof *out);
    FILE *f = ir_fopen_regular(path, d);
    if (!f)
        return -1;
    int rc = -1;
    char *hdr = NULL;
    unsigned char pre[12];
    struct stat st;
    if (fstat(fileno(f), &st) < 0) {
        ir_errorf(d, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6)) {
        ir_errorf(d, "%s: not a .npy file", path);
        goto done;
    }
    size_t hlen, off;
    if (pre[6] == 1) {
        hlen = pre[8] | (size_t)pre[9] << 8;
        off = 10;
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) {
            ir_errorf(d, "%s: truncated header", path);
            goto done;
        }
        hlen = pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        off = 12;
    } else {
        ir_errorf(d, "%s: unsupported .npy version %d", path, pre[6]);
        goto done;
    }
    if (hlen > 1 << 20 || (off_t)(off + hlen) > st.st_size) {
        ir_errorf(d, "%s: bad header length %zu", path, hlen);
        goto done;
    }
    hdr = malloc(hlen + 1);
    if (!hdr || fread(hdr, 1, hlen, f) != hlen) {
        ir_errorf(d, "%s: truncated header", path);
        goto done;
    }
    hdr[hlen] = 0;
    if (parse_header(hdr, path, out, d) < 0)
        goto done;
    if ((uint64_t)st.st_size - off - hlen != out->nbytes) {
        ir_errorf(d, "%s: holds %lld data bytes, shape and dtype need %zu", path,
                  (long long)(st.st_size - (off_t)(off + hlen)), out->nbytes);
        goto done;
    }
    out->data = malloc(out->nbytes ? out->nbytes : 1);
    if (!out->data) {
        ir_errorf(d, "%s: out of memory (%zu bytes)", path, out->nbytes);
        goto done;
    }
    if (fread(out->data, 1, out->nbytes, f) != out->nbytes) {
        ir_errorf(d, "%s: read error", path);
        free(out->data);
        out->data = NULL;
        goto done;
    }
    rc = 0;
done:
    free(hdr);
    fclose(f);
    return rc;
}

int icc_npy_write(const char *path, const ir_tensor *t, icc_diag *d)
{
    const char *descr = NULL;
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
        if (descrs[i].dt == t->dtype)
            descr = descrs[i].descr;
    if (!descr)
        return ir_errorf(d, "%s: dtype %s cannot be written as .npy", path, ir_dtype_name(t->dtype));
    char h[512];
    int n = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->rank; i++)
        n += snprintf(h + n, sizeof h - (size_t)n, "%lld%s", (long long)t->dims[i],
                      t->rank == 1 ? "," : i + 1 < t->rank ? ", " : "");
    n += snprintf(h + n, sizeof h - (size_t)n, "), }");
    /* Pad with spaces and a newline so the data starts at a multiple of 64. */
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    memset(h + n, ' ', pad);
    n += (int)pad;
    h[n++] = '\n';
    size_t tmplen = strlen(path) + 16;
    char *tmp = malloc(tmplen);
    if (!tmp)
        return ir_errorf(d, "out of memory");
    snprintf(tmp, tmplen, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        ir_errorf(d, "%s: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 0xff),
                             (unsigned char)(n >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(h, 1, (size_t)n, f) == (size_t)n &&
              (t->nbytes == 0 || fwrite(t->data, 1, t->nbytes, f) == t->nbytes);
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) < 0) {
        ir_errorf(d, "%s: write failed: %s", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}
