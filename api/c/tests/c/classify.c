/* Classifies one image with the nnfw C API, as an onert application would, and checks the top-1
 * class against a reference output.
 *
 *   classify MODEL INPUT.npy EXPECTED.npy
 *
 * Exit status: 0 top-1 matches; 1 mismatch or API failure; 3 the model did not load, 4 it did not
 * prepare (the message is printed: the caller may try another model). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static NNFW_TYPE npy_type(const char *descr)
{
  if (strcmp(descr, "<f4") == 0)
    return NNFW_TYPE_TENSOR_FLOAT32;
  if (strcmp(descr, "|i1") == 0)
    return NNFW_TYPE_TENSOR_QUANT8_ASYMM_SIGNED;
  return NNFW_TYPE_TENSOR_UINT8;
}

/* Prints "<what> failed: <the session's last error>", closes the session, frees both arrays and
 * returns `code`. */
static int give_up(nnfw_session *session, const char *what, npy_array *input, npy_array *expected, int code)
{
  char msg[1024] = "";
  nnfw_get_last_error_message(session, msg, sizeof msg);
  printf("%s failed: %s\n", what, msg);
  nnfw_close_session(session);
  free(input->data);
  free(expected->data);
  return code;
}

int main(int argc, char **argv)
{
  if (!usage_ok(argc, argv, 3, 3, "MODEL INPUT.npy EXPECTED.npy"))
    return 1;
  npy_array input, expected;
  if (npy_read(argv[2], &input) != 0 || npy_read(argv[3], &expected) != 0)
  {
    fprintf(stderr, "cannot read %s or %s\n", argv[2], argv[3]);
    return 1;
  }

  nnfw_session *session = new_session();
  if (nnfw_load_model_from_file(session, argv[1]) != NNFW_STATUS_NO_ERROR)
    return give_up(session, "load", &input, &expected, 3);
  EXPECT_OK(session, nnfw_set_available_backends(session, "cpu"));
  if (nnfw_prepare(session) != NNFW_STATUS_NO_ERROR)
    return give_up(session, "prepare", &input, &expected, 4);

  uint32_t n_in = 0, n_out = 0;
  EXPECT_OK(session, nnfw_input_size(session, &n_in));
  EXPECT_OK(session, nnfw_output_size(session, &n_out));
  EXPECT_TRUE(n_in == 1 && n_out >= 1);

  nnfw_tensorinfo ti_in, ti_out;
  EXPECT_OK(session, nnfw_input_tensorinfo(session, 0, &ti_in));
  EXPECT_OK(session, nnfw_output_tensorinfo(session, 0, &ti_out));
  size_t in_bytes = tensor_bytes(&ti_in), out_bytes = tensor_bytes(&ti_out);
  printf("input rank %d [%d %d %d %d] type %d (%zu bytes), output type %d (%zu bytes)\n", ti_in.rank,
         ti_in.dims[0], ti_in.dims[1], ti_in.dims[2], ti_in.dims[3], ti_in.dtype, in_bytes,
         ti_out.dtype, out_bytes);
  EXPECT_TRUE(input.size == in_bytes);

  void *output = calloc(1, out_bytes);
  void *output2 = calloc(1, out_bytes);
  EXPECT_OK(session, nnfw_set_input(session, 0, ti_in.dtype, input.data, input.size));
  EXPECT_OK(session, nnfw_set_output(session, 0, ti_out.dtype, output, out_bytes));
  EXPECT_OK(session, nnfw_run(session));

  size_t n = out_bytes / nnfw_type_size(ti_out.dtype);
  NNFW_TYPE et = npy_type(expected.descr);
  size_t n_expected = expected.size / nnfw_type_size(et);
  size_t top = argmax(output, n, ti_out.dtype);
  size_t want = argmax(expected.data, n_expected, et);
  printf("top-1 %zu, expected %zu (%zu classes)\n", top, want, n);
  EXPECT_TRUE(n == n_expected);
  EXPECT_TRUE(top == want);

  /* The same run again, asynchronously, into another buffer: same bytes. */
  EXPECT_OK(session, nnfw_set_output(session, 0, ti_out.dtype, output2, out_bytes));
  EXPECT_OK(session, nnfw_run_async(session));
  EXPECT_OK(session, nnfw_await(session));
  EXPECT_TRUE(memcmp(output, output2, out_bytes) == 0);

  EXPECT_OK(session, nnfw_close_session(session));
  free(output);
  free(output2);
  free(input.data);
  free(expected.data);
  return exit_status(NULL);
}
