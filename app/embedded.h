/* embedded.h: files the flowswitch binary carries (the experiments'
 * scenarios, sim/experiments/NAME.ini, and the reference cost profile,
 * sim/profiles/reference.json), generated into the build by
 * scripts/embed. */
#ifndef FS_EMBEDDED_H
#define FS_EMBEDDED_H

#include <stddef.h>

struct fs_embedded {
    const char *name; /* the file's base name */
    const char *text;
};

extern const struct fs_embedded fs_embedded_files[];
extern const size_t fs_n_embedded_files;

/* The contents of the embedded file 'name', or NULL. */
const char *fs_embedded(const char *name);

#endif
