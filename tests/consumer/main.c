/* Uses the installed headers and library; exits 0 when they work. The typed
 * calls go through the inline kd_call_unboxed, which reads the library's
 * thread-local reader record across the shared library's boundary. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <kd/dlpack.h>
#include <kd/kd.h>

/* kd/dlpack.h brings the installed tree's DLPack header (kd/dlpack/dlpack.h). */
#if !defined(KD_DLPACK_VENDORED) || DLPACK_MAJOR_VERSION != 1
#error "kd/dlpack.h did not bring the shipped DLPack 1.x header"
#endif

static kd_status twice(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_int(a[0].i * 2);
  return KD_OK;
}

/* One typed call of consumer::twice(7); 0 when it gives 14 and leaves the
 * thread outside any read section. */
static int call_twice(void) {
  kd_op *op;
  if (kd_op_find_typed("consumer::twice", "", "(int) -> int", &op) != KD_OK) return 1;
  kd_arg a[1] = {{.i = 7}};
  kd_value r[1];
  if (kd_call_unboxed(op, a, r) != KD_OK || r[0].tag != KD_VALUE_INT || r[0].u.i != 14) return 1;
  return kd__tls_reader.epoch != 0;
}

/* Both DLPack forms, exported and imported back through the library's
 * exports; 0 when each gives the same memory. */
static int dlpack_round_trip(void) {
  kd_tensor *t, *a = NULL, *b = NULL;
  if (kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, kd_device_cpu(), &t) != KD_OK) return 1;
  DLManagedTensor *m;
  DLManagedTensorVersioned *mv;
  int bad = kd_tensor_to_dlpack(t, &m) != KD_OK || kd_tensor_from_dlpack(m, &a) != KD_OK ||
            kd_tensor_to_dlpack_versioned(t, &mv) != KD_OK || mv->version.major != 1 ||
            kd_tensor_from_dlpack_versioned(mv, &b) != KD_OK ||
            kd_tensor_data(a) != kd_tensor_data(t) || kd_tensor_data(b) != kd_tensor_data(t);
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(t);
  return bad;
}

static void *thread_main(void *arg) {
  *(int *)arg = call_twice() + call_twice(); /* the first registers the thread */
  return NULL;
}

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
  if (dlpack_round_trip()) {
    fprintf(stderr, "DLPack round trip failed: %s\n", kd_last_error());
    return 1;
  }
  kd_library *lib, *impl;
  kd_kernel k = kd_kernel_unboxed(twice, "(int) -> int");
  if (kd_library_open(KD_LIBRARY_DEF, "consumer", KD_KEY_UNDEFINED, __FILE__, __LINE__, &lib) ||
      kd_library_def(lib, "twice(int x) -> int", NULL, 0, NULL) ||
      kd_library_open(KD_LIBRARY_IMPL, "consumer", KD_KEY_CATCH_ALL, __FILE__, __LINE__, &impl) ||
      kd_library_impl(impl, "twice", &k, NULL)) {
    fprintf(stderr, "%s\n", kd_last_error());
    return 1;
  }
  int in_thread = 1;
  pthread_t th;
  if (call_twice() || call_twice() || pthread_create(&th, NULL, thread_main, &in_thread) ||
      pthread_join(th, NULL) || in_thread) {
    fprintf(stderr, "typed call failed: %s\n", kd_last_error());
    return 1;
  }
  kd_library_close(impl);
  kd_library_close(lib);
  printf("consumer ok: kdispatch %s\n", kd_version_string());
  return 0;
}
