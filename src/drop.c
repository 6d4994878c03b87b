/* drop.c: names of the drop reasons. */
#include "drop.h"

static const char *const drop_names[DROP_N_REASONS] = {
#define DROP_NAME_(name, desc) #name,
    DROP_REASONS(DROP_NAME_)
#undef DROP_NAME_
};

static const char *const drop_descs[DROP_N_REASONS] = {
#define DROP_DESC_(name, desc) desc,
    DROP_REASONS(DROP_DESC_)
#undef DROP_DESC_
};

const char *drop_reason_name(enum drop_reason r)
{
    return (unsigned)r < DROP_N_REASONS ? drop_names[r] : "unknown";
}

const char *drop_reason_desc(enum drop_reason r)
{
    return (unsigned)r < DROP_N_REASONS ? drop_descs[r] : "unknown";
}
