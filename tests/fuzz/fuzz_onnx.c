/* fuzz_onnx.c - libFuzzer target for the ONNX frontend.
 *
 * Feeds arbitrary bytes to icc_onnx_load_buffer under ASan and UBSan, with
 * external data resolved in a scratch folder holding one 4 KiB file,
 * weights.bin, so offsets, lengths and paths get exercised too (a seed
 * refers to it). Beyond "no crash, no leak", it checks the frontend's
 * contract: a failure carries a non-empty one-line message with no control
 * bytes (names from the model must not reach a terminal raw), and a graph
 * it returns passes the verifier and prints as text IR that parses back and
 * prints identically (the text form's round-trip promise), so a graph the
 * frontend builds is one the rest of icc can take.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend/onnx.h"
#include "ir/text.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base_dir[64];
static char weights[96];

static void cleanup(void)
{
    unlink(weights);
    rmdir(base_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    snprintf(base_dir, sizeof base_dir, "%s", "/tmp/icc-fuzz-ext.XXXXXX");
    if (!mkdtemp(base_dir)) {
        perror("fuzz_onnx: mkdtemp");
        abort();
    }
    snprintf(weights, sizeof weights, "%s/weights.bin", base_dir);
    FILE *f = fopen(weights, "wb");
    if (!f) {
        perror("fuzz_onnx: weights.bin");
        abort();
    }
    for (int i = 0; i < 4096; i++)
        fputc(i * 37 & 0xff, f);
    fclose(f);
    atexit(cleanup);
    return 0;
}

/* One line, printable: names from the model must not reach a terminal raw. */
static bool one_line(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

/* A broken contract is a crash to libFuzzer, which saves the input. */
static void broken(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_onnx: %s: %s\n", what, detail);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    icc_diag d = {{0}};
    ir_graph *g = icc_onnx_load_buffer(data, size, base_dir, "fuzz", &d);
    if (!g) {
        if (!one_line(d.msg))
            broken("failure without a one-line message", d.msg);
        return 0;
    }
    if (ir_verify(g, &d) < 0)
        broken("the loaded graph does not verify", d.msg);
    size_t len1, len2;
    char *t1 = ir_print_string(g, &len1);
    ir_graph_destroy(g);
    if (!t1)
        return 0;
    ir_graph *g2 = ir_parse(t1, len1, "fuzz.icc", &d);
    if (!g2)
        broken("the printed IR does not parse back", d.msg);
    char *t2 = ir_print_string(g2, &len2);
    ir_graph_destroy(g2);
    if (t2 && (len1 != len2 || memcmp(t1, t2, len1)))
        broken("print -> parse -> print changed the text", t1);
    free(t1);
    free(t2);
    return 0;
}
