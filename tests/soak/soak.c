/*
 * kd-soak: a concurrency soak of the dispatcher (not a timed test).
 *
 * Caller threads call a pool of operators, typed and boxed, on CPU and Meta
 * tensors, sometimes with mode keys included, while registrar threads open
 * and close DEF, FRAGMENT and IMPL libraries that define and implement those
 * operators (plain, closure, functor and kernel-key kernels), register and
 * release fallbacks and a fallthrough, release single registrations, and add
 * and remove listeners. Every result is checked: a call succeeds and returns
 * its input, or fails because the operator is not defined or has no kernel
 * for the key, with a message naming it; a closure's data or a functor's
 * state is never seen after its destruction; a registration succeeds, or
 * (fallbacks) fails because another thread holds the key. At the end every
 * library is closed, and every closure and state must have been destroyed,
 * every operator gone, and the tables consistent.
 *
 *   kd-soak [--seconds=N] [--callers=N] [--registrars=N] [--seed=N]
 *
 * Prints the calls made and the registrations cycled; exits 0 when nothing
 * went wrong, 1 otherwise. Meant to run under ThreadSanitizer (and ASan) for
 * minutes; CTest runs it for two seconds.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dispatch/reclaim.h"
#include "kd/kd.h"

#define ALIVE 0x5eed5eedu
#define DEAD 0xdeaddeadu
#define POOL 12       /* soak::p0 .. soak::p11 */
#define MAX_REGISTRARS 16
#define MAX_HELD 8

/* ---- Counters ------------------------------------------------------------------ */

static atomic_ullong calls_ok, calls_undefined, calls_nokernel, calls_bad;
static atomic_ullong libs_opened, defs_made, impls_made, fallbacks_made, fallbacks_busy,
    regs_released, listeners_cycled, events_heard;
static atomic_llong data_live, states_live;
static atomic_bool stop;
static atomic_int bad_reported;

static void report(const char *what, const char *op, kd_status st, const char *msg) {
  atomic_fetch_add(&calls_bad, 1);
  if (atomic_fetch_add(&bad_reported, 1) < 10)
    fprintf(stderr, "kd-soak: %s %s: %s: %s\n", what, op ? op : "", kd_status_name(st), msg);
}

/* ---- Kernels ------------------------------------------------------------------- */

typedef struct guard {
  _Atomic unsigned magic;
} guard;

static guard *guard_new(void) {
  guard *g = malloc(sizeof *g);
  if (!g) abort();
  atomic_init(&g->magic, ALIVE);
  atomic_fetch_add(&data_live, 1);
  return g;
}
static void guard_free(void *p) {
  guard *g = p;
  atomic_store(&g->magic, DEAD);
  atomic_fetch_sub(&data_live, 1);
  free(g);
}
static bool guard_ok(const void *p) {
  return p && atomic_load(&((const guard *)p)->magic) == ALIVE;
}

/* (Tensor self, int n) -> Tensor: returns self when n == 3. */
static kd_status k_plain(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)call;
  if (a[1].i != 3) return kd_set_error(KD_EINTERNAL, "k_plain: n = %lld", (long long)a[1].i);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}
static kd_status k_guarded(const kd_call *call, const kd_arg *a, kd_value *r) {
  if (!guard_ok(call->data))
    return kd_set_error(KD_EINTERNAL,
                        "closure data or functor state used after destruction (%p, magic %#x, "
                        "key %s)",
                        call->data, call->data ? atomic_load(&((guard *)call->data)->magic) : 0u,
                        kd_dispatch_key_name(call->key));
  return k_plain(call, a, r);
}
static kd_status st_create(void *data, const kd_value *ctor, size_t n, void **state) {
  (void)data;
  if (n != 1 || ctor[0].tag != KD_VALUE_INT || ctor[0].u.i != 3)
    return kd_set_error(KD_EINTERNAL, "st_create: constructor arguments");
  guard *g = guard_new();
  atomic_fetch_sub(&data_live, 1); /* counted as a state */
  atomic_fetch_add(&states_live, 1);
  *state = g;
  return KD_OK;
}
static void st_destroy(void *p) {
  atomic_fetch_add(&data_live, 1);
  atomic_fetch_sub(&states_live, 1);
  guard_free(p);
}
static kd_status k_fallback(const kd_call *call, kd_stack *stack) {
  return kd_redispatch_boxed(call, stack);
}
static void on_event(const kd_registry_event *ev, void *ud) {
  (void)ev;
  (void)ud;
  atomic_fetch_add(&events_heard, 1);
}
static void quiet(const char *msg, void *ud) {
  (void)msg;
  (void)ud;
}

/* ---- Random numbers (per thread) ------------------------------------------------- */

static uint64_t next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}
static unsigned pick(uint64_t *s, unsigned n) { return (unsigned)(next(s) % n); }

/* ---- Operators ------------------------------------------------------------------- */

static int nregistrars = 2;
static kd_op *pool[POOL];             /* soak::p<i>, defined by FRAGMENT libraries */
static kd_op *own[MAX_REGISTRARS];    /* soak_r<t>::d, defined by registrar t's DEF library */
static kd_tensor *tensors[3];         /* cpu float32, meta float32, meta float64 */

static const char *const SIG = "(Tensor, int) -> Tensor";

/* One call, typed or boxed; checks what came back. */
static void call_once(kd_op *op, kd_tensor *t, bool boxed, kd_stack *s) {
  kd_status st;
  bool same = false;
  if (boxed) {
    kd_value v = kd_value_tensor(t), n = kd_value_int(3);
    st = kd_stack_push(s, &v);
    if (st == KD_OK) st = kd_stack_push(s, &n);
    if (st == KD_OK) st = kd_call_boxed(op, s);
    same = st == KD_OK && s->size == 1 && s->items[0].tag == KD_VALUE_TENSOR &&
           s->items[0].u.t == t;
    kd_stack_clear(s);
  } else {
    kd_value r[1] = {kd_value_none()};
    st = kd_call_unboxed(op, ((kd_arg[]){{.t = t}, {.i = 3}}), r);
    same = st == KD_OK && r[0].tag == KD_VALUE_TENSOR && r[0].u.t == t;
    kd_value_destroy(&r[0]);
  }
  const char *name = kd_op_name(op);
  const char *msg = kd_last_error();
  if (st == KD_OK) {
    if (same) atomic_fetch_add(&calls_ok, 1);
    else report(boxed ? "boxed call" : "typed call", name, st, "wrong result");
  } else if (st == KD_ESTATE && strstr(msg, "is not defined") && strstr(msg, name)) {
    atomic_fetch_add(&calls_undefined, 1);
  } else if (st == KD_ENOKERNEL && strstr(msg, name)) {
    atomic_fetch_add(&calls_nokernel, 1);
  } else {
    report(boxed ? "boxed call" : "typed call", name, st, msg);
  }
}

static void *caller(void *arg) {
  uint64_t rng = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
  kd_stack s;
  kd_stack_init(&s);
  while (!atomic_load(&stop)) {
    for (int i = 0; i < 64; i++) {
      unsigned which = pick(&rng, POOL + (unsigned)nregistrars);
      kd_op *op = which < POOL ? pool[which] : own[which - POOL];
      kd_tensor *t = tensors[pick(&rng, 3)];
      bool modes = pick(&rng, 4) == 0;
      kd_tls_keys prev = kd_tls_keys_get();
      if (modes) prev = kd_tls_include(kd_keyset_of(KD_KEY_MODE1) | kd_keyset_of(KD_KEY_MODE2));
      call_once(op, t, pick(&rng, 2), &s);
      if (modes) kd_tls_restore(prev);
    }
    /* Lookups race with definitions coming and going. */
    kd_op *found;
    unsigned which = pick(&rng, POOL);
    const char *name = kd_op_name(pool[which]);
    kd_status st = kd_op_find(name, NULL, &found);
    if (st == KD_OK && found != pool[which]) report("find", name, st, "another handle");
    else if (st != KD_OK && st != KD_ENOTFOUND) report("find", name, st, kd_last_error());
    st = kd_op_find_typed(name, NULL, SIG, &found);
    if (st == KD_OK && found != pool[which]) report("find_typed", name, st, "another handle");
    else if (st != KD_OK && st != KD_ENOTFOUND && st != KD_ESTATE)
      report("find_typed", name, st, kd_last_error());
  }
  kd_stack_free(&s);
  return NULL;
}

/* ---- Registrars ------------------------------------------------------------------ */

typedef struct held {
  kd_library *lib;
  kd_registration *reg; /* one registration of it still held, or NULL */
} held;

static void must(kd_status st, const char *what) {
  if (st != KD_OK) report(what, NULL, st, kd_last_error());
}

static void pool_name(char *buf, size_t cap, unsigned i) { snprintf(buf, cap, "p%u", i); }

static kd_library *open_lib(kd_library_kind kind, const char *ns, kd_dispatch_key key) {
  kd_library *lib = NULL;
  must(kd_library_open(kind, ns, key, __FILE__, __LINE__, &lib), "open");
  if (lib) atomic_fetch_add(&libs_opened, 1);
  return lib;
}

/* A FRAGMENT library defining 2-5 pool operators. */
static void open_fragment(held *h, uint64_t *rng) {
  h->lib = open_lib(KD_LIBRARY_FRAGMENT, "soak", KD_KEY_UNDEFINED);
  if (!h->lib) return;
  unsigned n = 2 + pick(rng, 4);
  for (unsigned i = 0; i < n; i++) {
    char schema[64];
    snprintf(schema, sizeof schema, "p%u(Tensor self, int n) -> Tensor", pick(rng, POOL));
    kd_registration *r = NULL;
    must(kd_library_def(h->lib, schema, NULL, 0, &r), "def");
    if (r) {
      atomic_fetch_add(&defs_made, 1);
      h->reg = r;
    }
  }
}

/* An IMPL library (CPU, Meta or CatchAll) implementing 1-3 pool operators. */
static void open_impl(held *h, uint64_t *rng) {
  static const kd_dispatch_key keys[] = {KD_KEY_CPU, KD_KEY_META, KD_KEY_CATCH_ALL};
  kd_dispatch_key key = keys[pick(rng, 3)];
  h->lib = open_lib(KD_LIBRARY_IMPL, "soak", key);
  if (!h->lib) return;
  unsigned n = 1 + pick(rng, 3);
  for (unsigned i = 0; i < n; i++) {
    char name[16];
    pool_name(name, sizeof name, pick(rng, POOL));
    kd_registration *r = NULL;
    kd_kernel k;
    kd_value three = kd_value_int(3); /* a functor's constructor argument (copied) */
    unsigned form = pick(rng, 4);
    if (form == 0) {
      k = kd_kernel_unboxed(k_plain, SIG);
    } else if (form == 1) {
      k = kd_kernel_closure(k_guarded, SIG, guard_new(), guard_free);
    } else {
      k = kd_kernel_unboxed(k_guarded, SIG);
      k.kind = KD_KERNEL_FUNCTOR;
      k.create = st_create;
      k.destroy = st_destroy;
      k.ctor_args = &three;
      k.nctor_args = 1;
      if (form == 3 && key == KD_KEY_META) { /* kernel keys: float32 only */
        k = kd_kernel_closure(k_guarded, SIG, guard_new(), guard_free);
        kd_status st = kd_library_impl_keyed(h->lib, name, KD_ALL_LAYOUT,
                                             KD_DTYPE_BIT(KD_FLOAT32), &k, &r);
        if (st) guard_free(k.data); /* the caller keeps its data on failure */
        must(st, "impl_keyed");
        if (r) {
          atomic_fetch_add(&impls_made, 1);
          h->reg = r;
        }
        continue;
      }
    }
    kd_status st = kd_library_impl(h->lib, name, &k, &r);
    if (st && k.destroy_data) k.destroy_data(k.data);
    must(st, "impl");
    if (r) {
      atomic_fetch_add(&impls_made, 1);
      h->reg = r;
    }
  }
}

/* A fallback for Mode1 (boxed) or Mode2 (fallthrough); another thread may
 * hold the key: KD_EEXIST naming it. */
static void open_fallback(held *h, uint64_t *rng) {
  bool one = pick(rng, 2);
  h->lib = open_lib(KD_LIBRARY_IMPL, "soak", one ? KD_KEY_MODE1 : KD_KEY_MODE2);
  if (!h->lib) return;
  kd_kernel k = one ? kd_kernel_boxed(k_fallback) : kd_kernel_fallthrough();
  kd_registration *r = NULL;
  kd_status st = kd_library_fallback(h->lib, &k, &r);
  if (st == KD_OK) {
    atomic_fetch_add(&fallbacks_made, 1);
    h->reg = r;
  } else if (st == KD_EEXIST && strstr(kd_last_error(), "is already registered")) {
    atomic_fetch_add(&fallbacks_busy, 1);
  } else {
    report("fallback", NULL, st, kd_last_error());
  }
}

static void close_held(held *h) {
  kd_library_close(h->lib);
  h->lib = NULL;
  h->reg = NULL;
}

static void *registrar(void *arg) {
  int t = (int)(intptr_t)arg;
  uint64_t rng = (uint64_t)t * 0xd1b54a32d192ed03ull + 7;
  held h[MAX_HELD] = {{0}};
  kd_library *def = NULL;
  kd_listener *listener = NULL;
  char ns[32];
  snprintf(ns, sizeof ns, "soak_r%d", t);
  while (!atomic_load(&stop)) {
    unsigned action = pick(&rng, 100);
    held *slot = &h[pick(&rng, MAX_HELD)];
    if (action < 70) {
      if (slot->lib) {
        close_held(slot);
      } else if (action < 30) {
        open_fragment(slot, &rng);
      } else if (action < 60) {
        open_impl(slot, &rng);
      } else {
        open_fallback(slot, &rng);
      }
    } else if (action < 80) {
      /* The registrar's own DEF library: def_kernel (a schema and a
       * CatchAll closure released together). */
      if (def) {
        kd_library_close(def);
        def = NULL;
      } else if ((def = open_lib(KD_LIBRARY_DEF, ns, KD_KEY_UNDEFINED))) {
        kd_kernel k = kd_kernel_closure(k_guarded, SIG, guard_new(), guard_free);
        kd_status st = kd_library_def_kernel(def, "d", &k, NULL);
        if (st) guard_free(k.data);
        must(st, "def_kernel");
        if (!st) atomic_fetch_add(&defs_made, 1);
      }
    } else if (action < 90) {
      if (slot->reg) { /* one registration released on its own */
        kd_registration_release(slot->reg);
        slot->reg = NULL;
        atomic_fetch_add(&regs_released, 1);
      }
    } else {
      if (listener) {
        kd_listener_remove(listener);
        listener = NULL;
      } else {
        must(kd_listener_add(on_event, NULL, &listener), "listener_add");
        atomic_fetch_add(&listeners_cycled, 1);
      }
    }
  }
  for (int i = 0; i < MAX_HELD; i++)
    if (h[i].lib) close_held(&h[i]);
  kd_library_close(def);
  kd_listener_remove(listener);
  return NULL;
}

/* ---- Main ------------------------------------------------------------------------ */

static bool parse_int(const char *arg, const char *name, long *out) {
  size_t n = strlen(name);
  if (strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  char *end;
  long v = strtol(arg + n + 1, &end, 10);
  if (*end || v < 0) {
    fprintf(stderr, "kd-soak: bad value in %s\n", arg);
    exit(2);
  }
  *out = v;
  return true;
}

int main(int argc, char **argv) {
  long seconds = 10, ncallers = 4, nreg = 2;
  for (int i = 1; i < argc; i++) {
    if (parse_int(argv[i], "--seconds", &seconds) || parse_int(argv[i], "--callers", &ncallers) ||
        parse_int(argv[i], "--registrars", &nreg))
      continue;
    fprintf(stderr,
            "usage: kd-soak [--seconds=N] [--callers=N] [--registrars=N]\n"
            "  callers 1..64 (default 4), registrars 1..%d (default 2), seconds (default 10)\n",
            MAX_REGISTRARS);
    return 2;
  }
  if (ncallers < 1 || ncallers > 64 || nreg < 1 || nreg > MAX_REGISTRARS) {
    fprintf(stderr, "kd-soak: callers must be 1..64 and registrars 1..%d\n", MAX_REGISTRARS);
    return 2;
  }
  nregistrars = (int)nreg;
  kd_set_warning_handler(quiet, NULL); /* overriding kernels warn */

  /* Make every handle once (handles live for the process): define, look
   * up, release. */
  kd_library *frag = open_lib(KD_LIBRARY_FRAGMENT, "soak", KD_KEY_UNDEFINED);
  for (unsigned i = 0; i < POOL; i++) {
    char schema[64], name[32];
    snprintf(schema, sizeof schema, "p%u(Tensor self, int n) -> Tensor", i);
    snprintf(name, sizeof name, "soak::p%u", i);
    must(kd_library_def(frag, schema, NULL, 0, NULL), "def");
    must(kd_op_find(name, NULL, &pool[i]), "find");
  }
  for (int t = 0; t < nregistrars; t++) {
    char ns[32], name[48];
    snprintf(ns, sizeof ns, "soak_r%d", t);
    kd_library *d = open_lib(KD_LIBRARY_DEF, ns, KD_KEY_UNDEFINED);
    must(kd_library_def(d, "d(Tensor self, int n) -> Tensor", NULL, 0, NULL), "def");
    snprintf(name, sizeof name, "%s::d", ns);
    must(kd_op_find(name, NULL, &own[t]), "find");
    kd_library_close(d);
  }
  kd_library_close(frag);
  must(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, kd_device_cpu(), &tensors[0]), "tensor");
  must(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, (kd_device){KD_DEVICE_META, 0}, &tensors[1]),
       "tensor");
  must(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT64, (kd_device){KD_DEVICE_META, 0}, &tensors[2]),
       "tensor");
  if (atomic_load(&calls_bad)) return 1;

  pthread_t callers[64], registrars[MAX_REGISTRARS];
  for (long i = 0; i < ncallers; i++) pthread_create(&callers[i], NULL, caller, (void *)(intptr_t)(i + 1));
  for (long i = 0; i < nreg; i++) pthread_create(&registrars[i], NULL, registrar, (void *)(intptr_t)i);
  struct timespec end, now;
  clock_gettime(CLOCK_MONOTONIC, &end);
  end.tv_sec += seconds;
  do {
    struct timespec nap = {0, 50 * 1000 * 1000};
    nanosleep(&nap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
  atomic_store(&stop, true);
  for (long i = 0; i < ncallers; i++) pthread_join(callers[i], NULL);
  for (long i = 0; i < nreg; i++) pthread_join(registrars[i], NULL);

  /* Everything closed: nothing may be left. */
  kd__reclaim(true);
  bool ok = atomic_load(&calls_bad) == 0;
  if (atomic_load(&data_live) != 0 || atomic_load(&states_live) != 0) {
    fprintf(stderr, "kd-soak: %lld closure data and %lld functor states not destroyed\n",
            (long long)atomic_load(&data_live), (long long)atomic_load(&states_live));
    ok = false;
  }
  for (unsigned i = 0; i < POOL + (unsigned)nregistrars; i++) {
    kd_op *op = i < POOL ? pool[i] : own[i - POOL];
    kd_op *found;
    if (kd_op_find(kd_op_name(op), NULL, &found) != KD_ENOTFOUND || kd_op_schema(op)) {
      fprintf(stderr, "kd-soak: %s is still defined after every library closed\n", kd_op_name(op));
      ok = false;
    }
  }
  if (kd_dispatcher_check() != KD_OK) {
    fprintf(stderr, "kd-soak: %s\n", kd_last_error());
    ok = false;
  }
  for (int i = 0; i < 3; i++) kd_tensor_release(tensors[i]);

  unsigned long long calls = atomic_load(&calls_ok) + atomic_load(&calls_undefined) +
                             atomic_load(&calls_nokernel) + atomic_load(&calls_bad);
  unsigned long long cycled = atomic_load(&defs_made) + atomic_load(&impls_made) +
                              atomic_load(&fallbacks_made) + atomic_load(&listeners_cycled);
  printf("kd-soak: %ld s, %ld callers, %ld registrars\n", seconds, ncallers, nreg);
  printf("  calls made:            %llu (ok %llu, not defined %llu, no kernel %llu, wrong %llu)\n",
         calls, (unsigned long long)atomic_load(&calls_ok),
         (unsigned long long)atomic_load(&calls_undefined),
         (unsigned long long)atomic_load(&calls_nokernel), (unsigned long long)atomic_load(&calls_bad));
  printf("  registrations cycled:  %llu (defs %llu, impls %llu, fallbacks %llu, listeners %llu)\n",
         cycled, (unsigned long long)atomic_load(&defs_made),
         (unsigned long long)atomic_load(&impls_made),
         (unsigned long long)atomic_load(&fallbacks_made),
         (unsigned long long)atomic_load(&listeners_cycled));
  printf("  libraries opened:      %llu; fallback key busy %llu; released singly %llu; "
         "listener events %llu\n",
         (unsigned long long)atomic_load(&libs_opened),
         (unsigned long long)atomic_load(&fallbacks_busy),
         (unsigned long long)atomic_load(&regs_released),
         (unsigned long long)atomic_load(&events_heard));
  printf("kd-soak: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
