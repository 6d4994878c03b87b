/* ctl-thread.c: the control plane's own threads. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "ctl-thread.h"

#include <signal.h>
#include <string.h>

#include "util.h"

int ctl_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg, const char *name,
                     char *err, size_t errlen)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(thread, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        fs_errf(err, errlen, "cannot create thread %s: %s", name, strerror(rc));
        return -1;
    }
    pthread_setname_np(*thread, name); /* cosmetic: a failure changes nothing */
    return 0;
}
