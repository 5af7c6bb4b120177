/* Buffer layouts and types at the boundary: NCHW buffers for NHWC tensors
 * (nnfw_set_input_layout / nnfw_set_output_layout) and float32 buffers for quantized tensors
 * (nnfw_set_input_type / nnfw_set_output_type).
 *
 *   io_forms MODEL   (input 0 "f" float32 [1,2,3,4] -> RESHAPE -> output 0, same shape;
 *                     input 1 "q" uint8 [1,2,3,4] scale 0.5 zero point 10 -> RESHAPE -> output 1) */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "nnfw_experimental.h"

enum { N = 1, H = 2, W = 3, C = 4, SIZE = N * H * W * C };

int main(int argc, char **argv)
{
  if (!usage_ok(argc, argv, 1, 1, "MODEL"))
    return 1;
  nnfw_session *s = new_session();
  EXPECT_OK(s, nnfw_load_model_from_file(s, argv[1]));

  EXPECT_OK(s, nnfw_set_input_layout(s, 0, NNFW_LAYOUT_CHANNELS_FIRST));
  EXPECT_OK(s, nnfw_set_output_layout(s, 0, NNFW_LAYOUT_CHANNELS_LAST));
  EXPECT_OK(s, nnfw_set_input_layout(s, 1, NNFW_LAYOUT_CHANNELS_FIRST));
  EXPECT_OK(s, nnfw_set_output_layout(s, 1, NNFW_LAYOUT_CHANNELS_FIRST));
  EXPECT_OK(s, nnfw_set_input_type(s, 1, NNFW_TYPE_TENSOR_QUANT8_ASYMM)); /* its own type */
  EXPECT_OK(s, nnfw_set_input_type(s, 1, NNFW_TYPE_TENSOR_FLOAT32));
  EXPECT_OK(s, nnfw_set_output_type(s, 1, NNFW_TYPE_TENSOR_FLOAT32));
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_output_type(s, 1, NNFW_TYPE_TENSOR_INT32));

  nnfw_tensorinfo ti;
  EXPECT_OK(s, nnfw_input_tensorinfo(s, 1, &ti));
  EXPECT_TRUE(ti.dtype == NNFW_TYPE_TENSOR_QUANT8_ASYMM); /* before prepare: the model's type */
  EXPECT_OK(s, nnfw_prepare(s));
  EXPECT_OK(s, nnfw_input_tensorinfo(s, 1, &ti));
  EXPECT_TRUE(ti.dtype == NNFW_TYPE_TENSOR_FLOAT32); /* after: the buffer's type */
  EXPECT_TRUE(ti.rank == 4 && ti.dims[0] == N && ti.dims[1] == H && ti.dims[2] == W && ti.dims[3] == C);

  float f_nchw[SIZE], f_out[SIZE], q_nchw[SIZE], q_out[SIZE];
  unsigned char too_small[SIZE];
  for (int c = 0; c < C; c++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w++)
      {
        int i = (c * H + h) * W + w;
        f_nchw[i] = (float)(c * 100 + h * 10 + w);
        q_nchw[i] = (float)i * 0.5f - 5.0f; /* exactly representable: scale 0.5, zp 10 */
      }
  EXPECT_OK(s, nnfw_set_input(s, 0, NNFW_TYPE_TENSOR_FLOAT32, f_nchw, sizeof f_nchw));
  EXPECT_OK(s, nnfw_set_output(s, 0, NNFW_TYPE_TENSOR_FLOAT32, f_out, sizeof f_out));
  /* A uint8-sized buffer is too small once the input is float32. */
  EXPECT_STATUS(s, NNFW_STATUS_ERROR, nnfw_set_input(s, 1, NNFW_TYPE_TENSOR_QUANT8_ASYMM, too_small, sizeof too_small));
  EXPECT_OK(s, nnfw_set_input(s, 1, NNFW_TYPE_TENSOR_FLOAT32, q_nchw, sizeof q_nchw));
  EXPECT_OK(s, nnfw_set_output(s, 1, NNFW_TYPE_TENSOR_FLOAT32, q_out, sizeof q_out));
  EXPECT_OK(s, nnfw_run(s));

  /* Output 0 is NHWC: element (h, w, c) holds c*100 + h*10 + w. */
  for (int h = 0; h < H; h++)
    for (int w = 0; w < W; w++)
      for (int c = 0; c < C; c++)
        EXPECT_TRUE(f_out[(h * W + w) * C + c] == (float)(c * 100 + h * 10 + w));
  /* Output 1 went NCHW float -> NHWC uint8 -> NCHW float: the same values. */
  for (int i = 0; i < SIZE; i++)
    EXPECT_TRUE(q_out[i] == q_nchw[i]);

  EXPECT_OK(s, nnfw_close_session(s));
  return exit_status("io_forms: NCHW and float32 buffers converted at the boundary");
}
