/*
 * nnfw.h: the C API of nnrt, source-compatible with onert's public nnfw.h.
 *
 * Function names, argument order, enum values and struct layouts follow onert's documented API, so
 * an application written for onert builds and runs unchanged against libnnfw from nnrt:
 *
 *   cc app.c -I api/c/include -L target/release -lnnfw
 *
 * Life of a session (the calls allowed in each state are listed with each function):
 *
 *   nnfw_create_session           -> INITIALIZED
 *   nnfw_load_model_from_file     -> MODEL_LOADED   (configure: backends, layouts, types, shapes)
 *   nnfw_prepare                  -> PREPARED       (set input/output buffers)
 *   nnfw_run / nnfw_await         -> FINISHED_RUN   (outputs written to the buffers given)
 *   nnfw_run_async                -> RUNNING        (until nnfw_await)
 *   nnfw_close_session
 *
 * A call made in the wrong state returns NNFW_STATUS_INVALID_STATE; a NULL pointer where one is
 * required returns NNFW_STATUS_UNEXPECTED_NULL. Every failing call leaves a message that
 * nnfw_get_last_error_message returns. Sessions are independent: different sessions may be used
 * from different threads at the same time; one session is used by one thread at a time.
 *
 * Licensed under the Apache License, Version 2.0.
 */
#ifndef __NNFW_H__
#define __NNFW_H__

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An inference session: one model, its configuration, its prepared kernels. Opaque. */
typedef struct nnfw_session nnfw_session;

/** Element type of a tensor, as reported in nnfw_tensorinfo. */
typedef enum
{
  /** 32-bit IEEE float. */
  NNFW_TYPE_TENSOR_FLOAT32 = 0,
  /** 32-bit signed integer. */
  NNFW_TYPE_TENSOR_INT32 = 1,
  /** 8-bit unsigned integer standing for a real number: real = (q - zero_point) * scale. */
  NNFW_TYPE_TENSOR_QUANT8_ASYMM = 2,
  /** Boolean, one byte per element. */
  NNFW_TYPE_TENSOR_BOOL = 3,
  /** 8-bit unsigned integer (not quantized). */
  NNFW_TYPE_TENSOR_UINT8 = 4,
  /** 64-bit signed integer. */
  NNFW_TYPE_TENSOR_INT64 = 5,
  /** 8-bit signed integer standing for a real number: real = (q - zero_point) * scale. */
  NNFW_TYPE_TENSOR_QUANT8_ASYMM_SIGNED = 6,
  /** 16-bit signed integer standing for a real number, zero point 0: real = q * scale. */
  NNFW_TYPE_TENSOR_QUANT16_SYMM_SIGNED = 7,
} NNFW_TYPE;

/** What every API function returns. */
typedef enum
{
  /** Success. */
  NNFW_STATUS_NO_ERROR = 0,
  /** A failure with no more specific code (bad index, bad value, load/prepare/run failure). */
  NNFW_STATUS_ERROR = 1,
  /** A required pointer argument was NULL. */
  NNFW_STATUS_UNEXPECTED_NULL = 2,
  /** The call is not allowed in the session's current state. */
  NNFW_STATUS_INVALID_STATE = 3,
  /** Memory ran out. */
  NNFW_STATUS_OUT_OF_MEMORY = 4,
  /** A buffer given for a result (an output, a message) is too small. */
  NNFW_STATUS_INSUFFICIENT_OUTPUT_SIZE = 5,
  /** The function is deprecated and does nothing. */
  NNFW_STATUS_DEPRECATED_API = 6,
} NNFW_STATUS;

/** Memory layout of an input or output buffer. */
typedef enum
{
  /** No preference: the model's own layout (channels last). */
  NNFW_LAYOUT_NONE = 0,
  /** Channels last: NHWC for rank-4 tensors (the model's layout). */
  NNFW_LAYOUT_CHANNELS_LAST = 1,
  /** Channels first: NCHW for rank-4 tensors, transposed at the boundary. */
  NNFW_LAYOUT_CHANNELS_FIRST = 2,
} NNFW_LAYOUT;

/** What nnfw_query_info_u32 can be asked for. */
typedef enum
{
  /** The runtime version as 0xMMmmmmPP (major, minor, patch). */
  NNFW_INFO_ID_VERSION = 0,
} NNFW_INFO_ID;

/** The highest rank nnfw_tensorinfo can describe. */
#define NNFW_MAX_RANK (6)

/** Element type and shape of a tensor. dims[0..rank) hold the dimensions, outermost first; a
 * dimension unknown until run time reads -1. */
typedef struct nnfw_tensorinfo
{
  /** Element type. */
  NNFW_TYPE dtype;
  /** Number of dimensions. */
  int32_t rank;
  /** Dimensions; entries from rank on are unspecified. */
  int32_t dims[NNFW_MAX_RANK];
} nnfw_tensorinfo;

/** Creates an empty session in state INITIALIZED and stores it in *session. Release it with
 * nnfw_close_session. UNEXPECTED_NULL if session is NULL. */
NNFW_STATUS nnfw_create_session(nnfw_session **session);

/** Closes a session: waits for an nnfw_run_async in flight, then frees everything. The session
 * pointer is invalid afterwards. A NULL session is accepted and ignored (NO_ERROR). */
NNFW_STATUS nnfw_close_session(nnfw_session *session);

/** Copies the session's last error message, NUL-terminated, into buffer (length bytes). The
 * message stays until a later call fails. UNEXPECTED_NULL if session or buffer is NULL;
 * INSUFFICIENT_OUTPUT_SIZE (buffer untouched) if the message and its NUL do not fit. */
NNFW_STATUS nnfw_get_last_error_message(nnfw_session *session, char *buffer, size_t length);

/** Loads a model: an nnpackage folder (metadata/MANIFEST), a zipped nnpackage, or a .tflite or
 * .circle file. path is NUL-terminated, at most 1024 bytes with the NUL. INITIALIZED only:
 * INVALID_STATE otherwise (a session holds one model). ERROR if loading fails. */
NNFW_STATUS nnfw_load_model_from_file(nnfw_session *session, const char *path);

/** Deprecated: use nnfw_set_input_tensorinfo. Returns NNFW_STATUS_DEPRECATED_API. */
NNFW_STATUS nnfw_apply_tensorinfo(nnfw_session *session, uint32_t index,
                                  nnfw_tensorinfo tensor_info);

/** Sets the shape of input index (tensor_info->dtype is ignored). Before nnfw_prepare the shape is
 * used when preparing; after it (PREPARED or FINISHED_RUN) the session is prepared again for the
 * new shape and later runs use it; buffers set with nnfw_set_input/nnfw_set_output must then fit
 * the new shapes. INVALID_STATE before a model is loaded or while RUNNING. ERROR for a rank
 * above NNFW_MAX_RANK, a dimension below 1, or a shape the model cannot take. */
NNFW_STATUS nnfw_set_input_tensorinfo(nnfw_session *session, uint32_t index,
                                      const nnfw_tensorinfo *tensor_info);

/** Prepares the session for inference: partitions the model over the backends, compiles kernels,
 * plans memory. MODEL_LOADED only (prepare runs once): INVALID_STATE otherwise. ERROR if
 * preparing fails (the session stays in MODEL_LOADED and may be configured again). */
NNFW_STATUS nnfw_prepare(nnfw_session *session);

/** Runs inference on the buffers set with nnfw_set_input and writes every output that has a buffer
 * set with nnfw_set_output. PREPARED or FINISHED_RUN: INVALID_STATE otherwise.
 * INSUFFICIENT_OUTPUT_SIZE if an output buffer is too small for the output's shape; ERROR if an
 * input has no buffer or a kernel fails. Returns after the inference finished. */
NNFW_STATUS nnfw_run(nnfw_session *session);

/** Starts nnfw_run's work on a thread of the session and returns at once (state RUNNING). Call
 * nnfw_await before reading outputs or using the session otherwise; one run at a time.
 * PREPARED or FINISHED_RUN: INVALID_STATE otherwise. */
NNFW_STATUS nnfw_run_async(nnfw_session *session);

/** Waits for the run started by nnfw_run_async and returns its status (as nnfw_run would have).
 * Once per nnfw_run_async: ERROR if no asynchronous run is in flight. */
NNFW_STATUS nnfw_await(nnfw_session *session);

/** Gives the buffer input index is read from at each run. PREPARED or FINISHED_RUN:
 * INVALID_STATE otherwise. The buffer stays the caller's and must stay valid until the last run
 * that uses it; it is read, in the type set with nnfw_set_input_type and the layout set with
 * nnfw_set_input_layout, at each nnfw_run. length must be at least the input's size in bytes
 * (ERROR otherwise). A NULL buffer with length 0 unsets the input; a NULL buffer with any other
 * length is an ERROR. type is ignored (deprecated). */
NNFW_STATUS nnfw_set_input(nnfw_session *session, uint32_t index, NNFW_TYPE type,
                           const void *buffer, size_t length);

/** Gives the buffer output index is written to after each run. Same rules as nnfw_set_input; an
 * output whose shape is only known at run time needs a buffer large enough for it
 * (INSUFFICIENT_OUTPUT_SIZE from nnfw_run otherwise). */
NNFW_STATUS nnfw_set_output(nnfw_session *session, uint32_t index, NNFW_TYPE type, void *buffer,
                            size_t length);

/** Stores the number of model inputs in *number. Any state after loading: INVALID_STATE before. */
NNFW_STATUS nnfw_input_size(nnfw_session *session, uint32_t *number);

/** Stores the number of model outputs in *number. Any state after loading: INVALID_STATE before. */
NNFW_STATUS nnfw_output_size(nnfw_session *session, uint32_t *number);

/** Sets the layout of input index's buffer (default channels last). For rank-4 inputs,
 * NNFW_LAYOUT_CHANNELS_FIRST means the buffer is NCHW; nnfw_input_tensorinfo still reports the
 * model's (NHWC) dims. MODEL_LOADED only: INVALID_STATE otherwise. ERROR for an unknown layout or
 * index. */
NNFW_STATUS nnfw_set_input_layout(nnfw_session *session, uint32_t index, NNFW_LAYOUT layout);

/** Sets the layout of output index's buffer; as nnfw_set_input_layout. */
NNFW_STATUS nnfw_set_output_layout(nnfw_session *session, uint32_t index, NNFW_LAYOUT layout);

/** Stores the type and shape of input index in *tensor_info: as in the model, or as set with
 * nnfw_set_input_tensorinfo; after nnfw_prepare, the type set with nnfw_set_input_type.
 * INVALID_STATE before a model is loaded; ERROR for a bad index or a type nnfw.h cannot name. */
NNFW_STATUS nnfw_input_tensorinfo(nnfw_session *session, uint32_t index,
                                  nnfw_tensorinfo *tensor_info);

/** Stores the type and shape of output index in *tensor_info: before nnfw_prepare as declared in
 * the model (-1 for dims unknown until run time), afterwards as computed for the current input
 * shapes. As nnfw_input_tensorinfo otherwise. */
NNFW_STATUS nnfw_output_tensorinfo(nnfw_session *session, uint32_t index,
                                   nnfw_tensorinfo *tensor_info);

/** Sets the backends to use, in order of preference, separated by ';' (e.g. "cpu"); the first is
 * the default, the others take the ops it cannot run. At most 31 characters. MODEL_LOADED only:
 * INVALID_STATE otherwise. A backend this build does not have is skipped at nnfw_prepare, which
 * fails if none is left. */
NNFW_STATUS nnfw_set_available_backends(nnfw_session *session, const char *backends);

/** Deprecated: use the OP_BACKEND_<Op> configuration keys. Returns NNFW_STATUS_DEPRECATED_API. */
NNFW_STATUS nnfw_set_op_backend(nnfw_session *session, const char *op, const char *backend);

/** Stores a uint32 fact in *val. NNFW_INFO_ID_VERSION: the runtime version, 0xMMmmmmPP. session
 * may be NULL. ERROR for an unknown id or a NULL val. */
NNFW_STATUS nnfw_query_info_u32(nnfw_session *session, NNFW_INFO_ID id, uint32_t *val);

/** Sets the folder the runtime may write to (recorded; nnrt writes nothing today). INITIALIZED
 * only: INVALID_STATE otherwise. UNEXPECTED_NULL if dir is NULL. */
NNFW_STATUS nnfw_set_workspace(nnfw_session *session, const char *dir);

#ifdef __cplusplus
}
#endif

#endif /* __NNFW_H__ */
