/*
 * kd: the kdispatch command line.
 */
#include <stdio.h>
#include <stdlib.h>
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

static int kd_main(int argc, char **argv, const char **paths, int npaths);

static void usage(FILE *out) {
  fprintf(out, "usage: kd COMMAND [ARGS...]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\n--load PLUGIN (repeatable, before or after COMMAND) loads a backend plugin\n"
               "(kd_backend_load) before the command runs; KD_BACKENDS=PATH:PATH does the same\n"
               "for every program that uses kdispatch.\n");
  fprintf(out, "\nkd COMMAND --help shows a command's options.\n"
               "\nkd alone, on a terminal, starts an interactive prompt of the little language\n"
               "(line editing, history in ~/.kd_history; Ctrl-C drops the input, Ctrl-D quits);\n"
               "with stdin not a terminal it prints this and fails: use kd run - to run stdin.\n");
}

/* Takes every "--load PATH" and "--load=PATH" out of argv (up to a "--"),
 * keeping the other arguments in order; returns the new argc, or -1 after
 * a message when --load has no path. The paths are stored in `paths`. */
static int take_loads(int argc, char **argv, const char **paths, int *npaths) {
  int out = 1;
  bool rest = false;
  for (int i = 1; i < argc; i++) {
    if (!rest && !strcmp(argv[i], "--")) rest = true;
    if (!rest && !strcmp(argv[i], "--load")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "kd: --load needs a plugin path\n");
        return -1;
      }
      paths[(*npaths)++] = argv[++i];
    } else if (!rest && !strncmp(argv[i], "--load=", 7)) {
      paths[(*npaths)++] = argv[i] + 7;
    } else {
      argv[out++] = argv[i];
    }
  }
  argv[out] = NULL;
  return out;
}

/* Loads the plugins of --load, after libkdops is open; 1 on failure. */
static int load_plugins(const char **paths, int n) {
  for (int i = 0; i < n; i++) {
    kd_plugin *p;
    if (kd_backend_load(paths[i], &p) != KD_OK) {
      fprintf(stderr, "kd: %s\n", kd_last_error());
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  const char **paths = argc > 1 ? calloc((size_t)argc, sizeof *paths) : NULL;
  int npaths = 0;
  if (argc > 1) {
    if (!paths) {
      fprintf(stderr, "kd: out of memory\n");
      return 1;
    }
    argc = take_loads(argc, argv, paths, &npaths);
    if (argc < 0) {
      free(paths);
      return 2;
    }
  }
  int rc = kd_main(argc, argv, paths, npaths);
  free(paths);
  return rc;
}

static int kd_main(int argc, char **argv, const char **paths, int npaths) {
  if (argc < 2) {
    if (isatty(STDIN_FILENO))
      return kdc_tool_open() || load_plugins(paths, npaths) ? 1 : kdc_prompt();
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) return kd_cmd_version(argc - 1, argv + 1);
  if (kdc_tool_open() || load_plugins(paths, npaths)) return 1;
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
