/* app.c - the bundled digits model inside a C program.
 *
 * The model is compiled ahead of time, and the app includes the generated
 * header and links the model's .so (which carries icc's runtime too):
 *
 *     icc examples/digits/digits.onnx --shape=image:8x1x8x8 --name=digits -o build/digits.so
 *     cc -O2 -Iinclude -Ibuild examples/digits/app.c build/digits.so -Wl,-rpath,'$ORIGIN' \
 *        -o build/digits_app
 *     build/digits_app examples/digits
 *
 * It classifies the 360 held-out test images (digits_test.f32, written by
 * train.py with their labels in digits_test.u8) eight at a time, prints
 * the first predictions next to the true labels, then the accuracy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits.h"

#define NTEST 360
#define BATCH 8   /* the batch the model was compiled for (--shape=image:8x1x8x8) */
#define PIXELS 64

/* Reads exactly n bytes of path into buf; 0 on success. */
static int read_file(const char *dir, const char *name, void *buf, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    if (got != n) {
        fprintf(stderr, "%s: expected %zu bytes, read %zu\n", path, n, got);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "examples/digits";
    static float images[NTEST * PIXELS], probs[BATCH * 10];
    static unsigned char labels[NTEST];
    if (read_file(dir, "digits_test.f32", images, sizeof images) ||
        read_file(dir, "digits_test.u8", labels, sizeof labels))
        return 1;

    icc_model *m;
    icc_context *ctx;
    if (icc_model_from_desc(&digits_model, &m) != ICC_OK) {
        fprintf(stderr, "%s\n", icc_last_error());
        return 1;
    }
    if (icc_context_create(m, NULL, &ctx) != ICC_OK) {
        fprintf(stderr, "%s\n", icc_last_error());
        icc_model_close(m);
        return 1;
    }
    int correct = 0;
    for (int b = 0; b < NTEST / BATCH; b++) {
        if (digits_run(ctx, images + (size_t)b * BATCH * PIXELS, probs) != ICC_OK) {
            fprintf(stderr, "%s\n", icc_context_error(ctx));
            break;
        }
        if (b == 0)
            printf("predicted: ");
        for (int i = 0; i < BATCH; i++) {
            int best = 0;
            for (int c = 1; c < 10; c++)
                if (probs[i * 10 + c] > probs[i * 10 + best])
                    best = c;
            correct += best == labels[b * BATCH + i];
            if (b == 0)
                printf("%d ", best);
        }
        if (b == 0) {
            printf("\ntrue:      ");
            for (int i = 0; i < BATCH; i++)
                printf("%d ", labels[i]);
            printf("\n");
        }
    }
    printf("accuracy: %d/%d = %.2f%% on the held-out images\n", correct, NTEST, 100.0 * correct / NTEST);
    icc_context_destroy(ctx);
    icc_model_close(m);
    return correct > 0 ? 0 : 1;
}
