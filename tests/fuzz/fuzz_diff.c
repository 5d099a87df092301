/* fuzz_diff.c - libFuzzer target: the differential fuzzer of issue 13.
 *
 * The input bytes drive a random valid graph (gen_graph.c); diff.c runs it
 * through the reference interpreter and through code compiled at -O0 and
 * -O3 and compares. Any mismatch, or one side refusing what the other
 * runs, prints the reason and the graph's text IR and aborts, so libFuzzer
 * keeps the input; replay it with this binary or with the plain driver
 * `diff_replay FILE` of a normal (gcc) build. A graph the generator
 * itself cannot make (shape inference refuses a node it drew) is skipped
 * here; diff_replay reports those.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gen_case c;
    icc_diag d = {{0}};
    if (gen_graph(data, size, &c, &d) < 0)
        return 0;
    char *report = NULL;
    diff_result r = diff_case(&c, NULL, &report);
    if (r == DIFF_BUG) {
        fprintf(stderr, "fuzz_diff: %s", report ? report : "(no report)\n");
        abort();
    }
    free(report);
    gen_case_free(&c);
    return r == DIFF_SKIP ? -1 : 0;
}
