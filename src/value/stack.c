/*
 * stack.c: kd_stack, the argument and result stack of boxed calls.
 */
#include "core/internal.h"
#include "kd/value.h"

#define KD__STACK_MIN_CAPACITY 8

static kd_status stack_grow_to(kd_stack *s, size_t capacity) {
  if (capacity <= s->capacity) return KD_OK;
  if (capacity > SIZE_MAX / sizeof(kd_value)) return kd__oom("the value stack");
  kd_value *items = kd__realloc(s->items, capacity * sizeof(kd_value));
  if (!items) return kd__oom("the value stack");
  s->items = items;
  s->capacity = capacity;
  return KD_OK;
}

/* Room for one more value, growing geometrically. */
static kd_status stack_make_room(kd_stack *s) {
  if (s->size < s->capacity) return KD_OK;
  size_t want = s->capacity < KD__STACK_MIN_CAPACITY ? KD__STACK_MIN_CAPACITY : s->capacity;
  if (s->capacity >= KD__STACK_MIN_CAPACITY) {
    want = s->capacity <= SIZE_MAX / 2 ? s->capacity * 2 : SIZE_MAX;
  }
  return stack_grow_to(s, want);
}

void kd_stack_free(kd_stack *s) {
  if (!s) return;
  kd_stack_clear(s);
  kd__free(s->items);
  kd_stack_init(s);
}

kd_status kd_stack_reserve(kd_stack *s, size_t capacity) {
  if (!s) return kd_set_error(KD_EINVAL, "kd_stack_reserve: stack is NULL");
  return stack_grow_to(s, capacity);
}

kd_status kd_stack_push_grow(kd_stack *s, kd_value *v) {
  if (!s) return kd_set_error(KD_EINVAL, "kd_stack_push: stack is NULL");
  if (!v) return kd_set_error(KD_EINVAL, "kd_stack_push: value is NULL");
  kd_status st = stack_make_room(s);
  if (st != KD_OK) return st;
  kd_value_move(&s->items[s->size++], v);
  return KD_OK;
}

kd_status kd_stack_push_copy(kd_stack *s, const kd_value *v) {
  if (!s) return kd_set_error(KD_EINVAL, "kd_stack_push_copy: stack is NULL");
  if (!v) return kd_set_error(KD_EINVAL, "kd_stack_push_copy: value is NULL");
  kd_status st = stack_make_room(s);
  if (st != KD_OK) return st;
  kd_value_copy(&s->items[s->size++], v);
  return KD_OK;
}

/* kd_stack_pop's failures (out of line): *out is None, as documented. */
static kd_status __attribute__((noinline, cold)) pop_failed(const kd_stack *s, kd_value *out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_stack_pop: out is NULL");
  *out = kd_value_none();
  if (!s) return kd_set_error(KD_EINVAL, "kd_stack_pop: stack is NULL");
  return kd_set_error(KD_ESTATE, "kd_stack_pop: the stack is empty");
}

kd_status kd_stack_pop(kd_stack *s, kd_value *out) {
  if (!out || !s || s->size == 0) return pop_failed(s, out);
  /* Once popped the slot is above the stack: no None written over it. */
  kd__value_read(out, &s->items[--s->size]);
  return KD_OK;
}

kd_status kd_stack_drop(kd_stack *s, size_t n) {
  if (!s) return kd_set_error(KD_EINVAL, "kd_stack_drop: stack is NULL");
  if (n > s->size) {
    return kd_set_error(KD_ESTATE, "kd_stack_drop: cannot drop %zu values from a stack of %zu",
                        n, s->size);
  }
  while (n--) kd_value_destroy(&s->items[--s->size]);
  return KD_OK;
}

kd_value *kd_stack_peek(const kd_stack *s, size_t depth) {
  if (!s || depth >= s->size) return NULL;
  return &s->items[s->size - 1 - depth];
}

void kd_stack_clear(kd_stack *s) {
  if (!s) return;
  while (s->size) kd_value_destroy(&s->items[--s->size]);
}
