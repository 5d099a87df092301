/* parse.c - the .icc parser: reads the text form specified in docs/ir.md
 * into a graph built with the ir_graph_* builders, then verifies it.
 * Types in the text are authoritative (no shape inference runs).
 *
 * The input is hostile (it is fuzzed): the grammar has no recursion, the
 * lexer never reads past len (the text need not be NUL-terminated), and
 * every allocation is bounded by the input's size. Constant payloads in
 * the data section are written after the statements that declare them,
 * so a declared payload is only allocated if the rest of the text is long
 * enough to hold its hex digits. Each error is one line,
 * "display:LINE:COL: message", pointing at the offending token. */
#include "ir/text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "ir/text_impl.h"

/* ---- growable buffers and a string-keyed hash table ------------------ */

/* Ensures *buf holds need elements of sz bytes; false on out of memory. */
static bool grow(void **buf, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return true;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > SIZE_MAX / 4 / sz)
            return false;
        nc *= 2;
    }
    void *nb = realloc(*buf, nc * sz);
    if (!nb)
        return false;
    *buf = nb;
    *cap = nc;
    return true;
}
#define GROW(arr, cap, need) grow((void **)&(arr), &(cap), (need), sizeof *(arr))

typedef struct hent {
    const char *k;             /* borrowed: lives in the graph's arena */
    size_t n;
    void *v;
} hent;

typedef struct htab {
    hent *e;
    size_t cap, cnt;           /* cap is 0 or a power of two */
} htab;

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static hent *ht_slot(hent *e, size_t cap, const char *k, size_t n)
{
    size_t i = (size_t)hash_bytes(k, n) & (cap - 1);
    while (e[i].k && (e[i].n != n || memcmp(e[i].k, k, n)))
        i = (i + 1) & (cap - 1);
    return &e[i];
}

static void *ht_get(const htab *h, const char *k, size_t n)
{
    return h->cap ? ht_slot(h->e, h->cap, k, n)->v : NULL;
}

/* Adds k (not present) -> v; -1 on out of memory. */
static int ht_put(htab *h, const char *k, size_t n, void *v)
{
    if (2 * (h->cnt + 1) > h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 64;
        hent *ne = calloc(nc, sizeof *ne);
        if (!ne)
            return -1;
        for (size_t i = 0; i < h->cap; i++)
            if (h->e[i].k)
                *ht_slot(ne, nc, h->e[i].k, h->e[i].n) = h->e[i];
        free(h->e);
        h->e = ne;
        h->cap = nc;
    }
    *ht_slot(h->e, h->cap, k, n) = (hent){k, n, v};
    h->cnt++;
    return 0;
}

/* A list of NUL-terminated names with the source position of each. */
typedef struct names {
    char *buf;
    size_t len, cap;
    size_t *off, *pos;
    size_t n, cap_off, cap_pos;
} names;

static int names_add(names *nl, const char *s, size_t n, size_t pos)
{
    if (!GROW(nl->buf, nl->cap, nl->len + n + 1) || !GROW(nl->off, nl->cap_off, nl->n + 1) ||
        !GROW(nl->pos, nl->cap_pos, nl->n + 1))
        return -1;
    memcpy(nl->buf + nl->len, s, n);
    nl->buf[nl->len + n] = 0;
    nl->off[nl->n] = nl->len;
    nl->pos[nl->n++] = pos;
    nl->len += n + 1;
    return 0;
}

static const char *names_get(const names *nl, size_t i) { return nl->buf + nl->off[i]; }

static void names_free(names *nl)
{
    free(nl->buf);
    free(nl->off);
    free(nl->pos);
}

/* ---- the lexer ----------------------------------------------------------- */

enum tk {
    T_EOF, T_IDENT, T_NUM, T_STR, T_HEX,
    T_VAL,                     /* %name */
    T_AT,                      /* @name */
    T_ARROW,                   /* -> */
    T_PUNCT,                   /* one of ()[]{}<>,=:*? */
};

typedef struct tok {
    enum tk k;
    size_t pos, end;           /* source span */
    char c;                    /* T_PUNCT */
    /* Text of identifiers, numbers and names. Bare text points into the
     * source; quoted text is decoded into the parser's sbuf. T_HEX: the
     * raw bytes between the quotes. */
    const char *s;
    size_t n;
    bool quoted;
} tok;

/* A payload in the data section that a constant or tensor attribute is
 * waiting for; dest is its zeroed storage in the graph's arena. */
typedef struct pending {
    uint64_t id;
    size_t pos;
    void *dest;
    size_t nbytes;
    const char *label;         /* the constant's name; NULL: a tensor attribute */
    bool done;
} pending;

typedef struct parser {
    const char *src;
    size_t len, at;
    const char *display;
    icc_diag *d;
    tok t;
    char *sbuf;
    size_t scap;
    ir_graph *g;
    ir_graph *parent;          /* while a subgraph attribute is read: its owner */
    int depth;                 /* subgraph nesting */
    htab vals, syms;
    pending *pend;
    size_t npend, cap_pend;
    uint64_t pend_bytes;
    names outs, gouts, strs;   /* statement outputs, graph outputs, strings attr */
    const char **nptr;
    size_t cap_nptr;
    ir_value **ins;
    size_t nins, cap_ins;
    unsigned char *ebuf;       /* elements of an inline payload or list */
    size_t cap_ebuf;
} parser;

static int perr(parser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int perr(parser *p, size_t pos, const char *fmt, ...)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < p->len; i++) {
        if (p->src[i] == '\n') {
            line++;
            col = 1;
        } else
            col++;
    }
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ir_errorf(p->d, "%s:%zu:%zu: %s", p->display, line, col, msg);
}

static int oom(parser *p) { return perr(p, p->t.pos, "out of memory"); }

static int hexval(unsigned char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decodes the quoted string at p->at (on the quote) into sbuf. */
static int lex_string(parser *p)
{
    size_t start = p->at, i = start + 1, o = 0;
    for (;;) {
        if (i >= p->len)
            return perr(p, start, "unterminated string");
        unsigned char c = (unsigned char)p->src[i];
        if (c == '"')
            break;
        if (!GROW(p->sbuf, p->scap, o + 2))
            return oom(p);
        if (c == '\\') {
            char e = i + 1 < p->len ? p->src[i + 1] : 0;
            const char *from = "nt\"\\r", *to = "\n\t\"\\\r", *k = e ? strchr(from, e) : NULL;
            if (k) {
                p->sbuf[o++] = to[k - from];
                i += 2;
                continue;
            }
            int v = 0;
            for (int j = 2; e == 'x' && j < 4; j++) {
                int x = i + (size_t)j < p->len ? hexval((unsigned char)p->src[i + (size_t)j]) : -1;
                if (x < 0)
                    return perr(p, i, "\\x needs two hex digits");
                v = v * 16 + x;
            }
            if (e != 'x')
                return perr(p, i, "unknown escape in string (known: \\n \\t \\r \\\" \\\\ \\xNN)");
            if (v == 0)
                return perr(p, i, "\\x00 is not allowed in a string");
            p->sbuf[o++] = (char)v;
            i += 4;
            continue;
        }
        if (c < 0x20 || c == 0x7f)
            return perr(p, i, "control character in a string (write it as \\xNN)");
        p->sbuf[o++] = (char)c;
        i++;
    }
    p->t.s = p->sbuf ? p->sbuf : "";
    p->t.n = o;
    p->t.quoted = true;
    p->at = i + 1;
    return 0;
}

/* Reads a name after '%' or '@': bare name characters or a string. */
static int lex_name(parser *p, enum tk k)
{
    p->t.k = k;
    p->at++;
    if (p->at < p->len && p->src[p->at] == '"')
        return lex_string(p);
    size_t s = p->at;
    while (p->at < p->len && ir_text_name_char((unsigned char)p->src[p->at]))
        p->at++;
    if (p->at == s)
        return perr(p, p->t.pos, "expected a name after '%c'", k == T_VAL ? '%' : '@');
    p->t.s = p->src + s;
    p->t.n = p->at - s;
    return 0;
}

static size_t digits(const parser *p, size_t i)
{
    while (i < p->len && ir_text_is_digit((unsigned char)p->src[i]))
        i++;
    return i;
}

/* number = '-'? D ('.' D)? ([eE] [+-]? D)?  |  '-' ('inf' | 'nan') */
static void lex_number(parser *p)
{
    size_t i = p->at + (p->src[p->at] == '-');
    size_t e = digits(p, i);
    if (e == i) /* '-inf' or '-nan', checked by the caller */
        e = i + 3;
    else {
        if (e + 1 < p->len && p->src[e] == '.' && ir_text_is_digit((unsigned char)p->src[e + 1]))
            e = digits(p, e + 1);
        if (e < p->len && (p->src[e] == 'e' || p->src[e] == 'E')) {
            size_t x = e + 1;
            if (x < p->len && (p->src[x] == '+' || p->src[x] == '-'))
                x++;
            if (digits(p, x) > x)
                e = digits(p, x);
        }
    }
    p->t.k = T_NUM;
    p->t.s = p->src + p->at;
    p->t.n = e - p->at;
    p->at = e;
}

static bool at_word(const parser *p, size_t i, const char *w)
{
    size_t n = strlen(w);
    return i + n <= p->len && !memcmp(p->src + i, w, n) &&
           (i + n == p->len || !ir_text_ident_char((unsigned char)p->src[i + n]));
}

/* Advances to the next token. */
static int next(parser *p)
{
    const char *s = p->src;
    for (;;) {
        while (p->at < p->len && s[p->at] && strchr(" \t\r\n", s[p->at]))
            p->at++;
        if (p->at < p->len && s[p->at] == '#') {
            while (p->at < p->len && s[p->at] != '\n')
                p->at++;
            continue;
        }
        break;
    }
    tok *t = &p->t;
    memset(t, 0, sizeof *t);
    t->pos = p->at;
    int rc = 0;
    if (p->at >= p->len) {
        t->k = T_EOF;
        return 0;
    }
    unsigned char c = (unsigned char)s[p->at];
    unsigned char c1 = p->at + 1 < p->len ? (unsigned char)s[p->at + 1] : 0;
    if (ir_text_ident_start(c)) {
        size_t b = p->at;
        while (p->at < p->len && ir_text_ident_char((unsigned char)s[p->at]))
            p->at++;
        t->k = T_IDENT;
        t->s = s + b;
        t->n = p->at - b;
        if (t->n == 3 && !memcmp(t->s, "hex", 3) && p->at < p->len && s[p->at] == '"') {
            const char *q = memchr(s + p->at + 1, '"', p->len - p->at - 1);
            if (!q)
                return perr(p, t->pos, "unterminated hex string");
            t->k = T_HEX;
            t->s = s + p->at + 1;
            t->n = (size_t)(q - t->s);
            p->at = (size_t)(q - s) + 1;
        }
    } else if (ir_text_is_digit(c) || (c == '-' && ir_text_is_digit(c1)) ||
               (c == '-' && (at_word(p, p->at + 1, "inf") || at_word(p, p->at + 1, "nan"))))
        lex_number(p);
    else if (c == '-' && c1 == '>') {
        t->k = T_ARROW;
        p->at += 2;
    } else if (c == '"') {
        t->k = T_STR;
        rc = lex_string(p);
    } else if (c == '%')
        rc = lex_name(p, T_VAL);
    else if (c == '@')
        rc = lex_name(p, T_AT);
    else if (c && strchr("()[]{}<>,=:*?|", c)) {
        t->k = T_PUNCT;
        t->c = (char)c;
        p->at++;
    } else {
        char b[16];
        ir_text_show(b, sizeof b, "", s + p->at, 1, 'q');
        return perr(p, p->at, "unexpected character %s", b);
    }
    t->end = p->at;
    return rc;
}

static bool is_p(const parser *p, char c) { return p->t.k == T_PUNCT && p->t.c == c; }

static bool is_kw(const parser *p, const char *kw)
{
    return p->t.k == T_IDENT && strlen(kw) == p->t.n && !memcmp(p->t.s, kw, p->t.n);
}

static int expect(parser *p, char c)
{
    if (!is_p(p, c))
        return perr(p, p->t.pos, "expected '%c'", c);
    return next(p);
}

/* The current token as written, for messages: %"a:b", @0, foo. */
static const char *shown(parser *p, char *buf, size_t cap)
{
    const char *pre = p->t.k == T_VAL ? "%" : p->t.k == T_AT ? "@" : "";
    ir_text_show(buf, cap, pre, p->t.s ? p->t.s : "", p->t.n,
                 p->t.k == T_VAL || p->t.k == T_AT ? 'n' : p->t.k == T_IDENT ? 'i' : 'q');
    return buf;
}

/* ---- types ----------------------------------------------------------- */

static int symbol(parser *p, const char *s, size_t n, int32_t *id)
{
    void *v = ht_get(&p->syms, s, n);
    if (v) {
        *id = (int32_t)(intptr_t)v;
        return 0;
    }
    *id = ir_graph_sym(p->g, s, n);
    if (!*id || ht_put(&p->syms, p->g->syms[*id], n, (void *)(intptr_t)*id) < 0)
        return oom(p);
    return 0;
}

/* type = (dtype | '?') '[' ('*' | [dim (',' dim)*]) ']'
 * dim  = INT | ident | string | '?' */
static int parse_type(parser *p, ir_type *ty)
{
    char b[80];
    memset(ty, 0, sizeof *ty);
    if (p->t.k == T_IDENT) {
        ty->dtype = ir_dtype_from_name(p->t.s, p->t.n);
        if (ty->dtype == IR_UNDEF)
            return perr(p, p->t.pos, "unknown dtype %s", shown(p, b, sizeof b));
    } else if (!is_p(p, '?'))
        return perr(p, p->t.pos, "expected a type");
    if (next(p) < 0 || expect(p, '[') < 0)
        return -1;
    if (is_p(p, '*')) {
        ty->rank = IR_RANK_UNKNOWN;
        return next(p) < 0 ? -1 : expect(p, ']');
    }
    if (is_p(p, ']'))
        return next(p);
    for (;;) {
        if (ty->rank == IR_MAX_RANK)
            return perr(p, p->t.pos, "rank exceeds the maximum of %d", IR_MAX_RANK);
        ir_dim *dm = &ty->dims[ty->rank++];
        const char *why;
        if (p->t.k == T_NUM) {
            if (ir_text_scan_elem(IR_I64, p->t.s, p->t.n, &dm->v, &why) < 0)
                return perr(p, p->t.pos, "%s", why);
            if (dm->v < 0)
                return perr(p, p->t.pos, "dims are >= 0 (write ? for an unknown dim)");
        } else if (p->t.k == T_IDENT || p->t.k == T_STR) {
            if (symbol(p, p->t.s, p->t.n, &dm->sym) < 0)
                return -1;
        } else if (is_p(p, '?'))
            *dm = ir_dim_unknown();
        else
            return perr(p, p->t.pos, "expected a dim (a number, a symbol or ?)");
        if (next(p) < 0)
            return -1;
        if (!is_p(p, ','))
            break;
        if (next(p) < 0)
            return -1;
    }
    if (!is_p(p, ']'))
        return perr(p, p->t.pos, "expected ',' or ']'");
    return next(p);
}

/* A constant's or tensor attribute's type, as a tensor shell. */
static int parse_tensor_type(parser *p, ir_type *ty, ir_tensor *tt)
{
    size_t pos = p->t.pos;
    if (parse_type(p, ty) < 0)
        return -1;
    if (ty->dtype == IR_UNDEF || !ir_type_is_static(ty))
        return perr(p, pos, "a constant needs a dtype and constant dims");
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < ty->rank; i++)
        dims[i] = ty->dims[i].v;
    icc_diag d;
    memset(tt, 0, sizeof *tt);
    if (ir_tensor_init(tt, ty->dtype, ty->rank, dims, &d) < 0)
        return perr(p, pos, "%s", d.msg);
    return 0;
}

/* ---- payloads ------------------------------------------------------------ */

/* Counts the bytes of the current hex"..." token; only hex digits and
 * whitespace may appear in it. */
static int hex_count(parser *p, size_t *nbytes)
{
    size_t nd = 0;
    for (size_t i = 0; i < p->t.n; i++) {
        unsigned char c = (unsigned char)p->t.s[i];
        if (hexval(c) >= 0)
            nd++;
        else if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return perr(p, (size_t)(p->t.s + i - p->src), "hex data may hold only hex digits and spaces");
    }
    if (nd % 2)
        return perr(p, p->t.pos, "hex data has an odd number of digits");
    *nbytes = nd / 2;
    return 0;
}

static void hex_decode(const tok *t, unsigned char *out)
{
    int hi = -1;
    for (size_t i = 0; i < t->n; i++) {
        int v = hexval((unsigned char)t->s[i]);
        if (v < 0)
            continue;
        if (hi < 0)
            hi = v;
        else {
            *out++ = (unsigned char)(hi << 4 | v);
            hi = -1;
        }
    }
}

/* '@' INT (a data section number) */
static int blob_id(parser *p, uint64_t *id)
{
    const char *why;
    if (p->t.k != T_AT || p->t.quoted || ir_text_scan_elem(IR_U64, p->t.s, p->t.n, id, &why) < 0)
        return perr(p, p->t.pos, "expected a data number (@0, @1, ...)");
    return 0;
}

/* Before each item of a list that ends with close: the ',' that
 * separates it from the previous one. Items are read by the caller. */
static int list_item(parser *p, char close, int *cnt)
{
    if (*cnt && !is_p(p, ','))
        return perr(p, p->t.pos, "expected ',' or '%c'", close);
    if (*cnt && next(p) < 0)
        return -1;
    if (*cnt == INT32_MAX)
        return perr(p, p->t.pos, "list too long");
    (*cnt)++;
    return 0;
}

typedef struct payload {
    bool pending;
    uint64_t id;
    size_t pos;
    const void *data;          /* the elements, when not pending */
} payload;

/* payload = '[' [elem (',' elem)*] ']' | hex-string | '@' INT */
static int parse_payload(parser *p, const ir_tensor *tt, payload *pl)
{
    size_t sz = ir_dtype_size(tt->dtype), start = p->t.pos;
    memset(pl, 0, sizeof *pl);
    if (p->t.k == T_HEX) {
        size_t nb;
        if (hex_count(p, &nb) < 0)
            return -1;
        if (nb != tt->nbytes)
            return perr(p, start, "hex data has %zu bytes; the type needs %zu", nb, tt->nbytes);
        if (!GROW(p->ebuf, p->cap_ebuf, nb + 1))
            return oom(p);
        hex_decode(&p->t, p->ebuf);
        pl->data = p->ebuf;
        return next(p);
    }
    if (p->t.k == T_AT) {
        if (blob_id(p, &pl->id) < 0)
            return -1;
        /* Every pending payload's hex digits must still fit in the text. */
        uint64_t room = (uint64_t)(p->len - p->t.end) / 2;
        if (p->pend_bytes > room || (uint64_t)tt->nbytes > room - p->pend_bytes)
            return perr(p, start, "the text is too short to hold the %zu bytes of data @%llu",
                        tt->nbytes, (unsigned long long)pl->id);
        pl->pending = true;
        pl->pos = start;
        return next(p);
    }
    if (!is_p(p, '['))
        return perr(p, p->t.pos, "expected the data: [elements], hex\"...\" or @N");
    if (next(p) < 0)
        return -1;
    int cnt = 0;
    while (!is_p(p, ']')) {
        const char *why;
        if (list_item(p, ']', &cnt) < 0)
            return -1;
        if (p->t.k != T_NUM && p->t.k != T_IDENT)
            return perr(p, p->t.pos, "expected an element");
        if (cnt > tt->numel)
            return perr(p, p->t.pos, "too many elements: the type holds %lld", (long long)tt->numel);
        if (!GROW(p->ebuf, p->cap_ebuf, (size_t)cnt * sz))
            return oom(p);
        if (ir_text_scan_elem(tt->dtype, p->t.s, p->t.n, p->ebuf + (size_t)(cnt - 1) * sz, &why) < 0)
            return perr(p, p->t.pos, "%s", why);
        if (next(p) < 0)
            return -1;
    }
    if (cnt != tt->numel)
        return perr(p, start, "%d elements given; the type holds %lld", cnt,
                    (long long)tt->numel);
    pl->data = p->ebuf;
    return next(p);
}

static int add_pending(parser *p, const payload *pl, void *dest, size_t nbytes, const char *label)
{
    if (!GROW(p->pend, p->cap_pend, p->npend + 1))
        return oom(p);
    p->pend[p->npend++] = (pending){pl->id, pl->pos, dest, nbytes, label, false};
    p->pend_bytes += nbytes;
    return 0;
}

/* ---- statements ---------------------------------------------------------- */

static int define(parser *p, ir_value *v, size_t pos)
{
    size_t n = strlen(v->name);
    if (ht_get(&p->vals, v->name, n)) {
        char b[300];
        ir_text_show(b, sizeof b, "%", v->name, n, 'n');
        return perr(p, pos, "value %s is already defined", b);
    }
    return ht_put(&p->vals, v->name, n, v) < 0 ? oom(p) : 0;
}

/* const = 'const' type payload */
static int parse_const(parser *p)
{
    if (p->outs.n != 1)
        return perr(p, p->outs.pos[1], "a constant defines exactly one value");
    ir_type ty;
    ir_tensor tt;
    payload pl;
    icc_diag d;
    if (next(p) < 0 || parse_tensor_type(p, &ty, &tt) < 0 || parse_payload(p, &tt, &pl) < 0)
        return -1;
    ir_value *v = ir_graph_add_const(p->g, names_get(&p->outs, 0), &ty,
                                     pl.pending ? NULL : pl.data, &d);
    if (!v)
        return perr(p, p->outs.pos[0], "%s", d.msg);
    if (define(p, v, p->outs.pos[0]) < 0)
        return -1;
    return pl.pending ? add_pending(p, &pl, v->cval.data, tt.nbytes, v->name) : 0;
}

static int scan_number(parser *p, ir_dtype dt, void *out)
{
    const char *why;
    if (p->t.k != T_NUM && p->t.k != T_IDENT)
        return perr(p, p->t.pos, dt == IR_I64 ? "expected an integer" : "expected a number");
    if (ir_text_scan_elem(dt, p->t.s, p->t.n, out, &why) < 0)
        return perr(p, p->t.pos, "%s", why);
    return next(p);
}

static int parse_body(parser *p);

/* subgraph = header '{' stmt* '}': a graph attribute, read with its own
 * value and symbol scopes (captures are explicit inputs, so no name of
 * the enclosing graph is visible in it); payloads share the data section. */
static int parse_subgraph(parser *p, ir_node *n, const char *name)
{
    if (p->depth >= IR_MAX_SUBGRAPH_DEPTH)
        return perr(p, p->t.pos, "subgraphs nest deeper than %d", IR_MAX_SUBGRAPH_DEPTH);
    ir_graph *outer = p->g, *outer_parent = p->parent;
    htab vals = p->vals, syms = p->syms;
    names gouts = p->gouts;
    memset(&p->vals, 0, sizeof p->vals);
    memset(&p->syms, 0, sizeof p->syms);
    memset(&p->gouts, 0, sizeof p->gouts);
    p->parent = outer;
    p->depth++;
    int rc = parse_body(p);
    ir_graph *sub = p->g;
    free(p->vals.e);
    free(p->syms.e);
    names_free(&p->gouts);
    p->vals = vals;
    p->syms = syms;
    p->gouts = gouts;
    p->g = outer;
    p->parent = outer_parent;
    p->depth--;
    if (rc < 0)
        return -1;
    return ir_node_set_graph(outer, n, name, sub) < 0 ? oom(p) : 0;
}

static int parse_attr_value(parser *p, ir_node *n, const ir_attr_schema *s)
{
    ir_graph *g = p->g;
    int rc = 0, cnt = 0;
    if (s->kind == IR_ATTR_GRAPH) {
        if (!is_kw(p, "graph"))
            return perr(p, p->t.pos, "expected a graph");
        return parse_subgraph(p, n, s->name);
    } else if (s->kind == IR_ATTR_INT) {
        int64_t v;
        if (scan_number(p, IR_I64, &v) < 0)
            return -1;
        rc = ir_node_set_int(g, n, s->name, v);
    } else if (s->kind == IR_ATTR_FLOAT) {
        float v;
        if (scan_number(p, IR_F32, &v) < 0)
            return -1;
        rc = ir_node_set_float(g, n, s->name, v);
    } else if (s->kind == IR_ATTR_STRING) {
        if (p->t.k != T_STR)
            return perr(p, p->t.pos, "expected a string");
        p->strs.len = p->strs.n = 0;
        if (names_add(&p->strs, p->t.s, p->t.n, p->t.pos) < 0)
            return oom(p);
        rc = ir_node_set_string(g, n, s->name, names_get(&p->strs, 0));
        if (next(p) < 0)
            return -1;
    } else if (s->kind == IR_ATTR_TENSOR) {
        ir_type ty;
        ir_tensor tt;
        payload pl;
        if (parse_tensor_type(p, &ty, &tt) < 0 || parse_payload(p, &tt, &pl) < 0)
            return -1;
        size_t nbytes = tt.nbytes;
        if (pl.pending)
            tt.nbytes = 0; /* storage is allocated below, filled from the data section */
        else
            tt.data = (void *)pl.data;
        if (ir_node_set_tensor(g, n, s->name, &tt) < 0)
            return oom(p);
        if (pl.pending) {
            ir_tensor *at = n->attrs[n->nattr - 1].tensor;
            at->nbytes = nbytes;
            if (!(at->data = ir_arena_alloc(g->arena, nbytes)))
                return oom(p);
            if (add_pending(p, &pl, at->data, nbytes, NULL) < 0)
                return -1;
        }
    } else {
        if (expect(p, '[') < 0)
            return -1;
        p->strs.len = p->strs.n = 0;
        size_t sz = s->kind == IR_ATTR_INTS ? 8 : 4;
        while (!is_p(p, ']')) {
            if (list_item(p, ']', &cnt) < 0)
                return -1;
            if (s->kind == IR_ATTR_STRINGS) {
                if (p->t.k != T_STR)
                    return perr(p, p->t.pos, "expected a string");
                if (names_add(&p->strs, p->t.s, p->t.n, p->t.pos) < 0)
                    return oom(p);
                if (next(p) < 0)
                    return -1;
                continue;
            }
            if (!GROW(p->ebuf, p->cap_ebuf, (size_t)cnt * sz))
                return oom(p);
            if (scan_number(p, s->kind == IR_ATTR_INTS ? IR_I64 : IR_F32,
                            p->ebuf + (size_t)(cnt - 1) * sz) < 0)
                return -1;
        }
        if (next(p) < 0)
            return -1;
        if (s->kind == IR_ATTR_INTS)
            rc = ir_node_set_ints(g, n, s->name, (const int64_t *)(void *)p->ebuf, cnt);
        else if (s->kind == IR_ATTR_FLOATS)
            rc = ir_node_set_floats(g, n, s->name, (const float *)(void *)p->ebuf, cnt);
        else {
            if (!GROW(p->nptr, p->cap_nptr, (size_t)cnt + 1))
                return oom(p);
            for (int i = 0; i < cnt; i++)
                p->nptr[i] = names_get(&p->strs, (size_t)i);
            rc = ir_node_set_strings(g, n, s->name, p->nptr, cnt);
        }
    }
    return rc < 0 ? oom(p) : 0;
}

/* attrs = '{' [attr (',' attr)*] '}'    attr = (ident | string) '=' value */
static int parse_attrs(parser *p, ir_node *n)
{
    const char *opname = ir_ops[n->op].name;
    int cnt = 0;
    if (next(p) < 0)
        return -1;
    while (!is_p(p, '}')) {
        char name[64], b[300];
        if (list_item(p, '}', &cnt) < 0)
            return -1;
        if (p->t.k != T_IDENT && p->t.k != T_STR)
            return perr(p, p->t.pos, "expected an attribute name");
        const ir_attr_schema *s = NULL;
        if (p->t.n < sizeof name) {
            memcpy(name, p->t.s, p->t.n);
            name[p->t.n] = 0;
            s = ir_op_find_attr(n->op, name);
        }
        if (!s)
            return perr(p, p->t.pos, "%s has no attribute %s", opname, shown(p, b, sizeof b));
        if (ir_node_attr(n, name))
            return perr(p, p->t.pos, "attribute %s is given twice", shown(p, b, sizeof b));
        if (next(p) < 0 || expect(p, '=') < 0 || parse_attr_value(p, n, s) < 0)
            return -1;
    }
    return next(p);
}

/* "1 input", "2 inputs", "1 to 3 inputs", "at least 1 input" */
static const char *count_range(char *buf, size_t cap, int lo, int hi, const char *what)
{
    const char *s = lo == 1 && (hi == 1 || hi < 0) ? "" : "s";
    if (hi < 0)
        snprintf(buf, cap, "at least %d %s%s", lo, what, s);
    else if (lo == hi)
        snprintf(buf, cap, "%d %s%s", lo, what, s);
    else
        snprintf(buf, cap, "%d to %d %s%s", lo, hi, what, s);
    return buf;
}

/* node = Op '(' [input (',' input)*] ')' [attrs] [string] [':' type (',' type)*]
 * input = value | '_' */
static int parse_node(parser *p)
{
    char b[300];
    size_t oppos = p->t.pos;
    int op = ir_op_lookup(p->t.s, p->t.n);
    if (op < 0)
        return perr(p, oppos, "unknown op %s", shown(p, b, sizeof b));
    const ir_op_info *oi = &ir_ops[op];
    if (next(p) < 0 || expect(p, '(') < 0)
        return -1;
    p->nins = 0;
    int cnt = 0, cap_at = -1;
    while (!is_p(p, ')')) {
        if (is_p(p, '|') && cap_at < 0) {
            if (!(oi->flags & IR_F_CONTROL))
                return perr(p, p->t.pos, "%s has no subgraphs to capture values", oi->name);
            cap_at = (int)p->nins;
            cnt = 0;
            if (next(p) < 0)
                return -1;
            if (is_p(p, ')'))
                return perr(p, p->t.pos, "expected a captured value after '|'");
            continue;
        }
        if (list_item(p, ')', &cnt) < 0)
            return -1;
        ir_value *v = NULL;
        if (p->t.k == T_VAL) {
            if (!(v = ht_get(&p->vals, p->t.s, p->t.n)))
                return perr(p, p->t.pos, "undefined value %s", shown(p, b, sizeof b));
        } else if (is_kw(p, "_") && cap_at >= 0) {
            return perr(p, p->t.pos, "a capture cannot be omitted");
        } else if (is_kw(p, "_")) {
            if (p->nins < (size_t)oi->min_in)
                return perr(p, p->t.pos, "input %zu of %s is required", p->nins, oi->name);
        } else
            return perr(p, p->t.pos, "expected an input value or _");
        if (p->nins == INT32_MAX / 2 || !GROW(p->ins, p->cap_ins, p->nins + 1))
            return oom(p);
        p->ins[p->nins++] = v;
        if (next(p) < 0)
            return -1;
    }
    if (next(p) < 0)
        return -1;
    int nin = (int)p->nins, nout = (int)p->outs.n;
    int ncap = cap_at < 0 ? 0 : nin - cap_at;
    nin -= ncap;
    if (nin < oi->min_in || (oi->max_in >= 0 && nin > oi->max_in))
        return perr(p, oppos, "%s takes %s, not %d", oi->name,
                    count_range(b, sizeof b, oi->min_in, oi->max_in, "input"), nin);
    if (nout < oi->min_out || (oi->max_out >= 0 && nout > oi->max_out))
        return perr(p, oppos, "%s has %s, not %d", oi->name,
                    count_range(b, sizeof b, oi->min_out, oi->max_out, "output"), nout);
    if (!GROW(p->nptr, p->cap_nptr, (size_t)nout + 1))
        return oom(p);
    for (int i = 0; i < nout; i++)
        p->nptr[i] = names_get(&p->outs, (size_t)i);
    icc_diag d;
    ir_node *n = ir_graph_add_node(p->g, op, "", nin + ncap, p->ins, nout, p->nptr, &d);
    if (!n)
        return perr(p, oppos, "%s", d.msg);
    n->ncap = ncap;
    for (int i = 0; i < nout; i++)
        if (define(p, n->out[i], p->outs.pos[i]) < 0)
            return -1;
    if (is_p(p, '{') && parse_attrs(p, n) < 0)
        return -1;
    const ir_attr_schema *s;
    for (int i = 0; (s = ir_op_attr_schema(op, i)); i++)
        if (s->required && !ir_node_attr(n, s->name))
            return perr(p, oppos, "%s needs attribute %s", oi->name, s->name);
    if (nin && n->in[0] && n->in[0]->type.dtype != IR_UNDEF &&
        !ir_op_accepts_dtype(op, n->in[0]->type.dtype))
        return perr(p, oppos, "%s does not take input dtype %s (it takes %s)", oi->name,
                    ir_dtype_name(n->in[0]->type.dtype), oi->types);
    if (p->t.k == T_STR) {
        if (!(n->name = ir_arena_strndup(p->g->arena, p->t.s, p->t.n)))
            return oom(p);
        if (next(p) < 0)
            return -1;
    }
    if (!is_p(p, ':'))
        return 0;
    size_t colon = p->t.pos;
    int i = 0;
    do {
        if (next(p) < 0)
            return -1;
        if (i == nout)
            return perr(p, p->t.pos, "%s has %d output%s but more types are given", oi->name,
                        nout, nout == 1 ? "" : "s");
        if (parse_type(p, &n->out[i++]->type) < 0)
            return -1;
    } while (is_p(p, ','));
    if (i < nout)
        return perr(p, colon, "%s has %d outputs but %d type%s given", oi->name, nout, i,
                    i == 1 ? " is" : "s are");
    return 0;
}

/* stmt = value (',' value)* '=' (const | node) */
static int parse_stmt(parser *p)
{
    p->outs.len = p->outs.n = 0;
    for (;;) {
        if (p->t.k != T_VAL)
            return perr(p, p->t.pos, p->outs.n ? "expected a value name" : "expected a value name or '}'");
        if (p->outs.n == INT32_MAX / 2 || names_add(&p->outs, p->t.s, p->t.n, p->t.pos) < 0)
            return oom(p);
        if (next(p) < 0)
            return -1;
        if (!is_p(p, ','))
            break;
        if (next(p) < 0)
            return -1;
    }
    if (expect(p, '=') < 0)
        return -1;
    if (p->t.k != T_IDENT)
        return perr(p, p->t.pos, "expected an op name or 'const'");
    return is_kw(p, "const") ? parse_const(p) : parse_node(p);
}

/* ---- the graph ----------------------------------------------------------- */

/* operand = INT | sym (declared before) */
static int parse_sym_operand(parser *p, ir_dim *d)
{
    const char *why;
    *d = ir_dim_const(0);
    if (p->t.k == T_NUM) {
        if (ir_text_scan_elem(IR_I64, p->t.s, p->t.n, &d->v, &why) < 0)
            return perr(p, p->t.pos, "%s", why);
    } else if (p->t.k == T_IDENT || p->t.k == T_STR) {
        void *v = ht_get(&p->syms, p->t.s, p->t.n);
        if (!v)
            return perr(p, p->t.pos, "a symbol's definition names a symbol not declared before it");
        d->sym = (int32_t)(intptr_t)v;
    } else {
        return perr(p, p->t.pos, "expected a number or a symbol");
    }
    return next(p);
}

/* symdef = sym '=' ('add' | 'mul' | 'floordiv' | 'ceildiv') '(' operand ',' operand ')'
 * (after the '='): a derived symbol (ir.h, ir_sym_def). */
static int parse_sym_def(parser *p, const char *nm, size_t nn, size_t pos)
{
    static const char *const ops[] = {"add", "mul", "floordiv", "ceildiv"};
    ir_sym_def def = {0};
    if (next(p) < 0)
        return -1;
    for (int i = 0; i < 4; i++)
        if (p->t.k == T_IDENT && strlen(ops[i]) == p->t.n && !memcmp(ops[i], p->t.s, p->t.n))
            def.op = (ir_sym_op)(IR_SYM_ADD + i);
    if (!def.op)
        return perr(p, p->t.pos, "expected add, mul, floordiv or ceildiv");
    if (next(p) < 0 || expect(p, '(') < 0 || parse_sym_operand(p, &def.a) < 0 || expect(p, ',') < 0 ||
        parse_sym_operand(p, &def.b) < 0 || expect(p, ')') < 0)
        return -1;
    if (def.a.sym == 0 && def.op != IR_SYM_ADD && def.op != IR_SYM_MUL)
        return perr(p, pos, "a symbol's definition divides a constant");
    if (def.a.sym == 0 && def.a.v < 0)
        return perr(p, pos, "a symbol's definition has a negative first operand");
    if (def.b.sym == 0 && def.b.v < 0 && def.op != IR_SYM_ADD)
        return perr(p, pos, "only add takes a negative constant");
    if ((def.op == IR_SYM_FLOORDIV || def.op == IR_SYM_CEILDIV) && (def.b.sym != 0 || def.b.v == 0))
        return perr(p, pos, "floordiv and ceildiv divide by a constant > 0");
    int32_t id = ir_graph_sym_define(p->g, nm, nn, &def);
    if (!id)
        return perr(p, pos, "symbol is already declared, or out of memory");
    if (ht_put(&p->syms, p->g->syms[id], nn, (void *)(intptr_t)id) < 0)
        return oom(p);
    return 0;
}

/* header = 'graph' '@' name ['<' sym (',' sym)* '>']
 *          '(' [value ':' type (',' ...)*] ')' '->' '(' [value (',' value)*] ')' */
static int parse_header(parser *p)
{
    char b[300];
    if (!is_kw(p, "graph"))
        return perr(p, p->t.pos, "expected 'graph'");
    if (next(p) < 0)
        return -1;
    if (p->t.k != T_AT)
        return perr(p, p->t.pos, "expected the graph name (@name)");
    if (!(p->g = p->parent ? ir_graph_add_subgraph(p->parent, "") : ir_graph_create("")) ||
        !(p->g->name = ir_arena_strndup(p->g->arena, p->t.s, p->t.n)))
        return oom(p);
    if (next(p) < 0)
        return -1;
    if (is_p(p, '<')) {
        int cnt = 0;
        if (next(p) < 0)
            return -1;
        while (!is_p(p, '>')) {
            int32_t id;
            if (list_item(p, '>', &cnt) < 0)
                return -1;
            if (p->t.k != T_IDENT && p->t.k != T_STR)
                return perr(p, p->t.pos, "expected a symbol name");
            if (ht_get(&p->syms, p->t.s, p->t.n))
                return perr(p, p->t.pos, "symbol %s is declared twice", shown(p, b, sizeof b));
            /* a string token's text does not outlive the next token */
            size_t nn = p->t.n, pos = p->t.pos;
            const char *nm = ir_arena_strndup(p->g->arena, p->t.s, nn);
            if (!nm)
                return oom(p);
            if (next(p) < 0)
                return -1;
            if (is_p(p, '=')) {
                if (parse_sym_def(p, nm, nn, pos) < 0)
                    return -1;
            } else if (symbol(p, nm, nn, &id) < 0) {
                return -1;
            }
        }
        if (next(p) < 0)
            return -1;
    }
    if (expect(p, '(') < 0)
        return -1;
    int cnt = 0;
    while (!is_p(p, ')')) {
        ir_type ty;
        icc_diag d;
        if (list_item(p, ')', &cnt) < 0)
            return -1;
        if (p->t.k != T_VAL)
            return perr(p, p->t.pos, "expected an input (%%name: type)");
        size_t pos = p->t.pos;
        p->outs.len = p->outs.n = 0;
        if (names_add(&p->outs, p->t.s, p->t.n, pos) < 0)
            return oom(p);
        if (next(p) < 0 || expect(p, ':') < 0 || parse_type(p, &ty) < 0)
            return -1;
        ir_value *v = ir_graph_add_input(p->g, names_get(&p->outs, 0), &ty, &d);
        if (!v)
            return perr(p, pos, "%s", d.msg);
        if (define(p, v, pos) < 0)
            return -1;
    }
    if (next(p) < 0)
        return -1;
    if (p->t.k != T_ARROW)
        return perr(p, p->t.pos, "expected '->'");
    if (next(p) < 0 || expect(p, '(') < 0)
        return -1;
    cnt = 0;
    while (!is_p(p, ')')) {
        if (list_item(p, ')', &cnt) < 0)
            return -1;
        if (p->t.k != T_VAL)
            return perr(p, p->t.pos, "expected an output value (%%name)");
        if (names_add(&p->gouts, p->t.s, p->t.n, p->t.pos) < 0)
            return oom(p);
        if (next(p) < 0)
            return -1;
    }
    return next(p);
}

static int cmp_pending(const void *a, const void *b)
{
    const pending *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* data = 'data' '@' INT '=' hex-string */
static int parse_data(parser *p)
{
    if (p->npend)
        qsort(p->pend, p->npend, sizeof *p->pend, cmp_pending);
    for (size_t i = 1; i < p->npend; i++)
        if (p->pend[i].id == p->pend[i - 1].id)
            return perr(p, p->pend[i].pos, "data @%llu is used twice",
                        (unsigned long long)p->pend[i].id);
    while (is_kw(p, "data")) {
        uint64_t id;
        if (next(p) < 0)
            return -1;
        size_t pos = p->t.pos;
        if (blob_id(p, &id) < 0 || next(p) < 0 || expect(p, '=') < 0)
            return -1;
        if (p->t.k != T_HEX)
            return perr(p, p->t.pos, "expected hex\"...\"");
        size_t lo = 0, hi = p->npend;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (p->pend[mid].id < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        pending *pe = lo < p->npend && p->pend[lo].id == id ? &p->pend[lo] : NULL;
        if (!pe)
            return perr(p, pos, "data @%llu is not used", (unsigned long long)id);
        if (pe->done)
            return perr(p, pos, "data @%llu is defined twice", (unsigned long long)id);
        size_t nb;
        if (hex_count(p, &nb) < 0)
            return -1;
        if (nb != pe->nbytes) {
            char b[300] = "the tensor attribute";
            if (pe->label)
                ir_text_show(b, sizeof b, "%", pe->label, strlen(pe->label), 'n');
            return perr(p, p->t.pos, "data @%llu has %zu bytes; %s needs %zu",
                        (unsigned long long)id, nb, b, pe->nbytes);
        }
        hex_decode(&p->t, pe->dest);
        pe->done = true;
        if (next(p) < 0)
            return -1;
    }
    if (p->t.k != T_EOF)
        return perr(p, p->t.pos, "expected 'plan', 'data' or the end of the text");
    for (size_t i = 0; i < p->npend; i++)
        if (!p->pend[i].done)
            return perr(p, p->pend[i].pos, "data @%llu is never defined",
                        (unsigned long long)p->pend[i].id);
    return 0;
}

/* plan = 'plan' '{' (value '=' INT)* '}' : arena offsets of node outputs
 * with static types, 64-byte aligned. Whether the plan is sound (no two
 * live values overlap) is the plan pass's job; the interpreter honours it,
 * so a wrong plan shows up as wrong results in the tests. */
static int parse_plan(parser *p)
{
    if (!is_kw(p, "plan"))
        return 0;
    if (next(p) < 0 || expect(p, '{') < 0)
        return -1;
    while (!is_p(p, '}')) {
        if (p->t.k != T_VAL)
            return perr(p, p->t.pos, "expected a value or '}' in the plan");
        size_t pos = p->t.pos;
        ir_value *v = ht_get(&p->vals, p->t.s, p->t.n);
        if (!v)
            return perr(p, pos, "plan names an undefined value");
        if (v->kind != IR_VAL_NODE)
            return perr(p, pos, "only node outputs can be planned");
        if (v->planned)
            return perr(p, pos, "value is planned twice");
        if (!ir_type_is_static(&v->type))
            return perr(p, pos, "a planned value needs a static type");
        if (next(p) < 0 || expect(p, '=') < 0)
            return -1;
        uint64_t off;
        const char *why;
        if (p->t.k != T_NUM || ir_text_scan_elem(IR_U64, p->t.s, p->t.n, &off, &why) < 0 ||
            off > (uint64_t)IR_MAX_TENSOR_BYTES || off % 64)
            return perr(p, p->t.pos, "expected an offset: a multiple of 64 below 2^40");
        v->planned = true;
        v->offset = (int64_t)off;
        if (next(p) < 0)
            return -1;
    }
    return next(p);
}

/* groups = 'groups' '{' (INT '=' '[' value (',' value)* ']')* '}' : the
 * fused groups, ids positive and increasing (so none repeats), each
 * member named by one of its outputs, no node in two groups. Whether a
 * group obeys the one-exit rule is ir_verify's to check. */
static int parse_groups(parser *p)
{
    if (!is_kw(p, "groups"))
        return 0;
    if (next(p) < 0 || expect(p, '{') < 0)
        return -1;
    int64_t prev = 0;
    while (!is_p(p, '}')) {
        int32_t id;
        const char *why;
        if (p->t.k != T_NUM || ir_text_scan_elem(IR_I32, p->t.s, p->t.n, &id, &why) < 0)
            return perr(p, p->t.pos, "expected a group id (a positive int) or '}'");
        if (id <= prev)
            return perr(p, p->t.pos, "group ids must be positive and increasing");
        prev = id;
        if (next(p) < 0 || expect(p, '=') < 0 || expect(p, '[') < 0)
            return -1;
        for (int nm = 0;; nm++) {
            if (nm && is_p(p, ']'))
                break;
            if (nm && expect(p, ',') < 0)
                return -1;
            if (p->t.k != T_VAL)
                return perr(p, p->t.pos, "expected a node's output value in the group");
            size_t pos = p->t.pos;
            ir_value *v = ht_get(&p->vals, p->t.s, p->t.n);
            if (!v)
                return perr(p, pos, "group names an undefined value");
            if (v->kind != IR_VAL_NODE)
                return perr(p, pos, "only nodes can be grouped (this value is not a node's output)");
            if (v->def->group)
                return perr(p, pos, "node is already in group %d", v->def->group);
            v->def->group = (int)id;
            if (next(p) < 0)
                return -1;
        }
        if (next(p) < 0)
            return -1;
    }
    return next(p);
}

/* body = header '{' stmt* '}', with the graph outputs resolved; the
 * token after the '}' is current. */
static int parse_body(parser *p)
{
    if (parse_header(p) < 0 || expect(p, '{') < 0)
        return -1;
    while (!is_p(p, '}')) {
        if (p->t.k == T_EOF)
            return perr(p, p->t.pos, "expected '}'");
        if (parse_stmt(p) < 0)
            return -1;
    }
    if (next(p) < 0)
        return -1;
    for (size_t i = 0; i < p->gouts.n; i++) {
        const char *nm = names_get(&p->gouts, i);
        ir_value *v = ht_get(&p->vals, nm, strlen(nm));
        icc_diag d;
        if (!v) {
            char b[300];
            ir_text_show(b, sizeof b, "%", nm, strlen(nm), 'n');
            return perr(p, p->gouts.pos[i], "graph output %s is never defined", b);
        }
        if (ir_graph_add_output(p->g, v, &d) < 0)
            return oom(p);
    }
    return 0;
}

/* graph = body [groups] [plan] data* */
static int parse_graph(parser *p)
{
    if (next(p) < 0 || parse_body(p) < 0)
        return -1;
    if (parse_groups(p) < 0 || parse_plan(p) < 0 || parse_data(p) < 0)
        return -1;
    if (ir_verify(p->g, p->d) < 0) {
        ir_diag_prefix(p->d, "%s", p->display);
        return -1;
    }
    return 0;
}

ir_graph *ir_parse(const char *text, size_t len, const char *display, icc_diag *d)
{
    parser p;
    memset(&p, 0, sizeof p);
    p.src = text ? text : "";
    p.len = text ? len : 0;
    p.display = display ? display : "<text>";
    p.d = d;
    ir_text_locale loc;
    ir_text_locale_enter(&loc);
    int rc = parse_graph(&p);
    ir_text_locale_leave(&loc);
    free(p.sbuf);
    free(p.vals.e);
    free(p.syms.e);
    free(p.pend);
    names_free(&p.outs);
    names_free(&p.gouts);
    names_free(&p.strs);
    free(p.nptr);
    free(p.ins);
    free(p.ebuf);
    if (rc < 0) {
        ir_graph_destroy(p.g);
        return NULL;
    }
    return p.g;
}
