/* diff.h - one differential case: a generated graph (gen_graph.h) run by
 * the reference interpreter and by compiled code at -O0 and -O3, the
 * outputs compared. Shared by the libFuzzer target (fuzz_diff.c) and the
 * plain replay driver (diff_replay.c).
 */
#ifndef ICC_TESTS_FUZZ_DIFF_H
#define ICC_TESTS_FUZZ_DIFF_H

#include <stddef.h>

#include "gen_graph.h"

typedef enum diff_result {
    DIFF_SAME,     /* every level agrees with the interpreter (or all refuse) */
    DIFF_SKIP,     /* some node is documented as not compiled yet */
    DIFF_BUG,      /* a mismatch, or one side refuses what the other runs */
} diff_result;

typedef struct diff_stats {
    long cases;        /* diff_case calls */
    long same;         /* compared and equal at every level */
    long refused;      /* the interpreter and every level refuse it */
    long skipped;      /* DIFF_SKIP */
    long bugs;         /* DIFF_BUG */
} diff_stats;

/* Runs c through the interpreter, then compiles it at -O0 and -O3 (each
 * level's pass pipeline, the plan, the LLVM backend at that level, the
 * object loaded in process by LLVM's ORC JIT and run through the runtime,
 * include/icc/runtime.h) and compares. On DIFF_BUG *report (malloc'd, the
 * caller frees) says what differs and holds the graph's text IR; on
 * DIFF_SKIP it names the node not compiled. st (may be NULL) is updated. */
diff_result diff_case(const gen_case *c, diff_stats *st, char **report);

#endif
