/*
 * abi.c: the one helper that reads any accepted version of a versioned
 * interface struct (kd/version.h). The tables it reads, one per struct, are
 * in the files of the layers that own the structs (core/internal.h).
 */
#include <stdio.h>

#include "core/internal.h"

kd_status kd__abi_copy(const kd__abi_struct *s, const void *src, void *dst, const char *where,
                       uint32_t *found) {
  memset(dst, 0, s->size);
  if (!src) return kd_set_error(KD_EINVAL, "%s: NULL %s", where, s->name);
  uint32_t version;
  memcpy(&version, src, sizeof version); /* api_version, the first field of every version */
  if (found) *found = version;
  if (version < 1 || version > s->current) {
    char accepted[64];
    if (s->current == 1)
      snprintf(accepted, sizeof accepted, "only 1");
    else
      snprintf(accepted, sizeof accepted, "1 to %u", (unsigned)s->current);
    return kd_set_error(KD_EINVAL,
                        "%s: %s api_version %u is not supported: this library accepts %s (%s)%s",
                        where, s->name, (unsigned)version, accepted, s->macro,
                        version == 0 ? "; was api_version left unset?"
                                     : "; was it built against a newer kdispatch?");
  }
  memcpy(dst, src, s->ends[version - 1]);
  uint32_t current = s->current;
  memcpy(dst, &current, sizeof current);
  return KD_OK;
}
