/*
 * exports_bad.c: shared libraries that export what check_exports.cmake must
 * reject, one per EXPORTS_BAD_* definition (tests/scripts.cmake): the export
 * check's failure paths.
 */
#define EB_API __attribute__((visibility("default")))

#if defined(EXPORTS_BAD_INTERNAL)
/* libkdops' internal tier exported */
EB_API int kdk__leak(int x);
EB_API int kdk__leak(int x) { return x + 1; }
#elif defined(EXPORTS_BAD_DOUBLED)
/* a generated name of the old mangling (add_.Tensor) */
EB_API int kd_add__Tensor(int x);
EB_API int kd_add__Tensor(int x) { return x + 2; }
#elif defined(EXPORTS_BAD_PLUGIN)
/* a plugin that exports a helper beside its entry point */
EB_API int kd_plugin_entry(int x);
EB_API int kd_plugin_entry(int x) { return x + 3; }
EB_API int kdcl_helper(int x);
EB_API int kdcl_helper(int x) { return x + 4; }
#endif
