/* Misuse of the nnfw C API: NULL pointers, calls in the wrong state, short buffers, bad indices
 * and values. Each call's status is checked against what onert's documented state rules give.
 *
 *   misuse MODEL      (a float model with one rank-4 input and one output) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "nnfw_experimental.h"
#include "nnfw_internal.h"
#include "nnfw_version.h"

static void nop_eval(nnfw_custom_kernel_params *params, char *userdata, size_t size)
{
  (void)params;
  (void)userdata;
  (void)size;
}

int main(int argc, char **argv)
{
  if (!usage_ok(argc, argv, 1, 1, "MODEL"))
    return 1;
  const char *model = argv[1];
  nnfw_session *none = NULL;
  uint32_t n = 0;
  nnfw_tensorinfo ti;
  char text[256];
  memset(&ti, 0, sizeof ti);

  /* NULL session everywhere. */
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_create_session(NULL));
  EXPECT_STATUS(none, NNFW_STATUS_NO_ERROR, nnfw_close_session(NULL));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_load_model_from_file(NULL, model));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_prepare(NULL));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_run(NULL));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_run_async(NULL));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_await(NULL));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_input(NULL, 0, NNFW_TYPE_TENSOR_FLOAT32, text, 4));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_output(NULL, 0, NNFW_TYPE_TENSOR_FLOAT32, text, 4));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_input_size(NULL, &n));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_output_size(NULL, &n));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_input_tensorinfo(NULL, 0, &ti));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_output_tensorinfo(NULL, 0, &ti));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_input_tensorinfo(NULL, 0, &ti));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_available_backends(NULL, "cpu"));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_input_layout(NULL, 0, NNFW_LAYOUT_CHANNELS_LAST));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_output_type(NULL, 0, NNFW_TYPE_TENSOR_FLOAT32));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_get_last_error_message(NULL, text, sizeof text));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_config(NULL, "NUM_THREADS", "1"));
  EXPECT_STATUS(none, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_workspace(NULL, "."));
  EXPECT_STATUS(none, NNFW_STATUS_DEPRECATED_API, nnfw_set_op_backend(NULL, "Conv2D", "cpu"));
  EXPECT_STATUS(none, NNFW_STATUS_DEPRECATED_API, nnfw_apply_tensorinfo(NULL, 0, ti));
  uint32_t version = 0;
  EXPECT_STATUS(none, NNFW_STATUS_NO_ERROR, nnfw_query_info_u32(NULL, NNFW_INFO_ID_VERSION, &version));
  EXPECT_TRUE(version == NNFW_VERSION);
  EXPECT_STATUS(none, NNFW_STATUS_ERROR, nnfw_query_info_u32(NULL, NNFW_INFO_ID_VERSION, NULL));
  EXPECT_STATUS(none, NNFW_STATUS_ERROR, nnfw_query_info_u32(NULL, (NNFW_INFO_ID)42, &version));

  nnfw_session *s = NULL;
  EXPECT_OK(s, nnfw_create_session(&s));
  if (!s)
    return 1;

  /* INITIALIZED: nothing but loading (and the workspace, custom ops). */
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_prepare(s));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_run(s));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_run_async(s));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_await(s));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_input_size(s, &n));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_output_size(s, &n));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_input_tensorinfo(s, 0, &ti));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_output_tensorinfo(s, 0, &ti));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_input_tensorinfo(s, 0, &ti));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_input(s, 0, NNFW_TYPE_TENSOR_FLOAT32, text, 4));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_output(s, 0, NNFW_TYPE_TENSOR_FLOAT32, text, 4));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_available_backends(s, "cpu"));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_input_layout(s, 0, NNFW_LAYOUT_CHANNELS_FIRST));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_input_type(s, 0, NNFW_TYPE_TENSOR_FLOAT32));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_config(s, "NUM_THREADS", "1"));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_get_config(s, "BACKENDS", text, sizeof text));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_input_tensorindex(s, "input", &n));
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_workspace(s, NULL));
  EXPECT_OK(s, nnfw_set_workspace(s, "."));

  /* The last error message: kept per session, copied only if it fits. */
  EXPECT_OK(s, nnfw_get_last_error_message(s, text, sizeof text));
  EXPECT_TRUE(strstr(text, "nnfw_set_workspace") != NULL); /* the NULL dir above */
  strcpy(text, "untouched");
  EXPECT_STATUS(s, NNFW_STATUS_INSUFFICIENT_OUTPUT_SIZE, nnfw_get_last_error_message(s, text, 4));
  EXPECT_TRUE(strcmp(text, "untouched") == 0);
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_get_last_error_message(s, NULL, 16));

  /* Custom op registration checks its pointers. */
  custom_kernel_registration_info reg = {nop_eval};
  custom_kernel_registration_info noreg = {NULL};
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_register_custom_op_info(s, NULL, &reg));
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_register_custom_op_info(s, "Nop", NULL));
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_register_custom_op_info(s, "Nop", &noreg));
  EXPECT_OK(s, nnfw_register_custom_op_info(s, "Nop", &reg));

  /* Loading: NULL, too long, missing file; the session stays INITIALIZED. */
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_load_model_from_file(s, NULL));
  char *long_path = malloc(2048);
  memset(long_path, 'a', 2047);
  long_path[2047] = 0;
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_load_model_from_file(s, long_path));
  free(long_path);
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_load_model_from_file(s, "/nonexistent/model.tflite"));
  EXPECT_OK(s, nnfw_get_last_error_message(s, text, sizeof text));
  EXPECT_TRUE(strstr(text, "nonexistent") != NULL);
  EXPECT_OK(s, nnfw_load_model_from_file(s, model));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_load_model_from_file(s, model));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_workspace(s, "."));

  /* MODEL_LOADED: queries and configuration; no buffers, no runs. */
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_input_size(s, NULL));
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_output_size(s, NULL));
  EXPECT_OK(s, nnfw_input_size(s, &n));
  EXPECT_TRUE(n == 1);
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_input_tensorinfo(s, 0, NULL));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_input_tensorinfo(s, 99, &ti));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_output_tensorinfo(s, 99, &ti));
  EXPECT_OK(s, nnfw_input_tensorinfo(s, 0, &ti));
  EXPECT_TRUE(ti.dtype == NNFW_TYPE_TENSOR_FLOAT32 && ti.rank == 4);
  nnfw_tensorinfo model_in = ti;
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_run(s));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_run_async(s));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_input(s, 0, NNFW_TYPE_TENSOR_FLOAT32, text, 4));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_output(s, 0, NNFW_TYPE_TENSOR_FLOAT32, text, 4));

  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_input_layout(s, 0, (NNFW_LAYOUT)7));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_input_layout(s, 99, NNFW_LAYOUT_CHANNELS_LAST));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_output_layout(s, 99, NNFW_LAYOUT_CHANNELS_LAST));
  EXPECT_OK(s, nnfw_set_input_layout(s, 0, NNFW_LAYOUT_NONE));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_input_type(s, 0, NNFW_TYPE_TENSOR_INT64));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_input_type(s, 99, NNFW_TYPE_TENSOR_FLOAT32));
  EXPECT_OK(s, nnfw_set_input_type(s, 0, NNFW_TYPE_TENSOR_FLOAT32));

  nnfw_tensorinfo bad = model_in;
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_input_tensorinfo(s, 0, NULL));
  bad.rank = 7;
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_input_tensorinfo(s, 0, &bad));
  bad = model_in;
  bad.dims[1] = 0;
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_input_tensorinfo(s, 0, &bad));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_input_tensorinfo(s, 99, &model_in));
  EXPECT_OK(s, nnfw_set_input_tensorinfo(s, 0, &model_in));

  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_available_backends(s, NULL));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_available_backends(s, "cpu;cpu;cpu;cpu;cpu;cpu;cpu;cpu;cpu"));
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_config(s, NULL, "1"));
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_set_config(s, "NUM_THREADS", NULL));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_config(s, "NO_SUCH_KEY", "1"));
  EXPECT_OK(s, nnfw_set_config(s, "NUM_THREADS", "1"));
  EXPECT_OK(s, nnfw_set_config(s, "EXECUTOR", "Linear"));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_backends_per_operation(s, NULL));
  EXPECT_STATUS(s, NNFW_STATUS_DEPRECATED_API, nnfw_set_op_backend(s, "Conv2D", "cpu"));

  /* A backend this build lacks: prepare fails and the session stays MODEL_LOADED. */
  EXPECT_OK(s, nnfw_set_available_backends(s, "nosuchbackend"));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_prepare(s));
  EXPECT_OK(s, nnfw_set_available_backends(s, "cpu"));
  EXPECT_OK(s, nnfw_get_config(s, "BACKENDS", text, sizeof text));
  EXPECT_TRUE(strcmp(text, "cpu") == 0);
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_get_config(s, "BACKENDS", text, 3));
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_get_config(s, "BACKENDS", NULL, 3));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_get_config(s, "NO_SUCH_KEY", text, sizeof text));
  EXPECT_OK(s, nnfw_get_config(s, "EXECUTOR", text, sizeof text));
  EXPECT_TRUE(strcmp(text, "Linear") == 0);

  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_input_tensorindex(s, NULL, &n));
  EXPECT_STATUS(s, NNFW_STATUS_UNEXPECTED_NULL, nnfw_input_tensorindex(s, "x", NULL));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_input_tensorindex(s, "no such tensor", &n));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_output_tensorindex(s, "no such tensor", &n));

  EXPECT_OK(s, nnfw_prepare(s));

  /* PREPARED: no more configuration; prepare runs once. */
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_prepare(s));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_available_backends(s, "cpu"));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_input_layout(s, 0, NNFW_LAYOUT_CHANNELS_LAST));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_output_type(s, 0, NNFW_TYPE_TENSOR_FLOAT32));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_config(s, "NUM_THREADS", "2"));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_get_config(s, "BACKENDS", text, sizeof text));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_await(s));

  EXPECT_OK(s, nnfw_input_tensorinfo(s, 0, &ti));
  nnfw_tensorinfo to;
  EXPECT_OK(s, nnfw_output_tensorinfo(s, 0, &to));
  size_t in_bytes = tensor_bytes(&ti), out_bytes = tensor_bytes(&to);
  unsigned char *in = calloc(1, in_bytes), *outb = calloc(1, out_bytes);

  /* Buffers: NULL with a length, short, bad index; NULL with length 0 unsets. */
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_input(s, 0, ti.dtype, NULL, in_bytes));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_input(s, 0, ti.dtype, in, in_bytes - 1));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_input(s, 99, ti.dtype, in, in_bytes));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_output(s, 0, to.dtype, NULL, out_bytes));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_output(s, 0, to.dtype, outb, out_bytes - 1));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_output(s, 99, to.dtype, outb, out_bytes));
  EXPECT_OK(s, nnfw_set_input(s, 0, ti.dtype, NULL, 0));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_run(s)); /* input 0 has no buffer */
  EXPECT_OK(s, nnfw_get_last_error_message(s, text, sizeof text));
  EXPECT_TRUE(strstr(text, "nnfw_set_input") != NULL);

  EXPECT_OK(s, nnfw_set_input(s, 0, ti.dtype, in, in_bytes));
  EXPECT_OK(s, nnfw_set_output(s, 0, to.dtype, outb, out_bytes));
  EXPECT_OK(s, nnfw_run(s));

  /* RUNNING: only nnfw_await (and queries); await once. */
  EXPECT_OK(s, nnfw_run_async(s));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_run(s));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_run_async(s));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_input(s, 0, ti.dtype, in, in_bytes));
  EXPECT_STATUS(s, NNFW_STATUS_INVALID_STATE, nnfw_set_input_tensorinfo(s, 0, &model_in));
  EXPECT_OK(s, nnfw_output_size(s, &n));
  EXPECT_OK(s, nnfw_await(s));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_await(s));

  /* FINISHED_RUN: buffers and runs again; the input shape may be set again. */
  EXPECT_OK(s, nnfw_set_input_tensorinfo(s, 0, &model_in));
  EXPECT_OK(s, nnfw_run(s));
  EXPECT_OK(s, nnfw_run_async(s));
  EXPECT_OK(s, nnfw_close_session(s)); /* with a run in flight: waits for it */

  free(in);
  free(outb);
  return exit_status("misuse: all checks passed");
}
