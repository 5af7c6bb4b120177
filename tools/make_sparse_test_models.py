"""Regenerates loaders/tests/data/{dense,sparse}_fc.tflite from the corpus' op_fully_connected:
  V/bin/python tools/make_sparse_test_models.py ../shared/corpus/tflite/op_fully_connected/model.tflite loaders/tests/data
(V: a Python with ai-edge-litert and numpy). Makes dense_fc.tflite (op_fully_connected with ~60% of its FC weights zeroed) and
sparse_fc.tflite (the same weights stored sparse: CSR, block-sparse 1x4, and a per-column
traversal, each behind a DENSIFY op)."""
import sys, numpy as np, flatbuffers
import ai_edge_litert.schema_py_generated as S
src, out_dir = sys.argv[1], sys.argv[2]
def load(): return S.ModelT.InitFromObj(S.Model.GetRootAsModel(open(src, 'rb').read(), 0))
def save(m, path):
    b = flatbuffers.Builder(1024); b.Finish(m.Pack(b), file_identifier=b'TFL3'); open(path, 'wb').write(b.Output())
rng = np.random.default_rng(7)
def zeroed(m, t):
    g = m.subgraphs[0]; ten = g.tensors[t]; buf = m.buffers[ten.buffer]
    w = np.frombuffer(bytes(buf.data), dtype=np.float32).reshape(ten.shape).copy()
    w[rng.random(w.shape) < 0.6] = 0.0
    # Make whole 1x4 blocks zero too, so block sparsity has something to skip.
    w.reshape(w.shape[0], -1, 4)[rng.random((w.shape[0], w.shape[1] // 4)) < 0.3] = 0.0
    return w
m = load(); g = m.subgraphs[0]
weights = {}
for t in (5, 4, 3):
    weights[t] = zeroed(m, t)
    m.buffers[g.tensors[t].buffer].data = list(weights[t].tobytes())
save(m, out_dir + '/dense_fc.tflite')
def dm(fmt, dense=0, seg=None, idx=None):
    d = S.DimensionMetadataT(); d.format = fmt; d.denseSize = dense
    if seg is not None:
        d.arraySegmentsType = S.SparseIndexVector.Int32Vector; v = S.Int32VectorT(); v.values = list(seg); d.arraySegments = v
        d.arrayIndicesType = S.SparseIndexVector.Uint16Vector; v = S.Uint16VectorT(); v.values = list(idx); d.arrayIndices = v
    return d
def csr(w):  # rows dense, columns CSR
    seg, idx, vals = [0], [], []
    for r in w:
        nz = np.nonzero(r)[0]; idx += list(nz); vals += list(r[nz]); seg.append(len(idx))
    sp = S.SparsityParametersT(); sp.traversalOrder = [0, 1]; sp.blockMap = []
    sp.dimMetadata = [dm(S.DimensionType.DENSE, w.shape[0]), dm(S.DimensionType.SPARSE_CSR, 0, seg, idx)]
    return sp, np.array(vals, np.float32)
def csc(w):  # columns dense, rows CSR
    sp, v = csr(w.T); sp.traversalOrder = [1, 0]; return sp, v
def block(w):  # 1x4 blocks along dim 1: rows dense, block columns CSR, block dense(4)
    n, k = w.shape; seg, idx, vals = [0], [], []
    for r in range(n):
        for bc in range(k // 4):
            blk = w[r, bc * 4:(bc + 1) * 4]
            if np.any(blk): idx.append(bc); vals += list(blk)
        seg.append(len(idx))
    sp = S.SparsityParametersT(); sp.traversalOrder = [0, 1, 2]; sp.blockMap = [1]
    sp.dimMetadata = [dm(S.DimensionType.DENSE, n), dm(S.DimensionType.SPARSE_CSR, 0, seg, idx), dm(S.DimensionType.DENSE, 4)]
    return sp, np.array(vals, np.float32)
m = load(); g = m.subgraphs[0]
oc = S.OperatorCodeT(); oc.builtinCode = S.BuiltinOperator.DENSIFY; oc.deprecatedBuiltinCode = S.BuiltinOperator.DENSIFY; oc.version = 1
m.operatorCodes.append(oc); dens = len(m.operatorCodes) - 1
new_ops = []
for t, enc in ((5, csr), (4, block), (3, csc)):
    sp, vals = enc(weights[t]); ten = g.tensors[t]
    m.buffers[ten.buffer].data = list(vals.tobytes()); ten.sparsity = sp
    d = S.TensorT(); d.shape = list(ten.shape); d.type = ten.type; d.name = (ten.name or b'w') + b'_dense'; d.buffer = 0
    g.tensors.append(d); dt = len(g.tensors) - 1
    op = S.OperatorT(); op.opcodeIndex = dens; op.inputs = [t]; op.outputs = [dt]; new_ops.append(op)
    for o in g.operators:
        o.inputs = [dt if i == t else i for i in o.inputs]
g.operators = new_ops + g.operators
save(m, out_dir + '/sparse_fc.tflite')
from ai_edge_litert.interpreter import Interpreter, OpResolverType
# LiteRT must give the dense and the sparse model the same outputs.
outs = {}
for name in ('dense_fc', 'sparse_fc'):
    ip = Interpreter(model_path=f'{out_dir}/{name}.tflite', experimental_op_resolver_type=OpResolverType.BUILTIN_REF); ip.allocate_tensors()
    for i, d in enumerate(ip.get_input_details()):
        ip.set_tensor(d['index'], np.random.default_rng(i).standard_normal(d['shape']).astype(np.float32))
    ip.invoke()
    outs[name] = [ip.get_tensor(d['index']) for d in ip.get_output_details()]
for j, (a, b) in enumerate(zip(outs['dense_fc'], outs['sparse_fc'])):
    print('litert dense vs sparse output', j, np.abs(a - b).max())
