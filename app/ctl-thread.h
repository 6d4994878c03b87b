/* ctl-thread.h: the control plane's own threads.
 *
 * The control socket server and the keep-alive monitor run on threads of
 * their own, never on a PMD. They start with every signal blocked, so a
 * signal (SIGINT, SIGTERM, SIGHUP) reaches the thread that waits for it
 * and never interrupts them, and with a name that ps and top show. */
#ifndef FS_CTL_THREAD_H
#define FS_CTL_THREAD_H

#include <pthread.h>
#include <stddef.h>

/* Starts fn(arg) on a new thread named 'name' (at most 15 bytes) with
 * every signal blocked. Returns 0, or -1 with the reason in err. */
int ctl_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg, const char *name,
                     char *err, size_t errlen);

#endif
