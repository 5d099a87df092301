/* ops.c - the op registry table and its attribute schemas. */
#include "ir/ops.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

const ir_op_info ir_ops[IR_OP_COUNT] = {
#define OP(id, nm, mi, ma, mo, mao, fl, fam, fp, ty, at, sh, rf, dc) \
    [IR_OP_##id] = {nm, mi, ma, mo, mao, fl, IR_FAM_##fam, IR_FLOP_##fp, ty, at, sh, rf, dc},
#include "ir/ops.def"
#undef OP
};

int ir_op_lookup(const char *name, size_t len)
{
    for (int i = 0; i < IR_OP_COUNT; i++)
        if (strlen(ir_ops[i].name) == len && !memcmp(ir_ops[i].name, name, len))
            return i;
    return -1;
}

#define MAX_ATTRS 16

static ir_attr_schema schemas[IR_OP_COUNT][MAX_ATTRS];
static int nschemas[IR_OP_COUNT];
static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;

static ir_attr_kind kind_of(char c)
{
    switch (c) {
    case 'i': return IR_ATTR_INT;
    case 'f': return IR_ATTR_FLOAT;
    case 's': return IR_ATTR_STRING;
    case 'I': return IR_ATTR_INTS;
    case 'F': return IR_ATTR_FLOATS;
    case 'S': return IR_ATTR_STRINGS;
    case 'g': return IR_ATTR_GRAPH;
    default: return IR_ATTR_TENSOR;
    }
}

/* Schema grammar: entry (' ' entry)*, entry = name ':' kind ('!' | '=' default)?
 * A string default is written in double quotes. The table is static, so
 * a malformed row is a programming error caught by the registry test. */
static void parse_schemas(void)
{
    for (int op = 0; op < IR_OP_COUNT; op++) {
        const char *p = ir_ops[op].attrs;
        while (*p && nschemas[op] < MAX_ATTRS) {
            while (*p == ' ')
                p++;
            if (!*p)
                break;
            ir_attr_schema *s = &schemas[op][nschemas[op]++];
            size_t n = strcspn(p, ":");
            snprintf(s->name, sizeof s->name, "%.*s", (int)n, p);
            p += n;
            if (*p == ':')
                p++;
            s->kind = kind_of(*p);
            if (*p)
                p++;
            if (*p == '!') {
                s->required = true;
                p++;
            } else if (*p == '=') {
                p++;
                s->has_def = true;
                if (*p == '"') {
                    const char *e = strchr(p + 1, '"');
                    n = e ? (size_t)(e - p - 1) : strlen(p + 1);
                    snprintf(s->def, sizeof s->def, "%.*s", (int)n, p + 1);
                    p += n + 1 + (e != NULL);
                } else {
                    n = strcspn(p, " ");
                    snprintf(s->def, sizeof s->def, "%.*s", (int)n, p);
                    p += n;
                }
            }
        }
    }
}

const ir_attr_schema *ir_op_attr_schema(int op, int i)
{
    pthread_once(&schemas_once, parse_schemas);
    if (op < 0 || op >= IR_OP_COUNT || i < 0 || i >= nschemas[op])
        return NULL;
    return &schemas[op][i];
}

const ir_attr_schema *ir_op_find_attr(int op, const char *name)
{
    const ir_attr_schema *s;
    for (int i = 0; (s = ir_op_attr_schema(op, i)); i++)
        if (!strcmp(s->name, name))
            return s;
    return NULL;
}

bool ir_op_accepts_dtype(int op, ir_dtype t)
{
    const char *c = ir_ops[op].types;
    if (!strcmp(c, "any"))
        return t != IR_UNDEF;
    if (!strcmp(c, "float"))
        return ir_dtype_is_float(t);
    if (!strcmp(c, "int"))
        return ir_dtype_is_int(t);
    if (!strcmp(c, "bool"))
        return t == IR_BOOL;
    return ir_dtype_is_float(t) || ir_dtype_is_int(t); /* "num" */
}

const char *ir_family_name(ir_family f)
{
    static const char *const names[IR_FAM_COUNT] = {
        [IR_FAM_NONE] = "none", [IR_FAM_ELEMENTWISE] = "elementwise", [IR_FAM_CONTRACTION] = "contraction",
        [IR_FAM_REDUCE] = "reduce", [IR_FAM_NORM] = "norm", [IR_FAM_MOVEMENT] = "movement",
        [IR_FAM_CONV] = "conv", [IR_FAM_MISC] = "misc", [IR_FAM_ATTENTION] = "attention",
        [IR_FAM_BLOCKED] = "blocked", [IR_FAM_RNN] = "rnn",
    };
    return (unsigned)f < IR_FAM_COUNT && names[f] ? names[f] : "?";
}

const char *ir_flop_name(ir_flop_kind k)
{
    static const char *const names[IR_FLOP_COUNT] = {
        [IR_FLOP_NONE] = "0 (no arithmetic)", [IR_FLOP_OUT] = "1 per output element",
        [IR_FLOP_IN] = "1 per input element", [IR_FLOP_NORM] = "4 per input element",
        [IR_FLOP_MATMUL] = "2 x output x K", [IR_FLOP_GEMM] = "2 x output x K",
        [IR_FLOP_CONV] = "2 x output x weights per output channel",
        [IR_FLOP_CONV_NCHWC] = "as the equivalent Conv",
        [IR_FLOP_CONV_TRANSPOSE] = "2 x input x weights per input channel",
        [IR_FLOP_POOL] = "output x window taps", [IR_FLOP_ATTENTION] = "2 x keys x (Q + Y elements) + 4 x scores",
        [IR_FLOP_EINSUM] = "2 x product of the label extents",
        [IR_FLOP_RNN] = "2 x steps x directions x batch x gate rows x (inputs + hidden)",
        [IR_FLOP_CONV_PWDW] = "the 1x1 conv's 2 x its output x C, plus the depthwise conv's 2 x output x taps",
    };
    return (unsigned)k < IR_FLOP_COUNT && names[k] ? names[k] : "?";
}
