/* precision.c - the `precision` pass and the precision API (precision.h).
 *
 * The pass applies the mode its options carry (the driver's
 * --precision, or `mode=` in a pipeline): nothing for fp32; for bf16
 * and fp16 the constant weights of contractions become half-precision
 * constants read through a Cast to f32; int8 modes go to precision_int8
 * (passes/quantize.c).
 */
#include "passes/pass.h"
#include "ir/ops.h"

#include <stdlib.h>
#include <string.h>

static const char *const prec_names[] = {
    [ICC_PREC_FP32] = "fp32", [ICC_PREC_BF16] = "bf16", [ICC_PREC_FP16] = "fp16",
    [ICC_PREC_INT8] = "int8", [ICC_PREC_INT8_DYNAMIC] = "int8-dynamic",
};

int icc_precision_parse(const char *text, icc_precision *out, icc_diag *d)
{
    for (int i = 0; i < (int)(sizeof prec_names / sizeof *prec_names); i++)
        if (text && !strcmp(text, prec_names[i])) {
            *out = (icc_precision)i;
            return 0;
        }
    return ir_errorf(d, "--precision=%.64s: expected fp32, bf16, fp16, int8 or int8-dynamic", text ? text : "");
}

const char *icc_precision_name(icc_precision p)
{
    return (unsigned)p < sizeof prec_names / sizeof *prec_names ? prec_names[p] : "unknown";
}

/* True when name is one of the items of list (separated by sep). */
static bool list_has(const char *list, char sep, const char *name)
{
    size_t n = strlen(name);
    if (!list || !n)
        return false;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, sep);
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && !strncmp(p, name, n))
            return true;
        p += k + (p[k] == sep);
    }
    return false;
}

/* The last layer: a contraction from which some graph output is reached
 * through non-contraction nodes only (a forward walk that stops at the
 * next contraction). */
static bool is_last_contraction(const ir_graph *g, const ir_node *n)
{
    if (!(ir_ops[n->op].flags & IR_F_CONTRACTION))
        return false;
    char *seen = calloc((size_t)g->nvalues + 1, 1);
    int *stack = malloc(sizeof *stack * ((size_t)g->nvalues + 1));
    bool last = false;
    if (!seen || !stack) {
        free(seen);
        free(stack);
        return false;
    }
    int top = 0;
    for (int i = 0; i < n->nout; i++)
        if (n->out[i] && !seen[n->out[i]->id]) {
            seen[n->out[i]->id] = 1;
            stack[top++] = n->out[i]->id;
        }
    while (top && !last) {
        const ir_value *v = g->values[stack[--top]];
        for (int o = 0; o < g->noutputs; o++)
            last |= g->outputs[o] == v;
        for (int k = 0; k < g->nnodes && !last; k++) {
            const ir_node *m = g->nodes[k];
            if (m->dead || (ir_ops[m->op].flags & IR_F_CONTRACTION))
                continue;
            bool uses = false;
            for (int j = 0; j < m->nin; j++)
                uses |= m->in[j] == v;
            if (!uses)
                continue;
            for (int j = 0; j < m->nout; j++)
                if (m->out[j] && !seen[m->out[j]->id]) {
                    seen[m->out[j]->id] = 1;
                    stack[top++] = m->out[j]->id;
                }
        }
    }
    free(seen);
    free(stack);
    return last;
}

bool icc_precision_keeps(const icc_precision_opts *o, const ir_graph *g, const ir_node *n)
{
    if (!o)
        return false;
    if (list_has(o->keep, ',', ir_ops[n->op].name) || list_has(o->keep, ',', n->name))
        return true;
    if (o->no_default_keep)
        return false;
    return (ir_ops[n->op].flags & IR_F_NORM) || is_last_contraction(g, n);
}

/* The options this run applies: the driver's, overridden by the pass's
 * own `mode=`, `keep=` (items joined by '+') and `default-keep=`.
 * keep_buf receives the converted keep list. */
static int resolve_opts(pass_ctx *c, icc_precision_opts *o, char *keep_buf, size_t n)
{
    *o = c->precision ? *c->precision : (icc_precision_opts){ICC_PREC_FP32, NULL, false, NULL};
    for (int i = 0; i < c->nopts; i++) {
        const pass_opt *p = &c->opts[i];
        if (!strcmp(p->key, "mode") && strcmp(p->val, "driver")) {
            if (icc_precision_parse(p->val, &o->mode, c->diag) < 0)
                return -1;
        } else if (!strcmp(p->key, "keep") && strcmp(p->val, "none")) {
            snprintf(keep_buf, n, "%s", p->val);
            for (char *s = keep_buf; *s; s++)
                if (*s == '+')
                    *s = ',';
            o->keep = keep_buf;
        } else if (!strcmp(p->key, "default-keep")) {
            o->no_default_keep = !strtoll(p->val, NULL, 0);
        }
    }
    return 0;
}

int pass_precision(pass_ctx *c)
{
    icc_precision_opts o;
    char keep[PASS_MAX_OPTS * 64];
    if (resolve_opts(c, &o, keep, sizeof keep) < 0)
        return -1;
    switch (o.mode) {
    case ICC_PREC_FP32:
        return 0;
    case ICC_PREC_BF16:
    case ICC_PREC_FP16:
        return ir_errorf(c->diag, "--precision=%s: not supported yet", icc_precision_name(o.mode));
    case ICC_PREC_INT8:
    case ICC_PREC_INT8_DYNAMIC:
        return precision_int8(c, &o);
    }
    return 0;
}
