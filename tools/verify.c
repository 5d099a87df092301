/* verify.c - the pieces of `icc verify` that are not driver plumbing:
 * made-up inputs (a fixed xorshift pattern, so two runs agree), input sets
 * read from a folder, the error metrics of an output against its
 * reference, and the interpreter run that keeps every value so that two
 * graphs can be compared node by node through their value names. */
#include "tools/verify.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "icc/runtime.h"
#include "ir/ops.h"
#include "ir/ref/interp.h"
#include "runtime/npy.h"

int icc_verify_random_input(ir_tensor *t, const ir_type *type, uint64_t seed, icc_diag *d)
{
    if (!ir_type_is_static(type))
        return ir_errorf(d, "the input's shape is not static: pin it with --shape");
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < type->rank; i++)
        dims[i] = type->dims[i].v;
    if (ir_tensor_init(t, type->dtype, type->rank, dims, d) < 0)
        return -1;
    if (!(t->data = malloc(t->nbytes + 1)))
        return ir_errorf(d, "out of memory for %zu bytes", t->nbytes);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
    bool fl = ir_dtype_is_float(type->dtype);
    for (int64_t i = 0; i < t->numel; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (fl)
            ir_tensor_setf(t, i, (double)(x >> 11) / 4503599627370496.0 - 1.0);
        else
            ir_tensor_seti(t, i, type->dtype == IR_BOOL ? (int64_t)(x >> 63) : (int64_t)(x >> 62));
    }
    return 0;
}

void icc_verify_compare(const ir_tensor *got, const ir_tensor *want, double rtol, double atol,
                        icc_verify_diff *out)
{
    *out = (icc_verify_diff){0};
    if (got->dtype != want->dtype || got->rank != want->rank || got->numel != want->numel) {
        out->shape_differs = true;
        return;
    }
    for (int i = 0; i < got->rank; i++)
        if (got->dims[i] != want->dims[i])
            out->shape_differs = true;
    if (out->shape_differs)
        return;
    for (int64_t i = 0; i < got->numel; i++) {
        double g = ir_tensor_getf(got, i), w = ir_tensor_getf(want, i);
        if (isnan(g) && isnan(w))
            continue;
        double e = fabs(g - w);
        if (isnan(e) || isinf(e)) {
            if (g == w)
                continue;
            e = INFINITY;
        }
        double r = w != 0 ? e / fabs(w) : (e ? INFINITY : 0);
        if (e > out->max_abs)
            out->max_abs = e;
        if (r > out->max_rel)
            out->max_rel = r;
        if (!(e <= atol + rtol * fabs(w)))
            out->bad++;
    }
}

/* ---- metrics ------------------------------------------------------------ */

int64_t icc_verify_classes(const ir_tensor *t)
{
    if (!ir_dtype_is_float(t->dtype) || t->rank < 1)
        return 0;
    if (t->rank == 1)
        return t->dims[0] >= 5 ? t->dims[0] : 0;
    for (int i = 2; i < t->rank; i++)
        if (t->dims[i] != 1)
            return 0;
    return t->dims[1] >= 5 ? t->dims[1] : 0;
}

/* The index of the highest of row[0..c-1] (the first of equals). */
static int64_t argmax_row(const ir_tensor *t, int64_t base, int64_t c)
{
    int64_t best = 0;
    double bv = ir_tensor_getf(t, base);
    for (int64_t j = 1; j < c; j++) {
        double v = ir_tensor_getf(t, base + j);
        if (v > bv || (isnan(bv) && !isnan(v)))
            best = j, bv = v;
    }
    return best;
}

/* Whether class k is among the five highest of the row: fewer than five
 * classes score above it (ties resolved by index, as argmax does). */
static bool in_top5(const ir_tensor *t, int64_t base, int64_t c, int64_t k)
{
    double v = ir_tensor_getf(t, base + k);
    int above = 0;
    for (int64_t j = 0; j < c && above < 5; j++) {
        double u = ir_tensor_getf(t, base + j);
        above += u > v || (u == v && j < k);
    }
    return above < 5;
}

void icc_verify_measure(const ir_tensor *got, const ir_tensor *ref, icc_verify_metrics *m)
{
    icc_verify_diff df;
    icc_verify_compare(got, ref, 0, 0, &df);
    *m = (icc_verify_metrics){.max_abs = df.max_abs, .max_rel = df.max_rel};
    double rr = 0, gg = 0, rg = 0, ee = 0;
    for (int64_t i = 0; i < ref->numel && i < got->numel; i++) {
        double r = ir_tensor_getf(ref, i), g = ir_tensor_getf(got, i);
        if (isnan(r) && isnan(g))
            continue;
        rr += r * r, gg += g * g, rg += r * g;
        ee += r == g ? 0 : (r - g) * (r - g);
    }
    m->cosine = rr == 0 && gg == 0 ? 1 : rr == 0 || gg == 0 ? 0 : rg / sqrt(rr * gg);
    m->sqnr_db = ee == 0 ? INFINITY : isnan(ee) || isinf(ee) || rr == 0 ? -INFINITY : 10 * log10(rr / ee);
    if (isnan(m->cosine))
        m->cosine = 0;
    int64_t c = icc_verify_classes(ref);
    if (c && got->numel == ref->numel) {
        m->rows = ref->numel / c;
        for (int64_t r = 0; r < m->rows; r++) {
            int64_t want = argmax_row(ref, r * c, c);
            m->top1 += argmax_row(got, r * c, c) == want;
            m->top5 += in_top5(got, r * c, c, want);
        }
    }
}

void icc_verify_summary_add(icc_verify_summary *s, const icc_verify_metrics *m)
{
    icc_verify_metrics *w = &s->worst, *a = &s->mean;
    if (s->nsets++ == 0) {
        *w = *a = *m;
        s->nfinite = isfinite(m->sqnr_db);
        return;
    }
    w->max_abs = fmax(w->max_abs, m->max_abs);
    w->max_rel = fmax(w->max_rel, m->max_rel);
    w->cosine = fmin(w->cosine, m->cosine);
    w->sqnr_db = fmin(w->sqnr_db, m->sqnr_db);
    /* running means; an infinite SQNR (equal outputs) keeps the mean infinite */
    double k = (double)s->nsets;
    a->max_abs += (m->max_abs - a->max_abs) / k;
    a->max_rel += (m->max_rel - a->max_rel) / k;
    a->cosine += (m->cosine - a->cosine) / k;
    /* the mean SQNR is over the sets where it is finite (infinite: equal outputs) */
    if (isfinite(m->sqnr_db)) {
        s->nfinite++;
        a->sqnr_db = s->nfinite == 1 ? m->sqnr_db : a->sqnr_db + (m->sqnr_db - a->sqnr_db) / s->nfinite;
    } else if (!s->nfinite && m->sqnr_db < a->sqnr_db) {
        a->sqnr_db = m->sqnr_db;
    }
    w->rows += m->rows, w->top1 += m->top1, w->top5 += m->top5;
    a->rows = w->rows, a->top1 = w->top1, a->top5 = w->top5;
}

void icc_verify_json_number(FILE *f, double v)
{
    if (isnan(v))
        fputs("null", f);
    else if (isinf(v))
        fputs(v > 0 ? "1e999" : "-1e999", f);
    else
        fprintf(f, "%.9g", v);
}

void icc_verify_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* ---- input sets ----------------------------------------------------------- */

static void type_text(const ir_type *t, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && k < n; i++)
        k += (size_t)(ir_dim_is_const(t->dims[i]) ? snprintf(buf + k, n - k, "%s%lld", i ? "," : "",
                                                             (long long)t->dims[i].v)
                                                  : snprintf(buf + k, n - k, "%s?", i ? "," : ""));
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

/* Whether file stem names input name: as it is, or with characters that
 * do not belong in a file name written '_'. */
static bool stem_names(const char *stem, size_t len, const char *name)
{
    if (strlen(name) != len)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                  c == '_' || c == '-';
        if (stem[i] != c && !(stem[i] == '_' && !ok))
            return false;
    }
    return true;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int icc_verify_load_set(const char *dir, const ir_graph *g, ir_tensor *t, icc_diag *d)
{
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, alphasort), rc = -1;
    if (n < 0)
        return ir_errorf(d, "%s: %s", dir, strerror(errno));
    bool *got = calloc((size_t)g->ninputs + 1, 1);
    char path[4096];
    if (!got) {
        ir_errorf(d, "out of memory");
        goto done;
    }
    for (int e = 0; e < n; e++) {
        const char *f = ents[e]->d_name;
        size_t len = strlen(f);
        if (len < 5 || strcmp(f + len - 4, ".npy"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, f);
        int k = 0;
        while (k < g->ninputs && !stem_names(f, len - 4, g->inputs[k]->name))
            k++;
        if (k == g->ninputs) {
            char names[512] = "";
            for (int i = 0; i < g->ninputs && strlen(names) < 400; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                         g->inputs[i]->name);
            ir_errorf(d, "%s: the model has no input named '%.*s' (its inputs: %s)", path, (int)(len - 4), f,
                      names);
            goto done;
        }
        if (got[k]) {
            ir_errorf(d, "%s: input '%s' has two files in %s", path, g->inputs[k]->name, dir);
            goto done;
        }
        if (icc_npy_read(path, &t[k], d) < 0)
            goto done;
        got[k] = true;
        const ir_type *ty = &g->inputs[k]->type;
        bool ok = t[k].dtype == ty->dtype && (ty->rank < 0 || t[k].rank == ty->rank);
        for (int i = 0; ok && ty->rank >= 0 && i < ty->rank; i++)
            ok = !ir_dim_is_const(ty->dims[i]) || ty->dims[i].v == t[k].dims[i];
        if (!ok) {
            char want[256], have[256];
            ir_type ht;
            ir_type_of_tensor(&t[k], &ht);
            type_text(ty, want, sizeof want);
            type_text(&ht, have, sizeof have);
            ir_errorf(d, "%s: input '%s' is %s, the file holds %s", path, g->inputs[k]->name, want, have);
            goto done;
        }
    }
    for (int k = 0; k < g->ninputs; k++)
        if (!got[k]) {
            ir_errorf(d, "%s: no %s.npy for the model's input '%s'", dir, g->inputs[k]->name, g->inputs[k]->name);
            goto done;
        }
    rc = 0;
done:
    if (rc < 0)
        ir_tensors_free(t, g->ninputs);
    for (int e = 0; e < n; e++)
        free(ents[e]);
    free(ents);
    free(got);
    return rc;
}

int icc_verify_load_sets(const char *dir, const ir_graph *g, icc_verify_sets *out, icc_diag *d)
{
    *out = (icc_verify_sets){0};
    struct stat st;
    if (stat(dir, &st) < 0)
        return ir_errorf(d, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return ir_errorf(d, "%s: not a folder (--inputs takes a folder of NAME.npy files or of numbered sets)", dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/0", dir);
    bool numbered = is_dir(path);
    int nsets = 0;
    if (numbered)
        do
            snprintf(path, sizeof path, "%s/%d", dir, ++nsets);
        while (is_dir(path) && nsets < 1000000);
    else
        nsets = 1;
    out->t = calloc((size_t)nsets * (size_t)g->ninputs + 1, sizeof *out->t);
    if (!out->t)
        return ir_errorf(d, "out of memory");
    out->ninputs = g->ninputs;
    for (int s = 0; s < nsets; s++) {
        snprintf(path, sizeof path, numbered ? "%s/%d" : "%s", dir, s);
        if (icc_verify_load_set(path, g, out->t + (size_t)s * (size_t)g->ninputs, d) < 0) {
            icc_verify_sets_free(out);
            return -1;
        }
        out->nsets++;
    }
    return 0;
}

void icc_verify_sets_free(icc_verify_sets *s)
{
    if (s->t)
        ir_tensors_free(s->t, s->nsets * s->ninputs);
    free(s->t);
    *s = (icc_verify_sets){0};
}

/* ---- every value of a run ------------------------------------------------ */

/* Keeps a copy of every node result (inputs outlive the trace: borrowed). */
static int keep_value(void *ctx, const ir_value *v, const ir_tensor *t, icc_diag *d)
{
    icc_verify_trace *tr = ctx;
    tr->v[v->id] = *t;
    tr->have[v->id] = true;
    if (v->kind != IR_VAL_NODE)
        return 0;
    tr->v[v->id].data = malloc(t->nbytes ? t->nbytes : 1);
    if (!tr->v[v->id].data) {
        tr->have[v->id] = false;
        return ir_errorf(d, "out of memory");
    }
    if (t->nbytes)
        memcpy(tr->v[v->id].data, t->data, t->nbytes);
    tr->own[v->id] = true;
    return 0;
}

int icc_verify_trace_run(const ir_graph *g, const ir_tensor *inputs, icc_verify_trace *t, icc_diag *d)
{
    int nv = g->nvalues;
    *t = (icc_verify_trace){nv, calloc((size_t)nv + 1, sizeof *t->v), calloc((size_t)nv + 1, 1),
                            calloc((size_t)nv + 1, 1)};
    if (!t->v || !t->have || !t->own) {
        icc_verify_trace_free(t);
        return ir_errorf(d, "out of memory");
    }
    for (int i = 0; i < nv; i++)
        if (g->values[i]->kind == IR_VAL_CONST) {
            t->v[i] = g->values[i]->cval;
            t->have[i] = true;
        }
    if (ir_interp_run_hooked(g, inputs, NULL, keep_value, t, d) < 0) {
        icc_verify_trace_free(t);
        return -1;
    }
    return 0;
}

void icc_verify_trace_free(icc_verify_trace *t)
{
    for (int i = 0; t->v && t->own && i < t->nvalues; i++)
        if (t->own[i])
            free(t->v[i].data);
    free(t->v);
    free(t->have);
    free(t->own);
    *t = (icc_verify_trace){0};
}

/* ---- per node --------------------------------------------------------------- */

/* The reference value named name, or NULL. */
static const ir_value *find_value(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->nvalues; i++)
        if (!g->values[i]->dead && g->values[i]->name && !strcmp(g->values[i]->name, name))
            return g->values[i];
    return NULL;
}

static bool same_dims(const ir_tensor *a, const ir_tensor *b)
{
    if (a->rank != b->rank || a->numel != b->numel)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

int icc_verify_compare_nodes(const ir_graph *ref, const icc_verify_trace *rt, const ir_graph *g,
                             const icc_verify_trace *gt, icc_verify_per_node *p, icc_diag *d)
{
    bool first = p->rows == NULL;
    int row = 0, unmatched = 0;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        for (int i = 0; i < n->nout; i++) {
            const ir_value *v = n->out[i];
            if (!gt->have[v->id] || !ir_dtype_is_float(gt->v[v->id].dtype))
                continue;
            const ir_value *r = find_value(ref, v->name);
            const ir_tensor *got = &gt->v[v->id], *want = r && rt->have[r->id] ? &rt->v[r->id] : NULL;
            if (!want || !ir_dtype_is_float(want->dtype) || !same_dims(got, want)) {
                unmatched++;
                continue;
            }
            icc_verify_metrics m;
            icc_verify_measure(got, want, &m);
            bool lowered = false;
            for (int j = 0; j < n->nin; j++) {
                const ir_value *u = n->in[j], *ru = u ? find_value(ref, u->name) : NULL;
                lowered |= u && (!ru || (ru->kind == IR_VAL_CONST) != (u->kind == IR_VAL_CONST) ||
                                 ru->type.dtype != u->type.dtype);
            }
            if (first) {
                icc_verify_node_row *nr = realloc(p->rows, sizeof *nr * ((size_t)p->nrows + 1));
                if (!nr)
                    return ir_errorf(d, "out of memory");
                p->rows = nr;
                /* named as in the reference: the node the keep list names (a rewrite may
                 * leave the value's name on a node of another op and name) */
                bool w = r->kind == IR_VAL_CONST;
                const ir_node *rn = !w && r->def ? r->def : n;
                nr[p->nrows++] = (icc_verify_node_row){k, rn->name, v->name, rn->op, w, lowered, m};
                continue;
            }
            if (row >= p->nrows || p->rows[row].node != k || strcmp(p->rows[row].value, v->name))
                return ir_errorf(d, "the graphs changed between input sets");
            icc_verify_metrics *w = &p->rows[row++].m;
            w->max_abs = fmax(w->max_abs, m.max_abs);
            w->max_rel = fmax(w->max_rel, m.max_rel);
            w->cosine = fmin(w->cosine, m.cosine);
            w->sqnr_db = fmin(w->sqnr_db, m.sqnr_db);
        }
    }
    p->unmatched = unmatched;
    if (first && !p->rows)
        p->rows = malloc(1);   /* marks p as filled even with no rows */
    return 0;
}

void icc_verify_per_node_free(icc_verify_per_node *p)
{
    free(p->rows);
    *p = (icc_verify_per_node){0};
}

int icc_verify_first_below(const icc_verify_per_node *p, double db)
{
    for (int i = 0; i < p->nrows; i++)
        if (!p->rows[i].weight && p->rows[i].m.sqnr_db < db)
            return i;
    return -1;
}

int icc_verify_pick(const icc_verify_per_node *p, const ir_graph *g, double db)
{
    int first = icc_verify_first_below(p, db);
    if (first < 0 || p->rows[first].lowered)
        return first;
    /* the nodes the first one depends on: a walk back over producers */
    int *index = malloc(sizeof(int) * ((size_t)g->next_node_id + 1));
    int *stack = malloc(sizeof(int) * ((size_t)g->nnodes + 1));
    char *up = calloc((size_t)g->nnodes + 1, 1);
    int best = -1, top = 0;
    if (!index || !stack || !up)
        goto done;
    for (int k = 0; k < g->nnodes; k++)
        index[g->nodes[k]->id] = k;
    stack[top++] = p->rows[first].node;
    while (top) {
        const ir_node *n = g->nodes[stack[--top]];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] && n->in[j]->kind == IR_VAL_NODE && !up[index[n->in[j]->def->id]]) {
                int k = index[n->in[j]->def->id];
                up[k] = 1;
                stack[top++] = k;
            }
    }
    for (int i = 0; i < first; i++) {
        const icc_verify_node_row *r = &p->rows[i];
        if (up[r->node] && r->lowered && !r->weight && (best < 0 || r->m.sqnr_db < p->rows[best].m.sqnr_db))
            best = i;
    }
done:
    free(index);
    free(stack);
    free(up);
    return best;
}

/* ---- the pieces of the driver's verify --------------------------------------- */

int icc_verify_inputs_by_name(const ir_graph *g, const char *model, const char *const *names, const ir_tensor *set,
                          int n, ir_tensor *out, icc_diag *d)
{
    for (int i = 0; i < g->ninputs; i++) {
        int k = 0;
        while (k < n && strcmp(names[k], g->inputs[i]->name))
            k++;
        if (k == n)
            return ir_errorf(d, "%s: input '%s' of the reference is not an input of the model verified", model,
                             g->inputs[i]->name);
        out[i] = set[k];
    }
    return 0;
}

int icc_verify_run_library(icc_model *m, icc_context *ctx, const char *model, const char *const *names,
                           const ir_tensor *set, int n, ir_tensor *out, icc_diag *d)
{
    const icc_model_desc *desc = icc_model_describe(m);
    int nin = desc->ninputs, nout = desc->noutputs, rc = -1;
    icc_tensor *tin = calloc((size_t)nin + 1, sizeof *tin);
    const int64_t **dims = calloc((size_t)nin + 1, sizeof *dims);
    void **bufs = calloc((size_t)nout + 1, sizeof *bufs);
    if (!tin || !dims || !bufs) {
        ir_errorf(d, "out of memory");
        goto done;
    }
    for (int i = 0; i < nin; i++) {
        const icc_tensor_desc *t = icc_model_input(m, i);
        int k = 0;
        while (k < n && strcmp(names[k], t->name))
            k++;
        if (k == n) {
            ir_errorf(d, "%s: the compiled model's input '%s' is not an input of the model verified", model, t->name);
            goto done;
        }
        tin[i] = (icc_tensor){set[k].data, ir_dtype_to_onnx(set[k].dtype), set[k].rank, set[k].dims};
        dims[i] = set[k].dims;
    }
    for (int o = 0; o < nout; o++) {
        const icc_tensor_desc *t = icc_model_output(m, o);
        int64_t od[IR_MAX_RANK + 1];
        ir_dtype dt = ir_dtype_from_onnx(t->dtype);
        if (t->rank > IR_MAX_RANK || !dt) {
            ir_errorf(d, "%s: output '%s' has a dtype or rank icc cannot compare", model, t->name);
            goto done;
        }
        if (icc_output_dims(m, dims, o, od) != ICC_OK) {
            ir_errorf(d, "%s: %s", model, icc_last_error());
            goto done;
        }
        if (ir_tensor_init(&out[o], dt, t->rank, od, d) < 0)
            goto done;
        if (!(out[o].data = bufs[o] = calloc(1, out[o].nbytes + 1))) {
            ir_errorf(d, "out of memory");
            goto done;
        }
    }
    if (icc_run_tensors(ctx, tin, nin, bufs) != ICC_OK) {
        ir_errorf(d, "%s: the compiled model: %s", model, icc_context_error(ctx));
        goto done;
    }
    rc = 0;
done:
    if (rc < 0)
        ir_tensors_free(out, nout);
    free(tin);
    free(dims);
    free(bufs);
    return rc;
}

/* The SQNR below which --bisect calls a node's output broken, per
 * precision (docs/precision.md): about the cosine 0.9995 (bf16), 0.99995
 * (fp16) and 0.995 (int8) a node's output keeps when its error is white. */
double icc_verify_default_threshold(icc_precision p)
{
    switch (p) {
    case ICC_PREC_FP16:
        return 40;
    case ICC_PREC_INT8:
    case ICC_PREC_INT8_DYNAMIC:
        return 20;
    default:
        return 30;
    }
}

/* keep plus ",item" (or item alone), malloc'd. */
char *icc_verify_list_append(const char *keep, const char *item)
{
    size_t n = (keep ? strlen(keep) + 1 : 0) + strlen(item) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", keep ? keep : "", keep && *keep ? "," : "", item);
    return s;
}

bool icc_verify_list_has(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; p && *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && !strncmp(p, item, n))
            return true;
        p += k + (p[k] == ',');
    }
    return false;
}

/* ---- reports ---------------------------------------------------------------- */

static void db_text(double v, char *buf, size_t n)
{
    if (isinf(v))
        snprintf(buf, n, "%sinf", v < 0 ? "-" : "");
    else
        snprintf(buf, n, "%.2f", v);
}

void icc_verify_print_output(FILE *f, const icc_verify_output *o, const char *status)
{
    const icc_verify_metrics *w = &o->s.worst, *a = &o->s.mean;
    if (o->shape_differs) {
        fprintf(f, "  %s: shapes differ: %s\n", o->name, status);
        return;
    }
    fprintf(f, "  %s: %lld elements", o->name, (long long)o->numel);
    if (o->s.nsets > 1)
        fprintf(f, " x %d sets", o->s.nsets);
    fprintf(f, ", max abs error %.3g, max rel error %.3g: %s\n", w->max_abs, w->max_rel, status);
    char ws[32], ms[32];
    db_text(w->sqnr_db, ws, sizeof ws);
    db_text(a->sqnr_db, ms, sizeof ms);
    if (o->s.nsets > 1)
        fprintf(f, "    cosine %.7f (mean %.7f), SQNR %s dB (mean %s dB), max abs error mean %.3g", w->cosine,
                a->cosine, ws, ms, a->max_abs);
    else
        fprintf(f, "    cosine %.7f, SQNR %s dB", w->cosine, ws);
    if (w->rows)
        fprintf(f, ", top-1 %lld/%lld (%.1f%%), top-5 %lld/%lld (%.1f%%)", (long long)w->top1, (long long)w->rows,
                100.0 * (double)w->top1 / (double)w->rows, (long long)w->top5, (long long)w->rows,
                100.0 * (double)w->top5 / (double)w->rows);
    fputc('\n', f);
}

static void json_pair(FILE *f, const char *key, double worst, double mean)
{
    fprintf(f, "\"%s\": {\"worst\": ", key);
    icc_verify_json_number(f, worst);
    fputs(", \"mean\": ", f);
    icc_verify_json_number(f, mean);
    fputs("}", f);
}

void icc_verify_json_output(FILE *f, const icc_verify_output *o)
{
    const icc_verify_metrics *w = &o->s.worst, *a = &o->s.mean;
    fputs("{\"name\": ", f);
    icc_verify_json_string(f, o->name);
    fprintf(f, ", \"elements\": %lld, \"sets\": %d, \"shape_differs\": %s", (long long)o->numel, o->s.nsets,
            o->shape_differs ? "true" : "false");
    if (!o->shape_differs) {
        fputs(", ", f);
        json_pair(f, "max_abs", w->max_abs, a->max_abs);
        fputs(", ", f);
        json_pair(f, "max_rel", w->max_rel, a->max_rel);
        fputs(", ", f);
        json_pair(f, "cosine", w->cosine, a->cosine);
        fputs(", ", f);
        json_pair(f, "sqnr_db", w->sqnr_db, a->sqnr_db);
        if (w->rows)
            fprintf(f, ", \"rows\": %lld, \"top1\": %lld, \"top5\": %lld", (long long)w->rows, (long long)w->top1,
                    (long long)w->top5);
    }
    if (o->bad >= 0)
        fprintf(f, ", \"beyond_tolerance\": %lld", (long long)o->bad);
    fprintf(f, ", \"ok\": %s}", o->shape_differs || o->bad > 0 || o->below ? "false" : "true");
}

void icc_verify_print_per_node(FILE *f, const icc_verify_per_node *p, double db, const char *what)
{
    fprintf(f, "per node: SQNR of each node's output against %s, topological order", what);
    if (p->unmatched)
        fprintf(f, " (%d node outputs not shown: %s has no value of that name and shape)", p->unmatched, what);
    fprintf(f, ":\n  %5s  %-28s %-20s %-28s %9s %10s %10s\n", "#", "node", "op", "value", "SQNR dB", "cosine",
            "max abs");
    for (int i = 0; i < p->nrows; i++) {
        const icc_verify_node_row *r = &p->rows[i];
        char sq[32];
        db_text(r->m.sqnr_db, sq, sizeof sq);
        fprintf(f, "  %5d  %-28s %-20s %-28s %9s %10.7f %10.3g%s\n", r->node,
                r->weight ? "(weight)" : *r->node_name ? r->node_name : "-",
                ir_ops[r->op].name, r->value, sq, r->m.cosine, r->m.max_abs, r->m.sqnr_db < db ? "  < threshold" : "");
    }
}

void icc_verify_json_per_node(FILE *f, const icc_verify_per_node *p)
{
    fputc('[', f);
    for (int i = 0; i < p->nrows; i++) {
        const icc_verify_node_row *r = &p->rows[i];
        fprintf(f, "%s{\"index\": %d, \"node\": ", i ? ", " : "", r->node);
        icc_verify_json_string(f, r->node_name);
        fprintf(f, ", \"op\": \"%s\", \"weight\": %s, \"value\": ", ir_ops[r->op].name, r->weight ? "true" : "false");
        icc_verify_json_string(f, r->value);
        fputs(", \"sqnr_db\": ", f);
        icc_verify_json_number(f, r->m.sqnr_db);
        fputs(", \"cosine\": ", f);
        icc_verify_json_number(f, r->m.cosine);
        fputs(", \"max_abs\": ", f);
        icc_verify_json_number(f, r->m.max_abs);
        fputc('}', f);
    }
    fputc(']', f);
}
