/* experiments.h: `flowswitch sim experiment` (see experiments.c). */
#ifndef FS_EXPERIMENTS_H
#define FS_EXPERIMENTS_H

/* argv[0] is "experiment". Returns the exit status. */
int fs_cmd_sim_experiment(int argc, char **argv);

#endif
