/* test_npy.c - .npy reading and writing: round trips of every dtype the
 * format can hold, and rejection of malformed files before allocation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "runtime/npy.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/icc_npy_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void write_raw(const char *name, const void *bytes, size_t n, char *path)
{
    sprintf(path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

/* A v1.0 file with the given header dict and data size. */
static size_t make_npy(unsigned char *buf, const char *dict, size_t data_bytes)
{
    size_t n = strlen(dict);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(n & 0xff);
    buf[9] = (unsigned char)(n >> 8);
    memcpy(buf + 10, dict, n);
    memset(buf + 10 + n, 0x3f, data_bytes);
    return 10 + n + data_bytes;
}

START_TEST(roundtrip_every_dtype)
{
    for (int dt = 1; dt < IR_DTYPE_COUNT; dt++) {
        int64_t dims[3] = {2, 3, 4};
        ir_tensor t = {0}, r = {0};
        icc_diag d = {{0}};
        ck_assert_int_eq(ir_tensor_init(&t, (ir_dtype)dt, 3, dims, &d), 0);
        t.data = malloc(t.nbytes);
        for (size_t i = 0; i < t.nbytes; i++)
            ((unsigned char *)t.data)[i] = (unsigned char)(i * 7 + 1);
        if (dt == IR_BOOL)
            memset(t.data, 1, t.nbytes);
        char path[128];
        snprintf(path, sizeof path, "%s/%s.npy", dir, ir_dtype_name((ir_dtype)dt));
        ck_assert_msg(icc_npy_write(path, &t, &d) == 0, "%s", d.msg);
        ck_assert_msg(icc_npy_read(path, &r, &d) == 0, "%s", d.msg);
        ck_assert_int_eq(r.dtype, dt);
        ck_assert_int_eq(r.rank, 3);
        ck_assert(r.dims[0] == 2 && r.dims[1] == 3 && r.dims[2] == 4);
        ck_assert_int_eq(memcmp(r.data, t.data, t.nbytes), 0);
        free(t.data);
        free(r.data);
    }
}
END_TEST

START_TEST(scalar_and_empty)
{
    icc_diag d = {{0}};
    ir_tensor t = {0}, r = {0};
    float v = 2.5f;
    ck_assert_int_eq(ir_tensor_init(&t, IR_F32, 0, NULL, &d), 0);
    t.data = &v;
    char path[128];
    snprintf(path, sizeof path, "%s/s.npy", dir);
    ck_assert_int_eq(icc_npy_write(path, &t, &d), 0);
    ck_assert_int_eq(icc_npy_read(path, &r, &d), 0);
    ck_assert_int_eq(r.rank, 0);
    ck_assert(*(float *)r.data == 2.5f);
    free(r.data);
    int64_t z[2] = {0, 5};
    ck_assert_int_eq(ir_tensor_init(&t, IR_I64, 2, z, &d), 0);
    t.data = NULL;
    ck_assert_int_eq(icc_npy_write(path, &t, &d), 0);
    ck_assert_int_eq(icc_npy_read(path, &r, &d), 0);
    ck_assert(r.rank == 2 && r.dims[0] == 0 && r.dims[1] == 5 && r.numel == 0);
    free(r.data);
}
END_TEST

START_TEST(malformed_files_rejected)
{
    static const struct {
        const char *dict;
        size_t data;
        const char *err;
    } cases[] = {
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8, "Fortran"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, "unsupported dtype"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16, "unsupported dtype"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8, "data bytes"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 8, "overflows"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1024), }", 8, "too large"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4, "rank"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 4, "shape"},
        {"{'fortran_order': False, 'shape': (1,), }", 4, "descr"},
    };
    unsigned char buf[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[128];
        size_t n = make_npy(buf, cases[i].dict, cases[i].data);
        write_raw("bad.npy", buf, n, path);
        ir_tensor r = {0};
        icc_diag d = {{0}};
        ck_assert_int_eq(icc_npy_read(path, &r, &d), -1);
        ck_assert_msg(strstr(d.msg, cases[i].err) && strstr(d.msg, "bad.npy"), "case %zu: %s", i, d.msg);
        ck_assert_ptr_null(r.data);
    }
    char path[128];
    write_raw("short.npy", "\x93NUM", 4, path);
    ir_tensor r = {0};
    icc_diag d = {{0}};
    ck_assert_int_eq(icc_npy_read(path, &r, &d), -1);
    ck_assert_ptr_nonnull(strstr(d.msg, "not a .npy file"));
}
END_TEST

START_TEST(failed_write_leaves_nothing)
{
    icc_diag d = {{0}};
    ir_tensor t = {0};
    int64_t dims[1] = {4};
    ir_tensor_init(&t, IR_F32, 1, dims, &d);
    float v[4] = {0};
    t.data = v;
    char path[128];
    snprintf(path, sizeof path, "%s/no_such_dir/x.npy", dir);
    ck_assert_int_eq(icc_npy_write(path, &t, &d), -1);
    ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("npy");
    TCase *tc = tcase_create("npy");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, roundtrip_every_dtype);
    tcase_add_test(tc, scalar_and_empty);
    tcase_add_test(tc, malformed_files_rejected);
    tcase_add_test(tc, failed_write_leaves_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
