/* calibcmd.h: `flowswitch sim calibrate` (see calibcmd.c). */
#ifndef FS_CALIBCMD_H
#define FS_CALIBCMD_H

/* argv[0] is "calibrate". Returns the exit status. */
int fs_cmd_sim_calibrate(int argc, char **argv);

#endif
