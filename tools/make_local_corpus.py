"""Builds the local measurement corpus of issue 26 with the real converter (TensorFlow/Keras from PyPI), random
seeded weights and 224x224 inputs, one folder per model in the layout of ../shared/corpus/tflite (meta.json,
model.tflite, input_0.npy, expected_0.npy and, where LiteRT's XNNPACK path differs, expected_xnnpack_0.npy), so that
conform.py and bench.py run on it:

  python3 -m venv V && V/bin/pip install tensorflow-cpu numpy ai-edge-litert
  V/bin/python tools/make_local_corpus.py OUT_DIR [--only REGEX]

Models (the patterns issue 26's table names):
  keras_efficientnet_b0_224_float      keras.applications.EfficientNetB0 (swish = LOGISTIC+MUL, squeeze-excite,
                                        explicit PAD before stride-2 depthwise convs, Rescaling+Normalization in graph)
  keras_efficientnet_lite0_224_float   EfficientNet-B0 with the Lite changes (ReLU6 instead of swish, no
                                        squeeze-excite, no in-graph preprocessing), built from Keras layers
  keras_mobilenet_v3_small_224_float   keras.applications.MobileNetV3Small (hard-swish, Rescaling in graph)
  keras_mobilenet_v3_large_224_float   keras.applications.MobileNetV3Large
  keras_uint8_norm_int8_ptq_224        uint8 image in, CAST to float, (x-mean)/std per channel against [1,1,1,3]
                                        constants inside the graph, MobileNetV2 (alpha 0.5) body, full-integer PTQ
                                        with a seeded representative dataset (input uint8, output int8)
  keras_mobilenet_v2_224_sparse_1x1    MobileNetV2 whose 1x1 conv kernels are pruned to 80% zeros in 1x4 blocks
                                        (blocks along the input channels; the last 1x1 conv is left dense), converted with
                                        Optimize.EXPERIMENTAL_SPARSITY (TFLite `sparsity` + DENSIFY)
  keras_mobilenet_v2_224_pruned90_dense MobileNetV2 whose 1x1 conv kernels (all 35) are pruned to 90% zeros, each
                                        weight on its own (unstructured, as MediaPipe's "sparse" models), converted
                                        without the sparsifier: the zeros are stored densely
  keras_efficientnet_lite0_224_dynamic_range  the Lite0 above, dynamic-range quantized (Optimize.DEFAULT without a
                                        representative dataset: int8 weights, float activations quantized per image
                                        at run time; 5x5 depthwise convolutions)
  keras_mlp_b4_dynamic_range           Dense 784-1024-1024-10 (ReLU) on a batch of 4 seeded normal rows,
                                        dynamic-range quantized: hybrid FULLY_CONNECTED with one input scale and zero
                                        point per row
  keras_lstm_b2_dynamic_range          LSTM(64) over 16 steps of 32 features, batch 2, then Dense(10), dynamic-range
                                        quantized (a WHILE loop of small gate ops around hybrid FULLY_CONNECTED)
  keras_gru_b2_dynamic_range           the same with GRU(64)
  keras_transformer_encoder_float      4 encoder layers (Keras MultiHeadAttention, 4 heads over 128 tokens of 256,
                                        LayerNormalization, Dense 1024 GELU): BATCH_MATMUL, SOFTMAX, GELU, TRANSPOSE and
                                        the layer norms as MEAN / SQUARED_DIFFERENCE / RSQRT chains
  keras_transformer_encoder_dynamic_range  the same, dynamic-range quantized (hybrid FULLY_CONNECTED on 128 rows)
  keras_transformer_encoder_int8_ptq   the same, int8 PTQ with float input and output (16 seeded calibration
                                        inputs): int8 SQUARED_DIFFERENCE, RSQRT, GELU, SOFTMAX, BATCH_MATMUL
  keras_conv1d_audio_float             five Conv1D + BatchNorm + ReLU (strides 4,4,2,2,2) over 16000 samples,
                                        global average pool, Dense(12): CONV_2D with one output row
  keras_conv1d_audio_int8_ptq          the same, int8 PTQ with float input and output

Every random number comes from fixed seeds: the same TF/Keras version gives the same files. The input of each model
is the cat photo of examples/models/mobilenet_v1_0.25_128_quant resized to 224x224.  The references are LiteRT's
reference kernels (BUILTIN_REF, expected_0.npy) and, where they differ, its default XNNPACK path
(expected_xnnpack_0.npy); the suggested tolerance covers the difference between the two.
"""
import argparse
import hashlib
import json
import os
import re
import struct
import sys

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
IMAGE = os.path.join(ROOT, "examples", "models", "mobilenet_v1_0.25_128_quant", "cat.bmp")
SEED = 20260126


def read_bmp(path):
    """24-bit uncompressed Windows BMP to an RGB uint8 array [H, W, 3]."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] != b"BM":
        raise ValueError(f"{path}: not a BMP file (magic {data[:2]!r})")
    offset = struct.unpack_from("<I", data, 10)[0]
    width, height = struct.unpack_from("<ii", data, 18)
    bpp = struct.unpack_from("<H", data, 28)[0]
    if bpp != 24:
        raise ValueError(f"{path}: {bpp} bits per pixel, expected 24")
    stride = (width * 3 + 3) & ~3
    rows = np.frombuffer(data, np.uint8, stride * abs(height), offset).reshape(abs(height), stride)
    img = rows[:, : width * 3].reshape(abs(height), width, 3)[:, :, ::-1]
    return img[::-1] if height > 0 else img


def resize_bilinear(img, h, w):
    src = img.astype(np.float32)
    ys = (np.arange(h) + 0.5) * src.shape[0] / h - 0.5
    xs = (np.arange(w) + 0.5) * src.shape[1] / w - 0.5
    y0 = np.clip(np.floor(ys).astype(int), 0, src.shape[0] - 1)
    x0 = np.clip(np.floor(xs).astype(int), 0, src.shape[1] - 1)
    y1 = np.clip(y0 + 1, 0, src.shape[0] - 1)
    x1 = np.clip(x0 + 1, 0, src.shape[1] - 1)
    fy = np.clip(ys - y0, 0, 1)[:, None, None]
    fx = np.clip(xs - x0, 0, 1)[None, :, None]
    top = src[y0][:, x0] * (1 - fx) + src[y0][:, x1] * fx
    bot = src[y1][:, x0] * (1 - fx) + src[y1][:, x1] * fx
    return np.clip(np.round(top * (1 - fy) + bot * fy), 0, 255).astype(np.uint8)


def cat_224():
    return resize_bilinear(read_bmp(IMAGE), 224, 224)[None]


def seed_batchnorm(model, rng):
    """Non-trivial BatchNorm statistics, so that random-weight activations are neither all zero nor constant."""
    import keras
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            gamma, beta, mean, var = layer.get_weights()
            layer.set_weights([
                rng.uniform(0.5, 1.5, gamma.shape).astype(np.float32),
                rng.normal(0.0, 0.2, beta.shape).astype(np.float32),
                rng.normal(0.0, 0.2, mean.shape).astype(np.float32),
                rng.uniform(0.5, 2.0, var.shape).astype(np.float32),
            ])


# ---------------------------------------------------------------------------------------------------------------
# Models

def efficientnet_b0():
    import keras
    m = keras.applications.EfficientNetB0(weights=None, input_shape=(224, 224, 3), classes=1000, classifier_activation=None)
    return m, "keras.applications.EfficientNetB0 weights=None classes=1000 logits (include_preprocessing: Rescaling + Normalization in graph)"


def efficientnet_lite0():
    """EfficientNet-B0's blocks with the Lite changes: ReLU6 everywhere, no squeeze-excite, stem 32 and head 1280
    fixed (Lite0 has width and depth factors 1.0, so B0's sizes)."""
    import keras
    from keras import layers
    # (kernel, repeats, filters_in, filters_out, expand_ratio, stride), as EfficientNet-B0.
    blocks = [(3, 1, 32, 16, 1, 1), (3, 2, 16, 24, 6, 2), (5, 2, 24, 40, 6, 2), (3, 3, 40, 80, 6, 2),
              (5, 3, 80, 112, 6, 1), (5, 4, 112, 192, 6, 2), (3, 1, 192, 320, 6, 1)]
    x = inp = keras.Input((224, 224, 3))
    x = layers.Conv2D(32, 3, strides=2, padding="same", use_bias=False, name="stem_conv")(x)
    x = layers.BatchNormalization(name="stem_bn")(x)
    x = layers.ReLU(6.0, name="stem_relu6")(x)
    n = 0
    for k, repeats, f_in, f_out, expand, stride in blocks:
        for r in range(repeats):
            s = stride if r == 0 else 1
            fi = f_in if r == 0 else f_out
            y = x
            if expand != 1:
                y = layers.Conv2D(fi * expand, 1, use_bias=False, name=f"b{n}_expand")(y)
                y = layers.BatchNormalization(name=f"b{n}_expand_bn")(y)
                y = layers.ReLU(6.0, name=f"b{n}_expand_relu6")(y)
            y = layers.DepthwiseConv2D(k, strides=s, padding="same", use_bias=False, name=f"b{n}_dw")(y)
            y = layers.BatchNormalization(name=f"b{n}_dw_bn")(y)
            y = layers.ReLU(6.0, name=f"b{n}_dw_relu6")(y)
            y = layers.Conv2D(f_out, 1, use_bias=False, name=f"b{n}_project")(y)
            y = layers.BatchNormalization(name=f"b{n}_project_bn")(y)
            if s == 1 and fi == f_out:
                y = layers.Add(name=f"b{n}_add")([x, y])
            x = y
            n += 1
    x = layers.Conv2D(1280, 1, use_bias=False, name="top_conv")(x)
    x = layers.BatchNormalization(name="top_bn")(x)
    x = layers.ReLU(6.0, name="top_relu6")(x)
    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    x = layers.Dense(1000, name="predictions")(x)
    return keras.Model(inp, x, name="efficientnet_lite0"), \
        "EfficientNet-Lite0-like: EfficientNet-B0 blocks with ReLU6, no squeeze-excite, 'same' padding, classes=1000 logits, built from Keras layers"


def mobilenet_v3_small():
    import keras
    m = keras.applications.MobileNetV3Small(weights=None, input_shape=(224, 224, 3), classes=1000,
                                               classifier_activation=None)
    return m, "keras.applications.MobileNetV3Small weights=None classes=1000 logits (hard-swish, Rescaling in graph)"


def mobilenet_v3_large():
    import keras
    m = keras.applications.MobileNetV3Large(weights=None, input_shape=(224, 224, 3), classes=1000,
                                               classifier_activation=None)
    return m, "keras.applications.MobileNetV3Large weights=None classes=1000 logits (hard-swish, Rescaling in graph)"


MEAN = np.array([123.675, 116.28, 103.53], np.float32)
STD = np.array([58.395, 57.12, 57.375], np.float32)


def uint8_norm_body():
    import keras
    from keras import layers, ops

    class Normalise(layers.Layer):
        """(x - mean) * (1/std) per channel, against [1,1,1,3] constants."""
        def call(self, x):
            x = ops.cast(x, "float32")
            x = ops.subtract(x, ops.convert_to_tensor(MEAN.reshape(1, 1, 1, 3)))
            return ops.multiply(x, ops.convert_to_tensor((1.0 / STD).reshape(1, 1, 1, 3)))

    inp = keras.Input((224, 224, 3), dtype="uint8")
    x = Normalise(name="normalise")(inp)
    body = keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3), alpha=0.5, classes=100,
                                             classifier_activation=None)
    return keras.Model(inp, body(x), name="uint8_norm_mobilenet_v2_050"), \
        "uint8 input, CAST + (x-mean)*(1/std) per channel (ImageNet mean/std) in graph, then keras.applications.MobileNetV2 alpha=0.5 weights=None classes=100 logits"


def sparse_mobilenet_v2(rng):
    """MobileNetV2 with the 1x1 conv kernels pruned to 80% zeros, in 1x4 blocks along the input channels (the
    layout the converter's sparsifier and XNNPACK's sparse kernels take); the last 1x1 conv (Conv_1) is left dense."""
    import keras
    m = keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3), classes=1000, classifier_activation=None)
    pruned = 0
    for layer in m.layers:
        if isinstance(layer, keras.layers.Conv2D) and not isinstance(layer, keras.layers.DepthwiseConv2D) \
                and layer.kernel_size == (1, 1) and layer.name != "Conv_1":
            w = layer.get_weights()
            k = w[0]  # [1, 1, in, out]
            cin, cout = k.shape[2], k.shape[3]
            if cin % 4:
                continue
            keep = rng.random((cin // 4, cout)) >= 0.8
            k = k * np.repeat(keep, 4, axis=0)[None, None]
            layer.set_weights([k.astype(np.float32)] + w[1:])
            pruned += 1
    return m, f"keras.applications.MobileNetV2 weights=None classes=1000 logits, {pruned} 1x1 conv kernels pruned to 80% zeros in 1x4 blocks along the input channels, Optimize.EXPERIMENTAL_SPARSITY"


def pruned_mobilenet_v2(rng):
    """MobileNetV2 with every 1x1 conv kernel pruned to 90% zeros, weight by weight (unstructured); converted as a
    plain float model, so the zeros are stored densely and only the weights' values say the layers are sparse."""
    import keras
    m = keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3), classes=1000, classifier_activation=None)
    pruned = 0
    for layer in m.layers:
        if isinstance(layer, keras.layers.Conv2D) and not isinstance(layer, keras.layers.DepthwiseConv2D) \
                and layer.kernel_size == (1, 1):
            w = layer.get_weights()
            keep = rng.random(w[0].shape) >= 0.9
            layer.set_weights([(w[0] * keep).astype(np.float32)] + w[1:])
            pruned += 1
    return m, f"keras.applications.MobileNetV2 weights=None classes=1000 logits, {pruned} 1x1 conv kernels pruned to 90% zeros (unstructured), stored dense"


def transformer_encoder(tokens=128, width=256, heads=4, layers=4):
    import keras
    L = keras.layers
    inp = keras.Input((tokens, width), batch_size=1)
    x = inp
    for i in range(layers):
        a = L.MultiHeadAttention(heads, width // heads, name=f"l{i}_attention")(x, x)
        x = L.LayerNormalization(name=f"l{i}_norm1")(x + a)
        f = L.Dense(4 * width, activation="gelu", name=f"l{i}_ffn1")(x)
        f = L.Dense(width, name=f"l{i}_ffn2")(f)
        x = L.LayerNormalization(name=f"l{i}_norm2")(x + f)
    return keras.Model(inp, x, name="transformer_encoder"), \
        f"{layers} Keras encoder layers: MultiHeadAttention ({heads} heads, {tokens} tokens of {width}), LayerNormalization, Dense {4 * width} GELU"


def conv1d_audio():
    import keras
    L = keras.layers
    inp = keras.Input((16000, 1), batch_size=1)
    x = inp
    for i, (f, k, s) in enumerate([(32, 9, 4), (64, 9, 4), (96, 5, 2), (128, 5, 2), (128, 3, 2)]):
        x = L.Conv1D(f, k, strides=s, padding="same", name=f"conv{i}")(x)
        x = L.BatchNormalization(name=f"bn{i}")(x)
        x = L.ReLU(name=f"relu{i}")(x)
    x = L.GlobalAveragePooling1D(name="pool")(x)
    return keras.Model(inp, L.Dense(12, name="logits")(x), name="conv1d_audio"), \
        "five Conv1D+BN+ReLU (32/64/96/128/128 filters, kernels 9,9,5,5,3, strides 4,4,2,2,2) over 16000 samples, mean, Dense(12)"


# ---------------------------------------------------------------------------------------------------------------
# Conversion and references

def convert(model, quant=None, rep=None):
    import tensorflow as tf
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if quant == "int8":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = rep
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.uint8
        conv.inference_output_type = tf.int8
    elif quant == "sparse":
        conv.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY]
    elif quant == "dynamic":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    elif quant == "int8_float_io":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = rep
    return conv.convert()


def run_litert(path, inputs, resolver):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    kinds = {"ref": OpResolverType.BUILTIN_REF, "xnnpack": OpResolverType.AUTO}
    it = Interpreter(model_path=path, experimental_op_resolver_type=kinds[resolver])
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def describe(path):
    """Op counts, tensor types and sparse tensors, read with LiteRT's flatbuffer schema."""
    import ai_edge_litert.schema_py_generated as S
    with open(path, "rb") as f:
        m = S.ModelT.InitFromObj(S.Model.GetRootAsModel(f.read(), 0))
    names = {v: k for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")}
    tnames = {v: k for k, v in vars(S.TensorType).items() if not k.startswith("_")}
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in m.operatorCodes]
    ops, types, sparse = {}, {}, 0
    for g in m.subgraphs:
        for o in g.operators:
            n = names.get(codes[o.opcodeIndex], str(codes[o.opcodeIndex]))
            ops[n] = ops.get(n, 0) + 1
        for t in g.tensors:
            types[tnames.get(t.type, str(t.type))] = types.get(tnames.get(t.type, str(t.type)), 0) + 1
            sparse += t.sparsity is not None
    return dict(sorted(ops.items(), key=lambda kv: -kv[1])), types, sparse


def tolerance(ref, xnn):
    if ref.dtype.kind == "f":
        d = float(np.abs(ref.astype(np.float64) - xnn).max())
        return {"kind": "float", "max_abs_error": max(1e-5, 4 * d), "rtol_hint": 1e-4}, {
            "max_abs_diff": d, "max_abs_ref": float(np.abs(ref).max())}
    d = np.abs(ref.astype(np.int64) - xnn.astype(np.int64))
    return {"kind": "quantized", "max_abs_diff_q": max(1, int(d.max())),
            "allowed_off_by_one_count": max(1, int(np.count_nonzero(d)))}, {
        "max_abs_diff_q": int(d.max()), "differing_count": int(np.count_nonzero(d)), "num_elements": int(d.size)}


def write_folder(out, name, tflite, inputs, source, input_note):
    import ai_edge_litert
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.tflite")
    with open(path, "wb") as f:
        f.write(tflite)
    for i, x in enumerate(inputs):
        np.save(os.path.join(folder, f"input_{i}.npy"), x)
    ref = run_litert(path, inputs, "ref")
    xnn = run_litert(path, inputs, "xnnpack")
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_path=path)
    ops, types, sparse = describe(path)

    def qdict(d):
        q = d["quantization_parameters"]
        return {"scale": [float(s) for s in q["scales"]], "zero_point": [int(z) for z in q["zero_points"]],
                "quantized_dimension": int(q["quantized_dimension"])}

    outs = []
    for j, (d, r, x) in enumerate(zip(it.get_output_details(), ref, xnn)):
        np.save(os.path.join(folder, f"expected_{j}.npy"), r)
        same = bool(np.array_equal(r, x))
        xpath = os.path.join(folder, f"expected_xnnpack_{j}.npy")
        if not same:
            np.save(xpath, x)
        elif os.path.exists(xpath):
            os.remove(xpath)
        tol, diff = tolerance(r, x)
        outs.append({"name": d["name"], "index": int(d["index"]), "dtype": str(r.dtype), "shape": list(r.shape),
                     "quantization": qdict(d), "file": f"expected_{j}.npy", "ref_vs_xnnpack": diff,
                     "xnnpack_identical": same, "suggested_tolerance": tol})
    ins = [{"name": d["name"], "index": int(d["index"]), "dtype": str(x.dtype), "shape": list(x.shape),
            "quantization": qdict(d), "file": f"input_{i}.npy", "generated_as": input_note}
           for i, (d, x) in enumerate(zip(it.get_input_details(), inputs))]
    import tensorflow as tf
    import keras
    meta = {"name": name,
            "source": f"tools/make_local_corpus.py: {source} (seed {SEED}, BN stats seeded; TF {tf.__version__} / Keras {keras.__version__})",
            "license": "architectures from keras.applications (Apache 2.0) or built here, weights randomly initialised - no pretrained weights; free to use",
            "group": "local_issue26", "file_size": len(tflite), "sha256": hashlib.sha256(tflite).hexdigest(),
            "operators": [{"op": k, "count": v} for k, v in ops.items()], "tensor_types": types,
            "sparse_tensors": sparse, "litert_version": ai_edge_litert.__version__ if hasattr(ai_edge_litert, "__version__") else "",
            "inputs": ins, "outputs": outs}
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: {len(tflite)} bytes, ops {ops}, sparse tensors {sparse}, ref vs xnnpack {[o['ref_vs_xnnpack'] for o in outs]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="folder to write the model folders into")
    ap.add_argument("--only", default=None, help="regex on model names")
    args = ap.parse_args()
    import keras
    import tensorflow as tf

    img = cat_224()
    float_in = ((img.astype(np.float32) / 127.5) - 1.0).astype(np.float32)  # [-1, 1], for Lite0 and the sparse model
    raw_in = img.astype(np.float32)  # [0, 255]: models with their own Rescaling / Normalization layers

    def float_model(make, name, x, note, quant=None, needs_rng=False):
        keras.utils.set_random_seed(SEED)
        rng = np.random.default_rng(SEED)
        model, source = make(rng) if needs_rng else make()
        seed_batchnorm(model, rng)
        write_folder(args.out, name, convert(model, quant), [x], source, note)

    todo = {
        "keras_efficientnet_b0_224_float": lambda n: float_model(efficientnet_b0, n, raw_in, "image cat.bmp resized to 224x224, float 0..255"),
        "keras_efficientnet_lite0_224_float": lambda n: float_model(efficientnet_lite0, n, float_in, "image cat.bmp resized to 224x224, float normalised minus1_1"),
        "keras_mobilenet_v3_small_224_float": lambda n: float_model(mobilenet_v3_small, n, raw_in, "image cat.bmp resized to 224x224, float 0..255"),
        "keras_mobilenet_v3_large_224_float": lambda n: float_model(mobilenet_v3_large, n, raw_in, "image cat.bmp resized to 224x224, float 0..255"),
        "keras_mobilenet_v2_224_sparse_1x1": lambda n: float_model(sparse_mobilenet_v2, n, float_in, "image cat.bmp resized to 224x224, float normalised minus1_1", quant="sparse", needs_rng=True),
        "keras_mobilenet_v2_224_pruned90_dense": lambda n: float_model(pruned_mobilenet_v2, n, float_in, "image cat.bmp resized to 224x224, float normalised minus1_1", needs_rng=True),
    }

    def mlp(name):
        keras.utils.set_random_seed(SEED)
        inp = keras.Input((784,), batch_size=4)
        x = keras.layers.Dense(1024, activation="relu")(inp)
        x = keras.layers.Dense(1024, activation="relu")(x)
        model = keras.Model(inp, keras.layers.Dense(10)(x), name="mlp")
        x = np.random.default_rng(SEED).standard_normal((4, 784)).astype(np.float32)
        write_folder(args.out, name, convert(model, "dynamic"), [x], "Dense 784-1024-1024-10 (ReLU), batch 4, dynamic-range quantized", "4 seeded standard normal rows")
    todo["keras_mlp_b4_dynamic_range"] = mlp

    def recurrent(name, layer):
        keras.utils.set_random_seed(SEED)
        inp = keras.Input((16, 32), batch_size=2)
        model = keras.Model(inp, keras.layers.Dense(10)(layer(64)(inp)), name=name)
        x = np.random.default_rng(SEED).standard_normal((2, 16, 32)).astype(np.float32)
        write_folder(args.out, name, convert(model, "dynamic"), [x], f"{layer.__name__}(64) over 16 steps of 32, batch 2, Dense(10), dynamic-range quantized", "2x16x32 seeded standard normal values")
    todo["keras_lstm_b2_dynamic_range"] = lambda n: recurrent(n, keras.layers.LSTM)
    todo["keras_gru_b2_dynamic_range"] = lambda n: recurrent(n, keras.layers.GRU)
    todo["keras_efficientnet_lite0_224_dynamic_range"] = lambda n: float_model(efficientnet_lite0, n, float_in, "image cat.bmp resized to 224x224, float normalised minus1_1", quant="dynamic")

    def int8_model(name):
        keras.utils.set_random_seed(SEED)
        rng = np.random.default_rng(SEED)
        model, source = uint8_norm_body()
        seed_batchnorm(model.layers[-1], rng)
        cal = np.random.default_rng(SEED + 1)

        def rep():
            # 16 seeded random uint8 images plus the photo itself.
            for _ in range(16):
                yield [cal.integers(0, 256, (1, 224, 224, 3)).astype(np.uint8)]
            yield [img]
        tfl = convert(model, "int8", rep)
        write_folder(args.out, name, tfl, [img], source + ", full-integer PTQ (17 calibration images: 16 seeded random uint8, the photo), input uint8 / output int8", "image cat.bmp resized to 224x224, uint8")
    todo["keras_uint8_norm_int8_ptq_224"] = int8_model

    def sequence_model(name, make, quant, shape, note):
        keras.utils.set_random_seed(SEED)
        model, source = make()
        seed_batchnorm(model, np.random.default_rng(SEED))
        x = np.random.default_rng(SEED).standard_normal(shape).astype(np.float32)
        cal = np.random.default_rng(SEED + 1)
        rep = lambda: ([cal.standard_normal(shape).astype(np.float32)] for _ in range(16))
        how = {None: "", "dynamic": ", dynamic-range quantized", "int8_float_io": ", int8 PTQ with float input/output (16 seeded normal calibration inputs)"}[quant]
        write_folder(args.out, name, convert(model, quant, rep), [x], source + how, note)
    enc = (128, 256)
    for suffix, quant in (("float", None), ("dynamic_range", "dynamic"), ("int8_ptq", "int8_float_io")):
        todo[f"keras_transformer_encoder_{suffix}"] = lambda n, q=quant: sequence_model(n, transformer_encoder, q, (1,) + enc, "1x128x256 seeded standard normal values")
    for suffix, quant in (("float", None), ("int8_ptq", "int8_float_io")):
        todo[f"keras_conv1d_audio_{suffix}"] = lambda n, q=quant: sequence_model(n, conv1d_audio, q, (1, 16000, 1), "1x16000x1 seeded standard normal samples")

    os.makedirs(args.out, exist_ok=True)
    for name, make in todo.items():
        if args.only and not re.search(args.only, name):
            continue
        make(name)
    print(f"written to {args.out} with TF {tf.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
