/* wire.c - checks on raw protobuf bytes before protobuf-c sees them, and
 * bounded file reading.
 *
 * protobuf-c unpacks nested messages by recursion without a depth limit,
 * so a hostile file nested 100,000 deep would overflow the stack. The
 * walker here descends the same sub-message fields protobuf-c would (it
 * reads them from the generated descriptors, so it can never disagree with
 * the schema the decoder was built from), counts depth, and also rejects
 * malformed varints and lengths that run past their enclosing message.
 * Length-delimited fields that are not messages (strings, bytes, packed
 * scalars, unknown fields) are skipped without descending.
 */
#include "frontend/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct walker {
    const uint8_t *base;       /* start of the whole buffer, for offsets */
    icc_diag *d;
} walker;

/* A varint is at most 10 bytes, and the 10th may only carry bit 63. */
static bool read_varint(const uint8_t *p, size_t len, size_t *i, uint64_t *out)
{
    uint64_t v = 0;
    for (int k = 0; k < 10; k++) {
        if (*i >= len)
            return false;
        uint8_t b = p[(*i)++];
        if (k == 9 && b > 1)
            return false;
        v |= (uint64_t)(b & 0x7f) << (7 * k);
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

static int bad(walker *w, size_t at, const char *what)
{
    return ir_errorf(w->d, "malformed protobuf: %s at byte %zu", what, at);
}

static int walk(walker *w, const uint8_t *p, size_t len, const ProtobufCMessageDescriptor *desc,
                int depth)
{
    if (depth > ICC_ONNX_MAX_DEPTH)
        return ir_errorf(w->d, "messages nested deeper than %d levels (at byte %zu, in %s)",
                         ICC_ONNX_MAX_DEPTH, (size_t)(p - w->base), desc->short_name);
    size_t i = 0;
    while (i < len) {
        size_t at = (size_t)(p - w->base) + i;
        uint64_t key, v;
        if (!read_varint(p, len, &i, &key))
            return bad(w, at, "bad or truncated field key");
        uint64_t field = key >> 3;
        unsigned wt = (unsigned)(key & 7);
        if (field == 0 || field > 0x1fffffff)
            return bad(w, at, "invalid field number");
        switch (wt) {
        case 0:
            if (!read_varint(p, len, &i, &v))
                return bad(w, at, "bad or truncated varint");
            break;
        case 1:
        case 5: {
            size_t n = wt == 1 ? 8 : 4;
            if (len - i < n)
                return bad(w, at, "truncated fixed-size field");
            i += n;
            break;
        }
        case 2: {
            if (!read_varint(p, len, &i, &v))
                return bad(w, at, "bad or truncated length");
            if (v > len - i)
                return ir_errorf(w->d, "malformed protobuf: field at byte %zu claims %llu bytes, "
                                 "only %zu remain", at, (unsigned long long)v, len - i);
            const ProtobufCFieldDescriptor *f =
                protobuf_c_message_descriptor_get_field(desc, (unsigned)field);
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                walk(w, p + i, (size_t)v, f->descriptor, depth + 1) < 0)
                return -1;
            i += (size_t)v;
            break;
        }
        case 3:
        case 4:
            return bad(w, at, "group field (not supported)");
        default:
            return ir_errorf(w->d, "malformed protobuf: invalid wire type %u at byte %zu", wt, at);
        }
    }
    return 0;
}

int fe_wire_check(const uint8_t *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                  icc_diag *d)
{
    walker w = {buf, d};
    return walk(&w, buf, len, desc, 1);
}

int fe_read_file(const char *path, size_t limit, uint8_t **buf, size_t *len, icc_diag *d)
{
    /* O_NONBLOCK: opening a FIFO must not hang; regular files ignore it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return ir_errorf(d, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ir_errorf(d, "not a regular file");
    }
    if ((uint64_t)st.st_size > limit) {
        close(fd);
        return ir_errorf(d, "file of %lld bytes exceeds the limit of %zu", (long long)st.st_size,
                         limit);
    }
    size_t n = (size_t)st.st_size;
    uint8_t *b = malloc(n ? n : 1);
    if (!b) {
        close(fd);
        return ir_errorf(d, "out of memory reading %zu bytes", n);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            free(b);
            close(fd);
            return ir_errorf(d, "read failed: %s", e ? strerror(e) : "file shrank while reading");
        }
        got += (size_t)r;
    }
    close(fd);
    *buf = b;
    *len = n;
    return 0;
}

char *fe_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}
