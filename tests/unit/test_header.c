/* test_header.c - the model.h generator: headers for graphs parsed from
 * text IR (static and symbolic shapes, every dtype, names that are not C
 * identifiers) are checked for their declarations, then compiled with
 * the system C compiler (C99, pedantic, warnings as errors) and, when
 * they exist, g++ and clang, alone and from a small program that uses
 * their macros, arrays and run wrapper. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "codegen/header.h"
#include "ir/text.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/icc_hdr_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static ir_graph *parse(const char *text)
{
    icc_diag d = {{0}};
    ir_graph *g = ir_parse(text, strlen(text), "test.icc", &d);
    ck_assert_msg(g != NULL, "%s", d.msg);
    return g;
}

/* The header for text with that prefix; caller frees. */
static char *header(const char *text, const char *prefix)
{
    ir_graph *g = parse(text);
    char *h = cg_header_string(g, prefix);
    ck_assert_ptr_nonnull(h);
    ir_graph_destroy(g);
    return h;
}

/* On failure the header goes to stderr (too long for Check's message). */
#define HAS(h, s) expect(h, s, true)
#define LACKS(h, s) expect(h, s, false)

static void expect(const char *h, const char *s, bool present)
{
    if ((strstr(h, s) != NULL) != present) {
        fprintf(stderr, "%s\n", h);
        ck_abort_msg("header %s: %.300s", present ? "lacks" : "has", s);
    }
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

static bool have_cxx(void) { return sh("command -v g++ >/dev/null 2>&1") == 0; }

#define CFLAGS "-Wall -Wextra -Werror -pedantic -I " ICC_SOURCE_DIR "/include"

/* Writes h to dir/name.h via cg_write_header's sibling (the string), and
 * compiles it alone as C99 and C++ (-fsyntax-only); then, if user is
 * given, compiles user (which includes "name.h") the same way. */
static void compile(const char *name, const char *h, const char *user)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s.h", dir, name);
    write_text(path, h);
    ck_assert_msg(sh("cc -std=c99 " CFLAGS " -fsyntax-only -x c %s", path) == 0,
                  "%s.h does not compile as C99", name);
    if (have_cxx())
        ck_assert_msg(sh("g++ -std=c++11 " CFLAGS " -fsyntax-only -x c++ %s", path) == 0,
                      "%s.h does not compile as C++", name);
    /* clang also warns about unused statics of the main file. */
    if (sh("command -v clang >/dev/null 2>&1") == 0)
        ck_assert_msg(sh("clang -std=c99 " CFLAGS " -fsyntax-only -x c %s", path) == 0,
                      "%s.h does not compile with clang", name);
    if (!user)
        return;
    char upath[256];
    snprintf(upath, sizeof upath, "%s/%s_user.c", dir, name);
    /* C++ spells _Static_assert static_assert. */
    size_t n = strlen(user) + 128;
    char *text = malloc(n);
    ck_assert_ptr_nonnull(text);
    snprintf(text, n, "#ifdef __cplusplus\n#define _Static_assert static_assert\n#endif\n%s", user);
    write_text(upath, text);
    free(text);
    ck_assert_msg(sh("cc -std=c11 " CFLAGS " -I %s -fsyntax-only %s", dir, upath) == 0,
                  "the program using %s.h does not compile", name);
    if (have_cxx())
        ck_assert_msg(sh("g++ -std=c++11 " CFLAGS " -I %s -fsyntax-only -x c++ %s", dir, upath) == 0,
                      "the program using %s.h does not compile as C++", name);
}

static const char *const static_graph =
    "graph @digits(%image: f32[1,1,8,8]) -> (%probs) {\n"
    "  %probs = Identity(%image) : f32[1,1,8,8]\n"
    "}\n";

START_TEST(static_model)
{
    char *h = header(static_graph, NULL);
    HAS(h, "#ifndef MODEL_MODEL_H\n#define MODEL_MODEL_H\n");
    HAS(h, "#include <icc/runtime.h>\n");
    HAS(h, "extern \"C\" {");
    HAS(h, "extern const icc_model_desc model_model;\n");
    HAS(h, "#define MODEL_NUM_INPUTS 1\n");
    HAS(h, "#define MODEL_INPUT_IMAGE_INDEX 0\n");
    HAS(h, "#define MODEL_INPUT_IMAGE_NAME \"image\"\n");
    HAS(h, "#define MODEL_INPUT_IMAGE_DTYPE ICC_F32\n");
    HAS(h, "#define MODEL_INPUT_IMAGE_RANK 4\n");
    HAS(h, "static const int64_t model_input_image_dims[4] MODEL_UNUSED_ = {1, 1, 8, 8};\n");
    HAS(h, "#define MODEL_OUTPUT_PROBS_INDEX 0\n");
    HAS(h, "static const int64_t model_output_probs_dims[4] MODEL_UNUSED_ = {1, 1, 8, 8};\n");
    HAS(h, "static inline icc_status model_run(icc_context *ctx, const float *image, float *probs)\n");
    HAS(h, "return icc_run(ctx, in_, dims_, out_);");
    /* The usage comment, with this model's names. */
    HAS(h, " * inputs:  image: f32[1,1,8,8]\n");
    HAS(h, " * outputs: probs: f32[1,1,8,8]\n");
    HAS(h, "icc_model_from_desc(&model_model, &m)");
    HAS(h, "icc_model_open(\"./model.so\", \"model\", &m)");
    HAS(h, "float *image = calloc(1 * 1 * 8 * 8, sizeof *image);");
    HAS(h, "icc_status st = model_run(ctx, image, probs);");
    compile("model", h,
            "#include \"model.h\"\n"
            "_Static_assert(MODEL_INPUT_IMAGE_INDEX == 0, \"index\");\n"
            "_Static_assert(MODEL_INPUT_IMAGE_DTYPE == ICC_F32, \"dtype\");\n"
            "_Static_assert(MODEL_INPUT_IMAGE_RANK == 4, \"rank\");\n"
            "_Static_assert(sizeof model_input_image_dims == 4 * sizeof(int64_t), \"dims\");\n"
            "_Static_assert(MODEL_NUM_OUTPUTS == 1, \"outputs\");\n"
            "int use(icc_context *ctx, float *x, float *y);\n"
            "int use(icc_context *ctx, float *x, float *y)\n"
            "{\n"
            "    const char *n = MODEL_INPUT_IMAGE_NAME;\n"
            "    return (int)model_run(ctx, x, y) + (int)model_output_probs_dims[3] + n[0] +\n"
            "           (int)model_model.ninputs;\n"
            "}\n");
    free(h);
}
END_TEST

START_TEST(prefix_names_everything)
{
    char *h = header(static_graph, "digits_v2");
    HAS(h, "#ifndef DIGITS_V2_MODEL_H\n");
    HAS(h, "extern const icc_model_desc digits_v2_model;\n");
    HAS(h, "#define DIGITS_V2_INPUT_IMAGE_INDEX 0\n");
    HAS(h, "static const int64_t digits_v2_input_image_dims[4] DIGITS_V2_UNUSED_ = {1, 1, 8, 8};");
    HAS(h, "static inline icc_status digits_v2_run(icc_context *ctx, const float *image, float *probs)");
    HAS(h, "icc_model_open(\"./model.so\", \"digits_v2\", &m)");
    LACKS(h, "MODEL_INPUT");
    LACKS(h, "model_model");
    compile("digits_v2", h, NULL);
    free(h);
}
END_TEST

/* Names that are not identifiers, that collide once sanitized (also by
 * case, as macros are upper case), that are keywords, standard macros or
 * runtime names, and bytes that could end a comment or form trigraphs. */
static const char *const odd_graph =
    "graph @\"odd */ model\"(%\"input:0\": f32[2], %\"/a/b\": i64[3], %\"a.b\": u8[1], %\"a:b\": u8[1],\n"
    "    %\"0x\": f32[1], %X: f32[1], %x: f32[1], %int: i32[1], %NULL: f32[1], %ctx: f32[1],\n"
    "    %\"*/ /* ?\?/\": f32[1], %icc_run: f32[1], %model_input_x_dims: f32[1], %int64_t: f32[1],\n"
    "    %\"\\xc3\\xa9t\\xc3\\xa9\": f32[1], %in_: f32[1], %_Y: f32[1])\n"
    "    -> (%\"output:0\", %x, %\"/a/b\") {\n"
    "  %\"output:0\" = Identity(%\"input:0\") : f32[2]\n"
    "}\n";

START_TEST(odd_names)
{
    char *h = header(odd_graph, NULL);
    HAS(h, "#define MODEL_INPUT_INPUT_0_INDEX 0\n");
    HAS(h, "#define MODEL_INPUT_INPUT_0_NAME \"input:0\"\n");
    HAS(h, "#define MODEL_INPUT__A_B_INDEX 1\n");
    HAS(h, "#define MODEL_INPUT__A_B_NAME \"/a/b\"\n");
    HAS(h, "#define MODEL_INPUT_A_B_INDEX 2\n");
    HAS(h, "#define MODEL_INPUT_A_B_2_INDEX 3\n");     /* a:b after a.b */
    HAS(h, "#define MODEL_INPUT__0X_INDEX 4\n");
    HAS(h, "#define MODEL_INPUT_X_INDEX 5\n");
    HAS(h, "#define MODEL_INPUT_X_2_INDEX 6\n");       /* x after X */
    HAS(h, "static const int64_t model_input_x_2_dims[1] MODEL_UNUSED_ = {1};\n");
    HAS(h, "#define MODEL_INPUT_INT_INDEX 7\n");
    HAS(h, "#define MODEL_INPUT___________INDEX 10\n");    /* the comment-closer name */
    HAS(h, "#define MODEL_INPUT___________NAME \"*/ /* \\?\\?/\"\n");
    HAS(h, "#define MODEL_INPUT___T___NAME \"\\303\\251t\\303\\251\"\n");
    /* Outputs have their own namespace: /a/b and x again, no suffix. */
    HAS(h, "#define MODEL_OUTPUT_OUTPUT_0_INDEX 0\n");
    HAS(h, "#define MODEL_OUTPUT_X_INDEX 1\n");
    HAS(h, "#define MODEL_OUTPUT__A_B_INDEX 2\n");
    HAS(h, "#define MODEL_OUTPUT__A_B_DTYPE ICC_I64\n");
    /* Parameters avoid keywords, macros, runtime and header names,
     * reserved identifiers, the wrapper's locals and each other. */
    HAS(h, "static inline icc_status model_run(icc_context *ctx, const float *input_0, "
           "const int64_t *a_a_b, const uint8_t *a_b, const uint8_t *a_b_2, const float *a_0x, "
           "const float *X, const float *x, const int32_t *int_, const float *NULL_, "
           "const float *ctx_2, const float *a_________, const float *aicc_run, "
           "const float *amodel_input_x_dims, const float *int64_t_, const float *a__t__, "
           "const float *in__2, const float *a_Y, "
           "float *output_0, float *x_2, int64_t *a_a_b_2)\n");
    /* Comments: no delimiters or non-ASCII bytes from names. */
    HAS(h, "'odd \\x2a/ model'");
    HAS(h, "\\x2a/ /\\x2a ?\?/: f32[1]");
    for (const unsigned char *p = (const unsigned char *)h; *p; p++)
        ck_assert_msg(*p < 0x80, "non-ASCII byte in the header");
    compile("odd", h,
            "#include \"odd.h\"\n"
            "_Static_assert(MODEL_INPUT_A_B_2_INDEX == 3, \"a:b\");\n"
            "_Static_assert(MODEL_OUTPUT__A_B_INDEX == 2, \"/a/b out\");\n"
            "_Static_assert(MODEL_NUM_INPUTS == 17 && MODEL_NUM_OUTPUTS == 3, \"counts\");\n"
            "int first(void);\n"
            "int first(void) { return MODEL_INPUT___________NAME[0] + (int)model_input__a_b_dims[0]; }\n");
    free(h);
}
END_TEST

START_TEST(symbolic_dims)
{
    char *h = header("graph @sym<N, \"seq len\">(%tokens: i64[N,\"seq len\"], %mask: bool[*],\n"
                     "    %scale: f32[]) -> (%y, %mask) {\n"
                     "  %y = Identity(%tokens) : i64[N,\"seq len\"]\n"
                     "}\n",
                     NULL);
    HAS(h, "static const int64_t model_input_tokens_dims[2] MODEL_UNUSED_ = {-1 /* N */, -1 /* seq len */};\n");
    HAS(h, "#define MODEL_INPUT_MASK_RANK -1 /* unknown rank */\n");
    HAS(h, "#define MODEL_INPUT_MASK_DTYPE ICC_BOOL\n");
    LACKS(h, "model_input_mask_dims");
    HAS(h, "#define MODEL_INPUT_SCALE_RANK 0\n");
    LACKS(h, "model_input_scale_dims");
    HAS(h, "Symbolic dims (-1 in the dims arrays, given at run time): N seq len\n");
    /* No typed wrapper: the dims are only known at run time. */
    LACKS(h, "model_run(");
    HAS(h, "there is no typed run\n * wrapper: call icc_run with each input's actual dims.");
    HAS(h, "int64_t tokens_dims[2] = {1, 1};");
    HAS(h, "const int64_t *in_dims[3] = {tokens_dims, NULL, NULL};");
    HAS(h, "icc_status st = icc_run(ctx, in, in_dims, out);");
    compile("sym", h,
            "#include \"sym.h\"\n"
            "_Static_assert(MODEL_INPUT_MASK_INDEX == 1 && MODEL_OUTPUT_MASK_INDEX == 1, \"mask\");\n"
            "int dims0(void);\n"
            "int dims0(void) { return (int)model_input_tokens_dims[0] + (int)model_output_y_dims[1]; }\n");
    free(h);
}
END_TEST

START_TEST(every_dtype)
{
    static const struct {
        const char *ir, *icc, *c;
    } dt[] = {
        {"f32", "ICC_F32", "float"},      {"f64", "ICC_F64", "double"},
        {"i8", "ICC_I8", "int8_t"},       {"i16", "ICC_I16", "int16_t"},
        {"i32", "ICC_I32", "int32_t"},    {"i64", "ICC_I64", "int64_t"},
        {"u8", "ICC_U8", "uint8_t"},      {"u16", "ICC_U16", "uint16_t"},
        {"u32", "ICC_U32", "uint32_t"},   {"u64", "ICC_U64", "uint64_t"},
        {"bool", "ICC_BOOL", "uint8_t"},  {"f16", "ICC_F16", "uint16_t"},
        {"bf16", "ICC_BF16", "uint16_t"},
    };
    int n = (int)(sizeof dt / sizeof *dt);
    ck_assert_int_eq(n, IR_DTYPE_COUNT - 1);
    char text[4096] = "graph @dtypes(", *p = text + strlen(text);
    for (int i = 0; i < n; i++)
        p += sprintf(p, "%s%%in_%s: %s[2,3]", i ? ", " : "", dt[i].ir, dt[i].ir);
    p += sprintf(p, ") -> (");
    for (int i = 0; i < n; i++)
        p += sprintf(p, "%s%%out_%s", i ? ", " : "", dt[i].ir);
    p += sprintf(p, ") {\n");
    for (int i = 0; i < n; i++)
        p += sprintf(p, "  %%out_%s = Identity(%%in_%s) : %s[2,3]\n", dt[i].ir, dt[i].ir, dt[i].ir);
    sprintf(p, "}\n");
    char *h = header(text, "dt");
    char want[256], user[8192] = "#include \"dt.h\"\n", *u = user + strlen(user);
    for (int i = 0; i < n; i++) {
        /* ICC_F32 -> the macro suffix F32 */
        snprintf(want, sizeof want, "#define DT_INPUT_IN_%s_DTYPE %s\n", dt[i].icc + 4, dt[i].icc);
        HAS(h, want);
        snprintf(want, sizeof want, "const %s *in_%s,", dt[i].c, dt[i].ir);
        if (i == n - 1)
            want[strlen(want) - 1] = 0;
        HAS(h, want);
        snprintf(want, sizeof want, " %s *out_%s", dt[i].c, dt[i].ir);
        HAS(h, want);
        u += sprintf(u, "_Static_assert(DT_INPUT_IN_%s_DTYPE == %s, \"%s\");\n", dt[i].icc + 4,
                     dt[i].icc, dt[i].ir);
    }
    u += sprintf(u, "icc_status go(icc_context *ctx, void *const *b);\n"
                    "icc_status go(icc_context *ctx, void *const *b)\n{\n    return dt_run(ctx");
    for (int i = 0; i < 2 * n; i++)
        u += sprintf(u, ", (%s%s *)b[%d]", i < n ? "const " : "", dt[i % n].c, i);
    sprintf(u, ");\n}\n");
    compile("dt", h, user);
    free(h);
}
END_TEST

START_TEST(deterministic_and_atomic)
{
    ir_graph *g = parse(odd_graph);
    char *a = cg_header_string(g, "m1"), *b = cg_header_string(g, "m1");
    ck_assert_ptr_nonnull(a);
    ck_assert_str_eq(a, b);
    char path[256];
    icc_diag d = {{0}};
    snprintf(path, sizeof path, "%s/m1.h", dir);
    ck_assert_int_eq(cg_write_header(g, "m1", path, &d), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    ck_assert_str_eq(buf, a);
    /* A fresh parse of the same text gives the same bytes. */
    ir_graph *g2 = parse(odd_graph);
    char *c = cg_header_string(g2, "m1");
    ck_assert_str_eq(a, c);
    /* Failures: invalid prefixes, a directory that does not exist. */
    ck_assert_ptr_null(cg_header_string(g, "icc"));
    ck_assert_ptr_null(cg_header_string(g, "9lives"));
    ck_assert_ptr_null(cg_header_string(g, "a-b"));
    ck_assert_ptr_null(cg_header_string(g, ""));
    snprintf(path, sizeof path, "%s/bad.h", dir);
    ck_assert_int_eq(cg_write_header(g, "a-b", path, &d), -1);
    ck_assert_msg(strstr(d.msg, "invalid model name 'a-b'") != NULL, "%s", d.msg);
    ck_assert_int_eq(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/no_dir/m.h", dir);
    ck_assert_int_eq(cg_write_header(g, NULL, path, &d), -1);
    ck_assert_msg(strstr(d.msg, "no_dir/m.h") != NULL, "%s", d.msg);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls %s | grep -v '^m1.h$')\"", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(a);
    free(b);
    free(c);
    ir_graph_destroy(g);
    ir_graph_destroy(g2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("header");
    TCase *tc = tcase_create("header");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, static_model);
    tcase_add_test(tc, prefix_names_everything);
    tcase_add_test(tc, odd_names);
    tcase_add_test(tc, symbolic_dims);
    tcase_add_test(tc, every_dtype);
    tcase_add_test(tc, deterministic_and_atomic);
    suite_add_tcase(s, tc);
    return icc_run_suite(s);
}
