"""Small multi-op TFLite models for the fusions of issue 26, with LiteRT's outputs, as a corpus
folder per model (model.tflite, input_0.npy, expected_0.npy from LiteRT's reference kernels,
expected_xnnpack_0.npy from its default ones, meta.json) that conform.py and nnpackage_run read:

  pad_conv_float / pad_conv_int8: MediaPipe-style blocks, a PAD of H and W before each stride-2
      depthwise (VALID) and 3x3 convolution, a 1x1 convolution after (int8: per-channel weights,
      RELU6 activations at scale 6/255, zero point -128, so the PADs pad with the zero point);
  silu_float: EfficientNet-style blocks, 1x1 expansion, SiLU (LOGISTIC then MUL), 3x3 depthwise
      SAME, SiLU, 1x1 projection.

Random weights from a fixed seed. Needs a Python with ai-edge-litert and numpy:
  python3 tools/make_fusion_models.py OUT_DIR
"""
import json, os, sys
import numpy as np, flatbuffers
import ai_edge_litert.schema_py_generated as S
from ai_edge_litert.interpreter import Interpreter, OpResolverType

B, O, A, P = S.BuiltinOperator, S.BuiltinOptions, S.ActivationFunctionType, S.Padding
NP = {S.TensorType.FLOAT32: np.float32, S.TensorType.INT8: np.int8, S.TensorType.INT32: np.int32}


class Model:
    def __init__(self):
        self.m = S.ModelT(); self.m.version = 3; self.m.buffers = [S.BufferT()]
        self.g = S.SubGraphT(); self.g.tensors = []; self.g.operators = []; self.m.subgraphs = [self.g]
        self.m.operatorCodes = []; self.codes = {}

    def tensor(self, shape, ttype=S.TensorType.FLOAT32, data=None, q=None):
        t = S.TensorT(); t.name = f't{len(self.g.tensors)}'.encode(); t.type = ttype; t.shape = list(shape); t.buffer = 0
        if data is not None:
            b = S.BufferT(); b.data = list(np.asarray(data, NP[ttype]).tobytes()); self.m.buffers.append(b); t.buffer = len(self.m.buffers) - 1
        if q is not None:
            qq = S.QuantizationParametersT()
            if isinstance(q[0], (list, np.ndarray)): qq.scale = [float(s) for s in q[0]]; qq.zeroPoint = [int(z) for z in q[1]]; qq.quantizedDimension = q[2]
            else: qq.scale = [float(q[0])]; qq.zeroPoint = [int(q[1])]
            t.quantization = qq
        self.g.tensors.append(t); return len(self.g.tensors) - 1

    def op(self, code, ins, outs, opts_type=0, opts=None, version=1):
        if code not in self.codes:
            oc = S.OperatorCodeT(); oc.builtinCode = code; oc.deprecatedBuiltinCode = min(code, 127); oc.version = version
            self.m.operatorCodes.append(oc); self.codes[code] = len(self.m.operatorCodes) - 1
        o = S.OperatorT(); o.opcodeIndex = self.codes[code]; o.inputs = ins; o.outputs = outs
        if opts is not None: o.builtinOptionsType = opts_type; o.builtinOptions = opts
        self.g.operators.append(o)

    def bytes(self, inputs, outputs):
        self.g.inputs = inputs; self.g.outputs = outputs
        b = flatbuffers.Builder(1 << 20); b.Finish(self.m.Pack(b), file_identifier=b'TFL3'); return bytes(b.Output())


def opt(cls, **kw):
    o = cls()
    for k, v in kw.items(): setattr(o, k, v)
    return o


class Net:
    """Builds float or int8 layers over NHWC tensors, tracking shapes."""
    ACT_Q = (6 / 255, -128)  # RELU6 activations

    def __init__(self, quant, rng):
        self.md, self.quant, self.rng = Model(), quant, rng

    def act_tensor(self, shape, q=None):
        if self.quant:
            return self.md.tensor(shape, S.TensorType.INT8, q=q or self.ACT_Q)
        return self.md.tensor(shape)

    def pad(self, x, shape, t, b, l, r):
        out = [shape[0], shape[1] + t + b, shape[2] + l + r, shape[3]]
        p = self.md.tensor([4, 2], S.TensorType.INT32, np.array([0, 0, t, b, l, r, 0, 0], np.int32))
        y = self.act_tensor(out, self.md.g.tensors[x].quantization and (self.md.g.tensors[x].quantization.scale[0], self.md.g.tensors[x].quantization.zeroPoint[0]))
        self.md.op(B.PAD, [x, p], [y], O.PadOptions, S.PadOptionsT(), version=2 if self.quant else 1)
        return y, out

    def conv(self, x, shape, oc, k, stride, padding, act, depthwise=False):
        ic = shape[3]
        wshape = [1, k, k, oc] if depthwise else [oc, k, k, ic]
        fan_in = k * k * (1 if depthwise else ic)
        w = self.rng.standard_normal(wshape).astype(np.float32) * np.float32(np.sqrt(2.0 / fan_in))
        b = (self.rng.standard_normal(oc) * 0.1).astype(np.float32)
        ih, iw = shape[1], shape[2]
        if padding == P.SAME:
            oh, ow = -(-ih // stride), -(-iw // stride)
        else:
            oh, ow = (ih - k) // stride + 1, (iw - k) // stride + 1
        out = [shape[0], oh, ow, oc]
        if self.quant:
            axis = 3 if depthwise else 0
            red = tuple(i for i in range(4) if i != axis)
            sw = np.maximum(np.abs(w).max(axis=red), 1e-6) / 127
            wq = np.clip(np.round(w / sw.reshape([-1 if i == axis else 1 for i in range(4)])), -127, 127).astype(np.int8)
            si = self.md.g.tensors[x].quantization.scale[0]
            wt = self.md.tensor(wshape, S.TensorType.INT8, wq, (sw, [0] * oc, axis))
            bt = self.md.tensor([oc], S.TensorType.INT32, np.round(b / (si * sw)).astype(np.int32), (si * sw, [0] * oc, 0))
        else:
            wt = self.md.tensor(wshape, data=w)
            bt = self.md.tensor([oc], data=b)
        y = self.act_tensor(out)
        if depthwise:
            o = opt(S.DepthwiseConv2DOptionsT, padding=padding, strideH=stride, strideW=stride, depthMultiplier=oc // ic, fusedActivationFunction=act, dilationHFactor=1, dilationWFactor=1)
            self.md.op(B.DEPTHWISE_CONV_2D, [x, wt, bt], [y], O.DepthwiseConv2DOptions, o, version=3 if self.quant else 1)
        else:
            o = opt(S.Conv2DOptionsT, padding=padding, strideH=stride, strideW=stride, fusedActivationFunction=act, dilationHFactor=1, dilationWFactor=1)
            self.md.op(B.CONV_2D, [x, wt, bt], [y], O.Conv2DOptions, o, version=3 if self.quant else 1)
        return y, out

    def silu(self, x, shape):
        s = self.md.tensor(shape)
        self.md.op(B.LOGISTIC, [x], [s])
        y = self.md.tensor(shape)
        self.md.op(B.MUL, [x, s], [y], O.MulOptions, opt(S.MulOptionsT, fusedActivationFunction=A.NONE))
        return y, shape


def pad_conv(quant, rng):
    n = Net(quant, rng)
    shape = [1, 192, 192, 3]
    x = n.act_tensor(shape, (1 / 128, 0)) if quant else n.md.tensor(shape)
    inp = x
    x, shape = n.pad(x, shape, 0, 1, 0, 1)
    x, shape = n.conv(x, shape, 24, 3, 2, P.VALID, A.RELU6)
    for oc, stride in [(24, 1), (48, 2), (48, 1), (96, 2), (96, 1), (128, 2), (128, 1)]:
        if stride == 2:
            x, shape = n.pad(x, shape, 0, 1, 0, 1)
        else:
            x, shape = n.pad(x, shape, 1, 1, 1, 1)
        x, shape = n.conv(x, shape, shape[3], 3, stride, P.VALID, A.RELU6, depthwise=True)
        x, shape = n.conv(x, shape, oc, 1, 1, P.VALID, A.RELU6)
    return n.md.bytes([inp], [x]), shape


def silu_net(rng):
    n = Net(False, rng)
    shape = [1, 112, 112, 16]
    x = n.md.tensor(shape)
    inp = x
    for expand, oc, stride in [(96, 24, 2), (144, 24, 1), (144, 40, 2), (240, 40, 1)]:
        y, s = n.conv(x, shape, expand, 1, 1, P.VALID, A.NONE)
        y, s = n.silu(y, s)
        y, s = n.conv(y, s, expand, 3, stride, P.SAME, A.NONE, depthwise=True)
        y, s = n.silu(y, s)
        x, shape = n.conv(y, s, oc, 1, 1, P.VALID, A.NONE)
    return n.md.bytes([inp], [x]), shape


def write(out_dir, name, model, in_shape, quant, rng):
    d = os.path.join(out_dir, name); os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'model.tflite'), 'wb') as f: f.write(model)
    x = rng.uniform(-1, 1, in_shape).astype(np.float32)
    if quant: x = np.clip(np.round(x * 128), -128, 127).astype(np.int8)
    np.save(os.path.join(d, 'input_0.npy'), x)
    for tag, resolver in [('', OpResolverType.BUILTIN_REF), ('xnnpack_', OpResolverType.AUTO)]:
        it = Interpreter(model_content=model, experimental_op_resolver_type=resolver)
        it.allocate_tensors(); it.set_tensor(it.get_input_details()[0]['index'], x); it.invoke()
        np.save(os.path.join(d, f'expected_{tag}0.npy'), it.get_tensor(it.get_output_details()[0]['index']))
    with open(os.path.join(d, 'meta.json'), 'w') as f:
        json.dump({'name': name, 'source': 'tools/make_fusion_models.py (random weights, seed 26)'}, f)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else 'fusion_models'
    rng = np.random.default_rng(26)
    for quant in (False, True):
        m, _ = pad_conv(quant, rng)
        write(out, 'pad_conv_int8' if quant else 'pad_conv_float', m, [1, 192, 192, 3], quant, rng)
    m, _ = silu_net(rng)
    write(out, 'silu_float', m, [1, 112, 112, 16], False, rng)


if __name__ == '__main__':
    main()
