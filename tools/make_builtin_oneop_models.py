"""Regenerates tests/models/builtin_oneop/: one-op TFLite models of the builtins added with the
`ops` branch (ADD_N … BITWISE_XOR), their inputs, and the outputs of LiteRT, which
tests/tests/builtin_oneop.rs compares with nnrt's (exact for integer and data-movement ops,
1e-5 for float math). Reference kernels (BUILTIN_REF) are used where LiteRT registers one, and except for
LOCAL_RESPONSE_NORMALIZATION, whose reference kernel sums one channel short of the window TF
defines ([c - r, c + r)); the default kernel and nnrt sum [c - r, c + r].
Needs a Python with ai-edge-litert and numpy:

  V/bin/python tools/make_builtin_oneop_models.py [tests/models/builtin_oneop]
"""
import os, shutil, sys, numpy as np
import ai_edge_litert.schema_py_generated as S
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from oneop_model import B, VAR, model, opt

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'models', 'builtin_oneop')
O = S.BuiltinOptions


def save(name, data, inputs, ref=True, runs=1):
    """Runs the model on `inputs` (one array per graph input), `runs` times (state carries
    over), and stores the last run's outputs."""
    d = os.path.join(OUT, name); os.makedirs(d, exist_ok=True)
    path = os.path.join(d, 'model.tflite'); open(path, 'wb').write(data)
    try:
        if not ref: raise ValueError('default kernel asked for')
        ip = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    except ValueError:
        # Not every builtin has a reference registration (SEGMENT_SUM, …): its only kernel then.
        ip = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    ip.allocate_tensors()
    dets = ip.get_input_details()
    assert len(dets) == len(inputs), name
    for k, (det, x) in enumerate(zip(dets, inputs)):
        x = np.asarray(x, det['dtype']).reshape(det['shape'])
        ip.set_tensor(det['index'], x); np.save(os.path.join(d, f'input_{k}.npy'), x)
    for _ in range(runs):
        ip.invoke()
    for j, det in enumerate(ip.get_output_details()):
        np.save(os.path.join(d, f'expected_{j}.npy'), ip.get_tensor(det['index']))
    if runs > 1:
        open(os.path.join(d, 'runs'), 'w').write(f'{runs}\n')
    print(f'{name:28s} ok')


rng = np.random.default_rng(7)
f = lambda *s: rng.standard_normal(s).astype(np.float32)
ints = lambda lo, hi, *s, dt=np.int32: rng.integers(lo, hi + 1, s).astype(dt)
if os.path.isdir(OUT): shutil.rmtree(OUT)

# ADD_N
save('add_n_f32', model(B.ADD_N, [('f32', [2, 3, 4])] * 3, [('f32', [2, 3, 4])]), [f(2, 3, 4) for _ in range(3)])
save('add_n_i32', model(B.ADD_N, [('i32', [5, 7])] * 2, [('i32', [5, 7])]), [ints(-1000, 1000, 5, 7) for _ in range(2)])
# BROADCAST_TO: constant shape, and a shape given at run time (dynamic output).
save('broadcast_to_f32', model(B.BROADCAST_TO, [('f32', [3, 1]), ('i32', [3])], [('f32', [2, 3, 4])], consts={1: [2, 3, 4]}), [f(3, 1)])
save('broadcast_to_i8_dyn', model(B.BROADCAST_TO, [('i8', [1, 4]), ('i64', [3])], [('i8', [1, 1, 4])]), [ints(-128, 127, 1, 4, dt=np.int8), np.array([2, 5, 4], np.int64)])
# BROADCAST_ARGS
save('broadcast_args_i32', model(B.BROADCAST_ARGS, [('i32', [4]), ('i32', [3])], [('i32', [4])]), [np.array([2, 1, 5, 1], np.int32), np.array([3, 1, 1], np.int32)])
save('broadcast_args_i64', model(B.BROADCAST_ARGS, [('i64', [1]), ('i64', [3])], [('i64', [3])]), [np.array([6], np.int64), np.array([4, 1, 6], np.int64)])
# EMBEDDING_LOOKUP: float, int8 copied, int8 per-row dequantized to float.
save('embedding_lookup_f32', model(B.EMBEDDING_LOOKUP, [('i32', [4]), ('f32', [5, 2, 3])], [('f32', [4, 2, 3])], consts={1: f(5, 2, 3)}), [np.array([4, 0, 2, 0], np.int32)])
save('embedding_lookup_i8', model(B.EMBEDDING_LOOKUP, [('i32', [3]), ('i8', [6, 4], (0.5, 0))], [('i8', [3, 4], (0.5, 0))]), [np.array([5, 1, 1], np.int32), ints(-128, 127, 6, 4, dt=np.int8)])
save('embedding_lookup_hybrid', model(B.EMBEDDING_LOOKUP, [('i32', [3]), ('i8', [4, 5], ([0.1, 0.02, 0.5, 0.003], [0] * 4, 0))], [('f32', [3, 5])],
                                      consts={1: ints(-127, 127, 4, 5, dt=np.int8)}), [np.array([3, 0, 2], np.int32)])
# LOCAL_RESPONSE_NORMALIZATION (default kernel; see the module doc).
lrn = lambda r, b, a, be: opt(S.LocalResponseNormalizationOptionsT, radius=r, bias=b, alpha=a, beta=be)
save('lrn_f32', model(B.LOCAL_RESPONSE_NORMALIZATION, [('f32', [1, 3, 4, 9])], [('f32', [1, 3, 4, 9])], O.LocalResponseNormalizationOptions, lrn(2, 1.0, 0.3, 0.75)), [f(1, 3, 4, 9)], ref=False)
save('lrn_f32_r0', model(B.LOCAL_RESPONSE_NORMALIZATION, [('f32', [2, 1, 2, 5])], [('f32', [2, 1, 2, 5])], O.LocalResponseNormalizationOptions, lrn(0, 2.0, 1.0, 0.5)), [f(2, 1, 2, 5)], ref=False)
# ATAN2
save('atan2_f32', model(B.ATAN2, [('f32', [3, 8])] * 2, [('f32', [3, 8])]), [f(3, 8), np.concatenate([f(3, 4), np.zeros((3, 4), np.float32)], 1)])
# SCATTER_ND: duplicate indices add; slices; bool.
save('scatter_nd_f32', model(B.SCATTER_ND, [('i32', [4, 1]), ('f32', [4, 3]), ('i32', [2])], [('f32', [5, 3])], consts={2: [5, 3]}), [np.array([[4], [0], [4], [2]], np.int32), f(4, 3)])
save('scatter_nd_i32_2d', model(B.SCATTER_ND, [('i32', [3, 2]), ('i32', [3]), ('i32', [2])], [('i32', [3, 4])], consts={2: [3, 4]}), [np.array([[0, 1], [2, 3], [0, 1]], np.int32), np.array([5, -7, 11], np.int32)])
save('scatter_nd_bool_dyn', model(B.SCATTER_ND, [('i32', [2, 1]), ('bool', [2, 2]), ('i32', [2])], [('bool', [1, 2])]), [np.array([[1], [3]], np.int32), np.array([[1, 0], [1, 1]], np.bool_), np.array([4, 2], np.int32)])
# WHERE
save('where_bool', model(B.WHERE, [('bool', [3, 4])], [('i64', [1, 2])]), [rng.random((3, 4)) > 0.5])
save('where_f32', model(B.WHERE, [('f32', [2, 2, 3])], [('i64', [1, 3])]), [np.array([0, 1.5, -0.0, 0, 2, 0, 3, 0, 0, -1, 0, 0], np.float32)])
# SEGMENT_SUM / UNSORTED_SEGMENT_*
save('segment_sum_f32', model(B.SEGMENT_SUM, [('f32', [6, 3]), ('i32', [6])], [('f32', [3, 3])]), [f(6, 3), np.array([0, 0, 1, 2, 2, 2], np.int32)])
save('segment_sum_i32_const', model(B.SEGMENT_SUM, [('i32', [4, 2]), ('i32', [4])], [('i32', [2, 2])], consts={1: [0, 1, 1, 1]}), [ints(-100, 100, 4, 2)])
for op, tag in ((B.UNSORTED_SEGMENT_SUM, 'sum'), (B.UNSORTED_SEGMENT_MAX, 'max'), (B.UNSORTED_SEGMENT_MIN, 'min'), (B.UNSORTED_SEGMENT_PROD, 'prod')):
    save(f'unsorted_segment_{tag}_f32', model(op, [('f32', [6, 2]), ('i32', [6]), ('i32', [])], [('f32', [4, 2])], consts={2: 4}), [f(6, 2), np.array([3, 0, -1, 3, 1, 0], np.int32)])
    save(f'unsorted_segment_{tag}_i32_2d', model(op, [('i32', [2, 3, 2]), ('i32', [2, 3]), ('i32', [1])], [('i32', [5, 2])], consts={2: [5]}), [ints(-9, 9, 2, 3, 2), np.array([[4, 0, 4], [1, 0, 2]], np.int32)])
# MATRIX_DIAG / MATRIX_SET_DIAG
save('matrix_diag_f32', model(B.MATRIX_DIAG, [('f32', [2, 3])], [('f32', [2, 3, 3])]), [f(2, 3)])
save('matrix_diag_i64', model(B.MATRIX_DIAG, [('i64', [4])], [('i64', [4, 4])]), [ints(-9, 9, 4, dt=np.int64)])
save('matrix_set_diag_f32', model(B.MATRIX_SET_DIAG, [('f32', [2, 3, 4]), ('f32', [2, 3])], [('f32', [2, 3, 4])]), [f(2, 3, 4), f(2, 3)])
save('matrix_set_diag_u8', model(B.MATRIX_SET_DIAG, [('u8', [4, 2]), ('u8', [2])], [('u8', [4, 2])]), [ints(0, 255, 4, 2, dt=np.uint8), ints(0, 255, 2, dt=np.uint8)])
# REVERSE_SEQUENCE
rs = lambda s, b: opt(S.ReverseSequenceOptionsT, seqDim=s, batchDim=b)
save('reverse_sequence_f32', model(B.REVERSE_SEQUENCE, [('f32', [3, 5, 2]), ('i32', [3])], [('f32', [3, 5, 2])], O.ReverseSequenceOptions, rs(1, 0)), [f(3, 5, 2), np.array([5, 0, 3], np.int32)])
save('reverse_sequence_i16_bd2', model(B.REVERSE_SEQUENCE, [('i16', [4, 2, 3]), ('i64', [3])], [('i16', [4, 2, 3])], O.ReverseSequenceOptions, rs(0, 2)), [ints(-999, 999, 4, 2, 3, dt=np.int16), np.array([2, 4, 1], np.int64)])
# SPARSE_TO_DENSE
save('sparse_to_dense_f32', model(B.SPARSE_TO_DENSE, [('i32', [3, 2]), ('i32', [2]), ('f32', [3]), ('f32', [])], [('f32', [3, 4])], consts={1: [3, 4]}),
     [np.array([[0, 1], [1, 3], [2, 0]], np.int32), f(3), np.array(-1.5, np.float32)])
save('sparse_to_dense_i64_scalar', model(B.SPARSE_TO_DENSE, [('i64', [3]), ('i64', [1]), ('i64', []), ('i64', [])], [('i64', [6])], consts={1: [6]}),
     [np.array([0, 2, 5], np.int64), np.array(9, np.int64), np.array(-4, np.int64)])
save('sparse_to_dense_u8_dyn', model(B.SPARSE_TO_DENSE, [('i32', [2, 3]), ('i32', [3]), ('u8', [2]), ('u8', [])], [('u8', [1, 1, 1])]),
     [np.array([[0, 0, 1], [1, 2, 0]], np.int32), np.array([2, 3, 2], np.int32), np.array([200, 7], np.uint8), np.array(1, np.uint8)])
# DYNAMIC_UPDATE_SLICE: starts clamped to fit.
save('dus_f32', model(B.DYNAMIC_UPDATE_SLICE, [('f32', [4, 5]), ('f32', [2, 3]), ('i32', [2])], [('f32', [4, 5])]), [f(4, 5), f(2, 3), np.array([1, 4], np.int32)])
save('dus_i8_i64', model(B.DYNAMIC_UPDATE_SLICE, [('i8', [2, 3, 4]), ('i8', [1, 2, 2]), ('i64', [3])], [('i8', [2, 3, 4])]), [ints(-128, 127, 2, 3, 4, dt=np.int8), ints(-128, 127, 1, 2, 2, dt=np.int8), np.array([-3, 1, 2], np.int64)])
# NON_MAX_SUPPRESSION_V4 / V5 (distinct scores: the order among equal scores is the heap's).
nb = 12
cy, cx = rng.uniform(0, 4, nb), rng.uniform(0, 4, nb)
hh, ww = rng.uniform(0.5, 2, nb), rng.uniform(0.5, 2, nb)
boxes = np.stack([cy - hh / 2, cx - ww / 2, cy + hh / 2, cx + ww / 2], 1).astype(np.float32)
boxes[3] = boxes[3][[2, 3, 0, 1]]  # corners in the other order
scores = rng.permutation(np.linspace(0.05, 0.95, nb)).astype(np.float32)
nms = lambda v5, mx: model(B.NON_MAX_SUPPRESSION_V5 if v5 else B.NON_MAX_SUPPRESSION_V4,
                           [('f32', [nb, 4]), ('f32', [nb]), ('i32', []), ('f32', []), ('f32', [])] + ([('f32', [])] if v5 else []),
                           [('i32', [mx]), ('f32', [mx]), ('i32', [])] if v5 else [('i32', [mx]), ('i32', [])], consts={2: mx, 3: 0.3, 4: 0.2, **({5: 0.5} if v5 else {})})
save('nms_v4', nms(False, 6), [boxes, scores])
save('nms_v4_pad', nms(False, 11), [boxes, scores])
save('nms_v5_soft', nms(True, 8), [boxes, scores])
# RNN / UNIDIRECTIONAL_SEQUENCE_RNN / SVDF: state tensors carry over; three runs.
units, inp, batch, time = 5, 3, 2, 4
rnn_ins = lambda x: [x, ('f32', [units, inp]), ('f32', [units, units]), ('f32', [units]), ('f32', [batch, units])]
rnn_c = {1: f(units, inp) * 0.5, 2: f(units, units) * 0.3, 3: f(units) * 0.1, 4: VAR}
save('rnn_relu', model(B.RNN, rnn_ins(('f32', [batch, inp])), [('f32', [batch, units])], O.RNNOptions, opt(S.RNNOptionsT, fusedActivationFunction=1), consts=rnn_c), [f(batch, inp)], runs=3)
save('rnn_tanh', model(B.RNN, rnn_ins(('f32', [batch, inp])), [('f32', [batch, units])], O.RNNOptions, opt(S.RNNOptionsT, fusedActivationFunction=4), consts=rnn_c), [f(batch, inp)], runs=2)
srnn = lambda tm, a: opt(S.SequenceRNNOptionsT, timeMajor=tm, fusedActivationFunction=a)
save('seq_rnn_batch_major', model(B.UNIDIRECTIONAL_SEQUENCE_RNN, rnn_ins(('f32', [batch, time, inp])), [('f32', [batch, time, units])], O.SequenceRNNOptions, srnn(False, 4), consts=rnn_c), [f(batch, time, inp)], runs=2)
save('seq_rnn_time_major', model(B.UNIDIRECTIONAL_SEQUENCE_RNN, rnn_ins(('f32', [time, batch, inp])), [('f32', [time, batch, units])], O.SequenceRNNOptions, srnn(True, 3), consts=rnn_c), [f(time, batch, inp)])
rank, memory = 2, 3
filters = units * rank
svdf = lambda bias, a: model(B.SVDF, [('f32', [batch, inp]), ('f32', [filters, inp]), ('f32', [filters, memory]), ('f32', [units]) if bias else None, ('f32', [batch, memory * filters])],
                             [('f32', [batch, units])], O.SVDFOptions, opt(S.SVDFOptionsT, rank=rank, fusedActivationFunction=a),
                             consts={1: f(filters, inp), 2: f(filters, memory), **({3: f(units)} if bias else {}), 4: VAR})
save('svdf_bias_relu', svdf(True, 1), [f(batch, inp)], runs=4)
save('svdf_nobias', svdf(False, 0), [f(batch, inp)], runs=2)
# UNIQUE
save('unique_i32', model(B.UNIQUE, [('i32', [9])], [('i32', [1]), ('i32', [9])], O.UniqueOptions, opt(S.UniqueOptionsT, idxOutType=S.TensorType.INT32)), [np.array([4, 1, 4, 7, 1, 1, -3, 7, 0], np.int32)])
save('unique_f32_i64', model(B.UNIQUE, [('f32', [6])], [('f32', [1]), ('i64', [6])], O.UniqueOptions, opt(S.UniqueOptionsT, idxOutType=S.TensorType.INT64)),
     [np.array([0.5, -0.0, 0.5, 0.0, 2.0, -1.0], np.float32)])
save('unique_u8', model(B.UNIQUE, [('u8', [5])], [('u8', [1]), ('i32', [5])], O.UniqueOptions, opt(S.UniqueOptionsT, idxOutType=S.TensorType.INT32)), [np.array([255, 0, 255, 3, 0], np.uint8)])
# BUCKETIZE
bk = lambda b: opt(S.BucketizeOptionsT, boundaries=b)
save('bucketize_f32', model(B.BUCKETIZE, [('f32', [2, 5])], [('i32', [2, 5])], O.BucketizeOptions, bk([-1.0, 0.0, 0.5, 2.0])), [np.array([-3, -1, -0.5, 0, 0.25, 0.5, 1, 2, 2.5, 9], np.float32)])
save('bucketize_i64', model(B.BUCKETIZE, [('i64', [6])], [('i32', [6])], O.BucketizeOptions, bk([0.0, 10.0, 100.0])), [np.array([-5, 0, 9, 10, 99, 1000], np.int64)])
save('bucketize_i32_empty', model(B.BUCKETIZE, [('i32', [3])], [('i32', [3])], O.BucketizeOptions, bk([])), [np.array([1, 2, 3], np.int32)])
# RIGHT_SHIFT / BITWISE_XOR, with broadcasting and out-of-range shifts.
for dt, lo, hi, npt in (('i8', -128, 127, np.int8), ('u8', 0, 255, np.uint8), ('i16', -32768, 32767, np.int16), ('i32', -2**31, 2**31 - 1, np.int32)):
    bits = np.iinfo(npt).bits
    save(f'right_shift_{dt}', model(B.RIGHT_SHIFT, [(dt, [3, 4]), (dt, [4])], [(dt, [3, 4])]),
         [ints(lo, hi, 3, 4, dt=npt), np.array([0, 3, bits - 1, min(bits + 5, hi)] if lo == 0 else [-2, 3, bits - 1, bits + 5], npt)])
    save(f'bitwise_xor_{dt}', model(B.BITWISE_XOR, [(dt, [2, 1, 3]), (dt, [4, 1])], [(dt, [2, 4, 3])]), [ints(lo, hi, 2, 1, 3, dt=npt), ints(lo, hi, 4, 1, dt=npt)])
