/* check_main.h - the main() every unit-test file shares: runs one Check
 * suite (fork mode comes from CK_FORK, set by ctest) and exits non-zero
 * if any test failed. */
#ifndef ICC_CHECK_MAIN_H
#define ICC_CHECK_MAIN_H

#include <check.h>

static inline int icc_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

#endif
