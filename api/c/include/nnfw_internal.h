/*
 * nnfw_internal.h: configuration by key, as in onert's nnfw_internal.h.
 *
 * Licensed under the Apache License, Version 2.0.
 */
#ifndef __NNFW_INTERNAL_H__
#define __NNFW_INTERNAL_H__

#include "nnfw.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Sets a configuration key. MODEL_LOADED only: INVALID_STATE otherwise; UNEXPECTED_NULL if key or
 * value is NULL; ERROR for an unknown key. Keys: BACKENDS, NUM_THREADS, EXECUTOR,
 * OP_BACKEND_ALLOPS, OP_BACKEND_MAP, OP_BACKEND_<OpName>; onert's GRAPH_DOT_DUMP, USE_SCHEDULER,
 * PROFILING_MODE and ENABLE_LOG are accepted and have no effect. Values set here override the
 * package's cfg file and the environment. */
NNFW_STATUS nnfw_set_config(nnfw_session *session, const char *key, const char *value);

/** Copies the value of a configuration key, NUL-terminated, into value (value_size bytes).
 * MODEL_LOADED only: INVALID_STATE otherwise; UNEXPECTED_NULL if key or value is NULL; ERROR if
 * the value does not fit or the key is unknown. BACKENDS with no backends set returns NO_ERROR
 * and leaves value untouched; EXECUTOR defaults to "Linear". */
NNFW_STATUS nnfw_get_config(nnfw_session *session, const char *key, char *value, size_t value_size);

#ifdef __cplusplus
}
#endif

#endif /* __NNFW_INTERNAL_H__ */
