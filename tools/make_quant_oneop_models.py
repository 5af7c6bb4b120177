"""Regenerates tests/models/quant_oneop/: one-op quantized TFLite models with inputs and the
outputs of LiteRT's reference kernels (BUILTIN_REF resolver), which tests/tests/quant_oneop.rs
requires nnrt to match bit for bit. Covers int16 LOGISTIC/TANH (power-of-two and general input
scales), int16 SUB (power-of-two and general paths), PRELU, LOG_SOFTMAX, BATCH_MATMUL,
TRANSPOSE_CONV, int8 SQUARED_DIFFERENCE and the quantized unary ops (ABS, SQRT, RSQRT, LOG, EXP,
GELU, ELU) in the dtypes TFLite has them.
Needs a Python with ai-edge-litert and numpy (python3 -m venv V && V/bin/pip install ai-edge-litert numpy):

  V/bin/python tools/make_quant_oneop_models.py [tests/models/quant_oneop]
"""
import os, shutil, sys, numpy as np
import ai_edge_litert.schema_py_generated as S
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from oneop_model import B, model, opt

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'models', 'quant_oneop')


def ints(shape, lo, hi, seed):
    return np.random.default_rng(seed).integers(lo, hi + 1, shape)


def save(name, data, seed, at_least=None, resolver=OpResolverType.BUILTIN_REF):
    """at_least: the smallest input value (RSQRT and SQRT refuse inputs below the zero point);
    resolver: LiteRT's kernels (the reference ones unless an op has none there)."""
    d = os.path.join(OUT, name); os.makedirs(d, exist_ok=True)
    path = os.path.join(d, 'model.tflite'); open(path, 'wb').write(data)
    ip = Interpreter(model_path=path, experimental_op_resolver_type=resolver); ip.allocate_tensors()
    rng = np.random.default_rng(seed)
    for k, det in enumerate(ip.get_input_details()):
        info = np.iinfo(det['dtype'])
        lo = info.min if at_least is None else at_least
        x = rng.integers(lo, info.max + 1, det['shape']).astype(det['dtype'])
        # The extremes of the type, so saturation and table ends are exercised.
        x.flat[:2] = [lo, info.max]
        ip.set_tensor(det['index'], x); np.save(os.path.join(d, f'input_{k}.npy'), x)
    ip.invoke()
    for j, det in enumerate(ip.get_output_details()):
        np.save(os.path.join(d, f'expected_{j}.npy'), ip.get_tensor(det['index']))
    print(f'{name:24s} ok')


if os.path.isdir(OUT): shutil.rmtree(OUT)
q16 = lambda s: (s, 0)
one15 = (1 / 32768, 0)
# int16 LOGISTIC / TANH: power-of-two input scales (2^-12 both; 2^-11 tanh only) and general ones.
for i, (op, name) in enumerate(((B.LOGISTIC, 'logistic'), (B.TANH, 'tanh'))):
    for j, (tag, s) in enumerate((('pot12', 2 ** -12), ('pot11', 2 ** -11), ('gen', 0.00071), ('gen_big', 0.013))):
        save(f'{name}_i16_{tag}', model(op, [('i16', [8, 128], q16(s))], [('i16', [8, 128], one15)]), 100 + 10 * i + j)
# int16 SUB: power-of-two path (schema default pot_scale_int16 = true), with broadcast and a
# shifted first input, and the general path (pot_scale_int16 = false).
sub = lambda pot, act=0: opt(S.SubOptionsT, fusedActivationFunction=act, potScaleInt16=pot)
save('sub_i16_pot', model(B.SUB, [('i16', [4, 40], q16(2 ** -10)), ('i16', [4, 40], q16(2 ** -12))], [('i16', [4, 40], q16(2 ** -10))], S.BuiltinOptions.SubOptions, sub(True)), 1)
save('sub_i16_pot_bcast', model(B.SUB, [('i16', [2, 3, 8], q16(2 ** -13)), ('i16', [3, 1], q16(2 ** -11))], [('i16', [2, 3, 8], q16(2 ** -11))], S.BuiltinOptions.SubOptions, sub(True, 1)), 2)
save('sub_i16_general', model(B.SUB, [('i16', [4, 40], q16(0.0011)), ('i16', [4, 40], q16(0.0007))], [('i16', [4, 40], q16(0.0016))], S.BuiltinOptions.SubOptions, sub(False)), 3)
# Not covered: power-of-two scales with pot_scale_int16 = false (TFLite then takes the general
# path; nnrt's IR does not keep the option and takes the power-of-two one).
# PRELU: uint8 / int8 with a per-channel constant alpha, int16 with an int8 alpha.
save('prelu_u8', model(B.PRELU, [('u8', [2, 5, 6, 4], (0.05, 120)), ('u8', [1, 1, 4], (0.01, 110))], [('u8', [2, 5, 6, 4], (0.04, 100))], consts={1: [[[30, 150, 200, 90]]]}), 5)
save('prelu_i8', model(B.PRELU, [('i8', [2, 5, 6, 4], (0.05, -3)), ('i8', [1, 1, 4], (0.01, 2))], [('i8', [2, 5, 6, 4], (0.03, -10))], consts={1: [[[-60, 20, 100, -5]]]}), 6)
save('prelu_i8_same', model(B.PRELU, [('i8', [3, 20], (0.05, 7)), ('i8', [3, 20], (0.02, -4))], [('i8', [3, 20], (0.04, 1))]), 7)
save('prelu_i16', model(B.PRELU, [('i16', [2, 6, 4], (0.001, 0)), ('i8', [4], (0.01, 0))], [('i16', [2, 6, 4], (0.0008, 0))], consts={1: [50, -20, 127, 3]}), 8)
# LOG_SOFTMAX: output scale 16/256, zero point at the type's maximum.
save('log_softmax_u8', model(B.LOG_SOFTMAX, [('u8', [6, 30], (0.07, 128))], [('u8', [6, 30], (16 / 256, 255))]), 9)
save('log_softmax_i8', model(B.LOG_SOFTMAX, [('i8', [6, 30], (0.11, -5))], [('i8', [6, 30], (16 / 256, 127))]), 10)
save('log_softmax_i8_small', model(B.LOG_SOFTMAX, [('i8', [4, 7], (0.02, 3))], [('i8', [4, 7], (16 / 256, 127))]), 11)
# BATCH_MATMUL: int8 (zero points, broadcast batch), int16, int16 x int8 with a constant rhs.
bmm = lambda ax, ay: opt(S.BatchMatMulOptionsT, adjX=ax, adjY=ay)
save('bmm_i8', model(B.BATCH_MATMUL, [('i8', [2, 3, 5, 7], (0.05, -3)), ('i8', [3, 7, 4], (0.04, 5))], [('i8', [2, 3, 5, 4], (0.3, 2))], S.BuiltinOptions.BatchMatMulOptions, bmm(False, False)), 12)
save('bmm_i8_adj', model(B.BATCH_MATMUL, [('i8', [2, 7, 5], (0.05, 4)), ('i8', [2, 4, 7], (0.04, -1))], [('i8', [2, 5, 4], (0.3, -7))], S.BuiltinOptions.BatchMatMulOptions, bmm(True, True)), 13)
save('bmm_i16', model(B.BATCH_MATMUL, [('i16', [2, 5, 9], (0.001, 0)), ('i16', [2, 9, 3], (0.002, 0))], [('i16', [2, 5, 3], (0.01, 0))], S.BuiltinOptions.BatchMatMulOptions, bmm(False, False)), 14)
save('bmm_i16_i8_const', model(B.BATCH_MATMUL, [('i16', [3, 5, 9], (0.001, 0)), ('i8', [9, 6], (0.02, 0))], [('i16', [3, 5, 6], (0.004, 0))], S.BuiltinOptions.BatchMatMulOptions, bmm(False, False), consts={1: ints([9, 6], -127, 127, 15)}), 15)
# TRANSPOSE_CONV: inputs are (output shape, filter OHWI, input, bias).
tco = lambda pad, s, act=0, bt=0: opt(S.TransposeConvOptionsT, padding=pad, strideW=s, strideH=s, fusedActivationFunction=act, quantizedBiasType=bt)
save('tconv_u8', model(B.TRANSPOSE_CONV, [('i32', [4], None), ('u8', [3, 3, 3, 4], (0.01, 120)), ('u8', [1, 4, 5, 4], (0.05, 128)), ('i32', [3], None)],
                       [('u8', [1, 8, 10, 3], (0.1, 100))], S.BuiltinOptions.TransposeConvOptions, tco(S.Padding.SAME, 2, 1),
                       consts={0: [1, 8, 10, 3], 1: ints([3, 3, 3, 4], 0, 255, 16), 3: ints([3], -500, 500, 17)}), 18)
save('tconv_i8_perchan', model(B.TRANSPOSE_CONV, [('i32', [4], None), ('i8', [5, 3, 3, 4], ([0.01, 0.02, 0.005, 0.03, 0.015], [0] * 5, 0)), ('i8', [2, 4, 4, 4], (0.05, -3)), ('i32', [5], None)],
                               [('i8', [2, 9, 9, 5], (0.08, 4))], S.BuiltinOptions.TransposeConvOptions, tco(S.Padding.VALID, 2),
                               consts={0: [2, 9, 9, 5], 1: ints([5, 3, 3, 4], -127, 127, 19), 3: ints([5], -800, 800, 20)}), 21)
save('tconv_16x8_b64', model(B.TRANSPOSE_CONV, [('i32', [4], None), ('i8', [3, 2, 2, 4], ([0.01, 0.02, 0.005], [0] * 3, 0)), ('i16', [1, 5, 5, 4], (0.001, 0)), ('i64', [3], None)],
                             [('i16', [1, 10, 10, 3], (0.002, 0))], S.BuiltinOptions.TransposeConvOptions, tco(S.Padding.SAME, 2),
                             consts={0: [1, 10, 10, 3], 1: ints([3, 2, 2, 4], -127, 127, 22), 3: ints([3], -50000, 50000, 23)}), 24)
save('tconv_16x8_b32', model(B.TRANSPOSE_CONV, [('i32', [4], None), ('i8', [3, 3, 3, 4], (0.01, 0)), ('i16', [1, 5, 5, 4], (0.001, 0)), ('i32', [3], None)],
                             [('i16', [1, 5, 5, 3], (0.003, 0))], S.BuiltinOptions.TransposeConvOptions, tco(S.Padding.SAME, 1, 3, S.TensorType.INT32),
                             consts={0: [1, 5, 5, 3], 1: ints([3, 3, 3, 4], -127, 127, 25), 3: ints([3], -5000, 5000, 26)}), 27)
# SQUARED_DIFFERENCE (int8 only in TFLite): same shapes, and a broadcast row as layer norms have.
save('sqdiff_i8', model(B.SQUARED_DIFFERENCE, [('i8', [4, 40], (0.05, -3)), ('i8', [4, 40], (0.03, 6))], [('i8', [4, 40], (0.02, -128))]), 28)
save('sqdiff_i8_bcast', model(B.SQUARED_DIFFERENCE, [('i8', [2, 6, 16], (0.04, 10)), ('i8', [2, 6, 1], (0.04, 10))], [('i8', [2, 6, 16], (0.05, -128))]), 29)
# Unary ops: int8 (RSQRT in fixed point, ABS requantized, SQRT through float, the rest by
# 256-entry tables) and int16 (zero points 0; tables of 513 entries with interpolation).
u = lambda op, t, shape, qi, qo, *o: model(op, [(t, shape, qi)], [(t, shape, qo)], *o)
save('rsqrt_i8', u(B.RSQRT, 'i8', [4, 64], (0.05, -100), (0.02, -128)), 30, at_least=-100)
save('rsqrt_i8_small', u(B.RSQRT, 'i8', [3, 50], (0.0004, -128), (0.5, -128)), 31, at_least=-128)
save('rsqrt_i16', u(B.RSQRT, 'i16', [4, 64], (0.001, 0), (0.01, 0)), 32, at_least=0)
save('sqrt_i8', u(B.SQRT, 'i8', [4, 64], (0.1, -20), (0.03, -128)), 33, at_least=-20)
save('sqrt_i16', u(B.SQRT, 'i16', [4, 64], (0.002, 0), (0.0005, 0)), 34, at_least=0)
save('abs_i8_rescale', u(B.ABS, 'i8', [4, 64], (0.05, 7), (0.03, -100)), 35)
save('abs_i8_same', u(B.ABS, 'i8', [4, 64], (0.05, -2), (0.05, -2)), 36)
save('abs_i16', u(B.ABS, 'i16', [4, 64], (0.001, 0), (0.0007, 0)), 37)
save('log_i8', u(B.LOG, 'i8', [4, 64], (0.05, -128), (0.04, 60)), 38)
save('log_i16', u(B.LOG, 'i16', [4, 64], (0.001, 0), (0.0004, 0)), 39)
save('exp_i8', u(B.EXP, 'i8', [4, 64], (0.03, 20), (0.1, -128)), 40)
save('exp_i16', u(B.EXP, 'i16', [4, 64], (0.0001, 0), (0.001, 0)), 41)
gelu = lambda approx: (S.BuiltinOptions.GeluOptions, opt(S.GeluOptionsT, approximate=approx))
save('gelu_i8', u(B.GELU, 'i8', [4, 64], (0.04, 5), (0.02, -110), *gelu(False)), 42)
save('gelu_u8_approx', u(B.GELU, 'u8', [4, 64], (0.04, 130), (0.02, 20), *gelu(True)), 43)
# ELU has no reference registration: LiteRT's builtin kernel (the same table) without XNNPACK.
save('elu_i8', u(B.ELU, 'i8', [4, 64], (0.05, 10), (0.04, 30)), 44, resolver=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)

# Integer LSTM state across runs: LiteRT's outputs of three consecutive runs of the corpus'
# coral_keras_lstm_mnist_ptq (variable state tensors) on its stored input, when the corpus is there.
corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared', 'corpus', 'tflite', 'coral_keras_lstm_mnist_ptq')
if os.path.isdir(corpus):
    d = os.path.join(OUT, '..', 'lstm_state_runs'); os.makedirs(d, exist_ok=True)
    ip = Interpreter(model_path=os.path.join(corpus, 'model.tflite'), experimental_op_resolver_type=OpResolverType.BUILTIN_REF); ip.allocate_tensors()
    ip.set_tensor(ip.get_input_details()[0]['index'], np.load(os.path.join(corpus, 'input_0.npy')))
    for r in range(3):
        ip.invoke(); np.save(os.path.join(d, f'run_{r}.npy'), ip.get_tensor(ip.get_output_details()[0]['index']))
    print('lstm_state_runs          ok')
