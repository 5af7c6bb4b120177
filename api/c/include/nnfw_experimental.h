/*
 * nnfw_experimental.h: nnrt's implementation of the experimental part of onert's C API that
 * inference applications use: custom operator kernels, tensor lookup by name, per-op backends and
 * float I/O for quantized models. (onert's training, on-device quantization and code generation
 * calls are not provided.)
 *
 * Licensed under the Apache License, Version 2.0.
 */
#ifndef __NNFW_EXPERIMENTAL_H__
#define __NNFW_EXPERIMENTAL_H__

#include "nnfw.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One input or output of a custom operator: its type and shape, and its data. */
typedef struct
{
  /** Element type and shape. */
  nnfw_tensorinfo type;
  /** The tensor's bytes (read-only for inputs). */
  void *allocation;
} nnfw_operand;

/** What a custom operator's eval function receives. */
typedef struct
{
  /** Number of inputs. */
  size_t ninputs;
  /** ninputs operands. */
  nnfw_operand *inputs;
  /** Number of outputs. */
  size_t noutputs;
  /** noutputs operands, whose buffers the function fills. */
  nnfw_operand *outputs;
} nnfw_custom_kernel_params;

/** A custom operator's kernel. userdata holds the operator's option bytes from the model
 * (userdata_size of them); params and userdata are valid during the call only. Called on one of
 * the session's threads. */
typedef void (*nnfw_custom_eval)(nnfw_custom_kernel_params *params, char *userdata,
                                 size_t userdata_size);

/** How a custom operator is registered. */
typedef struct
{
  /** The kernel. */
  nnfw_custom_eval eval_function;
} custom_kernel_registration_info;

/** Registers the kernel of custom operator id (the operator's custom code in the model). Call it
 * before nnfw_prepare (before or after loading). UNEXPECTED_NULL if id, info or
 * info->eval_function is NULL. */
NNFW_STATUS nnfw_register_custom_op_info(nnfw_session *session, const char *id,
                                         custom_kernel_registration_info *info);

/** nnrt extension: stops the session's run in progress, from any thread; that nnfw_run (or
 * nnfw_await) returns ERROR with "run cancelled" as its message, and the session stays usable.
 * Without a run in progress, the next run stops at its start. Any state with a model:
 * INVALID_STATE before a model is loaded. Never waits for the running call. */
NNFW_STATUS nnfw_cancel(nnfw_session *session);

/** nnrt extension: stores in *count how many named entry points the model has (TFLite
 * SignatureDefs, ExecuTorch methods; 0 for a model without any). Any state with a model. */
NNFW_STATUS nnfw_signature_count(nnfw_session *session, uint32_t *count);

/** nnrt extension: copies the name of entry point index (0 .. count-1, in file order) into buffer
 * as a NUL-terminated string of at most length bytes; INSUFFICIENT_OUTPUT_SIZE if it does not fit,
 * ERROR for an index out of range. Any state with a model. */
NNFW_STATUS nnfw_signature_name(nnfw_session *session, uint32_t index, char *buffer, size_t length);

/** nnrt extension: runs entry point name (a signature key or an ExecuTorch method name) instead of
 * the model's first subgraph; the session's inputs and outputs become that entry point's, in its
 * order. After loading, before nnfw_prepare (INVALID_STATE otherwise); ERROR naming the known
 * entry points if the model has none called name. */
NNFW_STATUS nnfw_select_signature(nnfw_session *session, const char *name);

/** Stores in *index the index of the input named tensorname (the first one if several share the
 * name). ERROR if none has that name (index untouched) or the name is 64 bytes or longer. */
NNFW_STATUS nnfw_input_tensorindex(nnfw_session *session, const char *tensorname, uint32_t *index);

/** Stores in *index the index of the output named tensorname; as nnfw_input_tensorindex. */
NNFW_STATUS nnfw_output_tensorindex(nnfw_session *session, const char *tensorname, uint32_t *index);

/** Sets the backend of ops by index, "0=cpu;1=cpu;...", (the OP_BACKEND_MAP key).
 * MODEL_LOADED only: INVALID_STATE otherwise. ERROR if backend_settings is NULL. */
NNFW_STATUS nnfw_set_backends_per_operation(nnfw_session *session, const char *backend_settings);

/** Sets the type of input index's buffer: the model's own type, or NNFW_TYPE_TENSOR_FLOAT32 for
 * a quantized input, which is then quantized at each run with the input's scale and zero point.
 * MODEL_LOADED only: INVALID_STATE otherwise. ERROR for another type. */
NNFW_STATUS nnfw_set_input_type(nnfw_session *session, uint32_t index, NNFW_TYPE type);

/** Sets the type of output index's buffer: the model's own type, or NNFW_TYPE_TENSOR_FLOAT32 for
 * a quantized output, which is then dequantized after each run. As nnfw_set_input_type. */
NNFW_STATUS nnfw_set_output_type(nnfw_session *session, uint32_t index, NNFW_TYPE type);

#ifdef __cplusplus
}
#endif

#endif /* __NNFW_EXPERIMENTAL_H__ */
