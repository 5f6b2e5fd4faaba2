/*
 * ops.c: kd_ops_open, the operator library's one entry point.
 */
#include <pthread.h>
#include <stdio.h>

#include "gen_support.h"
#include "kd/ops.h"
#include "native/bitwise.h"

/* kd_ops_open is all or nothing: it either registers everything or, on a
 * failure (an allocation that failed, a registration refused), releases
 * everything it registered and returns the error; the next call tries
 * again. kd_ops_close undoes a successful open. Serialised by open_lock;
 * `opened` is read with acquire by the fast path of every later call. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static bool opened;

/* The kernels registered by hand, after the generated tables (which define
 * the operators). Their files are compiled with KD_NO_AUTO_REGISTER, so
 * nothing registers them at load: each descriptor is opened here. Because
 * this function names every descriptor (through kdk__bitwise_libraries), a
 * static link that keeps kd_ops_open keeps them all; the ops tests link
 * libkdops statically and call the bitwise operators through the
 * dispatcher, which proves it. */
static kd_status open_hand_registered(void) {
  for (size_t i = 0; i < kdk__bitwise_nlibraries; i++) {
    kd_status st = kd_library_open_desc(kdk__bitwise_libraries[i]);
    if (st) return st;
  }
  return kdk__bitwise_check();
}

static void close_hand_registered(void) {
  for (size_t i = kdk__bitwise_nlibraries; i-- > 0;) kd_library_close_desc(kdk__bitwise_libraries[i]);
}

static kd_status open_libraries(void) {
  kd_status st = kdk__ops_register();
  if (st) return st; /* kdk__ops_register leaves nothing registered on failure */
  if ((st = open_hand_registered())) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    close_hand_registered();
    kdk__ops_unregister();
    return kd_set_error(st, "kd_ops_open: %s; nothing is registered", msg);
  }
  return KD_OK;
}

kd_status kd_ops_open(void) {
  if (__atomic_load_n(&opened, __ATOMIC_ACQUIRE)) return KD_OK;
  pthread_mutex_lock(&open_lock);
  kd_status st = KD_OK;
  if (!opened) {
    st = open_libraries();
    if (!st) __atomic_store_n(&opened, true, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&open_lock);
  return st;
}

/* Closes what open_libraries opened, newest first. */
void kd_ops_close(void) {
  pthread_mutex_lock(&open_lock);
  if (opened) {
    close_hand_registered();
    kdk__ops_unregister();
    __atomic_store_n(&opened, false, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&open_lock);
}
