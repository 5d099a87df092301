/* interp.c - the reference interpreter. */
#include "ir/ref/interp.h"
#include "ir/ops.h"

#include <stdlib.h>
#include <string.h>

void ir_tensors_free(ir_tensor *t, int n)
{
    for (int i = 0; i < n; i++) {
        free(t[i].data);
        t[i].data = NULL;
    }
}

int ir_eval_node(const ir_node *n, const ir_tensor *const *in, ir_tensor *out, icc_diag *d)
{
    return ir_eval_node_into(n, in, out, NULL, d);
}

/* Frees the outputs this call allocated (not the caller's storage). */
static void free_own(ir_tensor *out, int n, void *const *storage)
{
    for (int i = 0; i < n; i++)
        if (!storage || !storage[i])
            free(out[i].data);
        else
            out[i].data = NULL;
}

int ir_eval_node_into(const ir_node *n, const ir_tensor *const *in, ir_tensor *out,
                      void *const *storage, icc_diag *d)
{
    const ir_op_info *op = &ir_ops[n->op];
    ir_type tin_buf[64], tout_buf[64];
    const ir_type *tin_ptr[64];
    ir_tensor *outp[64];
    if (n->nin > 64 || n->nout > 64)
        return ir_node_errorf(d, n, "more than 64 inputs or outputs");
    if (ir_node_check_arity(n, d) < 0)
        return -1;
    if (op->flags & IR_F_CONTROL)
        return ir_eval_control(n, in, out, storage, d);
    for (int i = 0; i < n->nin; i++) {
        tin_ptr[i] = NULL;
        if (in[i]) {
            ir_type_of_tensor(in[i], &tin_buf[i]);
            tin_ptr[i] = &tin_buf[i];
        }
    }
    memset(tout_buf, 0, sizeof(ir_type) * (size_t)n->nout);
    ir_shape_ctx sc = {n, n->nin, n->nout, tin_ptr, in, tout_buf, d, NULL};
    if (op->shape(&sc) < 0)
        return -1;
    memset(out, 0, sizeof(ir_tensor) * (size_t)n->nout);
    for (int i = 0; i < n->nout; i++) {
        const ir_type *t = &tout_buf[i];
        if (!ir_type_is_static(t)) {
            free_own(out, i, storage);
            return ir_node_errorf(d, n, "output %d has no concrete shape", i);
        }
        int64_t dims[IR_MAX_RANK];
        for (int k = 0; k < t->rank; k++)
            dims[k] = t->dims[k].v;
        if (ir_tensor_init(&out[i], t->dtype, t->rank, dims, d) < 0) {
            free_own(out, i, storage);
            char m[sizeof d->msg];
            memcpy(m, d->msg, sizeof m);
            return ir_node_errorf(d, n, "output %d: %s", i, m);
        }
        if (storage && storage[i]) {
            /* Kernels may count on zeroed outputs, except when running in
             * place, where the storage holds an input. */
            bool inplace = false;
            for (int k = 0; k < n->nin; k++)
                inplace |= in[k] && in[k]->data == storage[i];
            out[i].data = storage[i];
            if (!inplace)
                memset(out[i].data, 0, out[i].nbytes);
            outp[i] = &out[i];
            continue;
        }
        out[i].data = calloc(1, out[i].nbytes ? out[i].nbytes : 1);
        if (!out[i].data) {
            free_own(out, i, storage);
            return ir_node_errorf(d, n, "out of memory for output %d (%zu bytes)", i, out[i].nbytes);
        }
        outp[i] = &out[i];
    }
    ir_ref_ctx rc = {n, n->nin, n->nout, in, outp, d};
    if (op->ref(&rc) < 0) {
        free_own(out, n->nout, storage);
        return -1;
    }
    return 0;
}

/* Checks a caller's input against the declared type of the graph input. */
static int check_input(const ir_value *v, const ir_tensor *t, icc_diag *d)
{
    if (t->dtype != v->type.dtype)
        return ir_errorf(d, "input '%s': expected dtype %s, got %s", v->name,
                         ir_dtype_name(v->type.dtype), ir_dtype_name(t->dtype));
    if (v->type.rank >= 0 && t->rank != v->type.rank)
        return ir_errorf(d, "input '%s': expected rank %d, got %d", v->name, v->type.rank, t->rank);
    for (int i = 0; v->type.rank >= 0 && i < t->rank; i++)
        if (ir_dim_is_const(v->type.dims[i]) && v->type.dims[i].v != t->dims[i])
            return ir_errorf(d, "input '%s': dim %d is %lld, expected %lld", v->name, i,
                             (long long)t->dims[i], (long long)v->type.dims[i].v);
    return 0;
}

/* Values live in a slot per value id; intermediates are freed after their
 * last use, so peak memory stays near what a planner would give. */
int ir_interp_run(const ir_graph *g, const ir_tensor *inputs, ir_tensor *outputs, icc_diag *d)
{
    return ir_interp_run_hooked(g, inputs, outputs, NULL, NULL, d);
}

int ir_interp_run_hooked(const ir_graph *g, const ir_tensor *inputs, ir_tensor *outputs,
                         ir_interp_hook hook, void *ctx, icc_diag *d)
{
    int nv = g->nvalues, rc = -1;
    ir_tensor *slot = calloc((size_t)nv + 1, sizeof *slot);
    bool *owned = calloc((size_t)nv + 1, sizeof *owned), *is_out = calloc((size_t)nv + 1, 1);
    int *last = calloc((size_t)nv + 1, sizeof *last);
    bool *have = calloc((size_t)nv + 1, sizeof *have);
    int64_t arena_bytes = ir_graph_arena_bytes(g);
    unsigned char *arena = arena_bytes ? aligned_alloc(64, (size_t)arena_bytes) : NULL;
    if (!slot || !owned || !last || !have || !is_out || (arena_bytes && !arena)) {
        ir_errorf(d, "out of memory");
        goto done;
    }
    for (int i = 0; i < g->ninputs; i++) {
        if (check_input(g->inputs[i], &inputs[i], d) < 0)
            goto done;
        slot[g->inputs[i]->id] = inputs[i];
        have[g->inputs[i]->id] = true;
        if (hook && hook(ctx, g->inputs[i], &inputs[i], d) < 0)
            goto done;
    }
    for (int i = 0; i < nv; i++)
        if (g->values[i]->kind == IR_VAL_CONST) {
            slot[i] = g->values[i]->cval;
            have[i] = true;
        }
    for (int i = 0; i < g->noutputs; i++)
        is_out[g->outputs[i]->id] = true;
    for (int k = 0; k < g->nnodes; k++)
        for (int i = 0; i < g->nodes[k]->nin; i++)
            if (g->nodes[k]->in[i])
                last[g->nodes[k]->in[i]->id] = k;

    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        const ir_tensor *in[64];
        ir_tensor out[64];
        void *storage[64];
        if (n->nin > 64 || n->nout > 64) {
            ir_node_errorf(d, n, "more than 64 inputs or outputs");
            goto done;
        }
        for (int i = 0; i < n->nin; i++) {
            in[i] = NULL;
            if (!n->in[i])
                continue;
            if (!have[n->in[i]->id]) {
                ir_node_errorf(d, n, "input '%s' has no value", n->in[i]->name);
                goto done;
            }
            in[i] = &slot[n->in[i]->id];
        }
        for (int i = 0; i < n->nout; i++)
            storage[i] = arena && n->out[i]->planned ? arena + n->out[i]->offset : NULL;
        if (ir_eval_node_into(n, in, out, storage, d) < 0)
            goto done;
        for (int i = 0; i < n->nout; i++) {
            int id = n->out[i]->id;
            slot[id] = out[i];
            have[id] = true;
            owned[id] = storage[i] == NULL;
        }
        for (int i = 0; hook && i < n->nout; i++)
            if (hook(ctx, n->out[i], &out[i], d) < 0)
                goto done;
        for (int i = 0; i < n->nin; i++) {
            const ir_value *v = n->in[i];
            if (v && last[v->id] == k && !is_out[v->id] && v->kind == IR_VAL_NODE) {
                if (owned[v->id])
                    free(slot[v->id].data);
                slot[v->id].data = NULL;
                owned[v->id] = have[v->id] = false;
            }
        }
        /* Outputs never read again are dead now too. */
        for (int i = 0; i < n->nout; i++) {
            int id = n->out[i]->id;
            if (!is_out[id] && last[id] <= k) {
                if (owned[id])
                    free(slot[id].data);
                slot[id].data = NULL;
                owned[id] = have[id] = false;
            }
        }
    }
    for (int i = 0; outputs && i < g->noutputs; i++) {
        const ir_value *v = g->outputs[i];
        if (!have[v->id]) {
            ir_errorf(d, "output '%s' was not computed", v->name);
            ir_tensors_free(outputs, i);
            goto done;
        }
        outputs[i] = slot[v->id];
        if (owned[v->id]) {
            /* The same value may be listed as two outputs: copy then. */
            owned[v->id] = false;
        } else {
            outputs[i].data = malloc(slot[v->id].nbytes ? slot[v->id].nbytes : 1);
            if (!outputs[i].data) {
                ir_errorf(d, "out of memory");
                ir_tensors_free(outputs, i);
                goto done;
            }
            if (slot[v->id].nbytes)
                memcpy(outputs[i].data, slot[v->id].data, slot[v->id].nbytes);
        }
    }
    rc = 0;
done:
    if (slot && owned)
        for (int i = 0; i < nv; i++)
            if (owned[i])
                free(slot[i].data);
    free(slot);
    free(owned);
    free(last);
    free(have);
    free(is_out);
    free(arena);
    return rc;
}
