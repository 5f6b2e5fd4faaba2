/* Uses the installed headers and library; exits 0 when they work. */
#include <stdio.h>
#include <string.h>

#include <kd/kd.h>

int main(void) {
  if (kd_version() != KD_VERSION_HEX) {
    fprintf(stderr, "header %s, library %s\n", KD_VERSION_STRING, kd_version_string());
    return 1;
  }
  const char *text = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
  kd_schema *s;
  if (kd_schema_parse(text, strlen(text), &s) != KD_OK) {
    fprintf(stderr, "%s\n", kd_last_error());
    return 1;
  }
  char buf[128];
  kd_schema_format(s, buf, sizeof buf);
  kd_schema_free(s);
  if (strcmp(buf, text) != 0) return 1;
  kd_tensor *t;
  if (kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, kd_device_cpu(), &t) != KD_OK) return 1;
  kd_tensor_release(t);
  printf("consumer ok: kdispatch %s\n", kd_version_string());
  return 0;
}
