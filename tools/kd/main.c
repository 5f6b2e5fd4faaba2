/*
 * kd: the kdispatch command line.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "kd/kd.h"

typedef struct kd_command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} kd_command;

static const kd_command commands[] = {
    {"call", kd_cmd_call, "one operator call with literal arguments: kd call add '[1,2]' 3"},
    {"dump", kd_cmd_dump, "an operator's registrations per dispatch key"},
    {"kernels", kd_cmd_kernels, "an operator's kernels: kernel keys, forms, where registered"},
    {"ops", kd_cmd_ops, "list the registered operators"},
    {"run", kd_cmd_run, "run a program of the little language (kd run FILE, kd run -e CODE)"},
    {"schema", kd_cmd_schema, "parse schemas from stdin and print them canonically"},
    {"table", kd_cmd_table, "an operator's computed dispatch table"},
    {"tour", kd_cmd_tour, "a short tour of the library on a built-in example"},
    {"trace", kd_cmd_trace, "run a program, record the kernels it calls, write an allow-list"},
    {"version", kd_cmd_version, "print the library version"},
};

static void usage(FILE *out) {
  fprintf(out, "usage: kd COMMAND [ARGS...]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\nkd COMMAND --help shows a command's options.\n"
               "\nkd alone, on a terminal, starts an interactive prompt of the little language\n"
               "(line editing, history in ~/.kd_history; Ctrl-C drops the input, Ctrl-D quits);\n"
               "with stdin not a terminal it prints this and fails: use kd run - to run stdin.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    if (isatty(STDIN_FILENO)) return kd__tool_open() ? 1 : kd__prompt();
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) return kd_cmd_version(argc - 1, argv + 1);
  if (kd__tool_open()) return 1;
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
  }
  fprintf(stderr, "kd: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}

int kd_cmd_version(int argc, char **argv) {
  if (argc > 1) {
    bool help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h");
    if (!help)
      fprintf(stderr, "kd version: %s '%s'\n", argv[1][0] == '-' ? "unknown option" : "unexpected argument",
              argv[1]);
    fprintf(help ? stdout : stderr, "usage: kd version\n  print the versions of the library and of its headers\n");
    return help ? 0 : 2;
  }
  printf("kd %s (headers %s)\n", kd_version_string(), KD_VERSION_STRING);
  return 0;
}
