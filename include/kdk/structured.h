/*
 * kdk/structured.h: the runtime of structured kernels (docs/CODEGEN.md),
 * part of the kernel-author kit (kdk/common.h).
 *
 * A generated wrapper puts a kdk_structured on its stack, runs the operator's
 * meta function (which asks for outputs with kdk_structured_set_output), then
 * its impl (which writes kdk_structured_output(s, i)), then
 * kdk_structured_finish (copies proxies back), and always
 * kdk_structured_release.
 *
 * ABI: kdk_structured lives on the caller's stack, so its layout is part of
 * libkdops' ABI. kdk_structured_init records KDK_API_VERSION and
 * sizeof(kdk_structured) as the caller was compiled; libkdops checks both
 * (kdk_structured_set_output, kdk_iter_build) and refuses a mismatch with
 * KD_EUNSUPPORTED ("kdk_structured of kit ABI 1, 96 bytes, but libkdops has
 * ...").
 */
#ifndef KDK_STRUCTURED_H
#define KDK_STRUCTURED_H

#include <stdint.h>

#include "kd/ops.h"
#include "kdk/common.h"

KD_EXTERN_C_BEGIN

#define KDK_STRUCTURED_MAX_OUT 4

typedef enum kdk_structured_mode {
  KDK_STRUCTURED_FUNCTIONAL = 0, /* outputs allocated by set_output */
  KDK_STRUCTURED_INPLACE = 1,    /* output i is the given self: it must fit exactly */
  KDK_STRUCTURED_OUT = 2,        /* output i is the given out: resized, proxied, checked */
  KDK_STRUCTURED_META = 3,       /* as FUNCTIONAL, on the meta device; impl is not run */
} kdk_structured_mode;

typedef struct kdk_structured {
  uint32_t api_version;    /* KDK_API_VERSION of the caller's headers (set by init) */
  uint32_t struct_size;    /* sizeof(kdk_structured) as the caller sees it (set by init) */
  const char *op;          /* "aten::add.out", for messages (static) */
  kdk_structured_mode mode;
  int nout;                /* number of outputs, <= KDK_STRUCTURED_MAX_OUT */
  kd_device device;        /* where FUNCTIONAL outputs are allocated */
  /* INPLACE / OUT: the caller's tensors (borrowed). */
  kd_tensor *given[KDK_STRUCTURED_MAX_OUT];
  /* What impl writes: owned when allocated or a proxy, else == given[i];
   * NULL until set_output(i). */
  kd_tensor *outputs[KDK_STRUCTURED_MAX_OUT];
  unsigned proxies;        /* bit i: outputs[i] is a proxy (owned), copied by finish */
} kdk_structured;

/* Starts a structured call. `given` has nout entries for INPLACE/OUT (NULL
 * for the others); they stay the caller's and must outlive the call. `op`
 * is a static string (NULL: "structured operator"). `device` is where
 * FUNCTIONAL outputs go (the device of the first tensor argument, or cpu);
 * META allocates on the meta device. Cannot fail: a bad nout is reported by
 * kdk_structured_set_output. */
static inline void kdk_structured_init(kdk_structured *s, const char *op, kdk_structured_mode mode,
                                      int nout, kd_tensor *const *given, kd_device device) {
  s->api_version = KDK_API_VERSION;
  s->struct_size = (uint32_t)sizeof(kdk_structured);
  s->op = op ? op : "structured operator";
  s->mode = mode;
  s->nout = nout;
  s->device = device;
  s->proxies = 0;
  /* Only the first nout entries are ever read: every access checks the
   * index against nout (kdk_structured_output's callers pass i < nout). */
  int n = nout < 0 ? 0 : nout < KDK_STRUCTURED_MAX_OUT ? nout : KDK_STRUCTURED_MAX_OUT;
  for (int i = 0; i < n; i++) {
    s->given[i] = given ? given[i] : NULL;
    s->outputs[i] = NULL;
  }
}

/* Meta asks for output i with these sizes, strides (in elements; NULL for
 * row-major, or "whatever out has" for OUT) and dtype.
 * FUNCTIONAL / META: allocates. INPLACE: KD_EINVAL unless self has exactly
 * these sizes ("output with shape [..] doesn't match the broadcast shape
 * [..]"), KD_ETYPE unless it has this dtype. OUT: KD_ETYPE for another dtype
 * ("Expected out tensor to have dtype float32, but got int64 instead"),
 * KD_EINVAL for another device; resizes out when its sizes differ (a warning
 * when it had elements, as PyTorch); when `strides` is given and out's
 * strides differ after that, output i becomes a fresh proxy with those
 * strides, copied back by finish (INPLACE too, as PyTorch: self with other
 * strides than those asked for gets a proxy). A resized out takes the asked
 * strides, so it never needs a proxy. Messages name s->op. Calling it twice
 * for one output is KD_ESTATE; an index outside 0..nout-1 or a given tensor
 * that is NULL is KD_EINVAL; a kdk_structured of another kit ABI is
 * KD_EUNSUPPORTED. sizes and strides are borrowed for the call; what it
 * allocates belongs to s (kdk_structured_release). */
KDK_API kd_status kdk_structured_set_output(kdk_structured *s, int i, int ndim,
                                           const int64_t *sizes, const int64_t *strides,
                                           kd_dtype dtype);

/* The tensor impl writes for output i (borrowed from s); NULL before
 * set_output(i). */
static inline kd_tensor *kdk_structured_output(const kdk_structured *s, int i) {
  return s->outputs[i];
}

/* After impl: copies every proxy into its given tensor. Errors of the copy
 * (kd_tensor_copy_'s, with its message). kdk_structured_copy_proxies is its
 * out-of-line part: call kdk_structured_finish. */
KDK_API kd_status kdk_structured_copy_proxies(kdk_structured *s);
static inline kd_status kdk_structured_finish(kdk_structured *s) {
  return s->proxies ? kdk_structured_copy_proxies(s) : KD_OK;
}

/* Ends the call. FUNCTIONAL/META: when `take` is not NULL, moves output i's
 * reference to take[i] (nout entries) and s keeps nothing; otherwise frees
 * them. INPLACE/OUT: drops proxies. Always call it, also after errors.
 * kdk_structured_release_outputs is its out-of-line part: call
 * kdk_structured_release. Never fails. */
KDK_API void kdk_structured_release_outputs(kdk_structured *s, kd_tensor **take);
static inline void kdk_structured_release(kdk_structured *s, kd_tensor **take) {
  /* INPLACE / OUT without proxies: the outputs are the caller's tensors */
  if ((s->mode == KDK_STRUCTURED_INPLACE || s->mode == KDK_STRUCTURED_OUT) && !s->proxies) return;
  kdk_structured_release_outputs(s, take);
}

KD_EXTERN_C_END

#endif
