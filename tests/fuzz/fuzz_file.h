/* fuzz_file.h: for the harnesses whose target reads a file by its path
 * (fuzz_config, fuzz_pcap): the input goes into one memory file, reused
 * from run to run, named by its /proc path. Header-only. */
#ifndef FS_FUZZ_FILE_H
#define FS_FUZZ_FILE_H

#define _GNU_SOURCE /* memfd_create */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Makes data[0..size) the file's contents; returns its path. Aborts if the
 * memory file cannot be made or written (no input is at fault then). */
static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz-input", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    return path;
}

#endif
