/* header.c - generates model.h, the C header of a compiled model.
 *
 * The header is plain C99 that also compiles as C++: a usage comment
 * built from the model's real inputs and outputs, the descriptor's
 * extern declaration, per-tensor macros and dims arrays, and a typed
 * run wrapper when all input shapes are static. Names come from the
 * graph, so anything that reaches the file is escaped for its context:
 * identifiers are sanitized and deduplicated, comments never contain
 * a comment delimiter or a non-ASCII byte, string literals use octal
 * escapes (and `\?`, against trigraphs).
 */
#include "codegen/header.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Local names of the run wrapper; parameters must not shadow them. */
static const char *const wrapper_locals[] = {"ctx", "in_", "dims_", "out_"};

/* C and C++ keywords, and names <stddef.h>/<stdint.h> define as macros
 * or types a parameter must not take. */
static const char *const reserved_words[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
    "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
    "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
    "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
    "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
    "reinterpret_cast", "requires", "restrict", "return", "short", "signed", "sizeof", "static",
    "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
    "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "NULL", "offsetof",
    "SIZE_MAX", "PTRDIFF_MIN", "PTRDIFF_MAX", "SIG_ATOMIC_MIN", "SIG_ATOMIC_MAX", "WCHAR_MIN",
    "WCHAR_MAX", "WINT_MIN", "WINT_MAX", "INTMAX_C", "UINTMAX_C", "INTMAX_MIN", "INTMAX_MAX",
    "UINTMAX_MAX", "INTPTR_MIN", "INTPTR_MAX", "UINTPTR_MAX", "errno", "assert",
};

static bool reserved_word(const char *s)
{
    for (size_t i = 0; i < sizeof reserved_words / sizeof *reserved_words; i++)
        if (!strcmp(s, reserved_words[i]))
            return true;
    /* <stdint.h>'s INT8_MAX, UINT_LEAST16_MIN, INT64_C... */
    if (!strncmp(s, "INT", 3) || !strncmp(s, "UINT", 4)) {
        size_t n = strlen(s);
        if ((n > 4 && (!strcmp(s + n - 4, "_MAX") || !strcmp(s + n - 4, "_MIN"))) ||
            (n > 2 && !strcmp(s + n - 2, "_C")))
            return true;
    }
    return false;
}

static bool has_prefix_ci(const char *s, const char *p)
{
    for (; *p; s++, p++)
        if (tolower((unsigned char)*s) != tolower((unsigned char)*p))
            return false;
    return true;
}

bool cg_header_prefix_ok(const char *prefix)
{
    if (!prefix || !*prefix || !strcmp(prefix, "icc") || isdigit((unsigned char)*prefix))
        return false;
    for (const char *s = prefix; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return strlen(prefix) <= 200;
}

/* ---- names --------------------------------------------------------------- */

/* A set of names, compared exactly or ignoring ASCII case. */
typedef struct {
    char **v;
    int n, cap;
    bool ci;
} name_set;

static bool set_has(const name_set *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (s->ci ? !strcasecmp(s->v[i], name) : !strcmp(s->v[i], name))
            return true;
    return false;
}

/* Takes ownership of name (freed here on failure). */
static bool set_add(name_set *s, char *name)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        char **v = realloc(s->v, sizeof *v * (size_t)cap);
        if (!v) {
            free(name);
            return false;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = name;
    return true;
}

static void set_free(name_set *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
}

/* The name mapped into [A-Za-z0-9_], '_' first if it starts with a
 * digit, "_" for the empty name. Malloc'd. */
static char *sanitize(const char *name)
{
    size_t n = strlen(name);
    char *s = malloc(n + 2), *p = s;
    if (!s)
        return NULL;
    if (!n || isdigit((unsigned char)name[0]))
        *p++ = '_';
    for (; *name; name++)
        *p++ = isalnum((unsigned char)*name) ? *name : '_';
    *p = 0;
    return s;
}

/* base, or base_2, base_3... whichever `set` does not hold yet; added to
 * it and returned (borrowed from the set). */
static const char *unique(name_set *set, const char *base)
{
    size_t n = strlen(base) + 24;
    char *s = malloc(n);
    if (!s)
        return NULL;
    snprintf(s, n, "%s", base);
    for (long k = 2; set_has(set, s); k++)
        snprintf(s, n, "%s_%ld", base, k);
    return set_add(set, s) ? s : NULL;
}

/* A parameter name for the run wrapper from a tensor's identifier: one
 * that no keyword, standard macro or type, runtime.h name (icc_*,
 * ICC_*), name of this header (prefix_*), reserved identifier (_X, __x)
 * or earlier parameter takes. Prepending 'a' moves a name off a bad
 * start; appending '_' off a bad word or a `_t` end. */
static const char *param_name(name_set *params, const char *ident, const char *prefix)
{
    size_t n = strlen(ident) + strlen(prefix) + 8;
    char *s = malloc(n);
    if (!s)
        return NULL;
    snprintf(s, n, "%s", ident);
    for (;;) {
        size_t len = strlen(s);
        bool bad_start = s[0] == '_' || has_prefix_ci(s, "icc_") ||
                         (has_prefix_ci(s, prefix) && s[strlen(prefix)] == '_');
        if (bad_start || reserved_word(s) || ir_ends_with(s, "_t")) {
            if (len + 2 >= n) {
                char *t = realloc(s, n *= 2);
                if (!t) {
                    free(s);
                    return NULL;
                }
                s = t;
            }
            if (bad_start) {
                memmove(s + 1, s, len + 1);
                s[0] = 'a';
            } else {
                s[len] = '_';
                s[len + 1] = 0;
            }
            continue;
        }
        break;
    }
    const char *r = unique(params, s);
    free(s);
    return r;
}

/* ---- writing --------------------------------------------------------------- */

/* The C spelling of a tensor element. */
static const char *c_type(ir_dtype t)
{
    switch (t) {
    case IR_F32: return "float";
    case IR_F64: return "double";
    case IR_I8: return "int8_t";
    case IR_I16: return "int16_t";
    case IR_I32: return "int32_t";
    case IR_I64: return "int64_t";
    case IR_U8: return "uint8_t";
    case IR_U16: return "uint16_t";
    case IR_U32: return "uint32_t";
    case IR_U64: return "uint64_t";
    case IR_BOOL: return "uint8_t";
    case IR_F16: return "uint16_t";
    case IR_BF16: return "uint16_t";
    default: return "void";
    }
}

/* Writes s for a comment: printable ASCII except '*' (no comment
 * delimiter can form) and '\\' (no line splice); the rest as \xNN. */
static void put_comment_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f && c != '*' && c != '\\')
            fputc(c, f);
        else
            fprintf(f, "\\x%02x", c);
    }
}

/* Writes s as a C string literal: octal escapes (which stop after three
 * digits, unlike \x) for everything but printable ASCII, and \? so no
 * trigraph can form. */
static void put_string_literal(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\' || c == '?')
            fprintf(f, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            fputc(c, f);
        else
            fprintf(f, "\\%03o", c);
    }
    fputc('"', f);
}

static void put_upper(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(toupper((unsigned char)*s), f);
}

/* "f32[N,1,8,8]" for a comment. */
static void put_type(FILE *f, const ir_graph *g, const ir_type *t)
{
    fprintf(f, "%s[", ir_dtype_name(t->dtype));
    if (t->rank < 0)
        fputc('*', f);
    for (int i = 0; i < t->rank; i++) {
        if (i)
            fputc(',', f);
        if (t->dims[i].sym == 0)
            fprintf(f, "%lld", (long long)t->dims[i].v);
        else if (t->dims[i].sym > 0)
            put_comment_text(f, ir_graph_sym_name(g, t->dims[i].sym));
        else
            fputc('?', f);
    }
    fputc(']', f);
}

typedef struct {
    const ir_value *v;
    const char *ident;         /* for macros and arrays */
    const char *param;         /* for the run wrapper */
} tensor_names;

/* One tensor's macros and dims array. kind: "input"/"output". */
static void put_tensor(FILE *f, const ir_graph *g, const char *prefix, const char *kind, int index,
                       const tensor_names *tn)
{
    const ir_type *t = &tn->v->type;
    fprintf(f, "/* %s %d: ", kind, index);
    put_comment_text(f, tn->v->name);
    fputs(", ", f);
    put_type(f, g, t);
    fputs(" */\n", f);
    const char *suffix[] = {"INDEX", "NAME", "DTYPE", "RANK"};
    for (int k = 0; k < 4; k++) {
        fputs("#define ", f);
        put_upper(f, prefix);
        fputc('_', f);
        put_upper(f, kind);
        fputc('_', f);
        put_upper(f, tn->ident);
        fprintf(f, "_%s ", suffix[k]);
        if (k == 0)
            fprintf(f, "%d", index);
        else if (k == 1)
            put_string_literal(f, tn->v->name);
        else if (k == 2 && t->dtype == IR_UNDEF)
            fputs("0 /* unknown dtype */", f);
        else if (k == 2) {
            fputs("ICC_", f);
            put_upper(f, ir_dtype_name(t->dtype));
        }
        else
            fprintf(f, "%d%s", t->rank, t->rank < 0 ? " /* unknown rank */" : "");
        fputc('\n', f);
    }
    if (t->rank <= 0) {
        fprintf(f, "/* (no dims array: %s) */\n\n", t->rank < 0 ? "the rank is unknown" : "a scalar");
        return;
    }
    fprintf(f, "static const int64_t %s_%s_%s_dims[%d] ", prefix, kind, tn->ident, t->rank);
    put_upper(f, prefix);
    fputs("_UNUSED_ = {", f);
    for (int i = 0; i < t->rank; i++) {
        if (i)
            fputs(", ", f);
        if (t->dims[i].sym == 0) {
            fprintf(f, "%lld", (long long)t->dims[i].v);
        } else if (t->dims[i].sym > 0) {
            fputs("-1 /* ", f);
            put_comment_text(f, ir_graph_sym_name(g, t->dims[i].sym));
            fputs(" */", f);
        } else {
            fputs("-1 /* unknown */", f);
        }
    }
    fputs("};\n\n", f);
}

/* A symbolic dim's value in the usage example: ex[sym], or 1. */
static long long example_dim(ir_dim d, const int64_t *ex)
{
    return d.sym == 0 ? (long long)d.v : d.sym > 0 && ex && ex[d.sym] >= 0 ? (long long)ex[d.sym] : 1LL;
}

/* Element count of t with every symbol at its example value, as a C
 * expression ("1 * 8 * 8"); "1" for a scalar or unknown rank. */
static void put_example_count(FILE *f, const ir_type *t, const int64_t *ex)
{
    if (t->rank <= 0) {
        fputs("1", f);
        return;
    }
    for (int i = 0; i < t->rank; i++)
        fprintf(f, "%s%lld", i ? " * " : "", example_dim(t->dims[i], ex));
}

/* The usage example's symbol values (g->nsyms entries, NULL on out of
 * memory): every free symbol the same value, the smallest power of two up
 * to 1024 for which no derived dim comes out negative (1 passes a window
 * of none; a 2x2 pool needs 2), derived ones computed from it; *v gets it. */
static int64_t *example_syms(const ir_graph *g, int64_t *v)
{
    int64_t *ex = malloc(sizeof *ex * ((size_t)g->nsyms + 1));
    if (!ex)
        return NULL;
    for (*v = 1; *v <= 1024; *v *= 2) {
        for (int32_t s = 0; s <= g->nsyms; s++)
            ex[s] = ir_graph_sym_def(g, s) ? -1 : *v;
        int32_t bad;
        if (ir_graph_sym_values(g, ex, &bad) == 0)
            return ex;
    }
    *v = 1;
    for (int32_t s = 0; s <= g->nsyms; s++)
        ex[s] = 1;
    return ex;
}

static void put_usage(FILE *f, const ir_graph *g, const char *prefix, const tensor_names *in,
                      const tensor_names *out, bool all_static)
{
    fputs("/* The C header of a model compiled by icc from '", f);
    put_comment_text(f, g->name ? g->name : "");
    fprintf(f, "' (symbol prefix %s);\n * generated, do not edit.\n *\n", prefix);
    for (int i = 0; i < g->ninputs; i++) {
        fprintf(f, " * %s ", i ? "       " : "inputs: ");
        put_comment_text(f, in[i].v->name);
        fputs(": ", f);
        put_type(f, g, &in[i].v->type);
        fputc('\n', f);
    }
    for (int i = 0; i < g->noutputs; i++) {
        fprintf(f, " * %s ", i ? "       " : "outputs:");
        put_comment_text(f, out[i].v->name);
        fputs(": ", f);
        put_type(f, g, &out[i].v->type);
        fputc('\n', f);
    }
    /* The symbols the interface still has (those pinned by --shape are
     * gone from it, though the graph keeps their names): the inputs' own,
     * then the derived ones outputs have (the runtime computes them). */
    bool any_sym = false;
    for (int pass = 0; pass < 2; pass++) {
        bool first = true;
        for (int s = 1; s < g->nsyms; s++) {
            bool used = false;
            for (int i = 0; i < g->ninputs + g->noutputs && !used; i++) {
                const ir_type *t = &(i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs])->type;
                for (int k = 0; k < t->rank && !used; k++)
                    used = t->dims[k].sym == s;
            }
            if (!used || (ir_graph_sym_def(g, s) != NULL) != (pass == 1))
                continue;
            if (first)
                fputs(pass ? " * Dims computed from them (-1 in the dims arrays, icc_output_dims gives them):"
                           : " * Symbolic dims (-1 in the dims arrays, given at run time):", f);
            first = false;
            any_sym = true;
            fputc(' ', f);
            put_comment_text(f, ir_graph_sym_name(g, s));
        }
        if (!first)
            fputc('\n', f);
    }
    fputs(" *\n"
          " * The model.so given to icc -o holds the runtime too: link it into the\n"
          " * program (cc app.c -I<icc>/include ./model.so) and wrap its descriptor:\n"
          " *\n"
          " *     icc_model *m;\n", f);
    fprintf(f, " *     if (icc_model_from_desc(&%s_model, &m) != ICC_OK) ...\n", prefix);
    fputs(" *\n"
          " * or load it at run time with dlopen (link libiccrt.a -lpthread -ldl):\n"
          " *\n", f);
    fprintf(f, " *     if (icc_model_open(\"./model.so\", \"%s\", &m) != ICC_OK)\n", prefix);
    fputs(" *         fprintf(stderr, \"%s\\n\", icc_last_error());\n"
          " *\n"
          " * (either way, --weights=external's model.weights is mapped from beside\n"
          " * model.so), then\n"
          " * create a context and run it", f);
    int64_t exv = 1, *ex = example_syms(g, &exv);
    if (any_sym)
        fprintf(f, " (the symbolic input dims are %lld in this example)", (long long)exv);
    fputs(":\n"
          " *\n"
          " *     icc_context *ctx;\n"
          " *     icc_context_create(m, NULL, &ctx);\n", f);
    for (int i = 0; i < g->ninputs; i++) {
        fprintf(f, " *     %s *%s = calloc(", c_type(in[i].v->type.dtype), in[i].param);
        put_example_count(f, &in[i].v->type, ex);
        fprintf(f, ", sizeof *%s);\n", in[i].param);
    }
    for (int i = 0; i < g->noutputs; i++) {
        fprintf(f, " *     %s *%s = calloc(", c_type(out[i].v->type.dtype), out[i].param);
        put_example_count(f, &out[i].v->type, ex);
        fprintf(f, ", sizeof *%s);\n", out[i].param);
    }
    if (all_static) {
        fprintf(f, " *     icc_status st = %s_run(ctx", prefix);
        for (int i = 0; i < g->ninputs; i++)
            fprintf(f, ", %s", in[i].param);
        for (int i = 0; i < g->noutputs; i++)
            fprintf(f, ", %s", out[i].param);
        fputs(");\n", f);
    } else {
        for (int i = 0; i < g->ninputs; i++) {
            const ir_type *t = &in[i].v->type;
            if (t->rank <= 0)
                continue;
            fprintf(f, " *     int64_t %s_dims[%d] = {", in[i].param, t->rank);
            for (int k = 0; k < t->rank; k++)
                fprintf(f, "%s%lld", k ? ", " : "", example_dim(t->dims[k], ex));
            fputs("};\n", f);
        }
        fprintf(f, " *     const void *in[%d] = {", g->ninputs ? g->ninputs : 1);
        for (int i = 0; i < g->ninputs; i++)
            fprintf(f, "%s%s", i ? ", " : "", in[i].param);
        fprintf(f, "};\n *     const int64_t *in_dims[%d] = {", g->ninputs ? g->ninputs : 1);
        for (int i = 0; i < g->ninputs; i++)
            fprintf(f, "%s%s%s", i ? ", " : "", in[i].v->type.rank > 0 ? in[i].param : "NULL",
                    in[i].v->type.rank > 0 ? "_dims" : "");
        fprintf(f, "};\n *     void *out[%d] = {", g->noutputs ? g->noutputs : 1);
        for (int i = 0; i < g->noutputs; i++)
            fprintf(f, "%s%s", i ? ", " : "", out[i].param);
        fputs("};\n"
              " *     icc_status st = icc_run(ctx, in, in_dims, out);\n", f);
    }
    fputs(" *     if (st != ICC_OK)\n"
          " *         fprintf(stderr, \"%s\\n\", icc_context_error(ctx));\n"
          " *     icc_context_destroy(ctx);\n"
          " *     icc_model_close(m);\n"
          " *\n"
          " * Outputs with symbolic dims are sized by icc_output_dims. A context\n"
          " * serves one thread at a time; the model may be shared.\n"
          " */\n", f);
    free(ex);
}

static void put_run_wrapper(FILE *f, const ir_graph *g, const char *prefix, const tensor_names *in,
                            const tensor_names *out, bool all_static)
{
    if (!all_static) {
        fputs("/* Some input has a symbolic or unknown dim, so there is no typed run\n"
              " * wrapper: call icc_run with each input's actual dims. */\n", f);
        return;
    }
    fputs("/* Runs the model with the static input dims above (icc_run). */\n", f);
    for (int decl = 1; decl >= 0; decl--) {
        fprintf(f, "static inline icc_status %s_run(icc_context *ctx", prefix);
        for (int i = 0; i < g->ninputs; i++)
            fprintf(f, ", const %s *%s", c_type(in[i].v->type.dtype), in[i].param);
        for (int i = 0; i < g->noutputs; i++)
            fprintf(f, ", %s *%s", c_type(out[i].v->type.dtype), out[i].param);
        fputs(")", f);
        if (decl) {
            fputc(' ', f);
            put_upper(f, prefix);
            fputs("_UNUSED_;\n", f);
        }
    }
    fputs("\n{\n", f);
    if (g->ninputs) {
        fprintf(f, "    const void *const in_[%d] = {", g->ninputs);
        for (int i = 0; i < g->ninputs; i++)
            fprintf(f, "%s%s", i ? ", " : "", in[i].param);
        fprintf(f, "};\n    const int64_t *const dims_[%d] = {", g->ninputs);
        for (int i = 0; i < g->ninputs; i++) {
            if (in[i].v->type.rank > 0)
                fprintf(f, "%s%s_input_%s_dims", i ? ", " : "", prefix, in[i].ident);
            else
                fprintf(f, "%sNULL", i ? ", " : "");
        }
        fputs("};\n", f);
    }
    if (g->noutputs) {
        fprintf(f, "    void *const out_[%d] = {", g->noutputs);
        for (int i = 0; i < g->noutputs; i++)
            fprintf(f, "%s%s", i ? ", " : "", out[i].param);
        fputs("};\n", f);
    }
    fprintf(f, "    return icc_run(ctx, %s, %s, %s);\n}\n\n", g->ninputs ? "in_" : "NULL",
            g->ninputs ? "dims_" : "NULL", g->noutputs ? "out_" : "NULL");
}

char *cg_header_string(const ir_graph *g, const char *prefix)
{
    if (!prefix)
        prefix = "model";
    if (!g || !cg_header_prefix_ok(prefix))
        return NULL;
    char *text = NULL;
    size_t len = 0;
    name_set in_ids = {.ci = true}, out_ids = {.ci = true}, params = {0};
    int nt = g->ninputs + g->noutputs;
    tensor_names *tn = calloc((size_t)nt + 1, sizeof *tn);
    FILE *f = NULL;
    bool ok = tn != NULL;
    for (size_t i = 0; ok && i < sizeof wrapper_locals / sizeof *wrapper_locals; i++) {
        char *s = strdup(wrapper_locals[i]);
        ok = s && set_add(&params, s);
    }
    for (int i = 0; ok && i < nt; i++) {
        bool is_in = i < g->ninputs;
        tn[i].v = is_in ? g->inputs[i] : g->outputs[i - g->ninputs];
        char *base = sanitize(tn[i].v->name);
        /* Parameters start from the name, not the identifier, so the
         * input x and the output x are x and x_2 (case matters there). */
        ok = base && (tn[i].ident = unique(is_in ? &in_ids : &out_ids, base)) &&
             (tn[i].param = param_name(&params, base, prefix));
        free(base);
    }
    if (ok)
        ok = (f = open_memstream(&text, &len)) != NULL;
    if (ok) {
        const tensor_names *in = tn, *out = tn + g->ninputs;
        bool all_static = true;
        for (int i = 0; i < g->ninputs; i++)
            all_static = all_static && ir_type_is_static(&in[i].v->type) && in[i].v->type.dtype != IR_UNDEF;
        for (int i = 0; i < g->noutputs; i++)
            all_static = all_static && out[i].v->type.dtype != IR_UNDEF;
        put_usage(f, g, prefix, in, out, all_static);
        fputs("#ifndef ", f);
        put_upper(f, prefix);
        fputs("_MODEL_H\n#define ", f);
        put_upper(f, prefix);
        fputs("_MODEL_H\n\n#include <icc/runtime.h>\n\n"
              "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", f);
        /* Compilers that warn about unused statics in the main file
         * (clang) would reject the header compiled on its own. */
        fputs("#if defined(__GNUC__) || defined(__clang__)\n#define ", f);
        put_upper(f, prefix);
        fputs("_UNUSED_ __attribute__((unused))\n#else\n#define ", f);
        put_upper(f, prefix);
        fputs("_UNUSED_\n#endif\n\n", f);
        fprintf(f, "/* The model's descriptor, exported by the compiled model.so. */\n"
                   "extern const icc_model_desc %s_model;\n\n",
                prefix);
        fputs("#define ", f);
        put_upper(f, prefix);
        fprintf(f, "_NUM_INPUTS %d\n#define ", g->ninputs);
        put_upper(f, prefix);
        fprintf(f, "_NUM_OUTPUTS %d\n\n", g->noutputs);
        for (int i = 0; i < g->ninputs; i++)
            put_tensor(f, g, prefix, "input", i, &in[i]);
        for (int i = 0; i < g->noutputs; i++)
            put_tensor(f, g, prefix, "output", i, &out[i]);
        put_run_wrapper(f, g, prefix, in, out, all_static);
        fputs("#ifdef __cplusplus\n}\n#endif\n\n#endif\n", f);
        ok = !ferror(f);
    }
    if (f && fclose(f) != 0)
        ok = false;
    set_free(&in_ids);
    set_free(&out_ids);
    set_free(&params);
    free(tn);
    if (!ok) {
        free(text);
        return NULL;
    }
    return text;
}

int cg_write_header(const ir_graph *g, const char *prefix, const char *path, icc_diag *d)
{
    if (prefix && !cg_header_prefix_ok(prefix))
        return ir_errorf(d, "invalid model name '%.100s': it must be a C identifier other than 'icc'",
                         prefix);
    char *text = cg_header_string(g, prefix);
    if (!text)
        return ir_errorf(d, "%s: out of memory generating the header", path);
    size_t len = strlen(text), n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp) {
        free(text);
        return ir_errorf(d, "%s: out of memory", path);
    }
    snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        int e = errno;
        free(tmp);
        free(text);
        return ir_errorf(d, "%s: %s", path, strerror(e));
    }
    bool ok = fwrite(text, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    free(text);
    if (!ok || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        free(tmp);
        return ir_errorf(d, "%s: write failed (%s)", path, strerror(e));
    }
    free(tmp);
    return 0;
}
