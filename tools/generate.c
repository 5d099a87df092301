/* generate.c - `icc bench --generate=N`: the speed of an autoregressive
 * decoder exported in the static-KV-cache form, as a serving loop runs it.
 *
 * A generation feeds a prompt of --prompt-len tokens (one call when the
 * model, or the --prefill model, takes that many; else token by token),
 * takes the first new token greedily from the last logits (time to first
 * token, TTFT), then runs N decode steps of one token each, feeding every
 * present_* output back as the next step's past_* input (two buffers per
 * cache tensor, swapped, so nothing is copied) and reports the time per
 * output token (TPOT) and tokens per second. Which input is what comes
 * from names (icc_bench_gen_io; docs/performance.md has the contract), or
 * from --gen-io.
 */
#define _GNU_SOURCE
#include "tools/bench.h"
#include "tools/fail.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_RANK = 16 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int64_t icc_bench_gen_prompt_token(int64_t i, int64_t vocab)
{
    return vocab > 0 ? (i * 7919 + 13) % vocab : 0;
}

/* ---- the roles ------------------------------------------------------------------ */

static bool is_int(int32_t t) { return t == ICC_I64 || t == ICC_I32; }

/* The value of key=... in spec (a comma-separated list), copied to out;
 * false when absent. */
static bool spec_get(const char *spec, const char *key, char *out, size_t n)
{
    size_t k = strlen(key);
    for (const char *s = spec; s && *s;) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len > k && !strncmp(s, key, k) && s[k] == '=') {
            snprintf(out, n, "%.*s", (int)(len - k - 1), s + k + 1);
            return true;
        }
        s = end ? end + 1 : s + len;
    }
    return false;
}

/* The input or output named by spec's key, or the first of names found. */
static int find_role(const icc_tensor_desc *t, int n, const char *spec, const char *key, const char *const *names,
                     char *err, size_t errlen)
{
    char want[256];
    if (spec_get(spec, key, want, sizeof want)) {
        for (int i = 0; i < n; i++)
            if (!strcmp(t[i].name, want))
                return i;
        snprintf(err, errlen, "--gen-io: %s=%s: the model has no such %s", key, want,
                 !strcmp(key, "logits") ? "output" : "input");
        return -2;
    }
    for (const char *const *nm = names; *nm; nm++)
        for (int i = 0; i < n; i++)
            if (!strcmp(t[i].name, *nm))
                return i;
    return -1;
}

static bool has_prefix(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

int icc_bench_gen_io(const icc_model_desc *d, const char *spec, icc_gen_io *g, char *err, size_t errlen)
{
    static const char *const tok_names[] = {"input_ids", "tokens", "token_ids", "ids", NULL};
    static const char *const pos_names[] = {"position_ids", "positions", "position", "cache_position", "pos", NULL};
    static const char *const mask_names[] = {"attention_mask", "mask", NULL};
    static const char *const logit_names[] = {"logits", NULL};
    memset(g, 0, sizeof *g);
    err[0] = 0;
    for (const char *s = spec; s && *s;) {   /* every key must be known */
        static const char *const keys[] = {"tokens", "position", "mask", "logits", "past", "present", NULL};
        const char *const *k = keys;
        while (*k && !(has_prefix(s, *k) && s[strlen(*k)] == '='))
            k++;
        if (!*k) {
            snprintf(err, errlen, "--gen-io=%s: expected ROLE=NAME items joined by ',' (roles: tokens, position, "
                     "mask, logits, past, present)", spec);
            return -1;
        }
        const char *end = strchr(s, ',');
        s = end ? end + 1 : s + strlen(s);
    }
    if ((g->tokens = find_role(d->inputs, d->ninputs, spec, "tokens", tok_names, err, errlen)) < -1 ||
        (g->position = find_role(d->inputs, d->ninputs, spec, "position", pos_names, err, errlen)) < -1 ||
        (g->mask = find_role(d->inputs, d->ninputs, spec, "mask", mask_names, err, errlen)) < -1 ||
        (g->logits = find_role(d->outputs, d->noutputs, spec, "logits", logit_names, err, errlen)) < -1)
        return -1;
    char past_p[256] = "", present_p[256] = "present";
    bool past_given = spec_get(spec, "past", past_p, sizeof past_p);
    spec_get(spec, "present", present_p, sizeof present_p);
    for (int i = 0; i < d->ninputs; i++) {
        const char *nm = d->inputs[i].name;
        if (i == g->tokens || i == g->position || i == g->mask)
            continue;
        if (past_given ? has_prefix(nm, past_p) : strstr(nm, "past") != NULL) {
            if (g->npast == ICC_GEN_MAX_KV) {
                snprintf(err, errlen, "more than %d past inputs", ICC_GEN_MAX_KV);
                return -1;
            }
            g->past[g->npast++] = i;
            continue;
        }
        snprintf(err, errlen, "input '%s' has no role in --generate: name it input_ids, position_ids, "
                 "attention_mask or past_*, or map it with --gen-io", nm);
        return -1;
    }
    int np = 0;
    for (int o = 0; o < d->noutputs; o++) {
        if (o == g->logits || !has_prefix(d->outputs[o].name, present_p))
            continue;
        if (np == g->npast) {
            snprintf(err, errlen, "more %s* outputs than past inputs (%d)", present_p, g->npast);
            return -1;
        }
        g->present[np++] = o;
    }
    if (g->logits < 0)   /* the first output that is not a cache */
        for (int o = 0; o < d->noutputs && g->logits < 0; o++)
            if (!has_prefix(d->outputs[o].name, present_p))
                g->logits = o;
    if (g->tokens < 0) {
        snprintf(err, errlen, "no token input: name it input_ids (or tokens), or say --gen-io=tokens=NAME");
        return -1;
    }
    if (g->logits < 0) {
        snprintf(err, errlen, "no logits output: name it logits, or say --gen-io=logits=NAME");
        return -1;
    }
    if (!g->npast || np != g->npast) {
        snprintf(err, errlen, "%d past inputs and %d %s* outputs: a static-KV decoder pairs each past_* input "
                 "with a present_* output", g->npast, np, present_p);
        return -1;
    }
    if (g->position < 0 && g->mask < 0) {
        snprintf(err, errlen, "no position_ids or attention_mask input: the model cannot know where the new "
                 "tokens go in the cache");
        return -1;
    }
    const icc_tensor_desc *tk = &d->inputs[g->tokens], *lg = &d->outputs[g->logits];
    if (!is_int(tk->dtype) || tk->rank < 1 || tk->rank > 2 || (tk->rank == 2 && tk->dims[0] > 1)) {
        snprintf(err, errlen, "token input '%s' must be i64 or i32 [1, seq] or [seq]", tk->name);
        return -1;
    }
    g->seq = tk->dims[tk->rank - 1];
    if (lg->rank < 1 || lg->dims[lg->rank - 1] < 1 || (lg->dtype != ICC_F32)) {
        snprintf(err, errlen, "logits output '%s' must be f32 with a fixed vocabulary as its last dim", lg->name);
        return -1;
    }
    g->vocab = lg->dims[lg->rank - 1];
    for (int k = 0; k < g->npast; k++) {
        const icc_tensor_desc *p = &d->inputs[g->past[k]], *q = &d->outputs[g->present[k]];
        bool same = p->rank == q->rank && p->dtype == q->dtype && p->rank >= 2;
        for (int j = 0; same && j < p->rank; j++)
            same = p->dims[j] == q->dims[j] && p->dims[j] >= 0;
        if (!same) {
            snprintf(err, errlen, "past input '%s' and output '%s' differ in shape or dtype, or have a symbolic "
                     "dim (a static cache has a fixed shape)", p->name, q->name);
            return -1;
        }
        int64_t len = p->dims[p->rank - 2];
        if (k && len != g->max_len) {
            snprintf(err, errlen, "past inputs disagree on the cache length (dim -2): %lld and %lld",
                     (long long)g->max_len, (long long)len);
            return -1;
        }
        g->max_len = len;
    }
    if (g->position >= 0) {
        const icc_tensor_desc *p = &d->inputs[g->position];
        if (!is_int(p->dtype) || p->rank < 1 || p->rank > 2) {
            snprintf(err, errlen, "position input '%s' must be i64 or i32 [1, seq], [seq] or [1]", p->name);
            return -1;
        }
    }
    if (g->mask >= 0) {
        const icc_tensor_desc *p = &d->inputs[g->mask];
        if (p->rank < 1 || p->rank > 2 || p->dims[p->rank - 1] != g->max_len) {
            snprintf(err, errlen, "attention mask '%s' must be [1, %lld] (a flag per cache slot)", p->name,
                     (long long)g->max_len);
            return -1;
        }
    }
    return 0;
}

/* ---- running -------------------------------------------------------------------- */

/* One model's side of the loop: its context, buffers and roles. */
typedef struct gen_side {
    icc_model *m;
    const icc_model_desc *d;
    icc_gen_io io;
    icc_context *ctx;
    int64_t dims[256][MAX_RANK];
    const int64_t *dims_p[256];
    const void *in[256];
    void *out[256];
    void *small[256];          /* token/position/mask buffers, owned */
    float *logits;             /* owned */
    int64_t logits_n;
} gen_side;

static void side_free(gen_side *s)
{
    for (int i = 0; i < 256; i++)
        free(s->small[i]);
    free(s->logits);
    icc_context_destroy(s->ctx);
}

static void put_int(void *p, int32_t t, int64_t i, int64_t v)
{
    if (t == ICC_I64)
        ((int64_t *)p)[i] = v;
    else
        ((int32_t *)p)[i] = (int32_t)v;
}

static void put_flag(void *p, int32_t t, int64_t i, bool v)
{
    switch (t) {
    case ICC_F32: ((float *)p)[i] = v ? 1.0f : 0.0f; break;
    case ICC_I64: ((int64_t *)p)[i] = v; break;
    case ICC_I32: ((int32_t *)p)[i] = v; break;
    default: ((uint8_t *)p)[i] = v;
    }
}

/* Fixes the tokens' seq (and any symbol the small inputs share with it)
 * at n, and allocates those inputs and the logits. */
static int side_init(gen_side *s, icc_model *m, const icc_gen_opts *o, int64_t seq, int threads)
{
    char err[400];
    memset(s, 0, sizeof *s);
    s->m = m;
    s->d = icc_model_describe(m);
    if (s->d->ninputs > 256 || s->d->noutputs > 256)
        return icc_fail("%s: more than 256 inputs or outputs", o->model);
    if (icc_bench_gen_io(s->d, o->spec, &s->io, err, sizeof err) != 0)
        return icc_fail("%s: --generate: %s", o->model, err);
    if (icc_context_create(m, NULL, &s->ctx) != ICC_OK ||
        (threads && icc_context_set_threads(s->ctx, threads) != ICC_OK))
        return icc_fail("%s", s->ctx ? icc_context_error(s->ctx) : icc_last_error());
    for (int i = 0; i < s->d->ninputs; i++) {
        const icc_tensor_desc *t = &s->d->inputs[i];
        if (t->rank > MAX_RANK)
            return icc_fail("%s: input '%s' has rank %d (at most %d here)", o->model, t->name, t->rank, MAX_RANK);
        int64_t n = 1;
        for (int k = 0; k < t->rank; k++) {
            int64_t v = t->dims[k];
            /* symbolic: the seq dim of tokens and positions, else (batch) 1 */
            if (v < 0)
                v = (i == s->io.tokens || i == s->io.position) && k == t->rank - 1 ? seq : 1;
            s->dims[i][k] = v;
            n *= v;
        }
        s->dims_p[i] = s->dims[i];
        if (i == s->io.tokens || i == s->io.position || i == s->io.mask) {
            if (!(s->small[i] = calloc((size_t)n + 1, icc_dtype_size(t->dtype))))
                return icc_fail("out of memory");
            s->in[i] = s->small[i];
        }
    }
    int64_t od[64];
    if (icc_output_dims(m, s->dims_p, s->io.logits, od) != ICC_OK)
        return icc_fail("%s: %s", o->model, icc_last_error());
    s->logits_n = 1;
    for (int k = 0; k < s->d->outputs[s->io.logits].rank; k++)
        s->logits_n *= od[k];
    if (!(s->logits = malloc(sizeof *s->logits * (size_t)s->logits_n + 64)))
        return icc_fail("out of memory for the logits");
    s->out[s->io.logits] = s->logits;
    return 0;
}

/* Positions and mask for tokens at [pos, pos + n), and the tokens. */
static void side_feed(gen_side *s, const int64_t *tokens, int64_t n, int64_t pos)
{
    const icc_model_desc *d = s->d;
    for (int64_t i = 0; i < n; i++)
        put_int(s->small[s->io.tokens], d->inputs[s->io.tokens].dtype, i, tokens[i]);
    if (s->io.position >= 0) {
        const icc_tensor_desc *t = &d->inputs[s->io.position];
        int64_t len = s->dims[s->io.position][t->rank - 1];
        for (int64_t i = 0; i < len; i++)   /* [seq]: each token's; [1]: the first's */
            put_int(s->small[s->io.position], t->dtype, i, pos + i);
    }
    if (s->io.mask >= 0) {
        const icc_tensor_desc *t = &d->inputs[s->io.mask];
        for (int64_t j = 0; j < s->io.max_len; j++)
            put_flag(s->small[s->io.mask], t->dtype, j, j < pos + n);
    }
}

/* The greedy next token: argmax of the last row of the logits. */
static int64_t argmax_last(const gen_side *s)
{
    int64_t v = s->io.vocab, base = s->logits_n - v, best = 0;
    for (int64_t j = 1; j < v; j++)
        if (s->logits[base + j] > s->logits[base + best])
            best = j;
    return best;
}

/* One call of side s on the cache `from` (past), writing `to` (present). */
static int side_run(gen_side *s, void **from, void **to)
{
    for (int k = 0; k < s->io.npast; k++) {
        s->in[s->io.past[k]] = from[k];
        s->out[s->io.present[k]] = to[k];
    }
    if (icc_run(s->ctx, s->in, s->dims_p, s->out) != ICC_OK)
        return icc_fail("%s", icc_context_error(s->ctx));
    return 0;
}

typedef struct gen_result {
    double ttft_ms;
    int64_t prefill_calls;
    int64_t tokens[4096];      /* the first new token, then one per decode step */
    int64_t ntokens;
} gen_result;

/* One generation: prompt, first token, N steps; step times (ms) to tpot. */
static int generate_once(gen_side *dec, gen_side *pre, const icc_gen_opts *o, void **cache[2], int64_t cache_bytes[],
                         double *tpot, gen_result *r)
{
    int npast = dec->io.npast;
    for (int k = 0; k < npast; k++)
        memset(cache[0][k], 0, (size_t)cache_bytes[k]);
    int64_t *prompt = malloc(sizeof *prompt * (size_t)o->prompt_len);
    if (!prompt)
        return icc_fail("out of memory");
    for (int64_t i = 0; i < o->prompt_len; i++)
        prompt[i] = icc_bench_gen_prompt_token(i, dec->io.vocab);
    int cur = 0, rc = 0;
    double t0 = now_s();
    gen_side *p = pre ? pre : dec;
    /* the prompt in calls of the prefill side's seq (the whole prompt, or one token) */
    int64_t chunk = p->dims[p->io.tokens][p->d->inputs[p->io.tokens].rank - 1];
    r->prefill_calls = 0;
    for (int64_t at = 0; at < o->prompt_len && rc == 0; at += chunk) {
        side_feed(p, prompt + at, chunk, at);
        rc = side_run(p, cache[cur], cache[1 - cur]);
        cur = 1 - cur;
        r->prefill_calls++;
    }
    free(prompt);
    if (rc)
        return rc;
    int64_t tok = argmax_last(p);
    r->ttft_ms = (now_s() - t0) * 1e3;
    r->ntokens = 0;
    r->tokens[r->ntokens++] = tok;
    for (int64_t step = 0; step < o->new_tokens; step++) {
        double s0 = now_s();
        side_feed(dec, &tok, 1, o->prompt_len + step);
        if (side_run(dec, cache[cur], cache[1 - cur]) != 0)
            return 1;
        cur = 1 - cur;
        tok = argmax_last(dec);
        tpot[step] = (now_s() - s0) * 1e3;
        if (r->ntokens < (int64_t)(sizeof r->tokens / sizeof r->tokens[0]))
            r->tokens[r->ntokens++] = tok;
    }
    return 0;
}

int icc_bench_generate(icc_model *m, icc_model *pre_m, const icc_gen_opts *o)
{
    gen_side dec, pre;
    int rc = 1;
    memset(&pre, 0, sizeof pre);
    memset(&dec, 0, sizeof dec);
    const icc_gen_io *io = &dec.io;
    void **cache[2] = {NULL, NULL};
    int64_t *cache_bytes = NULL;
    double *tpot = NULL, *ttft = NULL;
    gen_result *res = malloc(sizeof *res);
    if (side_init(&dec, m, o, 1, (int)o->threads) != 0)
        goto out;
    if (!res)
        goto oom;
    /* the decode model takes one token per call */
    if (io->seq != 1 && io->seq != -1) {
        icc_fail("%s: --generate: the token input takes %lld tokens a call; decoding needs 1 (or a symbolic seq); "
                 "give a model of seq 1, and this one as --prefill", o->model, (long long)io->seq);
        goto out;
    }
    if (o->prompt_len + o->new_tokens > io->max_len) {
        icc_fail("%s: --generate: a prompt of %lld and %lld new tokens do not fit the cache of %lld", o->model,
                 (long long)o->prompt_len, (long long)o->new_tokens, (long long)io->max_len);
        goto out;
    }
    if (pre_m) {
        if (side_init(&pre, pre_m, o, o->prompt_len, (int)o->threads) != 0)
            goto out;
        int64_t ps = pre.io.seq;
        const icc_model_desc *pd = pre.d;
        bool same = pre.io.npast == io->npast && pre.io.vocab == io->vocab && (ps == o->prompt_len || ps == -1);
        for (int k = 0; same && k < io->npast; k++) {
            const icc_tensor_desc *a = &dec.d->inputs[io->past[k]], *b = &pd->inputs[pre.io.past[k]];
            same = a->rank == b->rank && a->dtype == b->dtype;
            for (int j = 0; same && j < a->rank; j++)
                same = a->dims[j] == b->dims[j];
        }
        if (!same) {
            icc_fail("%s: --prefill: its caches, vocabulary or seq (%lld, the prompt is %lld) do not match the "
                     "decode model's", o->model, (long long)ps, (long long)o->prompt_len);
            goto out;
        }
    } else if (io->seq == -1) {
        /* one model with a symbolic seq: prefill in one call on a second side */
        side_free(&dec);
        memset(&dec, 0, sizeof dec);
        if (side_init(&pre, m, o, o->prompt_len, (int)o->threads) != 0 || side_init(&dec, m, o, 1, (int)o->threads) != 0)
            goto out;
        pre_m = m;
    }
    cache[0] = calloc((size_t)io->npast, sizeof *cache[0]);
    cache[1] = calloc((size_t)io->npast, sizeof *cache[1]);
    cache_bytes = calloc((size_t)io->npast, sizeof *cache_bytes);
    int64_t cap = o->runs + 16;   /* grown while --time lasts */
    tpot = malloc(sizeof *tpot * (size_t)(o->new_tokens + 1) * (size_t)cap);
    ttft = malloc(sizeof *ttft * (size_t)cap);
    if (!cache[0] || !cache[1] || !cache_bytes || !tpot || !ttft)
        goto oom;
    for (int k = 0; k < io->npast; k++) {
        const icc_tensor_desc *t = &dec.d->inputs[io->past[k]];
        int64_t n = (int64_t)icc_dtype_size(t->dtype);
        for (int j = 0; j < t->rank; j++)
            n *= t->dims[j];
        cache_bytes[k] = n;
        if (!(cache[0][k] = aligned_alloc(64, (size_t)(n + 63) / 64 * 64)) ||
            !(cache[1][k] = aligned_alloc(64, (size_t)(n + 63) / 64 * 64)))
            goto oom;
    }
    gen_side *ps = pre_m ? &pre : NULL;
    double end = now_s() + o->warmup_s;
    while (o->warmup_s > 0 && now_s() < end)   /* whole generations: clocks ramp, caches fill */
        if (generate_once(&dec, ps, o, cache, cache_bytes, tpot, res) != 0)
            goto out;
    int64_t gens = 0;
    double decode_s = 0, t_end = now_s() + o->time_s;
    do {
        if (gens == cap) {
            double *a = realloc(tpot, sizeof *tpot * (size_t)(o->new_tokens + 1) * (size_t)(cap * 2));
            double *b = a ? realloc(ttft, sizeof *ttft * (size_t)(cap * 2)) : NULL;
            tpot = a ? a : tpot;
            ttft = b ? b : ttft;
            if (!b)
                goto oom;
            cap *= 2;
        }
        if (generate_once(&dec, ps, o, cache, cache_bytes, tpot + gens * o->new_tokens, res) != 0)
            goto out;
        ttft[gens] = res->ttft_ms;
        for (int64_t i = 0; i < o->new_tokens; i++)
            decode_s += tpot[gens * o->new_tokens + i] * 1e-3;
        gens++;
    } while (gens < o->runs || (now_s() < t_end && gens < 100000));
    icc_bench_stats ts, ds;
    icc_bench_stats_of(ttft, gens, &ts);
    icc_bench_stats_of(tpot, gens * o->new_tokens, &ds);
    double tps = decode_s > 0 ? (double)(gens * o->new_tokens) / decode_s : 0;
    int threads = icc_context_threads(dec.ctx);
    if (o->json) {
        printf("{\"model\": \"");
        for (const char *c = o->model; *c; c++) {
            if (*c == '"' || *c == '\\')
                putchar('\\');
            putchar((unsigned char)*c < 0x20 ? '?' : *c);
        }
        printf("\", \"scenario\": \"generate\", \"threads\": %d, \"prompt_len\": %lld, \"new_tokens\": %lld, "
               "\"max_len\": %lld, \"vocab\": %lld, \"generations\": %lld, \"prefill_calls\": %lld, "
               "\"decode_steps\": %lld, \"ttft_ms\": {\"p50\": %.6f, \"p90\": %.6f, \"mean\": %.6f}, "
               "\"tpot_ms\": {\"p50\": %.6f, \"p90\": %.6f, \"mean\": %.6f}, \"tokens_per_s\": %.3f, \"tokens\": [",
               threads, (long long)o->prompt_len, (long long)o->new_tokens, (long long)io->max_len,
               (long long)io->vocab, (long long)gens, (long long)res->prefill_calls, (long long)o->new_tokens,
               ts.p50, ts.p90, ts.mean, ds.p50, ds.p90, ds.mean, tps);
        for (int64_t i = 0; i < res->ntokens; i++)
            printf("%s%lld", i ? ", " : "", (long long)res->tokens[i]);
        printf("]}\n");
    } else {
        printf("generate: %s, threads %d; prompt %lld tokens in %lld call%s, then %lld decode steps (cache %lld, "
               "vocabulary %lld); %lld generation%s\n", o->model, threads, (long long)o->prompt_len,
               (long long)res->prefill_calls, res->prefill_calls == 1 ? "" : "s", (long long)o->new_tokens,
               (long long)io->max_len, (long long)io->vocab, (long long)gens, gens == 1 ? "" : "s");
        printf("TTFT p50 %.3f ms, p90 %.3f ms; TPOT p50 %.3f ms, p90 %.3f ms; %.1f tokens/s decoding\n", ts.p50,
               ts.p90, ds.p50, ds.p90, tps);
    }
    rc = 0;
    goto out;
oom:
    icc_fail("out of memory");
out:
    for (int c = 0; c < 2; c++)
        for (int k = 0; cache[c] && k < io->npast; k++)
            free(cache[c][k]);
    free(cache[0]);
    free(cache[1]);
    free(cache_bytes);
    free(tpot);
    free(ttft);
    free(res);
    side_free(&dec);
    side_free(&pre);
    return rc;
}
