/*
 * ops.c: kd_ops_open, the operator library's one entry point.
 */
#include <pthread.h>
#include <stdio.h>

#include "gen_support.h"
#include "tensor_access.h"
#include "kd/ops.h"
#include "native/bitwise.h"

static pthread_once_t open_once = PTHREAD_ONCE_INIT;
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

kd_status kd_ops_open(void) {
  pthread_once(&open_once, open_libraries);
  if (open_status) return kd_set_error(open_status, "%s", open_message);
  return KD_OK;
}
