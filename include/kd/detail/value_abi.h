/*
 * kd/detail/value_abi.h: ABI, not API.
 *
 * Included by kd/value.h for its inline functions; do not include or use
 * directly; a change here changes the soname (kd/version.h).
 */
#ifndef KD_DETAIL_VALUE_ABI_H
#define KD_DETAIL_VALUE_ABI_H

#ifndef KD_VALUE_H
#  error "kd/detail/value_abi.h is included by kd/value.h only"
#endif

/* *dst = *src, src left as it is (kd_value_move here, kd_stack_pop in the
 * library), read field by field (volatile, so that the compiler does not
 * merge the loads again): a value a kernel has just written (tag, flags and
 * pointer as separate stores) read back as 16-byte blocks cannot be
 * forwarded from the store buffer, and the CPU stalls on every such value.
 * Stored as read (volatile too: packing the fields again into vector
 * registers costs more instructions than the five stores). dst and src must
 * not overlap. */
#if defined(__GNUC__) || defined(__clang__)
typedef uint64_t __attribute__((__may_alias__)) kd__value_word;
static inline void kd__value_read(kd_value *dst, const kd_value *src) {
  const volatile kd_value *vs = src;
  const volatile kd__value_word *sw = (const volatile kd__value_word *)&vs->u;
  kd_value_tag tag = vs->tag;
  uint32_t flags = vs->flags;
  kd__value_word w0 = sw[0], w1 = sw[1], w2 = sw[2];
  volatile kd_value *vd = dst;
  volatile kd__value_word *dw = (volatile kd__value_word *)&vd->u;
  vd->tag = tag;
  vd->flags = flags;
  dw[0] = w0;
  dw[1] = w1;
  dw[2] = w2;
}
#else
static inline void kd__value_read(kd_value *dst, const kd_value *src) { *dst = *src; }
#endif

/* The stack's new top with its tag and flags written, or NULL when there is
 * no room (the caller then builds a kd_value and grows the stack): the
 * inline kd_stack_push_* write the payload in place. */
static inline kd_value *kd__stack_claim(kd_stack *s, kd_value_tag tag, uint32_t flags) {
  if (!s || s->size >= s->capacity) return NULL;
  kd_value *d = &s->items[s->size++];
  d->tag = tag;
  d->flags = flags;
  return d;
}

#endif /* KD_DETAIL_VALUE_ABI_H */
