/* simcmd.h: the `flowswitch sim` command (simcmd.c). */
#ifndef FS_SIMCMD_H
#define FS_SIMCMD_H

/* `flowswitch sim ...` (argv[0] is "sim"). Returns the exit status. */
int fs_cmd_sim(int argc, char **argv);

#endif
