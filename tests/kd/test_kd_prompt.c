/*
 * The interactive prompt (tools/kd/prompt.c): KD_BIN_DIR/kd with no
 * arguments is started on a pseudo-terminal (posix_openpt, a new session
 * whose controlling terminal is the pty), lines are typed into it, and what
 * it echoes and prints is read back. Checked: the prompts ("kd> ", "... "
 * for a continuation), that variables persist between inputs, that an error
 * prints with line and column and does not end the session, that Ctrl-C
 * drops the input being typed (one line or several), history (the up arrow,
 * and the file $HOME/.kd_history carried into the next session), and that
 * Ctrl-D ends the session with exit status 0, also when HOME is unusable.
 *
 * Nothing here measures time: every wait has a deadline only so that a
 * broken prompt fails the test (the child is killed) instead of hanging it.
 */
#define _XOPEN_SOURCE 700 /* posix_openpt, grantpt, unlockpt, ptsname */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "kd_test.h"

/* Generous: a sanitized kd starts slowly on a busy machine. */
#define DEADLINE_MS 60000

typedef struct session {
  int master;  /* the pty's master side */
  pid_t pid;   /* kd */
  char *out;   /* everything kd wrote, carriage returns removed */
  size_t len, cap;
  size_t mark; /* expect() searches from here */
} session;

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void session_kill(session *s) {
  if (s->pid > 0) {
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = -1;
  }
}

/* Fails the test, first killing kd and showing what it wrote. */
#define SESSION_FAIL(s, ...)                                                  \
  do {                                                                        \
    session_kill(s);                                                          \
    print_message("kd wrote so far:\n%.*s\n", (int)(s)->len, (s)->out);       \
    fail_msg(__VA_ARGS__);                                                    \
  } while (0)

/* Reads what is there, waiting at most `ms`; false at end of output. */
static bool pump(session *s, int ms) {
  struct pollfd p = {s->master, POLLIN, 0};
  int r = poll(&p, 1, ms < 0 ? 0 : ms);
  if (r <= 0) return true;
  char buf[4096];
  ssize_t n = read(s->master, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (n <= 0) return false; /* EIO: the slave side is closed (kd exited) */
  for (ssize_t i = 0; i < n; i++) {
    if (buf[i] == '\r') continue;
    if (s->len + 2 > s->cap) {
      s->cap = s->cap ? 2 * s->cap : 8192;
      s->out = realloc(s->out, s->cap);
      assert_non_null(s->out);
    }
    s->out[s->len++] = buf[i];
  }
  s->out[s->len] = '\0';
  return true;
}

/* Waits until the output after the mark contains `needle`; moves the mark
 * past it. */
static void expect(session *s, const char *needle) {
  long long end = now_ms() + DEADLINE_MS;
  for (;;) {
    const char *hit = s->out ? strstr(s->out + s->mark, needle) : NULL;
    if (hit) {
      s->mark = (size_t)(hit - s->out) + strlen(needle);
      return;
    }
    long long left = end - now_ms();
    if (left <= 0) SESSION_FAIL(s, "kd did not print \"%s\"", needle);
    if (!pump(s, (int)(left < 200 ? left : 200))) {
      if (!(s->out && strstr(s->out + s->mark, needle)))
        SESSION_FAIL(s, "kd ended without printing \"%s\"", needle);
    }
  }
}

/* Waits until kd's line editor has the terminal (libedit turns canonical
 * mode off while it reads a line; the master side sees the slave's
 * settings). Typing before that would be echoed twice, once by the
 * terminal and once by the editor, and a Ctrl-C would be a signal. */
static void wait_editing(session *s) {
  long long end = now_ms() + DEADLINE_MS;
  for (;;) {
    struct termios t;
    if (tcgetattr(s->master, &t) != 0) SESSION_FAIL(s, "tcgetattr: %s", strerror(errno));
    if (!(t.c_lflag & ICANON)) return;
    if (now_ms() >= end) SESSION_FAIL(s, "kd's line editor never took the terminal");
    if (!pump(s, 10)) SESSION_FAIL(s, "kd ended while waiting for its line editor");
  }
}

/* Types `text` (one line at most) once kd is reading a line. */
static void type(session *s, const char *text) {
  wait_editing(s);
  size_t n = strlen(text);
  while (n) {
    ssize_t w = write(s->master, text, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) SESSION_FAIL(s, "cannot write to the terminal: %s", strerror(errno));
    text += w;
    n -= (size_t)w;
    pump(s, 0);
  }
}

/* Starts kd on a new pty with HOME=home. */
static void session_start(session *s, const char *home) {
  memset(s, 0, sizeof *s);
  s->pid = -1;
  s->master = posix_openpt(O_RDWR | O_NOCTTY);
  if (s->master < 0) fail_msg("posix_openpt: %s", strerror(errno));
  if (grantpt(s->master) || unlockpt(s->master)) fail_msg("grantpt/unlockpt: %s", strerror(errno));
  const char *slave_name = ptsname(s->master);
  assert_non_null(slave_name);
  char slave[256];
  snprintf(slave, sizeof slave, "%s", slave_name);
  fflush(NULL);
  s->pid = fork();
  if (s->pid < 0) fail_msg("fork: %s", strerror(errno));
  if (s->pid == 0) {
    /* The child: a new session whose controlling terminal is the slave. */
    setsid();
    int fd = open(slave, O_RDWR);
    if (fd < 0) _exit(126);
#ifdef TIOCSCTTY
    ioctl(fd, TIOCSCTTY, 0);
#endif
    struct winsize ws = {24, 80, 0, 0};
    ioctl(fd, TIOCSWINSZ, &ws);
    dup2(fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (fd > 2) close(fd);
    close(s->master);
    setenv("HOME", home, 1);
    setenv("TERM", "xterm", 1);
    unsetenv("EDITRC");
    execl(KD_BIN_DIR "/kd", "kd", (char *)NULL);
    _exit(127);
  }
  fcntl(s->master, F_SETFL, fcntl(s->master, F_GETFL) | O_NONBLOCK);
}

/* Waits for kd to exit (reading its output meanwhile); its exit status. */
static int session_wait(session *s) {
  long long end = now_ms() + DEADLINE_MS;
  for (;;) {
    int ws;
    pid_t r = waitpid(s->pid, &ws, WNOHANG);
    if (r == s->pid) {
      while (pump(s, 0) && s->len) {
        size_t before = s->len;
        pump(s, 0);
        if (s->len == before) break;
      }
      s->pid = -1;
      close(s->master);
      return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    }
    if (now_ms() >= end) SESSION_FAIL(s, "kd did not exit");
    if (!pump(s, 100)) {
      /* Output closed: kd is exiting; keep waiting for it. */
      struct timespec ts = {0, 10000000};
      nanosleep(&ts, NULL);
    }
  }
}

/* Waits for kd to exit; it must exit with status 0. */
static void session_exit_0(session *s) {
  int status = session_wait(s);
  if (status != 0) SESSION_FAIL(s, "kd exited with status %d", status);
}

static void session_free(session *s) {
  session_kill(s);
  free(s->out);
}

/* The output between the mark and the next prompt "kd> " (waited for),
 * malloc'd; moves the mark past the prompt. */
static char *until_prompt(session *s) {
  size_t from = s->mark;
  expect(s, "kd> ");
  size_t to = s->mark - 4;
  char *text = malloc(to - from + 1);
  assert_non_null(text);
  memcpy(text, s->out + from, to - from);
  text[to - from] = '\0';
  return text;
}

/* A new empty directory for HOME (malloc'd path). */
static char *make_home(void) {
  char tmpl[] = "/tmp/kd-prompt-test-XXXXXX";
  const char *dir = mkdtemp(tmpl);
  if (!dir) fail_msg("mkdtemp: %s", strerror(errno));
  return strdup(dir);
}

static void remove_home(char *home) {
  char path[512];
  snprintf(path, sizeof path, "%s/.kd_history", home);
  unlink(path);
  rmdir(home);
  free(home);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = calloc(1, 65536);
  assert_non_null(buf);
  size_t n = fread(buf, 1, 65535, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

#define ASSERT_CONTAINS(hay, needle)                                                      \
  do {                                                                                    \
    const char *h_ = (hay), *n_ = (needle);                                               \
    if (!strstr(h_, n_)) fail_msg("\"%s\" does not contain \"%s\"", h_, n_);              \
  } while (0)

#define ASSERT_NOT_CONTAINS(hay, needle)                                                  \
  do {                                                                                    \
    const char *h_ = (hay), *n_ = (needle);                                               \
    if (strstr(h_, n_)) fail_msg("\"%s\" contains \"%s\"", h_, n_);                       \
  } while (0)

/* Variables, a multi-line call, an error, the session going on, Ctrl-D. */
static void test_session(void **state) {
  (void)state;
  char *home = make_home();
  session s;
  session_start(&s, home);
  expect(&s, "kd> ");
  type(&s, "x = [[1, 2], [3, 4]]\r");
  char *text = until_prompt(&s);
  KD_ASSERT_STR_EQ(text, "x = [[1, 2], [3, 4]]\n"); /* the echo, nothing printed */
  free(text);
  /* An open bracket asks for more. */
  type(&s, "add(x,\r");
  expect(&s, "\n... ");
  type(&s, "      10)\r");
  text = until_prompt(&s);
  ASSERT_CONTAINS(text, "tensor([[11, 12],\n        [13, 14]])\n");
  free(text);
  /* An error: "<stdin>:LINE:COL: error: ...", then the prompt again. */
  type(&s, "y = nosuch_operator(x)\r");
  text = until_prompt(&s);
  ASSERT_CONTAINS(text, "<stdin>:1:5: error: ");
  ASSERT_CONTAINS(text, "nosuch_operator");
  free(text);
  /* On the second line of an input. */
  type(&s, "add(x,\r");
  expect(&s, "... ");
  type(&s, "   nosuch_name)\r");
  text = until_prompt(&s);
  ASSERT_CONTAINS(text, "<stdin>:2:4: error: ");
  free(text);
  /* x is still there: the errors did not end the session. */
  type(&s, "neg(x)\r");
  text = until_prompt(&s);
  ASSERT_CONTAINS(text, "tensor([[-1, -2],\n        [-3, -4]])\n");
  free(text);
  type(&s, "\x04"); /* Ctrl-D on an empty line */
  session_exit_0(&s);
  session_free(&s);
  remove_home(home);
}

/* Ctrl-C drops the input being typed, on its first line or a later one. */
static void test_ctrl_c(void **state) {
  (void)state;
  char *home = make_home();
  session s;
  session_start(&s, home);
  expect(&s, "kd> ");
  type(&s, "x = 5\r");
  expect(&s, "kd> ");
  type(&s, "x = nosuch(((");
  type(&s, "\x03");
  char *text = until_prompt(&s);
  ASSERT_NOT_CONTAINS(text, "error");
  free(text);
  /* A continuation: both lines dropped. */
  type(&s, "x = add(x,\r");
  expect(&s, "... ");
  type(&s, "\x03");
  text = until_prompt(&s);
  ASSERT_NOT_CONTAINS(text, "error");
  free(text);
  /* x was assigned by neither. */
  type(&s, "x\r");
  text = until_prompt(&s);
  KD_ASSERT_STR_EQ(text, "x\n5\n");
  free(text);
  type(&s, "\x04");
  session_exit_0(&s);
  session_free(&s);
  remove_home(home);
}

/* History: the up arrow within a session, and the file for the next one. */
static void test_history(void **state) {
  (void)state;
  char *home = make_home();
  session s;
  session_start(&s, home);
  expect(&s, "kd> ");
  type(&s, "v = 41\r");
  expect(&s, "kd> ");
  type(&s, "v + 1\r");
  char *text = until_prompt(&s);
  KD_ASSERT_STR_EQ(text, "v + 1\n42\n");
  free(text);
  type(&s, "v = 1\r");
  expect(&s, "kd> ");
  /* Up twice: "v + 1" again, now with v = 1. */
  type(&s, "\x1b[A\x1b[A\r");
  /* The recalled line is redrawn with cursor movements; its result is not. */
  expect(&s, "\n2\nkd> ");
  type(&s, "\x04");
  session_exit_0(&s);
  session_free(&s);

  char path[512];
  snprintf(path, sizeof path, "%s/.kd_history", home);
  char *hist = read_file(path);
  if (!hist) fail_msg("no history file %s", path);
  /* libedit's format: a header line, then the lines with spaces encoded. */
  ASSERT_CONTAINS(hist, "41\n");
  ASSERT_CONTAINS(hist, "+");
  free(hist);

  /* A new session starts with the old history (v = 41, v + 1, v = 1,
   * v + 1), to which it adds. */
  session_start(&s, home);
  expect(&s, "kd> ");
  type(&s, "v = 10\r");
  expect(&s, "kd> ");
  type(&s, "\x1b[A\x1b[A\r"); /* the line before "v = 10": "v + 1" */
  expect(&s, "\n11\nkd> ");
  type(&s, "\x04");
  session_exit_0(&s);
  session_free(&s);
  remove_home(home);
}

/* A HOME that cannot hold the history file changes nothing visible. */
static void test_unusable_home(void **state) {
  (void)state;
  session s;
  session_start(&s, "/nonexistent/kd-prompt-test");
  expect(&s, "kd> ");
  type(&s, "1 + 2\r");
  char *text = until_prompt(&s);
  KD_ASSERT_STR_EQ(text, "1 + 2\n3\n");
  free(text);
  type(&s, "\x04");
  session_exit_0(&s);
  ASSERT_NOT_CONTAINS(s.out, "kd_history");
  session_free(&s);
}

/* Without a terminal, kd alone prints its usage and fails (`kd run -`
 * reads a program from stdin). */
static void test_not_a_terminal(void **state) {
  (void)state;
  int status;
  char *out = kd_test_run("echo 'x = 1' | '" KD_BIN_DIR "/kd' 2>&1", &status);
  assert_int_equal(status, 2);
  ASSERT_CONTAINS(out, "usage: kd COMMAND [ARGS...]");
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_session),       cmocka_unit_test(test_ctrl_c),
      cmocka_unit_test(test_history),       cmocka_unit_test(test_unusable_home),
      cmocka_unit_test(test_not_a_terminal),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
