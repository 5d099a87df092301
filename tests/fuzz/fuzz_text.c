/* fuzz_text.c - libFuzzer entry for the .icc parser: any input must parse
 * or fail cleanly, and whatever parses must print to a fixed point: the
 * text printed from it parses back, and printing that gives the same
 * bytes. A mismatch aborts, which is how the fuzzer learns of a bug. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    icc_diag d;
    ir_graph *g = ir_parse((const char *)data, size, "fuzz", &d);
    if (!g)
        return 0;
    size_t n1, n2;
    char *t1 = ir_print_string(g, &n1);
    if (!t1)
        abort();
    ir_graph *g2 = ir_parse(t1, n1, "printed", &d);
    if (!g2) {
        fprintf(stderr, "printed text does not parse: %s\n%s", d.msg, t1);
        abort();
    }
    char *t2 = ir_print_string(g2, &n2);
    if (!t2 || n1 != n2 || memcmp(t1, t2, n1)) {
        fprintf(stderr, "print -> parse -> print differs:\n%s---\n%s", t1, t2 ? t2 : "(null)");
        abort();
    }
    free(t1);
    free(t2);
    ir_graph_destroy(g);
    ir_graph_destroy(g2);
    return 0;
}
