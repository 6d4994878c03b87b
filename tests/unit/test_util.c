/* test_util.c: src/util.h, the helpers every module shares. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* An empty array gets 'first' elements, then the capacity doubles until
 * the need fits; what was stored survives every move. */
static void test_grow_doubles_and_keeps(void **state)
{
    (void)state;
    uint32_t *a = NULL;
    size_t cap = 0;
    assert_int_equal(fs_grow((void **)&a, &cap, 1, sizeof *a, 16), 0);
    assert_non_null(a);
    assert_int_equal(cap, 16);
    for (uint32_t i = 0; i < 16; i++)
        a[i] = i * 2654435761u;

    /* Room already: nothing moves. */
    uint32_t *before = a;
    assert_int_equal(fs_grow((void **)&a, &cap, 16, sizeof *a, 16), 0);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 16);
    assert_int_equal(fs_grow((void **)&a, &cap, 0, sizeof *a, 16), 0);
    assert_int_equal(cap, 16);

    /* One more: twice the capacity ('first' no longer counts). */
    assert_int_equal(fs_grow((void **)&a, &cap, 17, sizeof *a, 1000), 0);
    assert_int_equal(cap, 32);
    for (uint32_t i = 0; i < 16; i++)
        assert_int_equal(a[i], i * 2654435761u);
    for (uint32_t i = 16; i < 32; i++)
        a[i] = i * 2654435761u;

    /* A need far beyond: doubled as often as it takes (32 -> 1024). */
    assert_int_equal(fs_grow((void **)&a, &cap, 1000, sizeof *a, 16), 0);
    assert_int_equal(cap, 1024);
    for (uint32_t i = 0; i < 32; i++)
        assert_int_equal(a[i], i * 2654435761u);
    a[1023] = 7; /* the whole capacity is usable (valgrind would see) */
    free(a);

    /* A first allocation too small for the need doubles as well. */
    char *s = NULL;
    cap = 0;
    assert_int_equal(fs_grow((void **)&s, &cap, 300, 1, 256), 0);
    assert_int_equal(cap, 512);
    memset(s, 'x', cap);
    free(s);
}

/* Every overflow is refused before anything changes: the array, its
 * contents and its capacity stay as they were. */
static void test_grow_overflow_leaves_unchanged(void **state)
{
    (void)state;
    uint64_t *a = NULL;
    size_t cap = 0;
    assert_int_equal(fs_grow((void **)&a, &cap, 8, sizeof *a, 8), 0);
    for (uint64_t i = 0; i < 8; i++)
        a[i] = ~i;
    uint64_t *before = a;

    /* cap * 2 * elem overflows a size_t: 2^61 elements of 8 bytes. */
    assert_int_equal(fs_grow((void **)&a, &cap, SIZE_MAX / sizeof *a + 1, sizeof *a, 8), -1);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 8);
    for (uint64_t i = 0; i < 8; i++)
        assert_true(a[i] == ~i);

    /* The doubling itself would overflow: no power-of-two multiple of 8
     * reaches SIZE_MAX. */
    assert_int_equal(fs_grow((void **)&a, &cap, SIZE_MAX, 1, 8), -1);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 8);

    /* A capacity whose double overflows (the array is not touched before
     * the check, so its real size does not matter here). */
    size_t huge = SIZE_MAX / 2 + 1;
    assert_int_equal(fs_grow((void **)&a, &huge, huge + 1, 1, 8), -1);
    assert_ptr_equal(a, before);
    assert_true(huge == SIZE_MAX / 2 + 1);
    for (uint64_t i = 0; i < 8; i++)
        assert_true(a[i] == ~i);
    free(a);

    /* From empty: still empty. */
    char *s = NULL;
    cap = 0;
    assert_int_equal(fs_grow((void **)&s, &cap, SIZE_MAX, 1, 16), -1);
    assert_null(s);
    assert_int_equal(cap, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_doubles_and_keeps),
        cmocka_unit_test(test_grow_overflow_leaves_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
