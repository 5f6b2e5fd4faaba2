/*
 * commands.h: the subcommands of `kd`. Each takes the arguments after its
 * name (argv[0] is the subcommand's name) and returns the process exit code.
 */
#ifndef KD_TOOL_COMMANDS_H
#define KD_TOOL_COMMANDS_H

int kd_cmd_schema(int argc, char **argv);
int kd_cmd_version(int argc, char **argv);
int kd_cmd_tour(int argc, char **argv);
int kd_cmd_ops(int argc, char **argv);
int kd_cmd_dump(int argc, char **argv);
int kd_cmd_table(int argc, char **argv);
int kd_cmd_kernels(int argc, char **argv);
int kd_cmd_trace(int argc, char **argv);

/* Opens the libraries kd registers (demo_ops.c); 0, or 1 after printing why. */
int kd__tool_open(void);

#endif
