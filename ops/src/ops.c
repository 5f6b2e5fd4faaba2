/*
 * ops.c: kd_ops_open, the operator library's one entry point.
 */
#include <pthread.h>
#include <stdio.h>

#include "gen_support.h"
#include "kd/ops.h"

static pthread_once_t open_once = PTHREAD_ONCE_INIT;
static kd_status open_status = KD_OK;
static char open_message[512];

static void open_libraries(void) {
  open_status = kd__ops_register();
  if (open_status) snprintf(open_message, sizeof open_message, "%s", kd_last_error());
}

kd_status kd_ops_open(void) {
  pthread_once(&open_once, open_libraries);
  if (open_status) return kd_set_error(open_status, "%s", open_message);
  return KD_OK;
}
