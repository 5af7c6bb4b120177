/* A custom operator kernel registered with nnfw_register_custom_op_info.
 *
 *   custom_op MODEL   (input "x" float32 [1,4] -> custom "AddScalar" -> output "y" [1,4]; the op's
 *                      option bytes are one byte, the value to add) */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "nnfw_experimental.h"

static int g_calls = 0;

static void add_scalar(nnfw_custom_kernel_params *params, char *userdata, size_t userdata_size)
{
  g_calls++;
  if (params->ninputs != 1 || params->noutputs != 1 || userdata_size != 1)
    return;
  const nnfw_operand *x = &params->inputs[0];
  nnfw_operand *y = &params->outputs[0];
  if (x->type.dtype != NNFW_TYPE_TENSOR_FLOAT32 || x->type.rank != 2 || y->type.dims[1] != 4)
    return;
  size_t n = (size_t)x->type.dims[0] * (size_t)x->type.dims[1];
  for (size_t i = 0; i < n; i++)
    ((float *)y->allocation)[i] = ((const float *)x->allocation)[i] + (float)userdata[0];
}

int main(int argc, char **argv)
{
  if (!usage_ok(argc, argv, 1, 1, "MODEL"))
    return 1;
  nnfw_session *s = new_session();
  custom_kernel_registration_info info = {add_scalar};
  /* Registered before loading, as onert applications do. */
  EXPECT_OK(s, nnfw_register_custom_op_info(s, "AddScalar", &info));
  EXPECT_OK(s, nnfw_load_model_from_file(s, argv[1]));
  uint32_t xi = 99, yi = 99;
  EXPECT_OK(s, nnfw_input_tensorindex(s, "x", &xi));
  EXPECT_OK(s, nnfw_output_tensorindex(s, "y", &yi));
  EXPECT_TRUE(xi == 0 && yi == 0);
  EXPECT_OK(s, nnfw_prepare(s));
  float x[4] = {1.0f, -2.0f, 0.5f, 10.0f}, y[4] = {0};
  EXPECT_OK(s, nnfw_set_input(s, xi, NNFW_TYPE_TENSOR_FLOAT32, x, sizeof x));
  EXPECT_OK(s, nnfw_set_output(s, yi, NNFW_TYPE_TENSOR_FLOAT32, y, sizeof y));
  EXPECT_OK(s, nnfw_run(s));
  EXPECT_TRUE(g_calls == 1);
  for (int i = 0; i < 4; i++)
    EXPECT_TRUE(y[i] == x[i] + 3.0f);
  EXPECT_OK(s, nnfw_close_session(s));

  /* Without the kernel, prepare fails and says which op is missing. */
  EXPECT_OK(s, nnfw_create_session(&s));
  EXPECT_OK(s, nnfw_load_model_from_file(s, argv[1]));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_prepare(s));
  char msg[512] = "";
  EXPECT_OK(s, nnfw_get_last_error_message(s, msg, sizeof msg));
  EXPECT_TRUE(strstr(msg, "AddScalar") != NULL);
  EXPECT_OK(s, nnfw_close_session(s));

  return exit_status("custom_op: y = x + 3 through the C kernel");
}
