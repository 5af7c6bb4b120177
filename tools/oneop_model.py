"""One-op TFLite models built with LiteRT's flatbuffer schema, shared by
make_builtin_oneop_models.py, make_quant_oneop_models.py and quant_oneop.py.
Needs a Python with ai-edge-litert and numpy (python3 -m venv V && V/bin/pip install ai-edge-litert numpy).
"""
import numpy as np, flatbuffers
import ai_edge_litert.schema_py_generated as S

TT = {'u8': (S.TensorType.UINT8, np.uint8), 'i8': (S.TensorType.INT8, np.int8), 'i16': (S.TensorType.INT16, np.int16),
      'i32': (S.TensorType.INT32, np.int32), 'i64': (S.TensorType.INT64, np.int64), 'f32': (S.TensorType.FLOAT32, np.float32),
      'bool': (S.TensorType.BOOL, np.bool_)}
B = S.BuiltinOperator
VAR = 'var'
# The lowest op versions LiteRT registers for these builtins.
VERSION = {B.BROADCAST_TO: 2}


def model(op, ins, outs, opts_type=0, opts=None, consts={}):
    """ins/outs: (dtype, shape) or (dtype, shape, quant); quant (scale, zp), ([scales], [zps], axis) or None.
    consts maps an input index to constant data, or to VAR for a variable (state) tensor.
    An input given as None is an absent optional input."""
    m = S.ModelT(); m.version = 3; m.buffers = [S.BufferT()]
    g = S.SubGraphT(); g.tensors = []; m.subgraphs = [g]

    def tensor(name, spec, data=None):
        dt, shape = spec[0], spec[1]
        q = spec[2] if len(spec) > 2 else None
        t = S.TensorT(); t.name = name.encode(); t.type = TT[dt][0]; t.shape = list(shape)
        if data is VAR:
            t.isVariable = True; t.buffer = 0
        elif data is not None:
            b = S.BufferT(); b.data = list(np.asarray(data, TT[dt][1]).tobytes()); m.buffers.append(b); t.buffer = len(m.buffers) - 1
        else:
            t.buffer = 0
        if q:
            qq = S.QuantizationParametersT()
            if isinstance(q[0], list): qq.scale = q[0]; qq.zeroPoint = q[1]; qq.quantizedDimension = q[2]
            else: qq.scale = [q[0]]; qq.zeroPoint = [q[1]]
            t.quantization = qq
        g.tensors.append(t); return len(g.tensors) - 1
    ii = [-1 if spec is None else tensor(f'in{k}', spec, consts.get(k)) for k, spec in enumerate(ins)]
    oo = [tensor(f'out{k}', spec) for k, spec in enumerate(outs)]
    g.inputs = [i for k, i in enumerate(ii) if k not in consts and i >= 0]; g.outputs = oo
    oc = S.OperatorCodeT(); oc.builtinCode = op; oc.deprecatedBuiltinCode = min(op, 127); oc.version = VERSION.get(op, 1); m.operatorCodes = [oc]
    o = S.OperatorT(); o.opcodeIndex = 0; o.inputs = ii; o.outputs = oo
    if opts is not None: o.builtinOptionsType = opts_type; o.builtinOptions = opts
    g.operators = [o]
    b = flatbuffers.Builder(1024); b.Finish(m.Pack(b), file_identifier=b'TFL3'); return b.Output()


def opt(cls, **kw):
    """An options object of class `cls` with the given fields set."""
    o = cls()
    for k, v in kw.items(): setattr(o, k, v)
    return o
