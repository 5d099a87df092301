/* tile.h - the register-tiled contraction schedule shared by MatMul,
 * Gemm (matmul.c) and Conv (conv.c).
 *
 * out[bat, row, g, j] = epi(sum_k A(bat, row, k) * B(bat, k, g, j)): rows
 * form a register tile (`rows` accumulators per vector of columns, A read
 * as a uniform broadcast), columns j the VECTOR loop the emitter widens
 * (`width` lanes), g a group of columns (a Conv's output row; 1 for a
 * matrix). The reduction is split in `nkb` blocks whose partial sums go
 * through the output; the caller opens each block's loops (k_open) and
 * builds the operands at the loop variables it made. Sizes are constant,
 * except the row count, which may be a run-time expression (m_dyn): the
 * parallel loop's bounds stay constant because its chunks then split only
 * the columns, each running every row block; and the columns and their
 * groups (n_dyn, ng_dyn): a constant number of column chunks then each
 * take their share of the panels at run time.
 */
#ifndef ICC_CG_LOWER_TILE_H
#define ICC_CG_LOWER_TILE_H

#include "codegen/lower/internal.h"

enum { TILE_MAX_ROWS = 32 };

typedef struct cg_tile cg_tile;
struct cg_tile {
    int64_t nbat;              /* independent problems (batch items) */
    int64_t m;                 /* rows */
    kir_expr *m_dyn;           /* non-NULL: the row count, known at run time only (a symbolic
                                  batch); m is unused and the chunks split the columns only */
    int64_t ng;                /* column groups */
    int64_t n;                 /* columns of a group: the vector loop */
    kir_expr *ng_dyn, *n_dyn;  /* non-NULL (both): ng and n known at run time only (a Conv's
                                  symbolic output height and width); ng and n are unused,
                                  the chunks' column panels are split at run time */
    int64_t nkb;               /* blocks of the reduction */
    int rows;                  /* rows of the register tile, <= TILE_MAX_ROWS */
    int width;                 /* lanes of the vector loop */
    int64_t mc_blocks;         /* row blocks of a parallel chunk (0: the schedule's tile_mc_blocks) */
    bool stream;               /* stream_chunks parallel chunks per batch item, each all rows
                                  and its columns: the skinny schedule, whose short reduction
                                  blocks then read B's rows front to back */
    int64_t stream_chunks;     /* stream: column chunks per batch item (0 or 1: one chunk of
                                  all columns); each reads its piece of every B row, so more
                                  cut the rows shorter (1x3072x3072: 2.8x slower at 2) */
    bool rows_outer;           /* a chunk's row blocks outside its column panels (not with
                                  pack_a or pack): each row block's outputs are stored panel
                                  after panel, one run per row, instead of every row of the
                                  chunk per panel, at the cost of reading the chunk's B
                                  panels once per row block (conv.c: a pointwise NCHW conv
                                  whose output outgrows L2) */
    bool pack_a;               /* copy the chunk's A block (its row blocks x the reduction
                                  block) into thread scratch once per reduction block, row
                                  block by row block as [k][rows], so a k step's broadcasts
                                  read `rows` consecutive floats instead of one per row of A
                                  (rows K apart: 4 KB for K = 1024, all in one L1 set); needs
                                  kstep and kc, a constant m and no stream */
    int64_t kc;                /* pack_a: the most reduction steps in one block */
    void *u;                   /* the caller's state */
    /* Called once inside the parallel loop with the batch item. */
    int (*setup)(lctx *c, cg_tile *t, kir_expr *bat);
    /* Opens block kb's reduction loops in *b (column group g), moving *b
     * to the innermost body. */
    int (*k_open)(lctx *c, cg_tile *t, kir_expr *kb, kir_expr *g, kir_block **b);
    /* (optional) Called per reduction block kb and column panel, before
     * the panel's vector loop, with the panel's columns [j0, j1) of group
     * g: may append to *b a copy of the B panel into scratch that the b
     * callback then reads, once for all the chunk's row blocks. */
    int (*pack)(lctx *c, cg_tile *t, kir_block *b, kir_expr *kb, kir_expr *g, kir_expr *j0, kir_expr *j1);
    /* (optional, with the schedule's prefetch_b) Appends to *b, inside the
     * reduction loops, a prefetch_l2 of cache line `line` (0 ..
     * pf_lines - 1) of B's row at the current k plus dk (NULL: 0; the
     * callback clamps it to the last k) in the panel after the one whose
     * columns start at j0 of group g: the tile spreads the panel's lines
     * over its row blocks and reduction steps (tile.c). */
    int (*prefetch)(lctx *c, cg_tile *t, kir_block *b, kir_expr *g, kir_expr *j0, kir_expr *dk, kir_expr *line);
    int pf_lines;              /* prefetch: cache lines of one k's row of a B panel */
    bool b_copied;             /* pack copies B's panels per call, per chunk (B is no
                                * weight packed ahead): each row chunk copies them again */
    bool pf_same_panel;        /* set by cg_tile_lower: a chunk has one panel, so the panel
                                * copied next is its own at the next reduction block */
    /* (optional, needed by pack_a) The current k's step within its
     * block, 0 .. kc-1, inside the loops k_open made. */
    kir_expr *(*kstep)(lctx *c, cg_tile *t);
    /* A at (row, the current k): uniform in the columns. */
    kir_expr *(*a)(lctx *c, cg_tile *t, kir_expr *row);
    /* B at (the current k, g, j). */
    kir_expr *(*b)(lctx *c, cg_tile *t, kir_expr *g, kir_expr *j);
    /* The output's index of (row, g, j). */
    void (*out)(lctx *c, cg_tile *t, kir_expr *row, kir_expr *g, kir_expr *j, kir_expr **ix);
    /* The final value from the sum (NULL: the sum itself). */
    kir_expr *(*epi)(lctx *c, cg_tile *t, kir_expr *v, kir_expr *row, kir_expr *g, kir_expr *j);
};

/* Fills c->k's body with the tiled schedule; 0, or -1 on out of memory. */
int cg_tile_lower(lctx *c, cg_tile *t);

#endif
