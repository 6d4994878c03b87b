/* sweep.h: `flowswitch sim --sweep` (sweep.c). */
#ifndef FS_SWEEP_H
#define FS_SWEEP_H

#include <stddef.h>

/* Simulates 'scenario' with the overrides sets[0..n_sets) once for each
 * combination of the swept settings specs[0..n_specs) (one or two,
 * "SECTION.KEY=V1,V2,..." with ';' instead of ',' when a value holds
 * commas), and writes the table, plots and page (exp.h) into out_dir;
 * command is the command line, for the page. The points run n_jobs at a
 * time in child processes (jobs.h); the page does not depend on n_jobs.
 * Every point's scenario is loaded first: one the scenario refuses is a
 * scenario error. Returns the exit status: 0, 1 for a usage or scenario
 * error (a point's included), 2 when a point's run failed (lost a packet,
 * found a violation). */
int fs_sim_sweep(const char *scenario, const char *const *sets, size_t n_sets,
                 const char *const *specs, size_t n_specs, const char *out_dir,
                 const char *command, unsigned n_jobs);

#endif
