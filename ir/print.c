/* print.c - the .icc printer: writes a graph in the text form specified
 * in docs/ir.md. Output is canonical: one spelling per graph, so that
 * print -> parse -> print gives the same bytes. Names go bare when the
 * lexer would read them back unchanged and quoted otherwise; constants
 * go inline only when every element reads back to the same bits, and
 * otherwise into the data section as hex. The printer never fails on a
 * malformed graph (it is a debugging aid); only write errors fail. */
#include "ir/text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "ir/text_impl.h"

/* Constants and tensor attributes whose payload goes to the data section,
 * numbered in the order they are printed. */
typedef struct blob {
    const void *data;
    size_t nbytes;
} blob;

typedef struct pr {
    FILE *f;                   /* NULL: print into buf */
    char *buf;
    size_t len, cap;
    bool err;
    const ir_graph *g;
    int depth;                 /* subgraph nesting: statements indent 2 per level */
    blob *blobs;
    size_t nblobs, cap_blobs;
} pr;

static void put(pr *p, const char *s, size_t n)
{
    if (p->err || n == 0)
        return;
    if (p->f) {
        if (fwrite(s, 1, n, p->f) != n)
            p->err = true;
        return;
    }
    if (n >= SIZE_MAX / 4 - p->len) {
        p->err = true;
        return;
    }
    if (p->len + n + 1 > p->cap) {
        size_t nc = p->cap ? p->cap : 4096;
        while (nc < p->len + n + 1)
            nc *= 2;
        char *nb = realloc(p->buf, nc);
        if (!nb) {
            p->err = true;
            return;
        }
        p->buf = nb;
        p->cap = nc;
    }
    memcpy(p->buf + p->len, s, n);
    p->len += n;
}

static void puts_(pr *p, const char *s) { put(p, s, strlen(s)); }

static void put_int(pr *p, long long v)
{
    char b[32];
    put(p, b, (size_t)snprintf(b, sizeof b, "%lld", v));
}

/* A quoted string with the escapes of ir_text_escape_char. */
static void put_quoted(pr *p, const char *s, size_t n)
{
    char chunk[256];
    size_t o = 0;
    chunk[o++] = '"';
    for (size_t i = 0; i < n;) {
        char e[8];
        size_t used, k = ir_text_escape_char((const unsigned char *)s + i, n - i, e, &used);
        if (o + k >= sizeof chunk) { /* keep room for the closing quote */
            put(p, chunk, o);
            o = 0;
        }
        memcpy(chunk + o, e, k);
        o += k;
        i += used;
    }
    chunk[o++] = '"';
    put(p, chunk, o);
}

/* %name / @name: bare when every byte is a name character. */
static void put_name(pr *p, char sigil, const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s);
    put(p, &sigil, 1);
    if (ir_text_is_bare_name(s, n))
        put(p, s, n);
    else
        put_quoted(p, s, n);
}

/* Symbols and attribute names: bare when an identifier. */
static void put_ident(pr *p, const char *s)
{
    size_t n = strlen(s);
    if (ir_text_is_ident(s, n))
        put(p, s, n);
    else
        put_quoted(p, s, n);
}

static void put_value(pr *p, const ir_value *v)
{
    put_name(p, '%', v ? v->name : "<null>");
}

static void put_dtype(pr *p, ir_dtype t)
{
    puts_(p, t > IR_UNDEF && t < IR_DTYPE_COUNT ? ir_dtype_name(t) : "?");
}

/* type = dtype '[' ('*' | dims) ']' */
static void put_type(pr *p, const ir_type *t)
{
    put_dtype(p, t->dtype);
    puts_(p, "[");
    bool known = t->rank >= 0 && t->rank <= IR_MAX_RANK;
    if (!known)
        puts_(p, "*");
    for (int i = 0; known && i < t->rank; i++) {
        ir_dim d = t->dims[i];
        if (i)
            puts_(p, ",");
        if (d.sym == 0)
            put_int(p, (long long)d.v);
        else if (d.sym > 0 && d.sym < p->g->nsyms)
            put_ident(p, p->g->syms[d.sym]);
        else
            puts_(p, "?");
    }
    puts_(p, "]");
}

/* ---- elements ------------------------------------------------------------ */

/* The shortest decimal that reads back (through ir_text_scan_elem) to
 * the same bits, spelled so it cannot be mistaken for an integer. */
static void fmt_float(ir_dtype dt, const unsigned char *e, char *buf, size_t cap)
{
    double v;
    uint16_t h;
    switch (dt) {
    case IR_F64: memcpy(&v, e, 8); break;
    case IR_F32: { float f; memcpy(&f, e, 4); v = f; break; }
    case IR_F16: memcpy(&h, e, 2); v = ir_f16_to_f32(h); break;
    default: memcpy(&h, e, 2); v = ir_bf16_to_f32(h); break;
    }
    if (isnan(v)) {
        snprintf(buf, cap, "%s", signbit(v) ? "-nan" : "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, cap, "%s", v < 0 ? "-inf" : "inf");
        return;
    }
    size_t sz = ir_dtype_size(dt);
    unsigned char back[8];
    const char *why;
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (ir_text_scan_elem(dt, buf, strlen(buf), back, &why) == 0 && !memcmp(back, e, sz))
            break;
    }
    /* Integers read better without an exponent (65504.0, not 6.55e+04)
     * when that is no longer. */
    char fixed[48];
    if (fabs(v) < 1e16 && v == floor(v) && v != 0) {
        snprintf(fixed, sizeof fixed, "%.0f.0", v);
        if (strlen(fixed) <= strlen(buf) &&
            ir_text_scan_elem(dt, fixed, strlen(fixed), back, &why) == 0 && !memcmp(back, e, sz))
            snprintf(buf, cap, "%s", fixed);
    }
    if (!strpbrk(buf, ".e"))
        strncat(buf, ".0", cap - strlen(buf) - 1);
}

/* Formats element i; returns whether it reads back to the same bytes. */
static bool fmt_elem(ir_dtype dt, const void *data, int64_t i, char *buf, size_t cap)
{
    size_t sz = ir_dtype_size(dt);
    const unsigned char *e = (const unsigned char *)data + (size_t)i * sz;
    if (ir_dtype_is_float(dt))
        fmt_float(dt, e, buf, cap);
    else if (dt == IR_BOOL)
        snprintf(buf, cap, "%s", e[0] == 1 ? "true" : e[0] == 0 ? "false" : "?");
    else if (ir_dtype_is_int(dt)) {
        uint64_t u = 0;
        memcpy(&u, e, sz); /* little-endian host */
        if (ir_dtype_is_signed(dt) && sz < 8 && (u >> (sz * 8 - 1)) & 1)
            u |= ~(uint64_t)0 << (sz * 8);
        if (ir_dtype_is_signed(dt))
            snprintf(buf, cap, "%lld", (long long)u);
        else
            snprintf(buf, cap, "%llu", (unsigned long long)u);
    } else
        return false;
    unsigned char back[8];
    const char *why;
    return ir_text_scan_elem(dt, buf, strlen(buf), back, &why) == 0 && !memcmp(back, e, sz);
}

#define INLINE_MAX 16

/* payload = '[' elems ']' when small and exact, else '@' blob number. */
static void put_payload(pr *p, ir_dtype dt, int64_t numel, const void *data, size_t nbytes)
{
    if (numel == 0) {
        puts_(p, "[]");
        return;
    }
    if (numel <= INLINE_MAX && data) {
        char el[INLINE_MAX][48];
        bool exact = true;
        for (int64_t i = 0; i < numel && exact; i++)
            exact = fmt_elem(dt, data, i, el[i], sizeof el[i]);
        if (exact) {
            puts_(p, "[");
            for (int64_t i = 0; i < numel; i++) {
                if (i)
                    puts_(p, ", ");
                puts_(p, el[i]);
            }
            puts_(p, "]");
            return;
        }
    }
    if (p->nblobs == p->cap_blobs) {
        size_t nc = p->cap_blobs ? p->cap_blobs * 2 : 16;
        blob *nb = realloc(p->blobs, nc * sizeof *nb);
        if (!nb) {
            p->err = true;
            return;
        }
        p->blobs = nb;
        p->cap_blobs = nc;
    }
    p->blobs[p->nblobs] = (blob){data, nbytes};
    puts_(p, "@");
    put_int(p, (long long)p->nblobs++);
}

static void put_hex(pr *p, const blob *b)
{
    static const char hx[] = "0123456789abcdef";
    char chunk[4096];
    size_t o = 0;
    const unsigned char *s = b->data;
    for (size_t i = 0; i < b->nbytes; i++) {
        unsigned c = s ? s[i] : 0;
        chunk[o++] = hx[c >> 4];
        chunk[o++] = hx[c & 15];
        if (o == sizeof chunk) {
            put(p, chunk, o);
            o = 0;
        }
    }
    put(p, chunk, o);
}

/* ---- statements ---------------------------------------------------------- */

static void put_tensor(pr *p, const ir_tensor *t)
{
    ir_type ty = {t->dtype, t->rank, {{0, 0}}};
    for (int i = 0; i < t->rank && i < IR_MAX_RANK; i++)
        ty.dims[i] = ir_dim_const(t->dims[i]);
    put_type(p, &ty);
    puts_(p, " ");
    put_payload(p, t->dtype, t->numel, t->data, t->nbytes);
}

static void put_indent(pr *p)
{
    for (int i = 0; i <= p->depth; i++)
        puts_(p, "  ");
}

static void put_graph(pr *p, const ir_graph *g);

static void put_attr(pr *p, const ir_attr *a)
{
    char b[48];
    put_ident(p, a->name);
    puts_(p, " = ");
    switch (a->kind) {
    case IR_ATTR_INT:
        put_int(p, (long long)a->i);
        return;
    case IR_ATTR_FLOAT:
        fmt_float(IR_F32, (const unsigned char *)&a->f, b, sizeof b);
        puts_(p, b);
        return;
    case IR_ATTR_STRING:
        put_quoted(p, a->s ? a->s : "", a->s ? strlen(a->s) : 0);
        return;
    case IR_ATTR_TENSOR:
        if (a->tensor)
            put_tensor(p, a->tensor);
        return;
    case IR_ATTR_GRAPH:
        if (a->graph && p->depth < IR_MAX_SUBGRAPH_DEPTH) {
            const ir_graph *outer = p->g;
            p->depth++;
            put_graph(p, a->graph);
            p->depth--;
            p->g = outer;
        } else {
            puts_(p, "?");
        }
        return;
    default:
        break;
    }
    puts_(p, "[");
    for (int i = 0; i < a->n; i++) {
        if (i)
            puts_(p, ", ");
        if (a->kind == IR_ATTR_INTS)
            put_int(p, (long long)a->ints[i]);
        else if (a->kind == IR_ATTR_FLOATS) {
            fmt_float(IR_F32, (const unsigned char *)&a->floats[i], b, sizeof b);
            puts_(p, b);
        } else
            put_quoted(p, a->strings[i], strlen(a->strings[i]));
    }
    puts_(p, "]");
}

static void put_const(pr *p, const ir_value *v)
{
    put_indent(p);
    put_value(p, v);
    puts_(p, " = const ");
    put_type(p, &v->type);
    puts_(p, " ");
    put_payload(p, v->cval.dtype, v->cval.numel, v->cval.data, v->cval.nbytes);
    puts_(p, "\n");
}

/* node = outs '=' Op '(' ins ')' [attrs] [name] ':' types */
static void put_node(pr *p, const ir_node *n)
{
    put_indent(p);
    for (int i = 0; i < n->nout; i++) {
        if (i)
            puts_(p, ", ");
        put_value(p, n->out[i]);
    }
    puts_(p, " = ");
    if (n->op >= 0 && n->op < IR_OP_COUNT)
        puts_(p, ir_ops[n->op].name);
    else
        puts_(p, "?");
    puts_(p, "(");
    for (int i = 0; i < n->nin; i++) {
        if (n->ncap > 0 && i == n->nin - n->ncap)
            puts_(p, i ? " | " : "| ");
        else if (i)
            puts_(p, ", ");
        if (n->in[i])
            put_value(p, n->in[i]);
        else
            puts_(p, "_");
    }
    puts_(p, ")");
    if (n->nattr) {
        puts_(p, " {");
        for (int i = 0; i < n->nattr; i++) {
            if (i)
                puts_(p, ", ");
            put_attr(p, &n->attrs[i]);
        }
        puts_(p, "}");
    }
    if (n->name && n->name[0]) {
        puts_(p, " ");
        put_quoted(p, n->name, strlen(n->name));
    }
    puts_(p, " :");
    for (int i = 0; i < n->nout; i++) {
        puts_(p, i ? ", " : " ");
        if (n->out[i])
            put_type(p, &n->out[i]->type);
        else
            puts_(p, "?[*]");
    }
    puts_(p, "\n");
}

/* Constants are printed among the nodes in creation order: before a
 * node go the constants whose ids are below its first output's, then any
 * constant it uses that is still unprinted (a pass may have made it
 * later). A parsed graph numbers values in text order, so this order
 * survives a round trip, and a constant written next to its use stays. */
static void put_body(pr *p)
{
    const ir_graph *g = p->g;
    bool *done = calloc((size_t)g->nvalues + 1, 1);
    if (!done) {
        p->err = true;
        return;
    }
    int ci = 0;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        int first = g->nvalues;
        for (int i = 0; i < n->nout; i++)
            if (n->out[i] && n->out[i]->id < first)
                first = n->out[i]->id;
        for (; ci < g->nvalues && ci < first; ci++)
            if (g->values[ci]->kind == IR_VAL_CONST && !done[ci]) {
                put_const(p, g->values[ci]);
                done[ci] = true;
            }
        for (int i = 0; i < n->nin; i++) {
            const ir_value *v = n->in[i];
            if (v && v->kind == IR_VAL_CONST && v->id >= 0 && v->id < g->nvalues &&
                g->values[v->id] == v && !done[v->id]) {
                put_const(p, v);
                done[v->id] = true;
            }
        }
        put_node(p, n);
    }
    for (; ci < g->nvalues; ci++)
        if (g->values[ci]->kind == IR_VAL_CONST && !done[ci])
            put_const(p, g->values[ci]);
    free(done);
}

/* groups = 'groups' '{' (INT '=' '[' values ']')* '}': ids increasing,
 * members in node order, each named by its first output. Printing never
 * fails on a malformed graph, so the groups are found by sorting here
 * rather than through ir_graph_group_roots's checks. */
typedef struct {
    int group, index;
} gmember;

static int cmp_gmember(const void *a, const void *b)
{
    const gmember *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return x->index - y->index;
}

static void put_groups(pr *p)
{
    const ir_graph *g = p->g;
    int n = 0;
    for (int k = 0; k < g->nnodes; k++)
        n += g->nodes[k]->group != 0;
    if (!n)
        return;
    gmember *m = malloc(sizeof *m * (size_t)n);
    if (!m) {
        p->err = true;
        return;
    }
    n = 0;
    for (int k = 0; k < g->nnodes; k++)
        if (g->nodes[k]->group)
            m[n++] = (gmember){g->nodes[k]->group, k};
    qsort(m, (size_t)n, sizeof *m, cmp_gmember);
    puts_(p, "groups {\n");
    for (int i = 0; i < n; i++) {
        const ir_node *nd = g->nodes[m[i].index];
        bool first = i == 0 || m[i - 1].group != m[i].group;
        if (first) {
            puts_(p, "  ");
            put_int(p, m[i].group);
            puts_(p, " = [");
        } else {
            puts_(p, ", ");
        }
        put_value(p, nd->nout ? nd->out[0] : NULL);
        if (i + 1 == n || m[i + 1].group != m[i].group)
            puts_(p, "]\n");
    }
    puts_(p, "}\n");
    free(m);
}

/* plan = 'plan' '{' (value '=' INT)* '}', in node order: the memory
 * plan's arena offsets, when the plan pass has run. */
static void put_plan(pr *p)
{
    const ir_graph *g = p->g;
    bool any = false;
    for (int k = 0; k < g->nnodes; k++)
        for (int i = 0; i < g->nodes[k]->nout; i++) {
            const ir_value *v = g->nodes[k]->out[i];
            if (!v || !v->planned)
                continue;
            if (!any)
                puts_(p, "plan {\n");
            any = true;
            puts_(p, "  ");
            put_value(p, v);
            puts_(p, " = ");
            put_int(p, (long long)v->offset);
            puts_(p, "\n");
        }
    if (any)
        puts_(p, "}\n");
}

static void put_sym_operand(pr *p, ir_dim d)
{
    char b[24];
    if (d.sym > 0 && d.sym < p->g->nsyms)
        put_ident(p, p->g->syms[d.sym]);
    else {
        snprintf(b, sizeof b, "%lld", (long long)d.v);
        puts_(p, b);
    }
}

/* A derived symbol's definition: ' = ' op '(' operand ',' operand ')'. */
static void put_sym_def(pr *p, const ir_sym_def *d)
{
    static const char *const ops[] = {"", "add", "mul", "floordiv", "ceildiv"};
    if (!d)
        return;
    puts_(p, " = ");
    puts_(p, ops[d->op]);
    puts_(p, "(");
    put_sym_operand(p, d->a);
    puts_(p, ", ");
    put_sym_operand(p, d->b);
    puts_(p, ")");
}

/* header '{' body '}' of g; a subgraph's closing brace is indented to
 * its node's statement. */
static void put_graph(pr *p, const ir_graph *g)
{
    p->g = g;
    puts_(p, "graph ");
    put_name(p, '@', g->name);
    if (g->nsyms > 1) {
        puts_(p, "<");
        for (int i = 1; i < g->nsyms; i++) {
            if (i > 1)
                puts_(p, ", ");
            put_ident(p, g->syms[i]);
            put_sym_def(p, ir_graph_sym_def(g, i));
        }
        puts_(p, ">");
    }
    puts_(p, "(");
    for (int i = 0; i < g->ninputs; i++) {
        if (i)
            puts_(p, ", ");
        put_value(p, g->inputs[i]);
        puts_(p, ": ");
        put_type(p, &g->inputs[i]->type);
    }
    puts_(p, ") -> (");
    for (int i = 0; i < g->noutputs; i++) {
        if (i)
            puts_(p, ", ");
        put_value(p, g->outputs[i]);
    }
    puts_(p, ") {\n");
    put_body(p);
    for (int i = 0; i < p->depth; i++)
        puts_(p, "  ");
    puts_(p, "}");
}

static int print_graph(const ir_graph *g, pr *p)
{
    put_graph(p, g);
    puts_(p, "\n");
    p->g = g;
    put_groups(p);
    put_plan(p);
    for (size_t i = 0; i < p->nblobs; i++) {
        puts_(p, "data @");
        put_int(p, (long long)i);
        puts_(p, " = hex\"");
        put_hex(p, &p->blobs[i]);
        puts_(p, "\"\n");
    }
    free(p->blobs);
    return p->err ? -1 : 0;
}

int ir_print(const ir_graph *g, FILE *f)
{
    pr p = {0};
    ir_text_locale loc;
    p.f = f;
    ir_text_locale_enter(&loc);
    int rc = print_graph(g, &p);
    ir_text_locale_leave(&loc);
    return rc;
}

char *ir_print_string(const ir_graph *g, size_t *len)
{
    pr p = {0};
    ir_text_locale loc;
    ir_text_locale_enter(&loc);
    int rc = print_graph(g, &p);
    ir_text_locale_leave(&loc);
    if (rc < 0 || !p.buf) {
        free(p.buf);
        return NULL;
    }
    p.buf[p.len] = 0;
    if (len)
        *len = p.len;
    return p.buf;
}
