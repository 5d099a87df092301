/* model.c - loading a compiled model and reading its descriptor.
 *
 * A model .so exports one read-only descriptor, `<prefix>_model`. Opening
 * it dlopens the file (RTLD_NOW: unresolved symbols fail here, not in the
 * middle of a run), then checks, in this order and before any of the
 * model's code runs: the ABI version (first, since a different version
 * may lay the rest out differently), the descriptor's size and internal
 * consistency, and every CPU feature it names. External weights are mapped
 * read-only and their checksum verified. Last the model's load-time
 * kernels (desc->init, ABI 2) run, once, into a buffer the model owns.
 * The result is immutable, so threads share it freely. Also here: the per-thread last-error message
 * and the symbol binding that icc_run and icc_output_dims share.
 */
#define _GNU_SOURCE
#include "runtime/cpu.h"
#include "runtime/rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_RANK = 64, MAX_IO = 1 << 20, MAX_PREFIX = 128 };

static _Thread_local char last_error[512];

const char *icc_last_error(void) { return last_error; }

void rt_set_last_error(const char *msg) { snprintf(last_error, sizeof last_error, "%s", msg); }

icc_status rt_fail(icc_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return st;
}

size_t icc_dtype_size(int32_t dtype)
{
    switch (dtype) {
    case ICC_U8: case ICC_I8: case ICC_BOOL: return 1;
    case ICC_U16: case ICC_I16: case ICC_F16: case ICC_BF16: return 2;
    case ICC_F32: case ICC_I32: case ICC_U32: return 4;
    case ICC_I64: case ICC_U64: case ICC_F64: return 8;
    default: return 0;
    }
}

static const char *dtype_name(int32_t dtype)
{
    switch (dtype) {
    case ICC_F32: return "float32"; case ICC_U8: return "uint8"; case ICC_I8: return "int8";
    case ICC_U16: return "uint16"; case ICC_I16: return "int16"; case ICC_I32: return "int32";
    case ICC_I64: return "int64"; case ICC_BOOL: return "bool"; case ICC_F16: return "float16";
    case ICC_F64: return "float64"; case ICC_U32: return "uint32"; case ICC_U64: return "uint64";
    case ICC_BF16: return "bfloat16";
    default: return "unknown";
    }
}

static int symbol_index(const icc_model_desc *d, const char *name)
{
    for (int s = 0; s < d->nsymbols; s++)
        if (!strcmp(d->symbols[s], name))
            return s;
    return -1;
}

static icc_status check_tensor(const icc_model_desc *d, const char *who, const char *kind, int i,
                               const icc_tensor_desc *t)
{
    if (!t->name)
        return rt_fail(ICC_ERR_ABI, "%s: %s %d has no name", who, kind, i);
    if (!icc_dtype_size(t->dtype))
        return rt_fail(ICC_ERR_ABI, "%s: %s '%s' has unknown dtype %d", who, kind, t->name,
                       (int)t->dtype);
    if (t->rank < 0 || t->rank > MAX_RANK || (t->rank > 0 && !t->dims))
        return rt_fail(ICC_ERR_ABI, "%s: %s '%s' has a bad rank or no dims", who, kind, t->name);
    for (int k = 0; k < t->rank; k++) {
        if (t->dims[k] >= 0)
            continue;
        if (t->dims[k] != -1 || !t->dim_names || !t->dim_names[k] ||
            symbol_index(d, t->dim_names[k]) < 0)
            return rt_fail(ICC_ERR_ABI, "%s: %s '%s' dim %d is neither fixed nor a known symbol",
                           who, kind, t->name, k);
    }
    return ICC_OK;
}

static int symbol_bound_by_input(const icc_model_desc *d, const char *sym)
{
    for (int i = 0; i < d->ninputs; i++)
        for (int k = 0; k < d->inputs[i].rank; k++)
            if (d->inputs[i].dims[k] == -1 && !strcmp(d->inputs[i].dim_names[k], sym))
                return 1;
    return 0;
}

/* Every feature of the comma-separated list: present, and enabled where
 * the OS wants a request. Entries may carry LLVM's '+'; '-' entries
 * (features turned off) require nothing. */
static icc_status check_cpu(const char *who, const char *list)
{
    for (const char *p = list; p && *p;) {
        while (*p == ',' || *p == ' ')
            p++;
        size_t n = strcspn(p, ", ");
        if (!n)
            break;
        char name[64];
        if (n >= sizeof name)
            return rt_fail(ICC_ERR_CPU, "%s: CPU feature '%.*s...' is unknown to this runtime", who,
                           40, p);
        memcpy(name, p, n);
        name[n] = 0;
        p += n;
        if (name[0] == '-')
            continue;
        const char *f = name[0] == '+' ? name + 1 : name;
        if (!icc_cpu_known(f))
            return rt_fail(ICC_ERR_CPU, "%s: needs CPU feature '%s', which this runtime cannot check",
                           who, f);
        if (!icc_cpu_has(f))
            return rt_fail(ICC_ERR_CPU, "%s: needs CPU feature '%s', which this CPU (or OS) lacks",
                           who, f);
        if (icc_cpu_enable(f) < 0)
            return rt_fail(ICC_ERR_CPU, "%s: needs CPU feature '%s', which the OS refused to enable",
                           who, f);
    }
    return ICC_OK;
}

/* Whether the descriptor has the init fields (ABI 2, appended: read only
 * when desc_size covers them, as for the kernel table). */
static bool has_init(const icc_model_desc *d)
{
    return d->abi_version >= 2 && d->desc_size >= offsetof(icc_model_desc, init) + sizeof d->init;
}

/* How many of the symbols are derived (icc_model_desc.derived, appended
 * to ABI 2: 0 for a descriptor without the field). */
static int nderived(const icc_model_desc *d)
{
    return d->abi_version >= 2 && d->desc_size >= offsetof(icc_model_desc, reserved4) + sizeof d->reserved4
               ? d->nderived
               : 0;
}

/* Derived symbol i's definition: operands name earlier symbols, the
 * divisions a positive constant, the message one of the table's. */
static bool derived_ok(const icc_model_desc *d, int i)
{
    const icc_sym_def *df = &d->derived[i];
    int self = d->nsymbols - nderived(d) + i, op = df->op & ~ICC_SYM_IN_SUBGRAPH;
    if (op < ICC_SYM_ADD || op > ICC_SYM_CEILDIV || df->a_sym < -1 || df->a_sym >= self ||
        df->b_sym < -1 || df->b_sym >= self || df->message < 0 || df->message > d->nmessages)
        return false;
    return op < ICC_SYM_FLOORDIV || (df->b_sym == -1 && df->b > 0);
}

/* Everything the runtime later relies on without checking again. */
static icc_status check_desc(const icc_model_desc *d, const char *who)
{
    if (d->abi_version < ICC_ABI_VERSION_MIN || d->abi_version > ICC_ABI_VERSION)
        return rt_fail(ICC_ERR_ABI, "%s: model ABI version %u, this runtime speaks versions %d to %d", who,
                       d->abi_version, ICC_ABI_VERSION_MIN, ICC_ABI_VERSION);
    if (has_init(d) && (d->init_bytes > ((uint64_t)1 << 46) || (d->init_bytes && !d->init)))
        return rt_fail(ICC_ERR_ABI, "%s: descriptor has a bad init function or init size", who);
    if (d->desc_size < offsetof(icc_model_desc, kernels))
        return rt_fail(ICC_ERR_ABI, "%s: descriptor is %u bytes, version %d needs %zu", who,
                       d->desc_size, ICC_ABI_VERSION, offsetof(icc_model_desc, kernels));
    if (!d->run && !rt_is_cuda(d))
        return rt_fail(ICC_ERR_ABI, "%s: descriptor has no entry point", who);
    if (d->ninputs < 0 || d->ninputs > MAX_IO || d->noutputs < 0 || d->noutputs > MAX_IO ||
        (d->ninputs && !d->inputs) || (d->noutputs && !d->outputs))
        return rt_fail(ICC_ERR_ABI, "%s: descriptor has bad input/output tables", who);
    if (d->nsymbols < 0 || d->nsymbols > MAX_IO || (d->nsymbols && !d->symbols))
        return rt_fail(ICC_ERR_ABI, "%s: descriptor has a bad symbol table", who);
    for (int s = 0; s < d->nsymbols; s++)
        if (!d->symbols[s])
            return rt_fail(ICC_ERR_ABI, "%s: symbol %d has no name", who, s);
    if (d->nmessages < 0 || (d->nmessages && !d->messages))
        return rt_fail(ICC_ERR_ABI, "%s: descriptor has a bad message table", who);
    for (int i = 0; i < d->nmessages; i++)
        if (!d->messages[i])
            return rt_fail(ICC_ERR_ABI, "%s: message %d is missing", who, i);
    int nd = nderived(d);
    if (nd < 0 || nd > d->nsymbols || (nd && !d->derived))
        return rt_fail(ICC_ERR_ABI, "%s: descriptor has a bad derived-symbol table", who);
    for (int i = 0; i < nd; i++)
        if (!derived_ok(d, i))
            return rt_fail(ICC_ERR_ABI, "%s: derived symbol '%s' has a bad definition", who,
                           d->symbols[d->nsymbols - nd + i]);
    int nk = rt_nkernels(d);
    if (nk < 0 || (nk && !d->kernels))
        return rt_fail(ICC_ERR_ABI, "%s: descriptor has a bad kernel table", who);
    for (int k = 0; k < nk; k++)
        if (!d->kernels[k].name || !d->kernels[k].ops)
            return rt_fail(ICC_ERR_ABI, "%s: kernel %d has no name", who, k);
    if (d->nsymbols && !d->arena_size)
        return rt_fail(ICC_ERR_ABI, "%s: model has symbols but no arena_size function", who);
    icc_status st;
    for (int i = 0; i < d->ninputs; i++)
        if ((st = check_tensor(d, who, "input", i, &d->inputs[i])) != ICC_OK)
            return st;
    for (int i = 0; i < d->noutputs; i++)
        if ((st = check_tensor(d, who, "output", i, &d->outputs[i])) != ICC_OK)
            return st;
    /* Output-only symbols would be data-dependent shapes, which this ABI
     * cannot return. */
    for (int s = 0; s < d->nsymbols - nderived(d); s++)
        if (!symbol_bound_by_input(d, d->symbols[s]))
            return rt_fail(ICC_ERR_ABI, "%s: symbol '%s' is not a dim of any input", who,
                           d->symbols[s]);
    icc_status cst = rt_cuda_check(d, who);
    return cst != ICC_OK ? cst : check_cpu(who, d->cpu_features);
}

/* FNV-1a, 64 bit: what the compiler records for the weights. */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* `<path less .so>.weights`, mapped read-only. */
static icc_status map_weights(icc_model *m, const char *path)
{
    const icc_model_desc *d = m->desc;
    size_t len = strlen(path);
    if (len > 3 && !strcmp(path + len - 3, ".so"))
        len -= 3;
    char *wpath = malloc(len + sizeof ".weights");
    if (!wpath)
        return rt_fail(ICC_ERR_NOMEM, "%s: out of memory", path);
    memcpy(wpath, path, len);
    strcpy(wpath + len, ".weights");
    icc_status st = ICC_OK;
    struct stat sb;
    /* O_NONBLOCK: a FIFO in the weights' place must not hang the open. */
    int fd = open(wpath, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        st = rt_fail(ICC_ERR_IO, "%s: cannot open the model's weights: %s", wpath, strerror(errno));
    } else if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        st = rt_fail(ICC_ERR_IO, "%s: the model's weights are not a regular file", wpath);
    } else if ((uint64_t)sb.st_size != d->weights_bytes) {
        st = rt_fail(ICC_ERR_IO, "%s: %lld bytes, the model wants %llu", wpath,
                     (long long)sb.st_size, (unsigned long long)d->weights_bytes);
    } else {
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            st = rt_fail(ICC_ERR_IO, "%s: cannot map: %s", wpath, strerror(errno));
        } else if (fnv1a(p, (size_t)sb.st_size) != d->weights_checksum) {
            munmap(p, (size_t)sb.st_size);
            st = rt_fail(ICC_ERR_IO, "%s: checksum mismatch (not this model's weights)", wpath);
        } else {
            m->wmap = p;
            m->wmap_len = (size_t)sb.st_size;
            m->weights = p;
        }
    }
    if (fd >= 0)
        close(fd);
    free(wpath);
    return st;
}

/* The load-time kernels (desc->init): run once into m->init, a buffer
 * the model owns, on a pool of the default thread count that lives only
 * for this call. A failure (no memory, a kernel's error) frees the buffer
 * and is open's. */
static icc_status run_init(icc_model *m, const char *who)
{
    const icc_model_desc *d = m->desc;
    if (!has_init(d) || !d->init_bytes)
        return ICC_OK;
    if (!(m->init = rt_alloc(NULL, (size_t)d->init_bytes, 64)))
        return rt_fail(ICC_ERR_NOMEM, "%s: out of memory for the %llu bytes computed at load", who,
                       (unsigned long long)d->init_bytes);
    char err[256];
    int threads = rt_default_threads(err, sizeof err);
    rt_pool pool;
    rt_pool_init(&pool, threads > 0 ? threads : 1, NULL);
    icc_kernel_env env = {.parallel_for = rt_parallel_for, .pool = &pool, .nthreads = pool.nthreads,
                          .weights = m->weights, .init = m->init};
    int rc = d->init(NULL, NULL, NULL, m->init, &env);
    rt_pool_fini(&pool);
    if (rc == 0)
        return ICC_OK;
    free(m->init);
    m->init = NULL;
    int why = rc >> 8;
    rc &= 0xff;
    if (why > 0 && why <= d->nmessages && rc > 0 && rc <= ICC_ERR_INTERNAL)
        return rt_fail((icc_status)rc, "%s: at load: %s", who, d->messages[why - 1]);
    return rt_fail(rc > 0 && rc <= ICC_ERR_INTERNAL ? (icc_status)rc : ICC_ERR_INTERNAL,
                   "%s: the code run at load failed with status %d", who, rc);
}

static int is_ident(const char *s)
{
    if (!*s || (*s >= '0' && *s <= '9'))
        return 0;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

icc_status icc_model_open(const char *path, const char *prefix, icc_model **out)
{
    if (!out)
        return rt_fail(ICC_ERR_INVALID, "icc_model_open: out is NULL");
    *out = NULL;
    if (!path || !*path)
        return rt_fail(ICC_ERR_INVALID, "icc_model_open: no path");
    if (!prefix)
        prefix = "model";
    if (strlen(prefix) > MAX_PREFIX || !is_ident(prefix))
        return rt_fail(ICC_ERR_INVALID, "icc_model_open: prefix '%.40s' is not a C identifier",
                       prefix);
    /* dlopen would report a missing file and a broken one alike. */
    if (access(path, R_OK) != 0)
        return rt_fail(ICC_ERR_IO, "%s: %s", path, strerror(errno));
    /* Without a '/', dlopen searches the library path instead. */
    char *full = malloc(strlen(path) + 3);
    if (!full)
        return rt_fail(ICC_ERR_NOMEM, "%s: out of memory", path);
    sprintf(full, "%s%s", strchr(path, '/') ? "" : "./", path);
    void *dl = dlopen(full, RTLD_NOW | RTLD_LOCAL);
    free(full);
    if (!dl) {
        const char *e = dlerror();
        return rt_fail(ICC_ERR_ABI, "%s: not a loadable shared object: %s", path, e ? e : "?");
    }
    char sym[MAX_PREFIX + sizeof "_model"];
    snprintf(sym, sizeof sym, "%s_model", prefix);
    const icc_model_desc *d = dlsym(dl, sym);
    if (!d) {
        dlclose(dl);
        return rt_fail(ICC_ERR_ABI, "%s: not an icc model: no symbol '%s'", path, sym);
    }
    char who[512];
    snprintf(who, sizeof who, "%s (%s)", path, sym);
    icc_status st = check_desc(d, who);
    icc_model *m = NULL;
    if (st == ICC_OK && !(m = calloc(1, sizeof *m)))
        st = rt_fail(ICC_ERR_NOMEM, "%s: out of memory", path);
    if (st == ICC_OK) {
        m->desc = d;
        m->dl = dl;
        m->weights = d->weights;
        if (!d->weights && d->weights_bytes)
            st = map_weights(m, path);
        if (st == ICC_OK)
            st = run_init(m, who);
    }
    if (st != ICC_OK) {
        if (m && m->wmap)
            munmap(m->wmap, m->wmap_len);
        free(m);
        dlclose(dl);
        return st;
    }
    *out = m;
    return ICC_OK;
}

icc_status icc_model_from_desc(const icc_model_desc *desc, icc_model **out)
{
    if (!out)
        return rt_fail(ICC_ERR_INVALID, "icc_model_from_desc: out is NULL");
    *out = NULL;
    if (!desc)
        return rt_fail(ICC_ERR_INVALID, "icc_model_from_desc: desc is NULL");
    char who[256];
    snprintf(who, sizeof who, "model '%.200s'",
             desc->abi_version >= ICC_ABI_VERSION_MIN && desc->abi_version <= ICC_ABI_VERSION && desc->name
                 ? desc->name : "?");
    icc_status st = check_desc(desc, who);
    if (st != ICC_OK)
        return st;
    icc_model *m = calloc(1, sizeof *m);
    if (!m)
        return rt_fail(ICC_ERR_NOMEM, "%s: out of memory", who);
    m->desc = desc;
    m->weights = desc->weights;
    if (!desc->weights && desc->weights_bytes) {
        /* External weights sit beside the shared object holding the code;
         * ask about the entry point, not desc: an app linking model.so may
         * hold a copy of desc (a copy relocation). */
        Dl_info info;
        if (!dladdr((void *)desc->run, &info) || !info.dli_fname || !*info.dli_fname) {
            free(m);
            return rt_fail(ICC_ERR_INVALID, "%s: has external weights but is not in a shared object; "
                           "load it with icc_model_open", who);
        }
        if ((st = map_weights(m, info.dli_fname)) != ICC_OK) {
            free(m);
            return st;
        }
    }
    if ((st = run_init(m, who)) != ICC_OK) {
        if (m->wmap)
            munmap(m->wmap, m->wmap_len);
        free(m);
        return st;
    }
    *out = m;
    return ICC_OK;
}

void icc_model_close(icc_model *m)
{
    if (!m)
        return;
    if (m->wmap)
        munmap(m->wmap, m->wmap_len);
    if (m->dl)
        dlclose(m->dl);
    free(m->init);
    free(m);
}

const icc_model_desc *icc_model_describe(const icc_model *m) { return m ? m->desc : NULL; }

int rt_nkernels(const icc_model_desc *d)
{
    return d->desc_size >= offsetof(icc_model_desc, reserved3) ? d->nkernels : 0;
}

int icc_model_kernels(const icc_model *m, const icc_kernel_info **kernels)
{
    int n = m ? rt_nkernels(m->desc) : 0;
    if (kernels)
        *kernels = n ? m->desc->kernels : NULL;
    return n;
}

int icc_model_kernel_kind(const icc_model *m, int k)
{
    if (!m || k < 0 || k >= rt_nkernels(m->desc))
        return -1;
    const icc_model_desc *d = m->desc;
    bool has = d->desc_size >= offsetof(icc_model_desc, kernel_kinds) + sizeof d->kernel_kinds;
    return has && d->kernel_kinds ? d->kernel_kinds[k] : ICC_KERNEL_F32;
}

const icc_tensor_desc *icc_model_input(const icc_model *m, int i)
{
    return m && i >= 0 && i < m->desc->ninputs ? &m->desc->inputs[i] : NULL;
}

const icc_tensor_desc *icc_model_output(const icc_model *m, int i)
{
    return m && i >= 0 && i < m->desc->noutputs ? &m->desc->outputs[i] : NULL;
}

static int find(const icc_tensor_desc *ts, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (!strcmp(ts[i].name, name))
            return i;
    return -1;
}

int icc_model_find_input(const icc_model *m, const char *name)
{
    return m ? find(m->desc->inputs, m->desc->ninputs, name) : -1;
}

int icc_model_find_output(const icc_model *m, const char *name)
{
    return m ? find(m->desc->outputs, m->desc->noutputs, name) : -1;
}

/* Where symbol s first got its value (for the message). */
static void first_binding(const icc_model_desc *d, const int64_t *const *in_dims,
                          const icc_tensor *ts, int s, int *in, int *dim)
{
    for (int i = 0; i < d->ninputs; i++) {
        const icc_tensor_desc *t = &d->inputs[i];
        for (int k = 0; k < t->rank; k++)
            if (t->dims[k] == -1 && !strcmp(t->dim_names[k], d->symbols[s])) {
                *in = i, *dim = k;
                return;
            }
    }
}

icc_status rt_bind(const icc_model *m, const int64_t *const *in_dims, const icc_tensor *ts,
                   int64_t *syms, char *err, size_t errlen)
{
    const icc_model_desc *d = m->desc;
    for (int s = 0; s < d->nsymbols; s++)
        syms[s] = -1;
    for (int i = 0; i < d->ninputs; i++) {
        const icc_tensor_desc *t = &d->inputs[i];
        const int64_t *dims = ts ? ts[i].dims : in_dims ? in_dims[i] : NULL;
        if (ts) {
            if (ts[i].dtype != t->dtype) {
                snprintf(err, errlen, "input '%s' has dtype %s, the model wants %s", t->name,
                         dtype_name(ts[i].dtype), dtype_name(t->dtype));
                return ICC_ERR_DTYPE;
            }
            if (ts[i].rank != t->rank) {
                snprintf(err, errlen, "input '%s' has rank %d, the model wants rank %d", t->name,
                         (int)ts[i].rank, (int)t->rank);
                return ICC_ERR_SHAPE;
            }
            if (!ts[i].data) {
                snprintf(err, errlen, "input '%s' has no data", t->name);
                return ICC_ERR_INVALID;
            }
        }
        if (!dims) {
            for (int k = 0; k < t->rank; k++)
                if (t->dims[k] < 0) {
                    snprintf(err, errlen, "input '%s' has symbolic dims, so its dims must be given",
                             t->name);
                    return ICC_ERR_INVALID;
                }
            continue;
        }
        int64_t bytes = (int64_t)icc_dtype_size(t->dtype);
        for (int k = 0; k < t->rank; k++) {
            int64_t v = dims[k];
            if (t->dims[k] >= 0 && v != t->dims[k]) {
                snprintf(err, errlen, "input '%s' dim %d is %lld, the model wants %lld", t->name, k,
                         (long long)v, (long long)t->dims[k]);
                return ICC_ERR_SHAPE;
            }
            if (v < 0) {
                snprintf(err, errlen, "input '%s' dim %d (%s) is %lld, must be >= 0", t->name, k,
                         t->dim_names[k], (long long)v);
                return ICC_ERR_SHAPE;
            }
            if (__builtin_mul_overflow(bytes, v, &bytes)) {
                snprintf(err, errlen, "input '%s' is too large (dim %d is %lld)", t->name, k,
                         (long long)v);
                return ICC_ERR_SHAPE;
            }
            if (t->dims[k] >= 0)
                continue;
            int s = symbol_index(d, t->dim_names[k]);
            if (syms[s] < 0) {
                syms[s] = v;
            } else if (syms[s] != v) {
                int fi = 0, fk = 0;
                first_binding(d, in_dims, ts, s, &fi, &fk);
                snprintf(err, errlen, "input '%s' dim %d (%s) is %lld, but input '%s' dim %d made %s %lld",
                         t->name, k, d->symbols[s], (long long)v, d->inputs[fi].name, fk,
                         d->symbols[s], (long long)syms[s]);
                return ICC_ERR_SHAPE;
            }
        }
    }
    int nd = nderived(d), nfree = d->nsymbols - nd;
    for (int s = 0; s < nfree; s++)
        if (syms[s] < 0) { /* every free symbol is an input dim: an input with NULL dims */
            snprintf(err, errlen, "symbol '%s' is not bound by the given dims", d->symbols[s]);
            return ICC_ERR_INVALID;
        }
    /* derived symbols, in order (each names earlier ones only): a negative
     * one is a window larger than its padded input, as the interpreter's
     * shape functions report it; one of a subgraph's counts as 0 (the
     * subgraph checks it if it runs) */
    for (int i = 0; i < nd; i++) {
        const icc_sym_def *df = &d->derived[i];
        int64_t a = df->a_sym >= 0 ? syms[df->a_sym] : df->a, b = df->b_sym >= 0 ? syms[df->b_sym] : df->b, r = 0;
        bool ovf = false;
        switch (df->op & ~ICC_SYM_IN_SUBGRAPH) {
        case ICC_SYM_ADD: ovf = __builtin_add_overflow(a, b, &r); break;
        case ICC_SYM_MUL: ovf = __builtin_mul_overflow(a, b, &r); break;
        case ICC_SYM_FLOORDIV: r = a / b - (a % b != 0 && a < 0); break;
        default: r = a / b + (a % b != 0 && a > 0); break;
        }
        const char *name = d->symbols[nfree + i];
        if (!ovf && r < 0 && (df->op & ICC_SYM_IN_SUBGRAPH))
            r = 0;
        if (ovf || r < 0) {
            char ins[160] = "";
            for (int s = 0; s < nfree; s++)
                snprintf(ins + strlen(ins), sizeof ins - strlen(ins), "%s%s=%lld", s ? ", " : "", d->symbols[s],
                         (long long)syms[s]);
            snprintf(err, errlen, "%s%sthe input dims (%s) make the dim '%s' %s",
                     df->message ? d->messages[df->message - 1] : "", df->message ? ": " : "", ins, name,
                     ovf ? "overflow 64 bits"
                         : "negative: a window is larger than its padded input, or a slice past its dim's end");
            return ICC_ERR_SHAPE;
        }
        syms[nfree + i] = r;
    }
    return ICC_OK;
}

icc_status icc_output_dims(const icc_model *m, const int64_t *const *in_dims, int index, int64_t *dims)
{
    if (!m || !dims)
        return rt_fail(ICC_ERR_INVALID, "icc_output_dims: NULL argument");
    const icc_model_desc *d = m->desc;
    if (index < 0 || index >= d->noutputs)
        return rt_fail(ICC_ERR_INVALID, "icc_output_dims: output %d of %d", index, d->noutputs);
    int64_t small[16], *syms = small;
    if (d->nsymbols > 16 && !(syms = malloc(sizeof *syms * (size_t)d->nsymbols)))
        return rt_fail(ICC_ERR_NOMEM, "icc_output_dims: out of memory");
    char err[400];
    icc_status st = rt_bind(m, in_dims, NULL, syms, err, sizeof err);
    if (st != ICC_OK) {
        rt_fail(st, "%s", err);
    } else {
        const icc_tensor_desc *t = &d->outputs[index];
        for (int k = 0; k < t->rank; k++)
            dims[k] = t->dims[k] >= 0 ? t->dims[k] : syms[symbol_index(d, t->dim_names[k])];
    }
    if (syms != small)
        free(syms);
    return st;
}
