/*
 * commands.h: the subcommands of `kd`. Each takes the arguments after its
 * name (argv[0] is the subcommand's name) and returns the process exit code.
 */
#ifndef KD_TOOL_COMMANDS_H
#define KD_TOOL_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>

#include "kd/kd.h"

int kd_cmd_schema(int argc, char **argv);
int kd_cmd_version(int argc, char **argv);
int kd_cmd_tour(int argc, char **argv);
int kd_cmd_ops(int argc, char **argv);
int kd_cmd_dump(int argc, char **argv);
int kd_cmd_table(int argc, char **argv);
int kd_cmd_kernels(int argc, char **argv);
int kd_cmd_trace(int argc, char **argv);

/* Opens the libraries kd registers (demo_ops.c); 0, or 1 after printing why. */
int kdc_tool_open(void);

/* Where the Tracer fallback of demo_ops.c prints its line per call; NULL
 * (the default) means stdout. The language's trace(True) points it at the
 * interpreter's output. Process-wide, not synchronised. */
extern FILE *kdc_tool_trace_out;

/* `kd run` and `kd call` (cmd_run.c): the little language (lang.h). */
int kd_cmd_run(int argc, char **argv);
int kd_cmd_call(int argc, char **argv);

/* Writes the operator's computed dispatch table to out exactly as `kd table`
 * does (cmd_ops.c); 0, or -1 when out of memory. `op` is borrowed. */
int kdc_print_op_table(FILE *out, const kd_op *op);

/* `kd` with no arguments on a terminal: the interactive prompt of the
 * language (prompt.c documents it). Returns the exit code: 0 at Ctrl-D or
 * the end of the input, 1 when it cannot start. */
int kdc_prompt(void);

/* True when operator name `name` matches kd ops' PATTERN: a shell pattern
 * (fnmatch) or a substring (cmd_ops.c). */
bool kdc_ops_match(const char *pattern, const char *name);

/* The --json output of the listing subcommands (cmd_json.c documents the
 * fields), written to `out`. Each returns the exit code: 0, or 1 after
 * printing why to stderr. `op` is borrowed. */
int kdc_json_ops(FILE *out, const char *pattern); /* pattern NULL: every operator */
int kdc_json_dump(FILE *out, const kd_op *op);
int kdc_json_table(FILE *out, const kd_op *op);
int kdc_json_kernels(FILE *out, const kd_op *op);

#endif
