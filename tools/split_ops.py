"""Cut a .tflite model into one-op models (the op's tensors and buffers unchanged), one per distinct
(op, input shapes, weight shapes, options) signature, so that tools/pair_bench.py can time nnrt and
LiteRT layer by layer:

  V/bin/python tools/split_ops.py MODEL.tflite OUTDIR [OPNAME,OPNAME]   # default CONV_2D,DEPTHWISE_CONV_2D

Writes OUTDIR/NNN_OPNAME.tflite (NNN: the op's index in the model) and prints their paths, comma-separated.
"""
import os, sys, flatbuffers
import ai_edge_litert.schema_py_generated as S

src, out = sys.argv[1], sys.argv[2]
kinds = (sys.argv[3] if len(sys.argv) > 3 else 'CONV_2D,DEPTHWISE_CONV_2D').split(',')
names = {v: k for k, v in S.BuiltinOperator.__dict__.items() if not k.startswith('_')}
data = open(src, 'rb').read()
os.makedirs(out, exist_ok=True)
base = S.ModelT.InitFromObj(S.Model.GetRootAsModel(data, 0))
sg = base.subgraphs[0]
seen, paths = set(), []
for i, op in enumerate(sg.operators):
    code = base.operatorCodes[op.opcodeIndex]
    kind = names.get(max(code.builtinCode, code.deprecatedBuiltinCode), '?')
    if kind not in kinds:
        continue
    ins = [t for t in op.inputs if t >= 0]
    sig = (kind, tuple(tuple(sg.tensors[t].shape) for t in ins), repr(vars(op.builtinOptions)) if op.builtinOptions else '')
    if sig in seen:
        continue
    seen.add(sig)
    m = S.ModelT.InitFromObj(S.Model.GetRootAsModel(data, 0))
    g = m.subgraphs[0]
    one = g.operators[i]
    # A constant the model stores as float16 and DEQUANTIZEs (MediaPipe's detectors) becomes a
    # float32 constant, as both runtimes fold it at prepare: the one-op model keeps its weights.
    import numpy as np
    for t in [t for t in one.inputs if t >= 0]:
        for q in sg.operators:
            if t in q.outputs and names.get(max(base.operatorCodes[q.opcodeIndex].builtinCode, base.operatorCodes[q.opcodeIndex].deprecatedBuiltinCode)) == 'DEQUANTIZE':
                src16 = g.tensors[q.inputs[0]]
                half = m.buffers[src16.buffer].data
                if src16.type == S.TensorType.FLOAT16 and half is not None and len(half) > 0:
                    vals = np.frombuffer(bytes(bytearray(half)), dtype=np.float16).astype(np.float32)
                    buf = S.BufferT()
                    buf.data = np.frombuffer(vals.tobytes(), dtype=np.uint8)
                    m.buffers.append(buf)
                    g.tensors[t].buffer = len(m.buffers) - 1
    g.operators = [one]
    def const(t):
        d = m.buffers[g.tensors[t].buffer].data
        return d is not None and len(d) > 0
    g.inputs = [t for t in one.inputs if t >= 0 and not const(t)]
    g.outputs = list(one.outputs)
    m.signatureDefs = []
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), b'TFL3')
    p = os.path.join(out, f'{i:03d}_{kind}.tflite')
    open(p, 'wb').write(b.Output())
    paths.append(p)
print(','.join(paths))
