/*
 * ops.c: kd_ops_open, the operator library's one entry point.
 */
#include <pthread.h>
#include <stdio.h>

#include "gen_support.h"
#include "tensor_access.h"
#include "kd/ops.h"
#include "native/bitwise.h"

/* 0: closed, 1: open, -1: the last open failed (open_status says why).
 * Changed under open_lock; read without it by kd_ops_open's fast path. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static int open_state;
static kd_status open_status = KD_OK;
static char open_message[512];

/* The kernels registered by hand, after the generated tables (which define
 * the operators). Their files are compiled with KD_NO_AUTO_REGISTER, so
 * nothing registers them at load: each descriptor is opened here. Because
 * this function names every descriptor (through kd__bitwise_libraries), a
 * static link that keeps kd_ops_open keeps them all; the ops tests link
 * libkdops statically and call the bitwise operators through the
 * dispatcher, which proves it. */
static kd_status open_hand_registered(void) {
  for (size_t i = 0; i < kd__bitwise_nlibraries; i++) {
    kd_status st = kd_library_open_desc(kd__bitwise_libraries[i]);
    if (st) return st;
  }
  return kd__bitwise_check();
}

static void open_libraries(void) {
  /* libkdops reads tensor fields inline (src/tensor_access.h): the
   * libkdispatch it runs with must lay tensors out as the one it was built
   * with. */
  if (kd_tensor_layout_stamp() != kd__tensor_layout_here()) {
    open_status = KD_ESTATE;
    snprintf(open_message, sizeof open_message,
             "kd_ops_open: this libkdops was built against another libkdispatch (the tensor "
             "layout differs): use the libkdispatch of the same build");
    return;
  }
  open_status = kd__ops_register();
  if (!open_status) open_status = open_hand_registered();
  if (open_status) snprintf(open_message, sizeof open_message, "%s", kd_last_error());
}

/* Closes what open_libraries opened, newest first (under open_lock). */
static void close_libraries(void) {
  for (size_t i = kd__bitwise_nlibraries; i-- > 0;) kd_library_close_desc(kd__bitwise_libraries[i]);
  kd__ops_unregister_tables();
}

kd_status kd_ops_open(void) {
  if (__atomic_load_n(&open_state, __ATOMIC_ACQUIRE) == 1) return KD_OK;
  pthread_mutex_lock(&open_lock);
  if (open_state == 0) {
    open_status = KD_OK;
    open_libraries();
    __atomic_store_n(&open_state, open_status ? -1 : 1, __ATOMIC_RELEASE);
  }
  kd_status st = open_status;
  pthread_mutex_unlock(&open_lock);
  if (st) return kd_set_error(st, "%s", open_message);
  return KD_OK;
}

void kd_ops_close(void) {
  pthread_mutex_lock(&open_lock);
  if (open_state != 0) {
    close_libraries();
    open_status = KD_OK;
    __atomic_store_n(&open_state, 0, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&open_lock);
}
