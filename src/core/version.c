/*
 * version.c: the runtime version.
 */
#include "kd/common.h"

unsigned kd_version(void) { return KD_VERSION_HEX; }

const char *kd_version_string(void) { return KD_VERSION_STRING; }
