/*
 * access.c: the read-only accessors of parsed schemas, types, arguments and
 * alias annotations. NULL arguments give NULL, 0, false or -1.
 */
#include "schema/schema_impl.h"

/* ---- Types -------------------------------------------------------------- */

kd_type_kind kd_type_kind_of(const kd_type *type) {
  return type ? (kd_type_kind)type->kind : KD_TYPE_KIND_COUNT;
}

const kd_type *kd_type_element(const kd_type *type) {
  if (!type) return NULL;
  switch ((kd_type_kind)type->kind) {
    case KD_TYPE_OPTIONAL:
    case KD_TYPE_LIST:
    case KD_TYPE_FUTURE:
    case KD_TYPE_RREF:
    case KD_TYPE_DICT:
      return kd__rel_get(&type->a);
    default:
      return NULL;
  }
}

const kd_type *kd_type_key(const kd_type *type) {
  return type && type->kind == KD_TYPE_DICT ? kd__rel_get(&type->b) : NULL;
}

int64_t kd_type_list_size(const kd_type *type) {
  return type && type->kind == KD_TYPE_LIST ? type->n : -1;
}

size_t kd_type_tuple_size(const kd_type *type) {
  if (!type || (type->kind != KD_TYPE_TUPLE && type->kind != KD_TYPE_UNION)) return 0;
  return (size_t)type->n;
}

const kd_type *kd_type_tuple_at(const kd_type *type, size_t i) {
  if (i >= kd_type_tuple_size(type)) return NULL;
  return kd__rel_at(kd__rel_get(&type->a), i);
}

const char *kd_type_name(const kd_type *type) {
  if (!type) return NULL;
  if (type->kind < KD_TYPE_VAR) return kd__type_base_names[type->kind];
  if (type->kind == KD_TYPE_VAR || type->kind == KD_TYPE_CLASS) return kd__rel_get(&type->a);
  return NULL;
}

const kd_alias_info *kd_type_element_alias(const kd_type *type) {
  if (!type || type->kind != KD_TYPE_LIST) return NULL;
  const kd_type *e = kd__rel_get(&type->a);
  return kd__rel_get(&e->alias);
}

/* ---- Alias annotations -------------------------------------------------- */

bool kd_alias_is_write(const kd_alias_info *alias) { return alias && alias->is_write; }

size_t kd_alias_num_before(const kd_alias_info *alias) { return alias ? alias->nbefore : 0; }

const char *kd_alias_before(const kd_alias_info *alias, size_t i) {
  if (!alias || i >= alias->nbefore) return NULL;
  return kd__rel_at(kd__rel_get(&alias->before), i);
}

size_t kd_alias_num_after(const kd_alias_info *alias) { return alias ? alias->nafter : 0; }

const char *kd_alias_after(const kd_alias_info *alias, size_t i) {
  if (!alias || i >= alias->nafter) return NULL;
  return kd__rel_at(kd__rel_get(&alias->after), i);
}

/* ---- Arguments ---------------------------------------------------------- */

const char *kd_argument_name(const kd_argument *arg) {
  if (!arg) return NULL;
  const char *n = kd__rel_get(&arg->name);
  return n ? n : "";
}

const kd_type *kd_argument_type(const kd_argument *arg) {
  return arg ? kd__rel_get(&arg->type) : NULL;
}

const char *kd_argument_default(const kd_argument *arg) {
  return arg ? kd__rel_get(&arg->def) : NULL;
}

bool kd_argument_kwarg_only(const kd_argument *arg) { return arg && arg->kwarg_only; }

const kd_alias_info *kd_argument_alias(const kd_argument *arg) {
  if (!arg) return NULL;
  const kd_type *t = kd__rel_get(&arg->type);
  while (t->kind == KD_TYPE_OPTIONAL && !t->alias) t = kd__rel_get(&t->a);
  return kd__rel_get(&t->alias);
}

const kd_alias_info *kd__argument_annotation(const kd_argument *arg) {
  const kd_type *t = kd__rel_get(&arg->type);
  while (t->kind == KD_TYPE_OPTIONAL && !t->alias) t = kd__rel_get(&t->a);
  if (t->alias) return kd__rel_get(&t->alias);
  if (t->kind == KD_TYPE_LIST) {
    const kd_type *e = kd__rel_get(&t->a);
    return kd__rel_get(&e->alias);
  }
  return NULL;
}

bool kd_argument_is_write(const kd_argument *arg) {
  if (!arg) return false;
  const kd_alias_info *a = kd__argument_annotation(arg);
  if (a && a->is_write) return true;
  /* `Tensor(a)[](b!)`: the list's own annotation is looked at first; a
   * written element under a read-only list annotation still counts. */
  const kd_type *t = kd__rel_get(&arg->type);
  while (t->kind == KD_TYPE_OPTIONAL) t = kd__rel_get(&t->a);
  if (t->kind == KD_TYPE_LIST) return kd_alias_is_write(kd_type_element_alias(t));
  return false;
}

/* ---- Schemas ------------------------------------------------------------ */

const char *kd_schema_namespace(const kd_schema *schema) {
  const char *s = schema ? kd__rel_get(&schema->ns) : NULL;
  return s ? s : "";
}

const char *kd_schema_name(const kd_schema *schema) {
  return schema ? kd__rel_get(&schema->name) : NULL;
}

const char *kd_schema_overload(const kd_schema *schema) {
  const char *s = schema ? kd__rel_get(&schema->overload) : NULL;
  return s ? s : "";
}

size_t kd_schema_num_arguments(const kd_schema *schema) { return schema ? schema->nargs : 0; }

const kd_argument *kd_schema_argument(const kd_schema *schema, size_t i) {
  if (!schema || i >= schema->nargs) return NULL;
  return kd__rel_at(kd__rel_get(&schema->args), i);
}

size_t kd_schema_num_returns(const kd_schema *schema) { return schema ? schema->nrets : 0; }

const kd_argument *kd_schema_return(const kd_schema *schema, size_t i) {
  if (!schema || i >= schema->nrets) return NULL;
  return kd__rel_at(kd__rel_get(&schema->rets), i);
}

bool kd_schema_is_vararg(const kd_schema *schema) { return schema && schema->vararg; }

bool kd_schema_is_varret(const kd_schema *schema) { return schema && schema->varret; }
