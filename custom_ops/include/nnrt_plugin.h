/*
 * nnrt_plugin.h — the ABI between nnrt and a custom-operator plugin (a shared library).
 *
 * A plugin exports one C function, nnrt_plugin_register(), which fills an nnrt_plugin_info with
 * the ops it provides. For each op it gives an eval function, shaped like onert's custom kernels
 * (nnfw_custom_kernel_params: input and output descriptors with type, shape and data pointer,
 * plus the op's option bytes from the model), and optionally a shape function that nnrt calls at
 * prepare to compute output shapes the model leaves unknown.
 *
 * Device drivers (version 2): a plugin may also register device ops (nnrt_plugin_device_op): a
 * driver for a custom op whose options carry a compiled program for an accelerator, such as the
 * Edge TPU's "edgetpu-custom-op". nnrt calls the driver's init once per op at prepare with the
 * op's option bytes (the driver keeps what it needs in its op state), run at each inference with
 * one buffer per layer in the device's layout, and free when the session goes. nnrt does the host
 * side: it matches the program's layers to the op's tensors, lays the inputs out (padding,
 * quantization of float tensors) and re-lays the outputs from the device's layout to the tensor's
 * (for the Edge TPU: from the tile layout to YXZ, then dequantization where the tensor is float).
 *
 * Versioning: NNRT_PLUGIN_ABI_VERSION changes whenever a struct or a function type below changes.
 * nnrt passes a version in nnrt_plugin_host; the plugin returns the version it implements (and
 * writes it into nnrt_plugin_info.abi_version), or 0 if it does not speak the host's version.
 * nnrt offers its newest version (2) first; when the plugin refuses, it offers version 1 again,
 * so plugins built against version 1 keep loading. A plugin that speaks version 2 but is offered
 * version 1 (an older nnrt) fills only the version 1 fields of nnrt_plugin_info, whose struct is
 * then the shorter version 1 struct. Any other answer is refused with an error naming both.
 *
 * Rules a plugin must follow:
 *  - Everything nnrt_plugin_info points to (names, the ops array, op_data) stays valid until the
 *    library is unloaded. nnrt keeps the library loaded while any session can still call it.
 *  - Eval and shape functions may be called from several threads at once (several sessions, or
 *    a session's run on another thread): they must not keep unsynchronized mutable state.
 *  - Input data is read-only. Outputs are preallocated by nnrt with the shapes given; a kernel
 *    writes exactly `size` bytes at `data` and must not keep any pointer after it returns.
 *  - Return 0 on success. Any other value is a failure: write a NUL-terminated message (at most
 *    error_size bytes, truncated if longer) into `error`; nnrt reports it as a run error (or a
 *    prepare error, for shape functions) naming the op.
 *  - Never let a C++ exception or a Rust panic cross these functions (nnrt-plugin-sdk catches
 *    panics for Rust plugins).
 *
 * Rust plugins: the crate nnrt-plugin-sdk (custom_ops/plugin-sdk) implements this ABI from safe
 * Rust closures. C plugins: include this header and export nnrt_plugin_register.
 */
#ifndef NNRT_PLUGIN_H
#define NNRT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI described by this header. */
#define NNRT_PLUGIN_ABI_VERSION 2u

/* The oldest ABI nnrt still loads: plugins built for it register custom ops only. */
#define NNRT_PLUGIN_ABI_VERSION_MIN 1u

/* The most dims a tensor descriptor holds (as NNFW_MAX_RANK in nnfw.h). */
#define NNRT_PLUGIN_MAX_RANK 6

/* The symbol every plugin exports. */
#define NNRT_PLUGIN_ENTRY_POINT "nnrt_plugin_register"

/* Element types. Values match NNFW_TYPE where nnfw.h has the type; a quantized tensor has a
 * non-zero `scale` in its descriptor whatever its type. */
typedef enum nnrt_plugin_dtype {
  NNRT_PLUGIN_FLOAT32 = 0,
  NNRT_PLUGIN_INT32 = 1,
  NNRT_PLUGIN_BOOL = 3,
  NNRT_PLUGIN_UINT8 = 4,
  NNRT_PLUGIN_INT64 = 5,
  NNRT_PLUGIN_INT8 = 6,
  NNRT_PLUGIN_INT16 = 7,
  NNRT_PLUGIN_FLOAT16 = 8
} nnrt_plugin_dtype;

/* One tensor as a kernel sees it. */
typedef struct nnrt_plugin_tensor {
  int32_t dtype;                       /* an nnrt_plugin_dtype */
  int32_t rank;                        /* 0..NNRT_PLUGIN_MAX_RANK */
  int32_t dims[NNRT_PLUGIN_MAX_RANK];  /* dims[0..rank), row-major, innermost last */
  float scale;                         /* per-tensor quantization scale; 0 when not quantized
                                          (per-axis quantized tensors also report 0) */
  int32_t zero_point;                  /* per-tensor quantization zero point */
  void *data;                          /* eval: the bytes (inputs read-only), 8-byte aligned.
                                          shape functions: an input's bytes when it is a
                                          constant of the model, else NULL; outputs NULL */
  size_t size;                         /* bytes at data (0 when data is NULL) */
} nnrt_plugin_tensor;

/* What an eval or shape function gets. Inputs the model leaves out (optional inputs) are not
 * listed. In a shape function, outputs carry their dtype and quantization; the function writes
 * each output's rank and dims. */
typedef struct nnrt_plugin_kernel_params {
  const nnrt_plugin_tensor *inputs;
  size_t ninputs;
  nnrt_plugin_tensor *outputs;
  size_t noutputs;
  const uint8_t *options;              /* the op's custom options from the model (may be NULL) */
  size_t options_size;
} nnrt_plugin_kernel_params;

/* Runs the op. op_data is the pointer the plugin put in its nnrt_plugin_op. */
typedef int32_t (*nnrt_plugin_eval_fn)(void *op_data, const nnrt_plugin_kernel_params *params,
                                       char *error, size_t error_size);

/* Computes output shapes from input shapes (and constant inputs, and options), at prepare. */
typedef int32_t (*nnrt_plugin_shape_fn)(void *op_data, nnrt_plugin_kernel_params *params,
                                        char *error, size_t error_size);

/* One op a plugin provides. */
typedef struct nnrt_plugin_op {
  const char *name;                    /* the custom op's name in the model, e.g.
                                          "Convolution2DTransposeBias" */
  nnrt_plugin_eval_fn eval;            /* required */
  nnrt_plugin_shape_fn infer_shape;    /* optional (NULL: the model's declared shapes are used) */
  void *op_data;                       /* passed back to eval and infer_shape as is */
} nnrt_plugin_op;

/* One buffer of a device op's run: a layer of the device program, in the device's layout. */
typedef struct nnrt_device_buffer {
  const char *name;                    /* the layer's name in the program (NUL-terminated) */
  void *data;                          /* inputs: read-only, laid out and padded by nnrt;
                                          outputs: the driver writes the device's layout */
  size_t size;                         /* bytes at data: the layer's padded size */
} nnrt_device_buffer;

/* Called once per op at prepare with the op's option bytes (valid only during the call: copy what
 * you keep). Sets *op_state to the driver's state for this op (may stay NULL). A non-zero return
 * fails prepare with the message in error. */
typedef int32_t (*nnrt_device_init_fn)(void *driver_data, const uint8_t *options, size_t options_size,
                                       void **op_state, char *error, size_t error_size);

/* Runs one inference of the op: inputs and outputs are in the order of the program's layers (the
 * executable's input_layers and output_layers for the Edge TPU), each named. Not called for one op
 * state from two threads at once; different op states may run in parallel. */
typedef int32_t (*nnrt_device_run_fn)(void *op_state, const nnrt_device_buffer *inputs, size_t ninputs,
                                      const nnrt_device_buffer *outputs, size_t noutputs,
                                      char *error, size_t error_size);

/* Releases an op state from init (called exactly once per successful init; may be NULL). */
typedef void (*nnrt_device_free_fn)(void *op_state);

/* One device op a driver provides (version 2). */
typedef struct nnrt_plugin_device_op {
  const char *name;                    /* the custom op's name in the model: "edgetpu-custom-op" */
  const char *device;                  /* the device, for messages: "Edge TPU" */
  nnrt_device_init_fn init;            /* required */
  nnrt_device_run_fn run;              /* required */
  nnrt_device_free_fn free;            /* optional */
  void *driver_data;                   /* passed to init as is */
} nnrt_plugin_device_op;

/* What nnrt_plugin_register fills in. */
typedef struct nnrt_plugin_info {
  uint32_t abi_version;                /* NNRT_PLUGIN_ABI_VERSION the plugin was built with */
  const char *name;                    /* the plugin's name, for messages */
  const nnrt_plugin_op *ops;
  size_t nops;
  /* Version 2 only (absent from the struct a version 1 host passes): */
  const nnrt_plugin_device_op *device_ops;
  size_t ndevice_ops;
} nnrt_plugin_info;

/* Log levels for nnrt_plugin_host.log. */
enum { NNRT_PLUGIN_LOG_ERROR = 1, NNRT_PLUGIN_LOG_WARN = 2, NNRT_PLUGIN_LOG_INFO = 3, NNRT_PLUGIN_LOG_DEBUG = 4 };

/* What nnrt gives the plugin. The struct stays valid for the life of the process. */
typedef struct nnrt_plugin_host {
  uint32_t abi_version;                /* the host's NNRT_PLUGIN_ABI_VERSION */
  /* Logs a NUL-terminated message through nnrt's logger; callable from any thread. */
  void (*log)(int32_t level, const char *message);
} nnrt_plugin_host;

/* The entry point. Returns the ABI version the plugin implements for host->abi_version
 * (NNRT_PLUGIN_ABI_VERSION when built against this header and offered it), or 0 to refuse. */
uint32_t nnrt_plugin_register(const nnrt_plugin_host *host, nnrt_plugin_info *info);

typedef uint32_t (*nnrt_plugin_register_fn)(const nnrt_plugin_host *host, nnrt_plugin_info *info);

#ifdef __cplusplus
}
#endif

#endif /* NNRT_PLUGIN_H */
