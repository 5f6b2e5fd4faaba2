/*
 * prompt.c: `kd` with no arguments on a terminal: the interactive prompt of
 * the little language (lang.h), with line editing and history from libedit
 * (BSD licence; Debian's libedit-dev).
 *
 * Rules:
 * - The prompt is "kd> "; while kdc_lang_complete says the input so far is
 *   incomplete (an open bracket or string, a trailing operator, comma or
 *   backslash) the next line is read with "... " and appended.
 * - Each complete input runs in one interpreter kept for the session, so
 *   variables persist; an error is printed by the interpreter as
 *   "<stdin>:LINE:COL: error: ..." (LINE counted within the input) and the
 *   session goes on.
 * - Ctrl-C at the prompt discards what has been typed of the input (all of
 *   its lines) and prompts again. The terminal's interrupt character is read
 *   as a key while a line is edited (the edit-mode tty settings drop ISIG,
 *   so Ctrl-Z and Ctrl-\ do nothing at the prompt either); while an input
 *   runs, the terminal is in its normal mode and Ctrl-C ends kd as usual.
 * - Ctrl-D on an empty line, or the end of the input, ends the session with
 *   exit status 0 (an unfinished input is dropped).
 * - History: every line typed goes into the in-memory history (consecutive
 *   repeats once), up to HISTORY_SIZE lines. It is loaded from and saved to
 *   $HOME/.kd_history when HOME is set; a file that cannot be read or
 *   written is ignored without a word. ~/.editrc (libedit's own settings,
 *   e.g. "bind -v" for vi keys) is read as libedit reads it.
 */
#include <errno.h>
#include <histedit.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "lang.h"
#include "kd/memory.h"

#define HISTORY_SIZE 1000

typedef struct prompt_state {
  const char *prompt; /* what prompt_text shows now */
  bool cancelled;     /* Ctrl-C was pressed during this el_gets */
} prompt_state;

static prompt_state *state_of(EditLine *el) {
  void *data = NULL;
  el_get(el, EL_CLIENTDATA, &data);
  return data;
}

static char *prompt_text(EditLine *el) { return (char *)state_of(el)->prompt; }

/* Bound to the interrupt character: ends the line as Enter would, marked
 * cancelled so the caller drops it. */
static unsigned char cancel_key(EditLine *el, int ch) {
  (void)ch;
  state_of(el)->cancelled = true;
  fputs("^C", stdout); /* raw mode does not echo it; show that it was seen */
  return CC_NEWLINE;
}

/* $HOME/.kd_history (kd_host_malloc'd), or NULL when HOME is unset or empty. */
static char *history_path(void) {
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  size_t n = strlen(home) + sizeof "/.kd_history";
  char *path = kd_host_malloc(n);
  if (path) snprintf(path, n, "%s/.kd_history", home);
  return path;
}

/* The input being gathered, line by line. */
typedef struct input {
  char *data;
  size_t len, cap;
} input;

static bool input_append(input *in, const char *s, size_t n) {
  if (in->len + n + 1 > in->cap) {
    size_t cap = in->cap ? in->cap : 256;
    while (cap < in->len + n + 1) cap *= 2;
    char *d = kd_host_realloc(in->data, cap);
    if (!d) return false;
    in->data = d;
    in->cap = cap;
  }
  memcpy(in->data + in->len, s, n);
  in->len += n;
  in->data[in->len] = '\0';
  return true;
}

static bool is_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') return false;
  return true;
}

int kdc_prompt(void) {
  /* Multibyte input is edited as characters of the user's locale; only
   * LC_CTYPE is taken, so numbers still print with '.'. */
  setlocale(LC_CTYPE, "");
  kd_lang *L = kdc_lang_new(stdout, stderr);
  EditLine *el = L ? el_init("kd", stdin, stdout, stderr) : NULL;
  History *hist = el ? history_init() : NULL;
  if (!hist) {
    fprintf(stderr, "kd: cannot start the interactive prompt: out of memory\n");
    if (el) el_end(el);
    kdc_lang_free(L);
    return 1;
  }
  HistEvent ev;
  history(hist, &ev, H_SETSIZE, HISTORY_SIZE);
  history(hist, &ev, H_SETUNIQUE, 1);
  char *hist_file = history_path();
  if (hist_file) history(hist, &ev, H_LOAD, hist_file); /* a missing file is fine */

  prompt_state st = {"kd> ", false};
  el_set(el, EL_CLIENTDATA, &st);
  el_set(el, EL_PROMPT, prompt_text);
  el_set(el, EL_EDITOR, "emacs");
  el_set(el, EL_HIST, history, hist);
  /* The wide form keeps pointers to these static strings; the narrow one
   * would leak its own copies of them (libedit says so in eln.c). */
  el_wset(el, EL_ADDFN, L"kd-cancel", L"discard the input being typed", cancel_key);
  el_set(el, EL_BIND, "^C", "kd-cancel", NULL);
  el_set(el, EL_SETTY, "-d", "-isig", NULL);
  el_source(el, NULL); /* ~/.editrc, when there is one */

  input in = {NULL, 0, 0};
  int rc = 0;
  for (;;) {
    st.prompt = in.len ? "... " : "kd> ";
    st.cancelled = false;
    fflush(stdout);
    fflush(stderr);
    int count = 0;
    const char *line = el_gets(el, &count);
    if (st.cancelled) {
      fputc('\n', stdout); /* the terminal is back in its normal mode here */
      in.len = 0;
      continue;
    }
    if (!line || count <= 0) {
      if (count < 0 && errno == EINTR) continue; /* a signal that did not end us */
      fputc('\n', stdout); /* leave the shell's prompt a line of its own */
      break;
    }
    size_t n = (size_t)count;
    size_t text_len = n && line[n - 1] == '\n' ? n - 1 : n;
    if (!is_blank(line, text_len)) {
      /* History entries are lines without their newline. */
      char *entry = kd_host_malloc(text_len + 1);
      if (entry) {
        memcpy(entry, line, text_len);
        entry[text_len] = '\0';
        history(hist, &ev, H_ENTER, entry);
        kd_host_free(entry);
      }
    }
    if (!input_append(&in, line, text_len) || !input_append(&in, "\n", 1)) {
      fprintf(stderr, "kd: out of memory\n");
      rc = 1;
      break;
    }
    if (!kdc_lang_complete(in.data, in.len)) continue;
    if (!is_blank(in.data, in.len)) kdc_lang_run(L, in.data, in.len, "<stdin>");
    in.len = 0;
  }
  fflush(stdout);
  if (hist_file) history(hist, &ev, H_SAVE, hist_file); /* failures are ignored */
  kd_host_free(hist_file);
  kd_host_free(in.data);
  el_end(el);
  history_end(hist);
  kdc_lang_free(L);
  return rc;
}
