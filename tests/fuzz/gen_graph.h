/* gen_graph.h - a random valid graph from bytes, for the differential
 * fuzzer (fuzz_diff.c) and its plain replay driver (diff_replay.c).
 *
 * The bytes drive every choice: ops, shapes, attributes, constants and
 * the input data. Past their end the choices come from a splitmix64
 * stream seeded by a hash of the bytes, so any input, even an empty one,
 * makes a whole case, and a short input changes only the first choices.
 * The same bytes always give the same case.
 */
#ifndef ICC_TESTS_FUZZ_GEN_GRAPH_H
#define ICC_TESTS_FUZZ_GEN_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* One case: a graph with static shapes and its inputs' data. */
typedef struct gen_case {
    ir_graph *g;               /* owned */
    ir_tensor *inputs;         /* owned, g->ninputs of them */
    int ninputs;
    /* The comparison's tolerance class: 0 exact (movement, integers,
     * comparisons of exact values), 1 a few roundings (elementwise
     * arithmetic), 2 transcendental functions, 3 accumulations (matmul,
     * conv, reductions, normalizations), whose order differs. */
    int tol_class;
} gen_case;

/* Builds the case the bytes describe into *out: 0, or -1 with d set when
 * the generator made a node that shape inference refuses (its bug, or the
 * shape function's: the message names the op). */
int gen_graph(const uint8_t *data, size_t size, gen_case *out, icc_diag *d);

/* A case of a given graph (static shapes; the case takes ownership of g,
 * also on failure) with input data drawn from seed, compared at the given
 * tolerance class: for replaying a hand-reduced .icc file. */
int gen_inputs(ir_graph *g, uint64_t seed, int tol_class, gen_case *out, icc_diag *d);

/* Frees what gen_graph made; a zeroed case is a no-op. */
void gen_case_free(gen_case *c);

/* n bytes of splitmix64 from seed: a replay driver's random input. */
void gen_random_bytes(uint64_t seed, uint8_t *buf, size_t n);

#endif
