/*
 * trace.c: recording which (operator, key, dtype) a program calls, for
 * selective builds. Placeholder until the recorder lands (same session).
 */
#include "dispatch/dispatcher_impl.h"

bool kd__record;

void kd__record_call(const kd_op *op, kd_dispatch_key key, int dtype) {
  (void)op;
  (void)key;
  (void)dtype;
}
