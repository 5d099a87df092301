/* einsum.c - shape function and reference kernel of Einsum. The equation
 * is parsed into one list of labels per operand (letters a-z A-Z; an
 * ellipsis expands into broadcast labels of its own), with the output
 * either given after "->" or implied (ellipsis labels, then the letters
 * seen exactly once, in ASCII order, as numpy does). A label repeated in
 * one operand takes that operand's diagonal; labels missing from the
 * output are summed. The kernel walks every combination of label values
 * once, output labels outermost, accumulating in double (floats) or
 * wrapping 64-bit integers (integers). */
#include "ir/ref/ref.h"

#include <stdlib.h>
#include <string.h>

/* Letters 'A'-'Z' are labels 0-25 and 'a'-'z' 26-51, so label order is
 * ASCII order; ellipsis dims are 52.. (right-aligned across operands). */
#define EIN_LETTERS 52
#define EIN_LABELS (EIN_LETTERS + IR_MAX_RANK)
#define EIN_ELL (-1)
#define EIN_MAX_OPERANDS 64

typedef struct ein_term {
    int n;                     /* items: labels or EIN_ELL */
    signed char item[IR_MAX_RANK + 1];
    bool has_ell;
} ein_term;

typedef struct ein_eq {
    int nterms;
    ein_term in[EIN_MAX_OPERANDS];
    bool explicit_out;
    ein_term out;
    /* Resolved against the operand ranks: */
    int ell;                   /* dims the ellipsis stands for (max over operands) */
    int nlab[EIN_MAX_OPERANDS];
    signed char lab[EIN_MAX_OPERANDS][IR_MAX_RANK]; /* label of each operand dim */
    int nout;
    signed char olab[IR_MAX_RANK];                 /* label of each output dim */
} ein_eq;

static int label_of(char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return 26 + ch - 'a';
    return -1;
}

/* equation := term (',' term)* ('->' term)?
 * term     := (letter | '...')*   (spaces allowed anywhere)
 * At most one ellipsis per term; each term at most IR_MAX_RANK labels. */
static int parse_equation(ir_shape_ctx *c, const char *eq, ein_eq *e)
{
    memset(e, 0, sizeof *e);
    e->nterms = 1;
    ein_term *t = &e->in[0];
    for (const char *p = eq; *p; p++) {
        char ch = *p;
        if (ch == ' ')
            continue;
        if (label_of(ch) >= 0 || ch == '.') {
            bool ell = ch == '.';
            if (ell) {
                if (p[1] != '.' || p[2] != '.')
                    return ir_node_errorf(c->diag, c->node, "equation: '.' must be part of '...'");
                if (t->has_ell)
                    return ir_node_errorf(c->diag, c->node, "equation: more than one '...' in a term");
                t->has_ell = true;
                p += 2;
            }
            if (t->n >= IR_MAX_RANK + 1)
                return ir_node_errorf(c->diag, c->node, "equation: a term has too many labels");
            t->item[t->n++] = (signed char)(ell ? EIN_ELL : label_of(ch));
        } else if (ch == ',') {
            if (e->explicit_out)
                return ir_node_errorf(c->diag, c->node, "equation: ',' after '->'");
            if (e->nterms >= EIN_MAX_OPERANDS)
                return ir_node_errorf(c->diag, c->node, "equation: too many operands");
            t = &e->in[e->nterms++];
        } else if (ch == '-') {
            if (p[1] != '>')
                return ir_node_errorf(c->diag, c->node, "equation: '-' must be part of '->'");
            if (e->explicit_out)
                return ir_node_errorf(c->diag, c->node, "equation: more than one '->'");
            e->explicit_out = true;
            t = &e->out;
            p++;
        } else {
            return ir_node_errorf(c->diag, c->node, "equation: unexpected character 0x%02x",
                                  (unsigned char)ch);
        }
    }
    if (e->nterms != c->nin)
        return ir_node_errorf(c->diag, c->node, "equation has %d operand terms but the node has %d inputs",
                              e->nterms, c->nin);
    return 0;
}

/* Maps every operand dim and output dim to a label, given the ranks. */
static int resolve(ir_shape_ctx *c, ein_eq *e, const int *ranks)
{
    int count[EIN_LETTERS] = {0};
    e->ell = 0;
    for (int k = 0; k < e->nterms; k++) {
        const ein_term *t = &e->in[k];
        int letters = t->n - (t->has_ell ? 1 : 0);
        int ell = ranks[k] - letters;
        if (t->has_ell ? ell < 0 : ell != 0)
            return ir_node_errorf(c->diag, c->node, "equation term %d has %d labels but input %d has rank %d",
                                  k, letters, k, ranks[k]);
        if (ell > e->ell)
            e->ell = ell;
    }
    for (int k = 0; k < e->nterms; k++) {
        const ein_term *t = &e->in[k];
        int ell = ranks[k] - (t->n - (t->has_ell ? 1 : 0)), n = 0;
        for (int i = 0; i < t->n; i++) {
            if (t->item[i] == EIN_ELL) {
                /* Right-aligned: this operand's ellipsis dims are the last ones. */
                for (int j = 0; j < ell; j++)
                    e->lab[k][n++] = (signed char)(EIN_LETTERS + e->ell - ell + j);
            } else {
                count[(int)t->item[i]]++;
                e->lab[k][n++] = t->item[i];
            }
        }
        e->nlab[k] = n;
    }
    e->nout = 0;
    if (e->explicit_out) {
        bool seen[EIN_LETTERS] = {false}, ell_seen = false;
        for (int i = 0; i < e->out.n; i++) {
            int l = e->out.item[i];
            if (l == EIN_ELL) {
                ell_seen = true;
                if (e->nout + e->ell > IR_MAX_RANK)
                    return ir_node_errorf(c->diag, c->node, "equation: output rank exceeds %d", IR_MAX_RANK);
                for (int j = 0; j < e->ell; j++)
                    e->olab[e->nout++] = (signed char)(EIN_LETTERS + j);
                continue;
            }
            if (!count[l])
                return ir_node_errorf(c->diag, c->node, "equation: output label '%c' is not in any input",
                                      l < 26 ? 'A' + l : 'a' + l - 26);
            if (seen[l])
                return ir_node_errorf(c->diag, c->node, "equation: output label '%c' is repeated",
                                      l < 26 ? 'A' + l : 'a' + l - 26);
            seen[l] = true;
            if (e->nout >= IR_MAX_RANK)
                return ir_node_errorf(c->diag, c->node, "equation: output rank exceeds %d", IR_MAX_RANK);
            e->olab[e->nout++] = (signed char)l;
        }
        if (!ell_seen && e->ell > 0)
            return ir_node_errorf(c->diag, c->node,
                                  "equation: inputs use '...' for %d dims but the output has no '...'",
                                  e->ell);
        return 0;
    }
    for (int j = 0; j < e->ell; j++)
        e->olab[e->nout++] = (signed char)(EIN_LETTERS + j);
    for (int l = 0; l < EIN_LETTERS; l++)
        if (count[l] == 1) {
            if (e->nout >= IR_MAX_RANK)
                return ir_node_errorf(c->diag, c->node, "equation: output rank exceeds %d", IR_MAX_RANK);
            e->olab[e->nout++] = (signed char)l;
        }
    return 0;
}

static int parse_for_node(ir_shape_ctx *c, ein_eq *e)
{
    const char *eq = ir_attr_string(c->node, "equation", NULL);
    if (!eq)
        return ir_node_errorf(c->diag, c->node, "missing attribute 'equation'");
    if (c->nin < 1 || c->nin > EIN_MAX_OPERANDS)
        return ir_node_errorf(c->diag, c->node, "expects 1 to %d inputs", EIN_MAX_OPERANDS);
    return parse_equation(c, eq, e);
}

/* Size of every label, merging the dims that carry it: letters must agree
 * (symbols pass through), ellipsis labels broadcast as numpy does. */
static int label_dims(ir_shape_ctx *c, const ein_eq *e, ir_dim *ld, bool *used)
{
    for (int l = 0; l < EIN_LABELS; l++) {
        used[l] = false;
        ld[l] = ir_dim_const(1);
    }
    for (int k = 0; k < e->nterms; k++)
        for (int i = 0; i < e->nlab[k]; i++) {
            int l = e->lab[k][i];
            ir_dim d = c->in[k]->dims[i], cur = ld[l];
            bool bcast = l >= EIN_LETTERS;
            if (!used[l]) {
                ld[l] = d;
                used[l] = true;
                continue;
            }
            if (ir_dim_is_const(cur) && ir_dim_is_const(d)) {
                if (cur.v == d.v)
                    continue;
                if (bcast && (cur.v == 1 || d.v == 1)) {
                    ld[l] = cur.v == 1 ? d : cur;
                    continue;
                }
                return ir_node_errorf(c->diag, c->node, "label size mismatch: %lld vs %lld (input %d)",
                                      (long long)cur.v, (long long)d.v, k);
            }
            if (ir_dim_is_const(d))
                ld[l] = bcast && d.v == 1 ? cur : d;
            else if (ir_dim_is_const(cur))
                ld[l] = bcast && cur.v == 1 ? d : cur;
            else if (!ir_dim_eq(cur, d))
                ld[l] = ir_dim_unknown();
        }
    return 0;
}

int shape_einsum(ir_shape_ctx *c)
{
    ein_eq *e = malloc(sizeof *e);
    if (!e)
        return ir_node_errorf(c->diag, c->node, "out of memory");
    int rc = -1, ranks[EIN_MAX_OPERANDS];
    ir_dtype dt = IR_UNDEF;
    bool ranks_known = true;
    if (parse_for_node(c, e) < 0)
        goto done;
    for (int k = 0; k < c->nin; k++) {
        if (!c->in[k]) {
            ir_node_errorf(c->diag, c->node, "input %d is missing", k);
            goto done;
        }
        if (k == 0)
            dt = c->in[0]->dtype;
        if (c->in[k]->dtype != dt) {
            ir_node_errorf(c->diag, c->node, "input %d is %s but input 0 is %s", k,
                           ir_dtype_name(c->in[k]->dtype), ir_dtype_name(dt));
            goto done;
        }
        ranks[k] = c->in[k]->rank;
        ranks_known &= ranks[k] >= 0;
    }
    if (dt == IR_BOOL) {
        ir_node_errorf(c->diag, c->node, "bool inputs are not supported");
        goto done;
    }
    if (!ranks_known) {
        int r = IR_RANK_UNKNOWN;
        if (e->explicit_out && !e->out.has_ell)
            r = e->out.n;
        ir_type_unknown(&c->out[0], dt, r);
        rc = 0;
        goto done;
    }
    ir_dim ld[EIN_LABELS];
    bool used[EIN_LABELS];
    if (resolve(c, e, ranks) < 0 || label_dims(c, e, ld, used) < 0)
        goto done;
    c->out[0].dtype = dt;
    c->out[0].rank = e->nout;
    for (int i = 0; i < e->nout; i++)
        c->out[0].dims[i] = ld[(int)e->olab[i]];
    rc = 0;
done:
    free(e);
    return rc;
}

/* One step of the label walk: advance the multi-index and every operand's
 * offset by its stride for the label that moved. */
static inline void ein_step(int64_t *idx, const int64_t *dims, int nl, const int64_t *st,
                            int64_t *off, int nin)
{
    for (int p = nl - 1; p >= 0; p--) {
        if (++idx[p] < dims[p]) {
            for (int k = 0; k < nin; k++)
                off[k] += st[k * EIN_LABELS + p];
            return;
        }
        idx[p] = 0;
        for (int k = 0; k < nin; k++)
            off[k] -= st[k * EIN_LABELS + p] * (dims[p] - 1);
    }
}

int ref_einsum(ir_ref_ctx *c)
{
    int nin = c->nin, rc = -1, ranks[EIN_MAX_OPERANDS];
    ir_type tin[EIN_MAX_OPERANDS];
    const ir_type *tp[EIN_MAX_OPERANDS];
    if (nin < 1 || nin > EIN_MAX_OPERANDS)
        return ir_node_errorf(c->diag, c->node, "expects 1 to %d inputs", EIN_MAX_OPERANDS);
    for (int k = 0; k < nin; k++) {
        ir_type_of_tensor(c->in[k], &tin[k]);
        tp[k] = &tin[k];
        ranks[k] = c->in[k]->rank;
    }
    ir_shape_ctx sc = {.node = c->node, .nin = nin, .in = tp, .val = c->in, .diag = c->diag};
    ein_eq *e = malloc(sizeof *e);
    int64_t *st = calloc((size_t)nin * EIN_LABELS, sizeof *st), *off = calloc((size_t)nin, sizeof *off);
    if (!e || !st || !off) {
        ir_node_errorf(c->diag, c->node, "out of memory");
        goto done;
    }
    ir_dim ld[EIN_LABELS];
    bool used[EIN_LABELS];
    if (parse_for_node(&sc, e) < 0 || resolve(&sc, e, ranks) < 0 || label_dims(&sc, e, ld, used) < 0)
        goto done;

    /* Walk order: output labels, then summed labels. */
    int order[EIN_LABELS], pos[EIN_LABELS], nl = 0;
    int64_t dims[EIN_LABELS];
    for (int l = 0; l < EIN_LABELS; l++)
        pos[l] = -1;
    for (int i = 0; i < e->nout; i++)
        order[nl++] = e->olab[i];
    for (int l = 0; l < EIN_LABELS; l++)
        if (used[l]) {
            bool in_out = false;
            for (int i = 0; i < e->nout; i++)
                in_out |= e->olab[i] == l;
            if (!in_out)
                order[nl++] = l;
        }
    for (int p = 0; p < nl; p++) {
        pos[order[p]] = p;
        dims[p] = ld[order[p]].v;
    }
    int64_t nsum;
    if (!ir_numel_ok(dims + e->nout, nl - e->nout, &nsum)) {
        ir_node_errorf(c->diag, c->node, "the summed labels have too many combinations");
        goto done;
    }
    for (int k = 0; k < nin; k++) {
        int64_t s[IR_MAX_RANK];
        ir_strides(c->in[k]->dims, ranks[k], s);
        for (int i = 0; i < ranks[k]; i++) {
            int l = e->lab[k][i];
            /* A broadcast dim of 1 stays put; a repeated label walks the diagonal. */
            if (c->in[k]->dims[i] != 1 || dims[pos[l]] == 1)
                st[k * EIN_LABELS + pos[l]] += s[i];
        }
    }
    ir_tensor *y = c->out[0];
    bool flt = ir_dtype_is_float(y->dtype);
    int64_t idx[EIN_LABELS] = {0};
    for (int64_t o = 0; o < y->numel; o++) {
        double fa = 0;
        uint64_t ia = 0;
        for (int64_t s = 0; s < nsum; s++) {
            if (flt) {
                double p = 1;
                for (int k = 0; k < nin; k++)
                    p *= ir_tensor_getf(c->in[k], off[k]);
                fa += p;
            } else {
                uint64_t p = 1;
                for (int k = 0; k < nin; k++)
                    p *= (uint64_t)ir_tensor_geti(c->in[k], off[k]);
                ia += p;
            }
            ein_step(idx, dims, nl, st, off, nin);
        }
        if (flt)
            ir_tensor_setf(y, o, fa);
        else
            ir_tensor_seti(y, o, (int64_t)ia);
    }
    rc = 0;
done:
    free(e);
    free(st);
    free(off);
    return rc;
}
