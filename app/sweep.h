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
 * found a violation). With emit_dir, nothing runs: emit_dir/commands.sh
 * gets one shell command per point (for GNU parallel or a job array) and
 * emit_dir/sweep.json what fs_sim_merge() needs. */
int fs_sim_sweep(const char *scenario, const char *const *sets, size_t n_sets,
                 const char *const *specs, size_t n_specs, const char *out_dir,
                 const char *command, unsigned n_jobs, const char *emit_dir);

/* `flowswitch sim --point-out FILE`: one point of an emitted sweep,
 * its figures written to FILE (JSON). Returns the exit status: 0, 1 for a
 * scenario error, 2 when the run failed. */
int fs_sim_point(const char *scenario, const char *const *sets, size_t n_sets,
                 const char *out);

/* `flowswitch sim merge DIR`: the page of a sweep emitted into DIR from
 * its points' files, the same bytes a direct run writes. Returns 0, 1
 * (a missing or bad file), 2 (the page could not be written). */
int fs_sim_merge(const char *dir);

#endif
