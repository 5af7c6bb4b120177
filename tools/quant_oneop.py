"""One-op quantized models checked against LiteRT's reference kernels: builds each model with
LiteRT's flatbuffer schema, runs it on LiteRT (BUILTIN_REF resolver) and on nnpackage_run with
the same random inputs, and prints max |diff| (0 expected everywhere).
Needs a Python with ai-edge-litert and numpy (python3 -m venv V && V/bin/pip install ai-edge-litert numpy).

  V/bin/python tools/quant_oneop.py target/release/nnpackage_run [OUT_DIR]
"""
import os, subprocess, sys, numpy as np
import ai_edge_litert.schema_py_generated as S
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from oneop_model import B, model, opt
CLI = sys.argv[1]; OUT = sys.argv[2] if len(sys.argv) > 2 else '/tmp/nnrt_quant_oneop'; os.makedirs(OUT, exist_ok=True)
def check(name, data):
    path = f'{OUT}/{name}.tflite'; open(path, 'wb').write(data)
    ip = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_REF); ip.allocate_tensors()
    rng = np.random.default_rng(abs(hash(name)) % 1000)
    for f in os.listdir(OUT):
        if f.startswith(name + '.in') or f.startswith(name + '.out'): os.remove(f'{OUT}/{f}')
    for k, d in enumerate(ip.get_input_details()):
        dt = d['dtype']; info = np.iinfo(dt) if dt != np.float32 else None
        x = rng.integers(info.min, info.max + 1, d['shape']).astype(dt) if info else rng.standard_normal(d['shape']).astype(dt) * 3
        ip.set_tensor(d['index'], x); np.save(f'{OUT}/{name}.in.{k}.npy', x)
    ip.invoke()
    p = subprocess.run([CLI, path, '--load:npy', f'{OUT}/{name}.in', '--dump:npy', f'{OUT}/{name}.out', '--backends', 'cpu'], capture_output=True, text=True)
    if p.returncode: print(f'{name:28s} ERROR {p.stderr.strip()[-150:]}'); return
    res = []
    for j, d in enumerate(ip.get_output_details()):
        e = ip.get_tensor(d['index']); gv = np.load(f'{OUT}/{name}.out.{j}.npy')
        diff = np.abs(e.astype(np.float64) - gv.astype(np.float64)); res.append(f'max|diff|={diff.max():.3g} ndiff={int((diff>0).sum())}/{diff.size}')
    print(f'{name:28s} ' + '; '.join(res))
u, i8 = (0.05, 120), (0.05, -10)
check('relu6_u8', model(B.RELU6, [('u8', [2, 33], (0.04, 100))], [('u8', [2, 33], (0.03, 10))]))
check('relu_i8', model(B.RELU, [('i8', [2, 33], (0.04, -3))], [('i8', [2, 33], (0.02, -128))]))
check('relun1_u8', model(B.RELU_N1_TO_1, [('u8', [2, 33], (0.04, 100))], [('u8', [2, 33], (0.01, 128))]))
check('leaky_u8', model(B.LEAKY_RELU, [('u8', [3, 20], (0.04, 100))], [('u8', [3, 20], (0.03, 60))], S.BuiltinOptions.LeakyReluOptions, opt(S.LeakyReluOptionsT, alpha=0.2)))
check('leaky_i8', model(B.LEAKY_RELU, [('i8', [3, 20], (0.04, 5))], [('i8', [3, 20], (0.03, -30))], S.BuiltinOptions.LeakyReluOptions, opt(S.LeakyReluOptionsT, alpha=0.3)))
check('max_i8', model(B.MAXIMUM, [('i8', [2, 3, 4], i8), ('i8', [1, 3, 1], i8)], [('i8', [2, 3, 4], i8)]))
check('min_u8', model(B.MINIMUM, [('u8', [2, 3, 4], u), ('u8', [4], u)], [('u8', [2, 3, 4], u)]))
check('tanh_i8', model(B.TANH, [('i8', [4, 64], (0.06, 3))], [('i8', [4, 64], (1 / 128, 0))]))
check('logistic_i8', model(B.LOGISTIC, [('i8', [4, 64], (0.06, 3))], [('i8', [4, 64], (1 / 256, -128))]))
check('hardswish_u8', model(B.HARD_SWISH, [('u8', [4, 64], (0.05, 128))], [('u8', [4, 64], (0.03, 20))]))
check('hardswish_i8', model(B.HARD_SWISH, [('i8', [4, 64], (0.05, 0))], [('i8', [4, 64], (0.03, -110))]))
check('sub_bcast_i8', model(B.SUB, [('i8', [2, 3, 4], (0.05, -3)), ('i8', [3, 1], (0.08, 7))], [('i8', [2, 3, 4], (0.1, 2))], S.BuiltinOptions.SubOptions, opt(S.SubOptionsT, fusedActivationFunction=0)))
check('mul_bcast_u8', model(B.MUL, [('u8', [2, 3, 4], (0.05, 128)), ('u8', [4], (0.02, 100))], [('u8', [2, 3, 4], (0.04, 120))], S.BuiltinOptions.MulOptions, opt(S.MulOptionsT, fusedActivationFunction=1)))
check('add_i16', model(B.ADD, [('i16', [3, 40], (0.001, 0)), ('i16', [3, 40], (0.0007, 0))], [('i16', [3, 40], (0.0015, 0))], S.BuiltinOptions.AddOptions, opt(S.AddOptionsT, potScaleInt16=False)))
check('mul_i16', model(B.MUL, [('i16', [3, 40], (0.001, 0)), ('i16', [3, 40], (0.0007, 0))], [('i16', [3, 40], (0.0015, 0))]))
check('softmax_i8_i16', model(B.SOFTMAX, [('i8', [3, 40], (0.1, 3))], [('i16', [3, 40], (1 / 32768, 0))], S.BuiltinOptions.SoftmaxOptions, opt(S.SoftmaxOptionsT, beta=0.7)))
check('softmax_u8', model(B.SOFTMAX, [('u8', [3, 40], (0.1, 3))], [('u8', [3, 40], (1 / 256, 0))], S.BuiltinOptions.SoftmaxOptions, opt(S.SoftmaxOptionsT, beta=1.3)))
check('softmax_i16', model(B.SOFTMAX, [('i16', [3, 40], (0.0003, 0))], [('i16', [3, 40], (1 / 32768, 0))], S.BuiltinOptions.SoftmaxOptions, opt(S.SoftmaxOptionsT, beta=1.0)))
check('mean_i8_axis2', model(B.MEAN, [('i8', [2, 5, 6, 3], (0.05, -3)), ('i32', [1], None)], [('i8', [2, 5, 3], (0.04, 2))], S.BuiltinOptions.ReducerOptions, opt(S.ReducerOptionsT, keepDims=False), consts={1: [2]}))
check('mean_u8_hw', model(B.MEAN, [('u8', [2, 5, 6, 3], (0.05, 128)), ('i32', [2], None)], [('u8', [2, 1, 1, 3], (0.02, 100))], S.BuiltinOptions.ReducerOptions, opt(S.ReducerOptionsT, keepDims=True), consts={1: [1, 2]}))
check('resize_i8', model(B.RESIZE_BILINEAR, [('i8', [1, 5, 7, 3], (0.05, 1)), ('i32', [2], None)], [('i8', [1, 9, 13, 3], (0.05, 1))], S.BuiltinOptions.ResizeBilinearOptions, opt(S.ResizeBilinearOptionsT, halfPixelCenters=True), consts={1: [9, 13]}))
check('resize_u8_ac', model(B.RESIZE_BILINEAR, [('u8', [1, 5, 7, 3], (0.05, 1)), ('i32', [2], None)], [('u8', [1, 9, 13, 3], (0.05, 1))], S.BuiltinOptions.ResizeBilinearOptions, opt(S.ResizeBilinearOptionsT, alignCorners=True), consts={1: [9, 13]}))
check('argmin_i8', model(B.ARG_MIN, [('i8', [3, 7, 5], i8), ('i32', [1], None)], [('i64', [3, 5], None)], S.BuiltinOptions.ArgMinOptions, opt(S.ArgMinOptionsT, outputType=S.TensorType.INT64), consts={1: [1]}))
check('quant_i8_i16', model(B.QUANTIZE, [('i8', [3, 10], (0.05, -3))], [('i16', [3, 10], (0.0007, 0))]))
check('quant_u8_i8', model(B.QUANTIZE, [('u8', [3, 10], (0.05, 128))], [('i8', [3, 10], (0.03, 5))]))
check('quant_f32_u8', model(B.QUANTIZE, [('f32', [3, 10], None)], [('u8', [3, 10], (0.03, 120))]))
check('concat_u8_requant', model(B.CONCATENATION, [('u8', [2, 3], (0.05, 128)), ('u8', [2, 4], (0.02, 100))], [('u8', [2, 7], (0.04, 120))], S.BuiltinOptions.ConcatenationOptions, opt(S.ConcatenationOptionsT, axis=1)))
check('avgpool_i8', model(B.AVERAGE_POOL_2D, [('i8', [1, 7, 7, 5], (0.05, -3))], [('i8', [1, 4, 4, 5], (0.05, -3))], S.BuiltinOptions.Pool2DOptions, opt(S.Pool2DOptionsT, padding=S.Padding.SAME, strideW=2, strideH=2, filterWidth=3, filterHeight=3)))
check('maxpool_u8', model(B.MAX_POOL_2D, [('u8', [1, 7, 7, 5], u)], [('u8', [1, 3, 3, 5], u)], S.BuiltinOptions.Pool2DOptions, opt(S.Pool2DOptionsT, padding=S.Padding.VALID, strideW=2, strideH=2, filterWidth=3, filterHeight=3, fusedActivationFunction=3)))
check('dequant_i16', model(B.DEQUANTIZE, [('i16', [3, 10], (0.0007, 0))], [('f32', [3, 10], None)]))
check('add_i16_pot', model(B.ADD, [('i16', [3, 40], (2**-10, 0)), ('i16', [3, 40], (2**-11, 0))], [('i16', [3, 40], (2**-10, 0))], S.BuiltinOptions.AddOptions, opt(S.AddOptionsT, potScaleInt16=True)))
def cw(shape, dt='i8', lo=-127, hi=127, seed=0):
    return np.random.default_rng(seed).integers(lo, hi + 1, shape)
check('conv_u8_dil', model(B.CONV_2D, [('u8', [1, 9, 9, 5], (0.05, 128)), ('u8', [6, 3, 3, 5], (0.01, 120)), ('i32', [6], None)], [('u8', [1, 5, 5, 6], (0.2, 100))], S.BuiltinOptions.Conv2DOptions, opt(S.Conv2DOptionsT, padding=S.Padding.VALID, strideW=1, strideH=1, dilationWFactor=2, dilationHFactor=2, fusedActivationFunction=3), consts={1: cw([6, 3, 3, 5], lo=0, hi=255), 2: cw([6], lo=-500, hi=500)}))
check('conv_i8_groups', model(B.CONV_2D, [('i8', [1, 6, 6, 4], (0.05, -2)), ('i8', [6, 3, 3, 2], (0.01, 0)), ('i32', [6], None)], [('i8', [1, 6, 6, 6], (0.1, 3))], S.BuiltinOptions.Conv2DOptions, opt(S.Conv2DOptionsT, padding=S.Padding.SAME, strideW=1, strideH=1, dilationWFactor=1, dilationHFactor=1), consts={1: cw([6, 3, 3, 2]), 2: cw([6], lo=-500, hi=500)}))
check('conv_16x8_b32', model(B.CONV_2D, [('i16', [1, 6, 6, 4], (0.001, 0)), ('i8', [5, 3, 3, 4], (0.01, 0)), ('i32', [5], None)], [('i16', [1, 3, 3, 5], (0.002, 0))], S.BuiltinOptions.Conv2DOptions, opt(S.Conv2DOptionsT, padding=S.Padding.SAME, strideW=2, strideH=2, dilationWFactor=1, dilationHFactor=1, quantizedBiasType=S.TensorType.INT32), consts={1: cw([5, 3, 3, 4]), 2: cw([5], lo=-5000, hi=5000)}))
check('dw_u8_mult2', model(B.DEPTHWISE_CONV_2D, [('u8', [1, 7, 7, 3], (0.05, 128)), ('u8', [1, 3, 3, 6], (0.01, 110)), ('i32', [6], None)], [('u8', [1, 4, 4, 6], (0.1, 100))], S.BuiltinOptions.DepthwiseConv2DOptions, opt(S.DepthwiseConv2DOptionsT, padding=S.Padding.SAME, strideW=2, strideH=2, depthMultiplier=2, dilationWFactor=1, dilationHFactor=1, fusedActivationFunction=1), consts={1: cw([1, 3, 3, 6], lo=0, hi=255), 2: cw([6], lo=-500, hi=500)}))
check('fc_u8_3d', model(B.FULLY_CONNECTED, [('u8', [2, 3, 10], (0.05, 128)), ('u8', [7, 10], (0.01, 120)), ('i32', [7], None)], [('u8', [2, 3, 7], (0.1, 100))], S.BuiltinOptions.FullyConnectedOptions, opt(S.FullyConnectedOptionsT, keepNumDims=True, fusedActivationFunction=3), consts={1: cw([7, 10], lo=0, hi=255), 2: cw([7], lo=-500, hi=500)}))
check('fc_16x8_b64', model(B.FULLY_CONNECTED, [('i16', [2, 10], (0.001, 0)), ('i8', [7, 10], (0.01, 0)), ('i64', [7], None)], [('i16', [2, 7], (0.002, 0))], S.BuiltinOptions.FullyConnectedOptions, opt(S.FullyConnectedOptionsT), consts={1: cw([7, 10]), 2: cw([7], lo=-50000, hi=50000)}))

check('quant_f32_i8_perchan', model(B.QUANTIZE, [('f32', [2, 3, 4], None)], [('i8', [2, 3, 4], ([0.02, 0.05, 0.1], [0, 0, 0], 1))]))
check('dequant_i8_perchan', model(B.DEQUANTIZE, [('i8', [2, 3, 4], ([0.02, 0.05, 0.1, 0.3], [0, 0, 0, 0], 2))], [('f32', [2, 3, 4], None)]))
