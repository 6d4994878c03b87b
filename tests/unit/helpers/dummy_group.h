/* dummy_group.h: cmocka group setup/teardown for the tests that open dummy
 * ports: register the dummy backend once, unregister every backend at the
 * end. Header-only (static functions), one copy per test binary. */
#ifndef FS_TEST_DUMMY_GROUP_H
#define FS_TEST_DUMMY_GROUP_H

#include "backends/dummy/netdev-dummy.h"
#include "netdev.h"

static int dummy_group_setup(void **state)
{
    (void)state;
    netdev_dummy_register();
    return 0;
}

static int dummy_group_teardown(void **state)
{
    (void)state;
    netdev_unregister_all();
    return 0;
}

#endif
