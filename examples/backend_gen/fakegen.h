/*
 * fakegen.h: what the proof backend's two hand-written files share. The
 * device is examples/backend's fake device (fakedev.h: host memory with every
 * byte scrambled), so a kernel that reads device memory without
 * fakedev_read / fakedev_write computes garbage and the comparison test sees it.
 */
#ifndef FAKEGEN_H
#define FAKEGEN_H

#include "fakedev.h"
#include "fakegen_functions.h"

/* The plugin's one device context (fakegen_device.c). */
fakedev_ctx *fakegen_ctx(void);

#endif
