/*
 * library.c: libraries and registrations: def, impl, fallback, release.
 *
 * Every operation validates and allocates first, then changes the registry
 * under the lock in steps that cannot fail, so a failed registration leaves
 * everything as it was.
 */
#include <ctype.h>
#include <stdio.h>

#include "backend/backend_impl.h"
#include "dispatch/dispatcher_impl.h"

/* The versions of kd_keyed_kernel and kd_library_desc (core/internal.h):
 * kd_library_desc 2 appends `id`. */
static const size_t keyed_kernel_ends[] = {KD__ABI_END(kd_keyed_kernel, user_data)};
KD__ABI_TABLE(kd__abi_keyed_kernel, kd_keyed_kernel, KD_KEYED_KERNEL_API_VERSION,
              keyed_kernel_ends);

static const size_t library_desc_ends[] = {KD__ABI_END(kd_library_desc, line),
                                           KD__ABI_END(kd_library_desc, id)};
KD__ABI_TABLE(kd__abi_library_desc, kd_library_desc, KD_LIBRARY_DESC_API_VERSION,
              library_desc_ends);

/* DEF libraries open now, one per namespace. */
typedef struct def_lib {
  kd_library *lib;
  struct def_lib *next;
} def_lib;
static def_lib *def_libs;

static bool is_identifier(const char *s, size_t n) {
  if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
  for (size_t i = 1; i < n; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return false;
  return true;
}

/* kd_library_open with the library's debug text given ("file.c:12", or
 * "file.c:12 (id fused)" for a KD_LIBRARY_IMPL_ID block). */
static kd_status open_common(kd_library_kind kind, const char *ns, kd_dispatch_key key,
                             const char *debug, kd_library **out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_library_open: NULL out");
  *out = NULL;
  if (kind < KD_LIBRARY_DEF || kind > KD_LIBRARY_IMPL)
    return kd_set_error(KD_EINVAL, "kd_library_open: invalid library kind %d", (int)kind);
  if (!ns || !is_identifier(ns, strlen(ns)))
    return kd_set_error(KD_EINVAL, "kd_library_open: illegal namespace '%s': expected an identifier",
                        ns ? ns : "(null)");
  if (kind == KD_LIBRARY_IMPL && !kd_dispatch_key_is_runtime(key) && !kd_dispatch_key_is_alias(key))
    return kd_set_error(KD_EINVAL, "kd_library_open: IMPL library for '%s' with invalid key %d", ns,
                        (int)key);
  kd_library *lib = kd__calloc(1, sizeof *lib);
  if (!lib || !(lib->ns = kd__strdup(ns)) || !(lib->debug = kd__strdup(debug))) {
    if (lib) kd__free(lib->ns);
    kd__free(lib);
    return kd__oom("library");
  }
  lib->kind = kind;
  lib->key = kind == KD_LIBRARY_IMPL ? key : KD_KEY_CATCH_ALL;
  def_lib *d = NULL;
  if (kind == KD_LIBRARY_DEF && !(d = kd__calloc(1, sizeof *d))) {
    kd__free(lib->ns);
    kd__free(lib->debug);
    kd__free(lib);
    return kd__oom("library");
  }
  kd_status st = KD_OK;
  pthread_mutex_lock(&kd__registry_lock);
  if (d) {
    for (def_lib *p = def_libs; p; p = p->next)
      if (!strcmp(p->lib->ns, ns)) {
        st = kd_set_error(KD_EEXIST,
                          "only one DEF library is allowed per namespace: '%s' is already defined "
                          "by the library opened at %s (use a FRAGMENT library to add to it); "
                          "this one is at %s",
                          ns, p->lib->debug, lib->debug);
        break;
      }
    if (st == KD_OK) {
      d->lib = lib;
      d->next = def_libs;
      def_libs = d;
    }
  }
  pthread_mutex_unlock(&kd__registry_lock);
  if (st) {
    kd__free(d);
    kd__free(lib->ns);
    kd__free(lib->debug);
    kd__free(lib);
    return st;
  }
  *out = lib;
  return KD_OK;
}

kd_status kd_library_open(kd_library_kind kind, const char *ns, kd_dispatch_key key,
                          const char *file, int line, kd_library **out) {
  char debug[512];
  snprintf(debug, sizeof debug, "%s:%d", file ? file : "?", line);
  return open_common(kind, ns, key, debug, out);
}

static void link_to_library(kd_library *lib, kd_registration *r) {
  r->lib = lib;
  r->lib_prev = NULL;
  r->lib_next = lib->regs;
  if (lib->regs) lib->regs->lib_prev = r;
  lib->regs = r;
}

static void unlink_from_library(kd_registration *r) {
  if (r->lib_prev) r->lib_prev->lib_next = r->lib_next;
  else r->lib->regs = r->lib_next;
  if (r->lib_next) r->lib_next->lib_prev = r->lib_prev;
}

static void unlink_from_list(kd_registration **head, kd_registration *r) {
  for (kd_registration **p = head; *p; p = &(*p)->op_next)
    if (*p == r) {
      *p = r->op_next;
      return;
    }
}

static void free_info(void *p) { kd__op_info_free(p); }

static kd__rejected_note *note_build(const kd_op *op, char *const *extra, size_t nextra,
                                     const kd_registration *const *extra_regs, bool *oom);
static void note_publish(kd_op *op, kd__rejected_note *note);

/* Undoes one registration; under the lock. */
static void release_locked(kd_registration *r) {
  if (r->companion) {
    kd_registration *c = r->companion;
    r->companion = NULL;
    c->owner = NULL;
    release_locked(c);
  }
  if (r->owner) { /* released on its own first: its owner forgets it */
    r->owner->companion = NULL;
    r->owner = NULL;
  }
  kd_op *op = r->op;
  switch (r->kind) {
    case KD__REG_DEF:
      unlink_from_list(&op->defs, r);
      kd__op_live_add(op, -1);
      if (!op->defs) {
        const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_relaxed);
        atomic_store_explicit(&op->fast_arg, -1, memory_order_release);
        atomic_store_explicit(&op->box1, -1, memory_order_release);
        atomic_store_explicit(&op->info, NULL, memory_order_release);
        if (info) {
          kd__op_rebuild_schema(op); /* drops the kernel-key plans made for the schema */
          kd__retire(&((kd__op_info *)info)->retire, free_info, (void *)info);
        }
        for (size_t i = 0; i < op->ntags; i++) kd__free(op->tags[i]);
        kd__free(op->tags);
        op->tags = NULL;
        op->ntags = 0;
        kd__notify(KD_EVENT_UNDEF, op, KD_KEY_UNDEFINED, r->debug);
      }
      break;
    case KD__REG_IMPL:
      if (r->rejected) { /* set aside: in no table */
        unlink_from_list(&op->rejected, r);
        bool nomem; /* then no note: the message only loses the reason */
        note_publish(op, note_build(op, NULL, 0, NULL, &nomem));
        kd__op_live_add(op, -1);
        if (!r->staged) kd__notify(KD_EVENT_IMPL_RELEASE, op, r->key, r->debug);
        kd__kernel_free(r->kernel);
        break;
      }
      if (r->staged) { /* a custom kernel never merged */
        unlink_from_list(&kd__staged, r);
        kd__kernel_free(r->kernel);
        break;
      }
      unlink_from_list(&op->impls, r);
      kd__op_live_add(op, -1);
      kd__op_rebuild_keys(op, kd_dispatch_key_expand(r->key));
      kd__notify(KD_EVENT_IMPL_RELEASE, op, r->key, r->debug);
      kd__kernel_free(r->kernel);
      break;
    case KD__REG_FALLBACK:
      unlink_from_list(&kd__fallbacks[r->key], r);
      kd__rebuild_all_keys(kd_keyset_of(r->key));
      kd__notify(KD_EVENT_FALLBACK_RELEASE, NULL, r->key, r->debug);
      kd__kernel_free(r->kernel);
      break;
  }
  unlink_from_library(r);
  kd__free(r->overrides);
  kd__free(r->rejected);
  kd__free(r);
}

void kd_registration_release(kd_registration *reg) {
  if (!reg) return;
  pthread_mutex_lock(&kd__registry_lock);
  release_locked(reg);
  pthread_mutex_unlock(&kd__registry_lock);
}

void kd_library_close(kd_library *lib) {
  if (!lib) return;
  pthread_mutex_lock(&kd__registry_lock);
  /* Release newest first, so stacked kernels unwind in order. */
  while (lib->regs) release_locked(lib->regs);
  for (def_lib **p = &def_libs; *p; p = &(*p)->next)
    if ((*p)->lib == lib) {
      def_lib *d = *p;
      *p = d->next;
      kd__free(d);
      break;
    }
  pthread_mutex_unlock(&kd__registry_lock);
  kd__free(lib->ns);
  kd__free(lib->debug);
  kd__free(lib);
}

/* `debug` is the kernel's or the library's string, both of which outlive
 * the registration. */
static kd_registration *new_registration(kd__reg_kind kind, const char *debug) {
  kd_registration *r = kd__calloc(1, sizeof *r);
  if (!r) return NULL;
  r->kind = kind;
  r->debug = debug;
  return r;
}

/* "ns::name.overload" for a name given to def or impl, checked. */
static kd_status qualify(const kd_library *lib, const char *schema_ns, const char *name,
                         size_t name_len, const char *overload, char *out, size_t cap) {
  if (schema_ns && *schema_ns && strcmp(schema_ns, lib->ns) != 0)
    return kd_set_error(KD_EINVAL,
                        "operator '%s::%.*s' is outside the namespace '%s' of the library opened "
                        "at %s",
                        schema_ns, (int)name_len, name, lib->ns, lib->debug);
  if (!is_identifier(name, name_len))
    return kd_set_error(KD_EINVAL, "illegal operator name '%.*s': expected an identifier",
                        (int)name_len, name);
  if (overload && *overload && !is_identifier(overload, strlen(overload)))
    return kd_set_error(KD_EINVAL, "illegal overload name '%s' for operator '%.*s'", overload,
                        (int)name_len, name);
  size_t ns_len = strlen(lib->ns), ov_len = overload ? strlen(overload) : 0;
  size_t need = ns_len + 2 + name_len + (ov_len ? 1 + ov_len : 0) + 1;
  if (need > cap)
    return kd_set_error(KD_EINVAL, "operator name '%.*s' is too long", (int)name_len, name);
  char *p = out;
  memcpy(p, lib->ns, ns_len);
  p += ns_len;
  *p++ = ':';
  *p++ = ':';
  memcpy(p, name, name_len);
  p += name_len;
  if (ov_len) {
    *p++ = '.';
    memcpy(p, overload, ov_len);
    p += ov_len;
  }
  *p = '\0';
  return KD_OK;
}

/* Splits "name.overload" (an impl's name, maybe with "ns::"). */
static kd_status qualify_name(const kd_library *lib, const char *name, char *out, size_t cap) {
  const char *ns_end = strstr(name, "::");
  char ns[128] = "";
  const char *base = name;
  if (ns_end) {
    snprintf(ns, sizeof ns, "%.*s", (int)(ns_end - name), name);
    base = ns_end + 2;
  }
  const char *dot = strchr(base, '.');
  size_t base_len = dot ? (size_t)(dot - base) : strlen(base);
  return qualify(lib, ns, base, base_len, dot ? dot + 1 : "", out, cap);
}

/* "kernel for 'ns::op' (CPU) registered at f.c:3": a kernel registration in
 * messages. */
static void kernel_who(const kd_op *op, kd_dispatch_key key, const char *debug, char *buf,
                       size_t cap) {
  snprintf(buf, cap, "kernel for '%s' (%s) registered at %s", op->name,
           kd_dispatch_key_name(key), debug ? debug : "?");
}

/* Checks one kernel registration against a schema: its C signature, and for
 * a kernel-key registration its argument definitions. KD_ETYPE or KD_EINVAL
 * with a message that names the registration and lists every difference. */
static kd_status check_impl(const kd_op *op, const kd_schema *schema, const kd_registration *r) {
  char who[700];
  kernel_who(op, r->key, r->debug, who, sizeof who);
  if (r->kernel->signature) {
    kd_status st = kd__signature_check(op->name, schema, r->kernel->signature,
                                       r->kernel->signature_text, who);
    if (st) return st;
  }
  if (r->keyed) {
    kd_status st = kd__argdefs_check(op->name, schema, r);
    if (st) {
      /* Its message names the registration without the key: add it. */
      char msg[1024], plain[700];
      snprintf(msg, sizeof msg, "%s", kd_last_error());
      snprintf(plain, sizeof plain, "kernel for '%s' registered at %s", op->name,
               r->debug ? r->debug : "?");
      size_t n = strlen(plain);
      if (strncmp(msg, plain, n) == 0) return kd_set_error(st, "%s%s", who, msg + n);
      return kd_set_error(st, "%s: %s", who, msg);
    }
  }
  return KD_OK;
}

/* The kernels a definition sets aside (set_aside_prepare .. _commit). */
typedef struct set_aside {
  size_t n;              /* registrations that do not fit the schema */
  kd_registration **regs;
  char **why;            /* their messages, owned until committed */
  size_t nimpls;         /* op->impls as it was, to restore it */
  kd_registration **impls;
  size_t nstaged;        /* kd__staged as it was */
  kd_registration **staged;
  kd_keyset keys;        /* the slots the linked ones leave */
  kd__rejected_note *note;
} set_aside;

static void set_aside_free(set_aside *sa) {
  for (size_t i = 0; i < sa->n; i++) kd__free(sa->why[i]);
  kd__free(sa->regs);
  kd__free(sa->why);
  kd__free(sa->impls);
  kd__free(sa->staged);
  kd__free(sa->note);
  memset(sa, 0, sizeof *sa);
}

/* The note of op->rejected plus `extra` (the messages of registrations being
 * set aside for `extra_keys`), or NULL when there is nothing to say. *oom is
 * set when it could not be allocated. */
static kd__rejected_note *note_build(const kd_op *op, char *const *extra, size_t nextra,
                                     const kd_registration *const *extra_regs, bool *oom) {
  kd_keyset keys = 0;
  size_t len = 0, count = 0;
  for (const kd_registration *r = op->rejected; r; r = r->op_next, count++) {
    keys |= kd_dispatch_key_expand(r->key);
    len += strlen(r->rejected) + 2;
  }
  for (size_t i = 0; i < nextra; i++, count++) {
    keys |= kd_dispatch_key_expand(extra_regs[i]->key);
    len += strlen(extra[i]) + 2;
  }
  *oom = false;
  if (!count) return NULL;
  kd__rejected_note *note = kd__malloc(sizeof *note + len + 1);
  if (!note) {
    *oom = true;
    return NULL;
  }
  note->keys = keys & KD__RUNTIME_KEYS;
  kd__fmt f = kd__fmt_init(note->text, len + 1);
  for (size_t i = 0; i < nextra; i++) kd__fmt_printf(&f, "%s%s", f.len ? "; " : "", extra[i]);
  for (const kd_registration *r = op->rejected; r; r = r->op_next)
    kd__fmt_printf(&f, "%s%s", f.len ? "; " : "", r->rejected);
  return note;
}

static void free_note(void *p) { kd__free(p); }

/* Publishes op's note (NULL: none), retiring the one it replaces. */
static void note_publish(kd_op *op, kd__rejected_note *note) {
  kd__rejected_note *old =
      atomic_exchange_explicit(&op->rejected_note, note, memory_order_acq_rel);
  if (old) kd__retire(&old->retire, free_note, old);
}

const char *kd__rejected_why(const kd_op *op, kd_dispatch_key key) {
  const kd__rejected_note *note =
      atomic_load_explicit(&((kd_op *)op)->rejected_note, memory_order_acquire);
  return note && (note->keys & kd_keyset_of(key)) ? note->text : NULL;
}

/* Finds the kernels registered for op (linked, or staged custom kernels)
 * that do not fit the schema a definition brings, and prepares everything
 * setting them aside needs: their messages, the note, the slots to rebuild.
 * Changes nothing; KD_ENOMEM (with sa freed) when out of memory. */
static kd_status set_aside_prepare(const kd_op *op, const kd_schema *schema, set_aside *sa) {
  memset(sa, 0, sizeof *sa);
  /* First only count, so that a definition whose kernels all fit (every
   * one, nearly always) allocates nothing here. */
  size_t cap = 0;
  for (const kd_registration *r = op->impls; r; r = r->op_next) {
    sa->nimpls++;
    cap += check_impl(op, schema, r) != KD_OK;
  }
  for (const kd_registration *r = kd__staged; r; r = r->op_next) {
    sa->nstaged++;
    cap += r->op == op && check_impl(op, schema, r) != KD_OK;
  }
  if (!cap) {
    sa->nimpls = sa->nstaged = 0;
    return KD_OK;
  }
  sa->regs = kd__calloc(cap, sizeof *sa->regs);
  sa->why = kd__calloc(cap, sizeof *sa->why);
  sa->impls = sa->nimpls ? kd__calloc(sa->nimpls, sizeof *sa->impls) : NULL;
  sa->staged = sa->nstaged ? kd__calloc(sa->nstaged, sizeof *sa->staged) : NULL;
  if (!sa->regs || !sa->why || (sa->nimpls && !sa->impls) || (sa->nstaged && !sa->staged))
    goto oom;
  size_t i = 0;
  for (kd_registration *r = op->impls; r; r = r->op_next) sa->impls[i++] = r;
  i = 0;
  for (kd_registration *r = kd__staged; r; r = r->op_next) sa->staged[i++] = r;
  kd_registration *const lists[2] = {op->impls, kd__staged};
  for (int l = 0; l < 2; l++)
    for (kd_registration *r = lists[l]; r; r = r->op_next) {
      if (r->op != op && l == 1) continue;
      if (check_impl(op, schema, r) == KD_OK) continue;
      char *why = kd__malloc(strlen(kd_last_error()) + 1);
      if (!why) goto oom;
      strcpy(why, kd_last_error());
      sa->regs[sa->n] = r;
      sa->why[sa->n++] = why;
      if (!r->staged) sa->keys |= kd_dispatch_key_expand(r->key);
    }
  if (sa->n) {
    bool nomem;
    sa->note = note_build(op, sa->why, sa->n, (const kd_registration *const *)sa->regs, &nomem);
    if (nomem) goto oom;
  }
  return KD_OK;
oom:
  set_aside_free(sa);
  return kd__oom("setting aside kernels that do not fit the schema");
}

/* Moves the registrations out of op->impls / kd__staged (before the
 * definition's transaction is prepared, which must not see them). */
static void set_aside_unlink(kd_op *op, set_aside *sa) {
  for (size_t i = 0; i < sa->n; i++)
    unlink_from_list(sa->regs[i]->staged ? &kd__staged : &op->impls, sa->regs[i]);
}

/* Undoes set_aside_unlink: op->impls and kd__staged as they were. */
static void set_aside_relink(kd_op *op, set_aside *sa) {
  if (!sa->n) return;
  op->impls = NULL;
  for (size_t i = sa->nimpls; i-- > 0;) {
    sa->impls[i]->op_next = op->impls;
    op->impls = sa->impls[i];
  }
  kd__staged = NULL;
  for (size_t i = sa->nstaged; i-- > 0;) {
    sa->staged[i]->op_next = kd__staged;
    kd__staged = sa->staged[i];
  }
}

/* Commits: the registrations join op->rejected with their messages, the
 * note is published, and each is warned about. Cannot fail. */
static void set_aside_commit(kd_op *op, set_aside *sa) {
  for (size_t i = 0; i < sa->n; i++) {
    kd_registration *r = sa->regs[i];
    r->rejected = sa->why[i];
    sa->why[i] = NULL;
    r->op_next = op->rejected;
    op->rejected = r;
    if (r->staged) kd__op_live_add(op, 1); /* held now, as every set-aside kernel */
    kd_warn("%s; the kernel is set aside: it takes no part in dispatch until it is released",
            r->rejected);
  }
  if (sa->n) {
    note_publish(op, sa->note);
    sa->note = NULL;
  }
  sa->n = 0;
  set_aside_free(sa);
}

/* What the registration being made is, for an out-of-memory message:
 * "defining 'ns::op'", "registering a kernel for 'op' (CPU)". */
static _Thread_local char noted_what[300];

/* Records the first failure of a registration made by a descriptor's body
 * (kd_library_open_desc). */
static kd_status noted(kd_library *lib, kd_status st) {
  if (st == KD_ENOMEM && strncmp(kd_last_error(), "out of memory building", 22) != 0 &&
      strncmp(kd_last_error(), "registering ", 12) != 0 &&
      strncmp(kd_last_error(), "defining ", 9) != 0) {
    /* Say which registration: the message of an allocation names only what
     * was allocated. (The table's messages name the operator and key.) */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    kd_set_error(KD_ENOMEM, "%s: %s; nothing was changed", noted_what, msg);
  }
  if (st && lib && lib->in_body && !lib->body_status) {
    lib->body_status = st;
    snprintf(lib->body_error, sizeof lib->body_error, "%s", kd_last_error());
  }
  return st;
}

static kd_status def_common(kd_library *lib, const char *schema_text, const char *const *tags,
                            size_t ntags, kd_registration **out) {
  if (out) *out = NULL;
  if (!lib || !schema_text) return kd_set_error(KD_EINVAL, "kd_library_def: NULL argument");
  if (lib->kind == KD_LIBRARY_IMPL)
    return kd_set_error(KD_ESTATE, "kd_library_def: the library opened at %s is an IMPL library; "
                        "operators are defined by DEF and FRAGMENT libraries",
                        lib->debug);
  kd_schema *schema;
  kd_status st = kd_schema_parse(schema_text, strlen(schema_text), &schema);
  if (st) return st;
  char qualified[512];
  st = qualify(lib, kd_schema_namespace(schema), kd_schema_name(schema),
               strlen(kd_schema_name(schema)), kd_schema_overload(schema), qualified,
               sizeof qualified);
  char **tag_copy = NULL;
  kd_registration *r = NULL;
  if (st == KD_OK) {
    tag_copy = ntags ? kd__calloc(ntags, sizeof *tag_copy) : NULL;
    bool oom = ntags && !tag_copy;
    for (size_t i = 0; !oom && i < ntags; i++) oom = !(tag_copy[i] = kd__strdup(tags[i]));
    if (oom || !(r = new_registration(KD__REG_DEF, lib->debug))) st = kd__oom("registration");
  }
  kd__op_info *info = NULL;
  kd_op *op = NULL;
  kd__tx tx;
  kd__tx_init(&tx);
  set_aside aside;
  memset(&aside, 0, sizeof aside);
  if (st == KD_OK) {
    pthread_mutex_lock(&kd__registry_lock);
    st = kd__op_get(qualified, strlen(qualified), &op);
    const kd__op_info *cur = st ? NULL : atomic_load_explicit(&op->info, memory_order_relaxed);
    if (cur) {
      /* Defined already: the same schema adds a reference, another is an error. */
      char a[1024], b[1024];
      kd_schema_format(cur->schema, a, sizeof a);
      kd_schema_format(schema, b, sizeof b);
      const char *pa = strstr(a, "::") ? strstr(a, "::") + 2 : a;
      const char *pb = strstr(b, "::") ? strstr(b, "::") + 2 : b;
      if (strcmp(pa, pb) != 0)
        st = kd_set_error(KD_EEXIST,
                          "operator '%s' is already defined with schema '%s' (at %s); it cannot "
                          "also be defined as '%s' (at %s)",
                          qualified, a, op->defs->debug, b, lib->debug);
      if (st == KD_OK) { /* alive already: nothing to prepare */
        r->op_next = op->defs;
        op->defs = r;
      }
      kd_schema_free(schema);
      schema = NULL;
    } else if (st == KD_OK) {
      st = kd__op_info_new(schema, &info); /* takes the schema */
      schema = NULL;
      /* Kernels registered before whose signature or argument definitions
       * do not fit the schema are set aside, not a reason to refuse it. */
      if (st == KD_OK) st = set_aside_prepare(op, info->schema, &aside);
      /* Kernel-key plans depend on the schema: made now, published below.
       * Prepared with `r` linked and the kernels set aside unlinked: an
       * operator nothing held before gets the slots of keys with a fallback
       * too (kd__tx_add_schema), and the slots they leave are rebuilt. */
      if (st == KD_OK) {
        set_aside_unlink(op, &aside);
        r->op_next = op->defs;
        op->defs = r;
        if ((st = kd__tx_add_schema(&tx, op, info, aside.keys))) {
          op->defs = r->op_next;
          r->op_next = NULL;
          set_aside_relink(op, &aside);
        }
      }
      if (st) {
        kd__tx_abort(&tx);
        kd__op_info_free(info);
        info = NULL;
        set_aside_free(&aside);
      }
    }
    if (st == KD_OK) {
      r->op = op;
      kd__op_live_add(op, 1);
      link_to_library(lib, r);
      if (info) {
        op->tags = tag_copy;
        op->ntags = ntags;
        tag_copy = NULL;
        atomic_store_explicit(&op->info, info, memory_order_release);
        atomic_store_explicit(&op->fast_arg, info->single_tensor, memory_order_release);
        atomic_store_explicit(&op->box1, info->box1, memory_order_release);
        kd__tx_commit(&tx);
        set_aside_commit(op, &aside);
        kd__notify(KD_EVENT_DEF, op, KD_KEY_UNDEFINED, r->debug);
      }
    }
    pthread_mutex_unlock(&kd__registry_lock);
  }
  for (size_t i = 0; tag_copy && i < ntags; i++) kd__free(tag_copy[i]);
  kd__free(tag_copy);
  kd_schema_free(schema);
  if (st) {
    kd__free(r);
    return st;
  }
  if (out) *out = r;
  return KD_OK;
}

kd_status kd_library_def(kd_library *lib, const char *schema_text, const char *const *tags,
                         size_t ntags, kd_registration **out) {
  snprintf(noted_what, sizeof noted_what, "defining '%.200s'", schema_text ? schema_text : "?");
  return noted(lib, def_common(lib, schema_text, tags, ntags, out));
}

/* The registration a new one for `key` overrides: the same key, and for
 * kernel keys the same layout and a shared dtype. */
static const kd_registration *overridden(const kd_op *op, const kd_registration *r) {
  const kd_registration *prev = op->impls;
  while (prev && (prev->key != r->key || prev->keyed != r->keyed ||
                  (r->keyed && (prev->layout != r->layout || !(prev->dtypes & r->dtypes)))))
    prev = prev->op_next;
  return prev;
}

static void warn_override(const kd_op *op, const kd_registration *prev, const kd_registration *r) {
  kd_warn("overriding a previously registered kernel for the same operator and the same "
          "dispatch key\n  operator: %s\n  dispatch key: %s\n  previous kernel: registered at "
          "%s\n       new kernel: registered at %s",
          op->name, kd_dispatch_key_name(r->key), prev->debug ? prev->debug : "?",
          r->debug ? r->debug : "?");
}

/* Makes a registration live in dispatch (under the lock), or fails with
 * KD_ENOMEM and changes nothing. */
static kd_status link_impl(kd_op *op, kd_registration *r) {
  const kd_registration *prev = overridden(op, r);
  r->op_next = op->impls;
  op->impls = r;
  /* Prepared with `r` linked: an operator nothing held before gets the
   * slots of keys with a fallback too (kd__tx_add_keys). */
  kd__tx tx;
  kd__tx_init(&tx);
  kd_status st = kd__tx_add_keys(&tx, op, kd_dispatch_key_expand(r->key),
                                 atomic_load_explicit(&op->info, memory_order_relaxed));
  if (st) {
    kd__tx_abort(&tx);
    op->impls = r->op_next;
    r->op_next = NULL;
    return st;
  }
  if (prev) warn_override(op, prev, r);
  kd__op_live_add(op, 1);
  kd__tx_commit(&tx);
  kd__notify(KD_EVENT_IMPL, op, r->key, r->debug);
  return KD_OK;
}

kd_status kd__merge_staged_locked(size_t *merged) {
  /* kd__staged is newest first: link oldest first so the newest ends up on
   * top. Everything is linked, then every operator's table prepared once;
   * when that fails, everything is unlinked again. */
  size_t n = 0;
  for (kd_registration *r = kd__staged; r; r = r->op_next) n++;
  if (merged) *merged = 0;
  if (n == 0) return KD_OK;
  /* The registrations, oldest first, then the one each overrides. */
  kd_registration **list = kd__malloc(2 * n * sizeof *list);
  if (!list)
    return kd_set_error(KD_ENOMEM,
                        "out of memory merging %zu custom kernels (the newest for '%s'); nothing "
                        "was merged",
                        n, kd__staged->op->name);
  const kd_registration **prev = (const kd_registration **)(list + n);
  size_t i = n;
  for (kd_registration *r = kd__staged; r; r = r->op_next) list[--i] = r;
  for (i = 0; i < n; i++) {
    kd_registration *r = list[i];
    prev[i] = overridden(r->op, r);
    r->op_next = r->op->impls;
    r->op->impls = r;
  }
  kd__tx tx;
  kd__tx_init(&tx);
  kd_status st = KD_OK;
  for (i = 0; i < n && st == KD_OK; i++) {
    kd_op *op = list[i]->op;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++) seen = list[j]->op == op;
    if (seen) continue;
    kd_keyset keys = 0;
    for (size_t j = i; j < n; j++)
      if (list[j]->op == op) keys |= kd_dispatch_key_expand(list[j]->key);
    st = kd__tx_add_keys(&tx, op, keys, atomic_load_explicit(&op->info, memory_order_relaxed));
  }
  if (st) {
    kd__tx_abort(&tx);
    /* Newest linked first: unlink in the opposite order, and restore the
     * staged list (r->op_next is rebuilt below). */
    for (i = n; i-- > 0;) {
      kd_registration *r = list[i];
      KD__ASSERT(r->op->impls == r);
      r->op->impls = r->op_next;
    }
    kd__staged = NULL;
    for (i = 0; i < n; i++) {
      list[i]->op_next = kd__staged;
      kd__staged = list[i];
    }
    kd__free(list);
    return st;
  }
  kd__staged = NULL;
  for (i = 0; i < n; i++) {
    kd_registration *r = list[i];
    r->staged = false;
    if (prev[i]) warn_override(r->op, prev[i], r);
    kd__op_live_add(r->op, 1);
  }
  kd__tx_commit(&tx);
  for (i = 0; i < n; i++) kd__notify(KD_EVENT_IMPL, list[i]->op, list[i]->key, list[i]->debug);
  kd__free(list);
  if (merged) *merged = n;
  return KD_OK;
}

/* A kernel-key registration's key argument must agree with the others of
 * its (operator, key). */
static kd_status check_key_arg(const kd_op *op, const kd_registration *r) {
  const kd_registration *lists[2] = {op->impls, kd__staged};
  for (int l = 0; l < 2; l++)
    for (const kd_registration *o = lists[l]; o; o = o->op_next)
      if (o->op == op && o->keyed && o->key == r->key && o->key_arg != r->key_arg)
        return kd_set_error(KD_EEXIST,
                            "kernel for '%s' (%s) registered at %s selects by argument %d, but "
                            "the one registered at %s selects by argument %d (-1: the first "
                            "tensor)",
                            op->name, kd_dispatch_key_name(r->key), r->debug ? r->debug : "?",
                            r->key_arg, o->debug ? o->debug : "?", o->key_arg);
  return KD_OK;
}

/* `spec`: a kernel-key registration; NULL for a plain one. */
static kd_status impl_common_(kd_library *lib, const char *name, kd_dispatch_key key,
                             const kd_kernel *kernel, const kd_keyed_kernel *spec,
                             kd_registration **out) {
  if (out) *out = NULL;
  if (!lib || !name || !kernel) return kd_set_error(KD_EINVAL, "kd_library_impl: NULL argument");
  if (!kd_dispatch_key_is_runtime(key) && !kd_dispatch_key_is_alias(key))
    return kd_set_error(KD_EINVAL, "kd_library_impl(%s): invalid dispatch key %d", name, (int)key);
  char qualified[512];
  kd_status st = qualify_name(lib, name, qualified, sizeof qualified);
  if (st) return st;
  kd__argdef_override *overrides = NULL;
  size_t noverrides = 0;
  int key_arg = -1;
  if (spec && (st = kd__collect_overrides(qualified, spec, &overrides, &noverrides, &key_arg)))
    return st;
  kd__kernel *k;
  if ((st = kd__kernel_new(kernel, lib->debug, &k))) {
    kd__free(overrides);
    return st;
  }
  kd_registration *r = new_registration(KD__REG_IMPL, k->debug_text ? k->debug_text : lib->debug);
  if (!r) {
    k->k.destroy_data = NULL;
    kd__kernel_free(k);
    kd__free(overrides);
    return kd__oom("registration");
  }
  r->kernel = k;
  r->key = key;
  r->keyed = spec != NULL;
  r->layout = spec ? spec->layout : KD_ALL_LAYOUT;
  r->dtypes = (spec ? spec->dtypes : KD_ALL_DTYPES) & KD_ALL_DTYPES;
  r->flags = spec ? spec->flags : 0;
  r->key_arg = key_arg;
  r->overrides = overrides;
  r->noverrides = noverrides;
  pthread_mutex_lock(&kd__registry_lock);
  kd_op *op;
  st = kd__op_get(qualified, strlen(qualified), &op);
  const kd__op_info *info = st ? NULL : atomic_load_explicit(&op->info, memory_order_relaxed);
  if (st == KD_OK && info) {
    /* The schema is known: a kernel that does not fit it is refused, named
     * by its own registration, with every difference. */
    st = check_impl(op, info->schema, r);
  }
  if (st == KD_OK && spec) st = check_key_arg(op, r);
  if (st) {
    pthread_mutex_unlock(&kd__registry_lock);
    k->k.destroy_data = NULL; /* the caller keeps its data */
    kd__kernel_free(k);
    kd__free(overrides);
    kd__free(r);
    return st;
  }
  r->op = op;
  if (r->flags & KD_KERNEL_CUSTOM) {
    r->staged = true; /* takes no part in dispatch until merged */
    r->op_next = kd__staged;
    kd__staged = r;
  } else if ((st = link_impl(op, r))) {
    pthread_mutex_unlock(&kd__registry_lock);
    k->k.destroy_data = NULL; /* the caller keeps its data */
    kd__kernel_free(k);
    kd__free(overrides);
    kd__free(r);
    return st;
  }
  link_to_library(lib, r);
  pthread_mutex_unlock(&kd__registry_lock);
  if (out) *out = r;
  return KD_OK;
}

static kd_status impl_common(kd_library *lib, const char *name, kd_dispatch_key key,
                             const kd_kernel *kernel, const kd_keyed_kernel *spec,
                             kd_registration **out) {
  snprintf(noted_what, sizeof noted_what, "registering a kernel for '%.200s' (%s)",
           name ? name : "?", kd_dispatch_key_name(key));
  return noted(lib, impl_common_(lib, name, key, kernel, spec, out));
}

kd_status kd_library_impl(kd_library *lib, const char *name, const kd_kernel *kernel,
                          kd_registration **out) {
  if (!lib) return kd_set_error(KD_EINVAL, "kd_library_impl: NULL library");
  return impl_common(lib, name, lib->key, kernel, NULL, out);
}

static kd_status impl_keyed_ex(kd_library *lib, const char *name,
                               const kd_keyed_kernel *given, kd_registration **out) {
  if (out) *out = NULL;
  const char *n = name ? name : "(null)";
  if (!lib || !given)
    return kd_set_error(KD_EINVAL, "kd_library_impl_keyed(%s): NULL argument", n);
  /* Any accepted version, read into this version's layout. */
  kd_keyed_kernel copy;
  char where[300];
  snprintf(where, sizeof where, "kd_library_impl_keyed(%.200s, %s)", n,
           kd_dispatch_key_name(lib->key));
  kd_status vst = kd__abi_copy(&kd__abi_keyed_kernel, given, &copy, where, NULL);
  if (vst) return vst;
  const kd_keyed_kernel *spec = &copy;
  if (!spec->kernel)
    return kd_set_error(KD_EINVAL, "kd_library_impl_keyed(%s): NULL argument", n);
  if (!kd_dispatch_key_is_runtime(lib->key))
    return kd_set_error(KD_EINVAL,
                        "kd_library_impl_keyed(%s): kernel keys need a library for a runtime key, "
                        "not %s",
                        n, kd_dispatch_key_name(lib->key));
  if (spec->layout != KD_ALL_LAYOUT && (spec->layout < 0 || spec->layout >= KD_LAYOUT_COUNT))
    return kd_set_error(KD_EINVAL, "kd_library_impl_keyed(%s): invalid layout %d", n,
                        spec->layout);
  if (!(spec->dtypes & KD_ALL_DTYPES))
    return kd_set_error(KD_EINVAL, "kd_library_impl_keyed(%s): the kernel serves no dtype", n);
  if (spec->kernel->kind != KD_KERNEL_FUNCTION)
    return kd_set_error(KD_EINVAL,
                        "kd_library_impl_keyed(%s): a kernel-key kernel must be a function "
                        "(plain, boxed or closure)",
                        n);
  if (spec->flags & ~(KD_KERNEL_CUSTOM | KD_KERNEL_OVERRIDE))
    return kd_set_error(KD_EINVAL, "kd_library_impl_keyed(%s): unknown flags 0x%x", n,
                        spec->flags);
  if (spec->key_arg < -1 || spec->key_arg >= 64)
    return kd_set_error(KD_EINVAL, "kd_library_impl_keyed(%s): invalid key argument %d", n,
                        spec->key_arg);
  return impl_common(lib, name, lib->key, spec->kernel, spec, out);
}

kd_status kd_library_impl_keyed_ex(kd_library *lib, const char *name,
                                   const kd_keyed_kernel *spec, kd_registration **out) {
  snprintf(noted_what, sizeof noted_what, "registering a kernel for '%.200s' (%s)",
           name ? name : "?", lib ? kd_dispatch_key_name(lib->key) : "?");
  return noted(lib, impl_keyed_ex(lib, name, spec, out));
}

kd_status kd_library_impl_keyed(kd_library *lib, const char *name, int layout,
                                kd_dtype_set dtypes, const kd_kernel *kernel,
                                kd_registration **out) {
  kd_keyed_kernel spec = {KD_KEYED_KERNEL_API_VERSION, layout, dtypes, kernel, 0, -1, NULL, NULL};
  return kd_library_impl_keyed_ex(lib, name, &spec, out);
}

kd_status kd_library_impl_key(kd_library *lib, const char *name, kd_dispatch_key key,
                              const kd_kernel *kernel, kd_registration **out) {
  if (!lib) return kd_set_error(KD_EINVAL, "kd_library_impl_key: NULL library");
  if (lib->kind == KD_LIBRARY_IMPL && lib->key != KD_KEY_CATCH_ALL && key != lib->key)
    return kd_set_error(KD_EINVAL,
                        "kd_library_impl_key(%s): the IMPL library opened at %s is for key %s, "
                        "not %s",
                        name ? name : "(null)", lib->debug, kd_dispatch_key_name(lib->key),
                        kd_dispatch_key_name(key));
  return impl_common(lib, name, key, kernel, NULL, out);
}

static kd_status def_kernel_common(kd_library *lib, const char *name, const kd_kernel *kernel,
                                   kd_registration **out) {
  if (out) *out = NULL;
  if (!lib || !name || !kernel) return kd_set_error(KD_EINVAL, "kd_library_def_kernel: NULL argument");
  if (!kernel->signature)
    return kd_set_error(KD_EINVAL,
                        "kd_library_def_kernel(%s): the kernel has no signature to infer the "
                        "schema from",
                        name);
  kd_schema *sig;
  kd_status st = kd__signature_parse(kernel->signature, &sig);
  if (st) return st;
  char text[1024], schema[1200];
  kd_schema_format(sig, text, sizeof text); /* "_(Tensor _0, int _1) -> Tensor" */
  kd_schema_free(sig);
  snprintf(schema, sizeof schema, "%s%s", name, text + 1);
  kd_registration *def, *impl;
  if ((st = kd_library_def(lib, schema, NULL, 0, &def))) return st;
  if ((st = impl_common(lib, name, KD_KEY_CATCH_ALL, kernel, NULL, &impl))) {
    kd_registration_release(def);
    return st;
  }
  pthread_mutex_lock(&kd__registry_lock);
  def->companion = impl;
  impl->owner = def;
  pthread_mutex_unlock(&kd__registry_lock);
  if (out) *out = def;
  return KD_OK;
}

static kd_status fallback_common(kd_library *lib, const kd_kernel *kernel,
                                 kd_registration **out) {
  if (out) *out = NULL;
  if (!lib || !kernel) return kd_set_error(KD_EINVAL, "kd_library_fallback: NULL argument");
  if (lib->kind != KD_LIBRARY_IMPL || !kd_dispatch_key_is_runtime(lib->key))
    return kd_set_error(KD_EINVAL,
                        "kd_library_fallback: the library opened at %s must be an IMPL library "
                        "for a runtime key, not %s",
                        lib->debug, kd_dispatch_key_name(lib->key));
  if (kernel->kind == KD_KERNEL_FUNCTOR || (kernel->kind == KD_KERNEL_FUNCTION && !kernel->boxed))
    return kd_set_error(KD_EINVAL,
                        "kd_library_fallback(%s): a fallback must be a boxed function, a "
                        "fallthrough or not-supported, as it serves every operator",
                        kd_dispatch_key_name(lib->key));
  kd__kernel *k;
  kd_status st = kd__kernel_new(kernel, lib->debug, &k);
  if (st) return st;
  kd_registration *r = new_registration(KD__REG_FALLBACK, k->debug_text ? k->debug_text : lib->debug);
  if (!r) {
    k->k.destroy_data = NULL;
    kd__kernel_free(k);
    return kd__oom("registration");
  }
  r->kernel = k;
  r->key = lib->key;
  pthread_mutex_lock(&kd__registry_lock);
  if (kd__fallbacks[lib->key]) {
    st = kd_set_error(KD_EEXIST,
                      "a fallback for dispatch key %s is already registered (at %s); the one at "
                      "%s cannot also be",
                      kd_dispatch_key_name(lib->key), kd__fallbacks[lib->key]->debug, r->debug);
    pthread_mutex_unlock(&kd__registry_lock);
    k->k.destroy_data = NULL;
    kd__kernel_free(k);
    kd__free(r);
    return st;
  }
  kd__fallbacks[lib->key] = r;
  kd__tx tx;
  kd__tx_init(&tx);
  if ((st = kd__tx_add_all(&tx, kd_keyset_of(lib->key)))) {
    kd__tx_abort(&tx);
    kd__fallbacks[lib->key] = NULL;
    pthread_mutex_unlock(&kd__registry_lock);
    k->k.destroy_data = NULL;
    kd__kernel_free(k);
    kd__free(r);
    return st;
  }
  link_to_library(lib, r);
  kd__tx_commit(&tx);
  kd__notify(KD_EVENT_FALLBACK, NULL, lib->key, r->debug);
  pthread_mutex_unlock(&kd__registry_lock);
  if (out) *out = r;
  return KD_OK;
}

kd_status kd_library_def_kernel(kd_library *lib, const char *name, const kd_kernel *kernel,
                                kd_registration **out) {
  kd_status st = def_kernel_common(lib, name, kernel, out);
  /* (the def and impl it makes set their own prefixes) */
  snprintf(noted_what, sizeof noted_what, "defining '%.200s' from its kernel",
           name ? name : "?");
  return noted(lib, st);
}

kd_status kd_library_fallback(kd_library *lib, const kd_kernel *kernel, kd_registration **out) {
  snprintf(noted_what, sizeof noted_what, "registering the fallback for %s",
           lib ? kd_dispatch_key_name(lib->key) : "?");
  return noted(lib, fallback_common(lib, kernel, out));
}

/* ---- Static registration ----------------------------------------------------------- */

typedef struct opened_desc {
  const kd_library_desc *desc;
  kd_library *lib;
  struct opened_desc *next;
} opened_desc;
static opened_desc *opened;
static pthread_mutex_t desc_lock = PTHREAD_MUTEX_INITIALIZER;

kd_status kd_library_open_desc(const kd_library_desc *given) {
  /* Any accepted version, read into this version's layout; `given` stays the
   * descriptor's identity (what kd_library_close_desc is called with). */
  kd_library_desc copy;
  kd_status vst = kd__abi_copy(&kd__abi_library_desc, given, &copy, "kd_library_open_desc", NULL);
  const kd_library_desc *desc = &copy;
  if (vst == KD_OK && !desc->body)
    vst = kd_set_error(KD_EINVAL,
                       "kd_library_open_desc: the descriptor of '%s' at %s:%d has no body",
                       desc->ns ? desc->ns : "(null)", desc->file ? desc->file : "?", desc->line);
  if (vst) {
    /* Also warned, as below: a constructor has no caller to tell. */
    if (given) kd_warn("%s", kd_last_error());
    return vst;
  }
  char idtext[160] = "", debug[700];
  if (desc->id) snprintf(idtext, sizeof idtext, " (id %.120s)", desc->id);
  snprintf(debug, sizeof debug, "%.500s:%d%s", desc->file ? desc->file : "?", desc->line,
           idtext);
  pthread_mutex_lock(&desc_lock);
  for (opened_desc *o = opened; o; o = o->next)
    if (o->desc == given) {
      pthread_mutex_unlock(&desc_lock);
      return KD_OK;
    }
  opened_desc *o = kd__calloc(1, sizeof *o);
  kd_status st = o ? open_common(desc->kind, desc->ns, desc->key, debug, &o->lib)
                   : kd__oom("library descriptor");
  if (st) {
    kd__free(o);
    pthread_mutex_unlock(&desc_lock);
    kd_warn("could not open the library of '%s' at %s: %s", desc->ns, debug, kd_last_error());
    kd__plugin_note_failure(given, st, kd_last_error());
    return st;
  }
  o->desc = given;
  o->next = opened;
  opened = o;
  pthread_mutex_unlock(&desc_lock);
  kd_library *lib = o->lib;
  lib->in_body = true;
  desc->body(lib);
  lib->in_body = false;
  if (lib->body_status != KD_ENOMEM) {
    /* A library opened while a plugin loads is the plugin's. */
    st = kd__plugin_note_desc(given, lib->body_status, lib->body_error);
    if (st == KD_OK) return KD_OK;
    kd_library_close_desc(given);
    kd_warn("%s", kd_last_error());
    return st;
  }
  /* All or nothing: what the body registered is released, and the
   * descriptor is forgotten, so that a later call tries again. */
  st = kd_set_error(KD_ENOMEM, "the library of '%s' at %s is not opened: %s", desc->ns, debug,
                    lib->body_error);
  kd_library_close_desc(given);
  kd_warn("%s", kd_last_error());
  kd__plugin_note_failure(given, st, kd_last_error());
  return st;
}

void kd_library_close_desc(const kd_library_desc *desc) {
  if (!desc) return;
  pthread_mutex_lock(&desc_lock);
  opened_desc *found = NULL;
  for (opened_desc **p = &opened; *p; p = &(*p)->next)
    if ((*p)->desc == desc) {
      found = *p;
      *p = found->next;
      break;
    }
  pthread_mutex_unlock(&desc_lock);
  if (!found) return;
  /* Closed outside desc_lock: a listener called while the registrations
   * are released may open a descriptor. */
  kd_library_close(found->lib);
  kd__free(found);
}
