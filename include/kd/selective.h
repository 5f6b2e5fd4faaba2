/*
 * selective.h: selective builds, TensorFlow's SHOULD_REGISTER_OP_KERNEL for
 * kdispatch, keyed by (operator, dispatch key, dtype) rather than by C
 * symbol names.
 *
 * An allow-list is a header of macros, normally written by
 * `kd trace -o allow.h -- PROGRAM ARGS...` from the kernels PROGRAM called:
 *
 *   #define KD_SELECTIVE_BUILD 1
 *   #define KD_ALLOW_myops__neg KD_ALLOW_DTYPES(0x00000120u)       any key of myops::neg
 *   #define KD_ALLOW_myops__neg__CPU KD_ALLOW_DTYPES(0x00000120u)  myops::neg on CPU
 *
 * The mask is a kd_dtype_set (bit d: dtype d; 0xffffffffu: every dtype, for
 * calls that had no tensor to take a dtype from). Operator names become
 * tokens: "ns::name" is ns__name, an overload "ns::name.over" is
 * ns__name_over. Compile the operator libraries with the header included
 * first (`-include allow.h`, or #include it before any KD_ macro is used):
 *
 *   KD_REGISTER_KERNEL(ns, op, KEY, ...)  registers only the dtypes that are
 *       both listed and allowed (KD_REGISTER_KERNEL_OVERLOAD(ns, op, over,
 *       KEY, ...) asks for the token op_over, that of "ns::op.over", as
 *       `kd trace` writes it); when none is, it registers nothing and its
 *       kernel function is referenced only in code the compiler removes, so
 *       a static kernel is left out of the binary (clang: even at -O0; gcc:
 *       at -O1 and above, or with -ffunction-sections -Wl,--gc-sections).
 *       Its descriptor stays, so KD_USE_LIBRARY still links.
 *   KD_SHOULD_REGISTER(ns, op, KEY)  for hand-written registrations.
 *   KD_KERNEL_DTYPE_SELECTED(ns, op, KEY, dtype)  for the per-dtype branches
 *       of a type-generic kernel.
 *
 * Both are integer constant expressions (1 or 0), and 1 when
 * KD_SELECTIVE_BUILD is not defined. KEY is a dispatch key's enum suffix
 * (CPU, META, PRIVATEUSE1, TRACER, ...); an alias key
 * (COMPOSITE_EXPLICIT_AUTOGRAD, COMPOSITE_IMPLICIT_AUTOGRAD, CATCH_ALL)
 * stands for every key, so it asks whether the operator was called at all.
 * `op` is the token form of the name (add_Tensor for add.Tensor; add__Tensor
 * for the in-place add_.Tensor: the name's own '_', then the separator, as
 * KD_REGISTER_KERNEL_OVERLOAD pastes it; docs/CODEGEN.md).
 *
 * How: each test pastes KD_ALLOW_ns__op__KEY and looks at what it expands
 * to. A defined name expands to `~, (mask)`, two macro arguments, which
 * moves the mask into the place a fixed helper picks (KD__SEL_ARG2); an
 * undefined name stays one argument and the helper picks the default, 0.
 * No macro recursion, no list of symbols, and everything is decided where
 * the macro is used, so the header may come before or after this one.
 */
#ifndef KD_SELECTIVE_H
#define KD_SELECTIVE_H

/* What an allow-list macro is defined as: `mask` is a kd_dtype_set. */
#define KD_ALLOW_DTYPES(mask) ~, (mask)

/* The probe: the second of at least three arguments. KD__SEL_GET(name, d)
 * is the mask `name` is defined as (through KD_ALLOW_DTYPES), else d. */
#define KD__SEL_ARG2(a, b, ...) b
#define KD__SEL_GET(name, absent) KD__SEL_ARG2(name, absent, ~)

/* 1 when KD_SELECTIVE_BUILD is defined (as 1, or empty), else 0 (also
 * when it is defined as 0). */
#define KD__SEL_ON KD__SEL_ON_X(KD_SELECTIVE_BUILD)
#define KD__SEL_ON_X(v) KD__SEL_ON_Y(v)
#define KD__SEL_ON_Y(v) KD__SEL_ON_##v
#define KD__SEL_ON_KD_SELECTIVE_BUILD 0
#define KD__SEL_ON_ 1
#define KD__SEL_ON_0 0
#define KD__SEL_ON_1 1

/* Alias keys stand for every key: the operator's mask, whatever the key. */
#define KD__SEL_ALIAS_COMPOSITE_EXPLICIT_AUTOGRAD ~, 1
#define KD__SEL_ALIAS_COMPOSITE_IMPLICIT_AUTOGRAD ~, 1
#define KD__SEL_ALIAS_CATCH_ALL ~, 1
#define KD__SEL_ALIAS_AUTOGRAD ~, 1
#define KD__SEL_ALIAS_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL ~, 1
#define KD__SEL_ALIAS_COMPOSITE_IMPLICIT_AUTOGRAD_NESTED_TENSOR ~, 1

/* The allowed dtypes of (ns::op, key) in a selective build (0: none). */
#define KD__SEL_MASK(ns, op, key)                                          \
  (KD__SEL_GET(KD__SEL_ALIAS_##key, 0) ? KD__SEL_GET(KD_ALLOW_##ns##__##op, 0u) \
                                       : KD__SEL_GET(KD_ALLOW_##ns##__##op##__##key, 0u))

/* The allowed dtypes, every dtype when this is not a selective build. */
#define KD__SEL_DTYPES(ns, op, key) \
  ((unsigned)(KD__SEL_ON ? KD__SEL_MASK(ns, op, key) : 0xffffffffu))

/* The dtypes of a KD_REGISTER_KERNEL list as a constant: up to twelve (as
 * many as there are dtypes) by one fixed macro; a longer list counts as
 * every dtype (the registration then intersects at load time). */
#define KD__SEL_DT_END (-99)
#define KD__SEL_DT_BIT(x) ((unsigned)(x) < 32u ? 1u << ((unsigned)(x) & 31u) : 0u)
#define KD__SEL_DT_LIST(...)                                                                \
  KD__SEL_DT_LIST_(__VA_ARGS__, KD__SEL_DT_END, KD__SEL_DT_END, KD__SEL_DT_END,             \
                   KD__SEL_DT_END, KD__SEL_DT_END, KD__SEL_DT_END, KD__SEL_DT_END,          \
                   KD__SEL_DT_END, KD__SEL_DT_END, KD__SEL_DT_END, KD__SEL_DT_END,          \
                   KD__SEL_DT_END, KD__SEL_DT_END)
#define KD__SEL_DT_LIST_(a, b, c, d, e, f, g, h, i, j, k, l, more, ...)                    \
  (KD__SEL_DT_BIT(a) | KD__SEL_DT_BIT(b) | KD__SEL_DT_BIT(c) | KD__SEL_DT_BIT(d) |          \
   KD__SEL_DT_BIT(e) | KD__SEL_DT_BIT(f) | KD__SEL_DT_BIT(g) | KD__SEL_DT_BIT(h) |          \
   KD__SEL_DT_BIT(i) | KD__SEL_DT_BIT(j) | KD__SEL_DT_BIT(k) | KD__SEL_DT_BIT(l) |          \
   ((int)(more) == KD__SEL_DT_END ? 0u : 0xffffffffu))

/* Whether KD_REGISTER_KERNEL(ns, op, key, ..., dtypes...) registers
 * anything: always outside a selective build. */
#define KD__SEL_REGISTERS(ns, op, key, ...) \
  (!KD__SEL_ON || (KD__SEL_DT_LIST(__VA_ARGS__) & KD__SEL_MASK(ns, op, key)) != 0)

/* 1 when a kernel of ns::op for KEY is to be registered: outside a
 * selective build always, in one when the allow-list has (ns::op, KEY), or
 * for an alias KEY when it has ns::op at all. An integer constant
 * expression:
 *
 *   KD_LIBRARY_IMPL(myops, CPU, m) {
 *     if (KD_SHOULD_REGISTER(myops, scale, CPU)) {
 *       kd_kernel k = kd_kernel_unboxed(scale_cpu, "(Tensor, float) -> Tensor");
 *       kd_library_impl(m, "scale", &k, NULL);
 *     }
 *   }
 *
 * With the test false, scale_cpu is referenced only in removed code. */
#define KD_SHOULD_REGISTER(ns, op, KEY) (!KD__SEL_ON || KD__SEL_MASK(ns, op, KEY) != 0)

/* 1 when dtype `dtype` (a kd_dtype constant) of ns::op for KEY is to be
 * compiled: outside a selective build always, in one when the allow-list
 * has it. An integer constant expression, for the per-dtype branches of a
 * type-generic kernel, so that the compiler drops the unlisted ones:
 *
 *   case KD_FLOAT32:
 *     if (!KD_KERNEL_DTYPE_SELECTED(myops, neg, CPU, KD_FLOAT32)) break;
 *     ... the float32 loop ...
 */
#define KD_KERNEL_DTYPE_SELECTED(ns, op, KEY, dtype) \
  (!KD__SEL_ON || (KD__SEL_MASK(ns, op, KEY) & KD__SEL_DT_BIT(dtype)) != 0)

#endif /* KD_SELECTIVE_H */
