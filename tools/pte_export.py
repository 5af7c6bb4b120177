#!/usr/bin/env python3
"""Exports small ExecuTorch programs into tests/data/pte/<case>/ with inputs and the outputs of
ExecuTorch's own runtime as references, for nnrt's .pte loader and its portable-op kernels.

Each case is exported twice where it can be:
  <case>          portable program: torch.export.export(strict=False) -> to_edge -> to_executorch()
  <case>_xnnpack  to_edge_transform_and_lower(partitioner=[XnnpackPartitioner()]) -> to_executorch();
                  kept only when XNNPACK takes at least one node (else meta says why in index.json)
Both use ExecutorchBackendConfig() defaults (segment_alignment 128, constants in a segment).

Quantized cases (q*): the model is first quantized, then exported the same way.
  q8_cnn, q8t_cnn, q8_mlp, q8_ops  static int8 PT2E: XNNPACKQuantizer with get_symmetric_quantization_config
                           (per-channel weights; q8t_: per-tensor), prepare_pt2e, calibration on
                           seeded random batches, convert_pt2e (XNNPACK qint8 / qcint8 / qcint32)
  qd8_mlp, q4_linear       dynamic: is_dynamic=True (per-token qdint8 activations, qcint8 weights;
                           q4_: weight_qmin -8 / weight_qmax 7, i.e. qcint4)
  qb4_linear               torchao Int8DynamicActivationIntxWeightConfig(int4, PerGroup(32)):
                           blockwise qbint4 weights with bf16 scales; XNNPACK only
The portable twins run the quantized_decomposed::* kernels (import executorch.kernels.quantized).
Their eager reference is the converted (fake-quantized) model; meta.json also gives the diff to
the float model ("quantization"), and for every XNNPACK program "xnnpack" decodes the delegate
payloads (nodes, values, datatypes, quantization parameters; see describe_xnnpack).

Per case folder (the layout of ../shared/corpus/pte, read by ../shared/tools/conform.py):
  program.pte, input_<i>.npy, expected_<j>.npy    one method ("forward")
  input_<method>_<i>.npy, expected_<method>_<j>.npy   several methods
  input_<extra>_<i>.npy, expected_<extra>_<j>.npy + meta.json "extra_cases"   more input sets for
                                                   a program with a dynamic (bounded) batch
  meta.json: operators (name.overload) per method, EValue kinds, instruction kinds, delegates,
             segments / named data, tensor shape dynamism, versions, max diff vs eager torch and
             whether two fresh runs of the runtime gave identical outputs.
and tests/data/pte/index.json (like the corpus's) and tests/data/pte/OPERATORS.md (every distinct
operator with the cases that use it: the list of kernels nnrt has to implement).

Expected outputs come from executorch.runtime.Runtime.get().load_program(path).load_method(name)
.execute(inputs) (the pybinding _C: portable + optimized kernels, XNNPACK backend).

Versions used (the script refuses others unless --any-version): executorch 1.5.1, torch 2.14.1,
torchvision 0.29.1, Python 3.11. executorch 1.5.1 does not declare torch; install it yourself:

  /root/.pyenv/versions/3.11.7/bin/python3 -m venv /work/etvenv
  /work/etvenv/bin/pip install executorch==1.5.1 torch==2.14.1 torchvision==0.29.1 numpy
  /work/etvenv/bin/python tools/pte_export.py [--out tests/data/pte] [--only REGEX] [--no-xnnpack]

  # a torchvision MobileNetV2 (weights=None, BN calibrated) for tools/pte_bench.py, not for the repo:
  /work/etvenv/bin/python tools/pte_export.py --mobilenet-v2 /work/mbv2_pte

Everything is seeded (per case, from its name), so a rerun writes the same inputs; the .pte bytes
are the same for the same versions.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import warnings
import zlib

import numpy as np

warnings.filterwarnings("ignore")
import logging  # noqa: E402

logging.disable(logging.WARNING)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.export import Dim  # noqa: E402

from executorch.exir import (  # noqa: E402
    EdgeCompileConfig,
    ExecutorchBackendConfig,
    to_edge,
    to_edge_transform_and_lower,
)
from executorch.exir._serialize._flatbuffer_program import _flatbuffer_to_program  # noqa: E402
from executorch.exir import schema as S  # noqa: E402
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner  # noqa: E402
from executorch.runtime import Runtime  # noqa: E402
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (  # noqa: E402
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402
import executorch.kernels.quantized  # noqa: E402,F401  (out variants of quantized_decomposed::*)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
VERSIONS = {"executorch": "1.5.1", "torch": "2.14.1", "torchvision": "0.29.1"}


def versions():
    from executorch.version import __version__ as et_version
    return {"executorch": et_version, "torch": torch.__version__,
            "python": ".".join(map(str, sys.version_info[:3]))}


# --------------------------------------------------------------------------------------------
# Weight set-up: random but calibrated, so that no activation is trivially zero or saturated.

def seed_for(name):
    torch.manual_seed(zlib.crc32(name.encode()))
    return np.random.default_rng(zlib.crc32(name.encode()))


def calibrate_bn(model, make_batch, batches=4):
    """Runs a few random batches in train mode with cumulative BN averages, then perturbs the
    statistics and the affine parameters so that they are neither identity nor batch-exact."""
    bns = [m for m in model.modules() if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d))]
    if not bns:
        return model
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(*make_batch())
        for m in bns:
            n = m.num_features
            std = m.running_var.sqrt()
            m.running_mean += 0.2 * std * torch.randn(n)
            m.running_var *= torch.empty(n).uniform_(0.7, 1.4)
            m.weight.copy_(1.0 + 0.25 * torch.randn(n))
            m.bias.copy_(0.1 * torch.randn(n))
    return model.eval()


def bn(c):
    return nn.BatchNorm2d(c)


# --------------------------------------------------------------------------------------------
# Families. Each builder returns a dict:
#   model: nn.Module (one method "forward"), or methods: {name: (module, inputs)}
#   inputs: tuple of tensors used for export and for the reference run
#   dynamic_shapes: optional, passed to torch.export.export; dynamic_dims: the same for meta.json
#   extra: optional {name: inputs} more input sets (dynamic shapes)
#   xnnpack: False to skip the lowered twin; portable: False to skip the portable program
#   notes: free text into meta.json
#   quant: {"config": kwargs of get_symmetric_quantization_config, "calibration": [inputs, ...]}
#          quantizes every method with PT2E (quantize_module) before export; the eager reference
#          is then the converted, fake-quantized GraphModule (the float model's diff is kept too)

class ResNetTiny(nn.Module):
    """Stem conv (bias) + BN + relu, maxpool returning indices, two basic blocks (bias-free
    convs, unfused BN, residual add; the second downsamples with a strided 1x1 conv), global
    average pool, linear. Outputs logits and the maxpool indices (int64)."""

    def __init__(self):
        super().__init__()
        self.stem, self.bn0 = nn.Conv2d(3, 8, 3, padding=1, bias=True), bn(8)
        self.pool = nn.MaxPool2d(2, 2, return_indices=True)
        self.c1, self.b1 = nn.Conv2d(8, 8, 3, padding=1, bias=False), bn(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1, bias=False), bn(8)
        self.c3, self.b3 = nn.Conv2d(8, 12, 3, stride=2, padding=1, bias=False), bn(12)
        self.c4, self.b4 = nn.Conv2d(12, 12, 3, padding=1, bias=False), bn(12)
        self.down, self.bd = nn.Conv2d(8, 12, 1, stride=2, bias=False), bn(12)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(12, 10)

    def forward(self, x):
        y = F.relu(self.bn0(self.stem(x)))
        y, idx = self.pool(y)
        z = F.relu(self.b1(self.c1(y)))
        y = F.relu(self.b2(self.c2(z)) + y)
        z = F.relu(self.b3(self.c3(y)))
        y = F.relu(self.b4(self.c4(z)) + self.bd(self.down(y)))
        return self.fc(torch.flatten(self.gap(y), 1)), idx


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand, act=nn.ReLU6, se=None):
        super().__init__()
        mid = cin * expand
        self.use_res = stride == 1 and cin == cout
        layers = []
        if expand != 1:
            layers += [nn.Conv2d(cin, mid, 1, bias=False), bn(mid), act()]
        layers += [nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), bn(mid), act()]
        if se is not None:
            layers += [se(mid)]
        layers += [nn.Conv2d(mid, cout, 1, bias=False), bn(cout)]
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        y = self.body(x)
        return x + y if self.use_res else y


class MobileNetV2Tiny(nn.Module):
    """Stem conv s2 + BN + ReLU6, inverted residual blocks (pointwise expand, depthwise 3x3 with
    groups=C, linear pointwise projection, residual when shapes allow), a hardtanh(-1, 2) and
    a classifier."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), bn(8), nn.ReLU6())
        self.blocks = nn.Sequential(InvertedResidual(8, 8, 1, 1), InvertedResidual(8, 12, 2, 4),
                                    InvertedResidual(12, 12, 1, 4))
        self.head = nn.Sequential(nn.Conv2d(12, 16, 1, bias=False), bn(16), nn.Hardtanh(-1.0, 2.0))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        y = self.head(self.blocks(self.stem(x)))
        return self.fc(y.mean((2, 3)))


class SqueezeExcite(nn.Module):
    def __init__(self, c, gate=nn.Hardsigmoid, act=nn.ReLU, pool="adaptive"):
        super().__init__()
        r = max(4, c // 4)
        self.pool = pool
        self.fc1, self.act, self.fc2, self.gate = nn.Conv2d(c, r, 1), act(), nn.Conv2d(r, c, 1), gate()

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1) if self.pool == "adaptive" else x.mean((2, 3), keepdim=True)
        return x * self.gate(self.fc2(self.act(self.fc1(s))))


class MobileNetV3Tiny(nn.Module):
    """Hardswish stem, inverted residuals with hardswish and squeeze-excite (adaptive avg pool ->
    1x1 conv -> relu -> 1x1 conv -> hardsigmoid -> mul), hardswish head."""

    def __init__(self):
        super().__init__()
        se = lambda c: SqueezeExcite(c, nn.Hardsigmoid, nn.ReLU, "adaptive")  # noqa: E731
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), bn(8), nn.Hardswish())
        self.blocks = nn.Sequential(InvertedResidual(8, 8, 1, 1, nn.ReLU, se),
                                    InvertedResidual(8, 12, 2, 3, nn.Hardswish, se),
                                    InvertedResidual(12, 12, 1, 3, nn.Hardswish, se))
        self.head = nn.Sequential(nn.Conv2d(12, 24, 1, bias=False), bn(24), nn.Hardswish())
        self.fc = nn.Sequential(nn.Linear(24, 16), nn.Hardswish(), nn.Linear(16, 10))

    def forward(self, x):
        y = self.head(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class EfficientNetTiny(nn.Module):
    """SiLU everywhere, MBConv with squeeze-excite computed with mean(keepdim) and sigmoid."""

    def __init__(self):
        super().__init__()
        se = lambda c: SqueezeExcite(c, nn.Sigmoid, nn.SiLU, "mean")  # noqa: E731
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), bn(8), nn.SiLU())
        self.blocks = nn.Sequential(InvertedResidual(8, 8, 1, 1, nn.SiLU, se),
                                    InvertedResidual(8, 12, 2, 4, nn.SiLU, se),
                                    InvertedResidual(12, 12, 1, 4, nn.SiLU, se))
        self.head = nn.Sequential(nn.Conv2d(12, 20, 1, bias=False), bn(20), nn.SiLU())
        self.fc = nn.Linear(20, 10)

    def forward(self, x):
        return self.fc(self.head(self.blocks(self.stem(x))).mean((2, 3)))


class ConvVariants(nn.Module):
    """Dilated conv, grouped conv (groups=2), 'SAME'-style stride-2 conv with asymmetric padding
    done by F.pad (constant_pad_nd), a rectangular kernel with rectangular padding and stride,
    a bias-free conv. Two outputs of different shapes."""

    def __init__(self):
        super().__init__()
        self.dil = nn.Conv2d(4, 6, 3, padding=2, dilation=2)
        self.grp = nn.Conv2d(6, 6, 3, padding=1, groups=2)
        self.s2 = nn.Conv2d(6, 8, 3, stride=2)
        self.rect = nn.Conv2d(8, 4, (1, 3), stride=(1, 2), padding=(0, 1), bias=False)
        self.dil2 = nn.Conv2d(4, 4, (3, 2), dilation=(1, 2), groups=4)

    def forward(self, x):
        y = F.relu(self.dil(x))
        y = self.grp(y)
        y = self.s2(F.pad(y, (0, 1, 0, 1)))  # TF 'SAME' for stride 2 on an even size
        a = self.rect(y)
        b = self.dil2(F.pad(y[:, :4], (1, 2, 0, 1), value=0.5))
        return a, b


class ConvTransposeVariants(nn.Module):
    """conv_transpose2d stride 2 with output_padding 1, a grouped one with padding, and one
    with dilation and an asymmetric stride; relu between."""

    def __init__(self):
        super().__init__()
        self.t1 = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1)
        self.t2 = nn.ConvTranspose2d(6, 4, 4, stride=2, padding=1, groups=2, bias=False)
        self.t3 = nn.ConvTranspose2d(4, 3, (2, 3), stride=(1, 2), dilation=(2, 1), output_padding=(0, 1))

    def forward(self, x):
        y = F.relu(self.t1(x))
        y = self.t2(y)
        return self.t3(y)


class PoolVariants(nn.Module):
    """avg_pool2d with ceil_mode and count_include_pad=False, avg_pool2d with padding counted,
    max_pool2d with ceil_mode and padding, adaptive average pool to a size that does not divide,
    adaptive max pool."""

    def forward(self, x):
        a = F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        b = F.avg_pool2d(x, 2, stride=2, padding=1, count_include_pad=True)
        c = F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)
        d = F.adaptive_avg_pool2d(x, (3, 3))
        e = F.avg_pool2d(x, (2, 3), stride=(2, 1), padding=(0, 1), ceil_mode=True, count_include_pad=False,
                         divisor_override=None)
        return a, b, c, d, e


class ResizeOps(nn.Module):
    """upsample nearest (scale 2 and to a size), bilinear with align_corners False and True,
    pixel_shuffle, pixel_unshuffle, constant F.pad with a nonzero value."""

    def forward(self, x):
        a = F.interpolate(x, scale_factor=2, mode="nearest")
        b = F.interpolate(x, size=(7, 9), mode="nearest")
        c = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        d = F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True)
        e = F.pixel_shuffle(x, 2)
        f = F.pixel_unshuffle(x, 2)
        g = F.pad(x, (1, 2, 3, 0), value=-0.25)
        return a, b, c, d, e, f, g


class TinyEncoder(nn.Module):
    """Embedding lookup (int64 token ids), learned positions, nn.TransformerEncoderLayer
    (d_model 16, 2 heads, gelu, batch_first) with a key padding mask, final layer norm, masked
    mean pooling via where / masked_fill, linear head. Inputs: tokens [2, 6] int64 and a bool
    padding mask [2, 6] (True = padding)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        self.pos = nn.Parameter(0.1 * torch.randn(1, 6, 16))
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, activation="gelu",
                                                batch_first=True)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 3)

    def forward(self, tokens, pad):
        x = self.emb(tokens) + self.pos
        x = self.layer(x, src_key_padding_mask=pad)
        x = self.norm(x)
        keep = (~pad).unsqueeze(-1)
        x = torch.where(keep, x, torch.zeros_like(x))
        pooled = x.sum(1) / keep.sum(1).clamp(min=1).to(x.dtype)
        return self.head(pooled), x


class AttentionOps(nn.Module):
    """Hand-written attention: linear qkv, chunk / split, view + transpose into heads, matmul
    (4-d) and bmm (3-d), masked_fill with a causal mask, softmax, select of one head, squeeze /
    unsqueeze, where, layer_norm without affine."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, 2, 4).transpose(1, 2)
        k = k.view(b, t, 2, 4).transpose(1, 2)
        v = v.view(b, t, 2, 4).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) * 0.5
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        att = att.masked_fill(causal, float("-inf")).softmax(-1)
        y = torch.bmm(att.reshape(b * 2, t, t), v.reshape(b * 2, t, 4)).view(b, 2, t, 4)
        y = y.transpose(1, 2).reshape(b, t, c)
        y = F.layer_norm(self.proj(y), (c,))
        head0 = att.select(1, 0)  # [b, t, t]
        first, rest = torch.split(y, [3, 5], dim=-1)
        z = torch.where(first > 0, first, rest[..., :3] * 0.1)
        return y, head0.unsqueeze(1).squeeze(1), z.unsqueeze(0).squeeze(0)


class LSTMNet(nn.Module):
    """nn.LSTM, 2 layers, hidden 8, batch_first, given initial states; returns the sequence and
    the final h and c."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 8, num_layers=2, batch_first=True)

    def forward(self, x, h0, c0):
        y, (h, c) = self.rnn(x, (h0, c0))
        return y, h, c


class GRUNet(nn.Module):
    """nn.GRU, 1 layer, hidden 6, batch_first, zero initial state, then a linear head on the
    last step."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(5, 6, batch_first=True)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        y, h = self.rnn(x)
        return self.fc(y[:, -1]), h


class ElementwiseFloat(nn.Module):
    """add / sub with alpha, div with rounding_mode floor and trunc, pow (tensor and scalar
    exponents), rsqrt, clamp with only a min, reciprocal, exp / log, comparisons that produce
    bool outputs, logical ops, where."""

    def forward(self, a, b):
        pos = a.abs() + 0.5
        r0 = torch.add(a, b, alpha=2.5)
        r1 = torch.sub(a, b, alpha=-0.75)
        r2 = torch.div(a * 4, b, rounding_mode="floor")
        r3 = torch.div(a * 4, b, rounding_mode="trunc")
        r4 = torch.pow(pos, b) + torch.pow(a, 2) + torch.pow(pos, 0.5) + torch.pow(2.0, b)
        r5 = torch.rsqrt(pos) + torch.clamp(a, min=-0.2) + torch.clamp(b, max=0.3) + torch.reciprocal(pos)
        r6 = torch.exp(a) - torch.log(pos) + torch.sqrt(pos) + torch.tanh(b) + torch.erf(a)
        gt, le, eq = a > b, a <= 0.1, torch.eq(torch.round(a * 2), torch.round(b * 2))
        r7 = torch.logical_and(gt, ~le) | torch.logical_xor(eq, a < 0)
        r8 = torch.where(gt, a, b * 2) + torch.maximum(a, b) - torch.minimum(a, 0.1 * b)
        return r0, r1, r2, r3, r4, r5, r6, gt, le, r7, r8


class ElementwiseInt(nn.Module):
    """int64 arithmetic: add, sub with alpha, mul, div floor / trunc (negative operands),
    remainder, abs, neg, clamp, bitwise and, comparisons, int -> float cast, sum over a dim."""

    def forward(self, a, b):
        r0 = a + b * 3 - torch.sub(a, b, alpha=2)
        r1 = torch.div(a, b, rounding_mode="floor")
        r2 = torch.div(a, b, rounding_mode="trunc")
        r3 = torch.remainder(a, b) + torch.fmod(a, b)
        r4 = torch.abs(a) * torch.neg(b) + torch.clamp(a, min=-3)
        r5 = (a & 7) | (b & 3)
        r6 = a >= b
        r7 = a.to(torch.float32) / 3.0
        r8 = a.sum(1, keepdim=True) + b.amax(0)
        return r0, r1, r2, r3, r4, r5, r6, r7, r8


class Reductions(nn.Module):
    """sum / mean / amax / amin over one and several dims with and without keepdim, argmin /
    argmax (int64), cumsum (float and int), var, prod-free log-sum-exp, max with indices."""

    def forward(self, x):
        a = x.sum((1, 3), keepdim=True)
        b = x.mean(2)
        c = x.amax((0, 2), keepdim=False)
        d = x.amin(-1, keepdim=True)
        e = torch.argmax(x, 1)
        f = torch.argmin(x, -1, keepdim=True)
        g = torch.cumsum(x, 2)
        h = torch.cumsum((x > 0).to(torch.int64), -1)
        i = torch.logsumexp(x, 3)
        j, k = torch.max(x, 2)
        v = x.var(-1, unbiased=True)
        return a, b, c, d, e, f, g, h, i, j, k, v


class StridedViews(nn.Module):
    """torch.as_strided (as_strided_copy in the program): a transposed window with an offset,
    overlapping reads, and one that reads the storage in order (a reshape); slice_scatter with
    step 1 (Swin's window masks write slices this way) and step 2."""

    def forward(self, x):
        a = torch.as_strided(x, (3, 4), (1, 3), 2)
        b = torch.as_strided(x, (2, 2, 2), (6, 1, 2))
        s1 = torch.slice_scatter(x, x[1:3] * 3, 0, 1, 3)
        s2 = torch.slice_scatter(x, x[:, 1::2] - 5, 1, 1, None, 2)
        return a * 2, b + 1, torch.as_strided(x, (4, 6), (6, 1)) - 1, s1 + 0, s2 + 0


class SliceAssign(nn.Module):
    """Slice assignment `t[a:b, c:d] = v`, which exports as slice_copy, copy.out (v broadcast to
    the slice's shape and converted to its type) and slice_scatter: 0-d sources (Swin's
    attention-mask counts), a [1, W] row over rows, a tensor of the slice's shape, and a float
    source into an int64 tensor (truncated)."""

    def forward(self, x, y, z):
        m = x.new_zeros((6, 6))
        cnt = 0
        for h in (slice(0, 2), slice(2, 4), slice(4, None)):
            for w in (slice(0, 3), slice(3, None)):
                m[h, w] = cnt
                cnt += 1
        r = x.clone()
        r[1:4, :] = y
        s = x.clone()
        s[1:3, 2:5] = z
        k = torch.zeros((6, 6), dtype=torch.int64)
        k[:, 1:3] = x[:, 1:3] * 4
        return x + m, r * 2, s - 1, k + 1


class LongRows(nn.Module):
    """sum and mean over long rows, where the order of the additions shows in the last bits:
    ExecuTorch's optimized sum adds a row in eight lanes, its mean in order."""

    def forward(self, x):
        return x.sum(-1), x.mean(-1), x.sum(-1, keepdim=True) * 0.5


class IndexingOps(nn.Module):
    """flip, repeat, index_select and gather with int64 index inputs, roll, narrow, expand,
    permute, cat / stack, index with a tensor (index.Tensor), tile via repeat."""

    def forward(self, x, idx, gidx):
        a = torch.flip(x, [0, 2])
        b = x.repeat(2, 1, 3)
        c = torch.index_select(x, 1, idx)
        d = torch.gather(x, 2, gidx)
        e = torch.roll(x, 1, 2)
        f = torch.narrow(x, 2, 1, 3)
        g = torch.stack([x[:, 0], x[:, -1]], 1)
        h = torch.cat([x, a], 2).permute(2, 0, 1)
        i = x[:, idx]
        return a, b, c, d, e, f, g, h, i


class NormOps(nn.Module):
    """group_norm (affine, 2 and 4 groups), instance-norm via group_norm with groups=C,
    layer_norm over the last two dims, batch_norm 1d on [N, C, L]."""

    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)
        self.gn4 = nn.GroupNorm(4, 8, affine=False)
        self.inorm = nn.GroupNorm(8, 8)
        self.ln = nn.LayerNorm((5, 6))
        self.bn1 = nn.BatchNorm1d(8)
        with torch.no_grad():
            for m in (self.gn, self.inorm, self.ln):
                m.weight.copy_(1 + 0.3 * torch.randn_like(m.weight))
                m.bias.copy_(0.2 * torch.randn_like(m.bias))
            self.bn1.running_mean.copy_(0.3 * torch.randn(8))
            self.bn1.running_var.uniform_(0.5, 2.0)
            self.bn1.weight.copy_(1 + 0.3 * torch.randn(8))
            self.bn1.bias.copy_(0.2 * torch.randn(8))

    def forward(self, x):
        return self.gn(x), self.gn4(x), self.inorm(x), self.ln(x), self.bn1(x.flatten(2))


class TwoMethodsFeatures(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 6, 3, padding=1), bn(6)

    def forward(self, x):
        return F.max_pool2d(F.relu(self.bn(self.conv(x))), 2).flatten(1)


class TwoMethodsHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(24, 12), nn.Linear(12, 4)

    def forward(self, f):
        return F.log_softmax(self.fc2(F.gelu(self.fc1(f))), -1)


class DynamicBatch(nn.Module):
    """Conv + BN + relu, avg pool, flatten (a view whose batch is symbolic), linear, softmax, on
    a batch bounded to [1, 8]; a second output is the per-sample mean over everything."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 6, 3, padding=1), bn(6)
        self.fc = nn.Linear(24, 5)

    def forward(self, x):
        y = F.avg_pool2d(F.relu(self.bn(self.conv(x))), 4)
        y = y.reshape(x.shape[0], -1)
        return self.fc(y).softmax(-1), y.mean(1, keepdim=True)


def rnd(rng, *shape, scale=1.0):
    return torch.from_numpy((scale * rng.standard_normal(shape)).astype(np.float32))


def case_resnet_block(rng):
    m = calibrate_bn(ResNetTiny(), lambda: (torch.randn(4, 3, 16, 16),))
    return dict(model=m, inputs=(rnd(rng, 1, 3, 16, 16),))


def case_mobilenet_v2_tiny(rng):
    m = calibrate_bn(MobileNetV2Tiny(), lambda: (torch.randn(4, 3, 16, 16),))
    return dict(model=m, inputs=(rnd(rng, 1, 3, 16, 16),))


def case_mobilenet_v3_tiny(rng):
    m = calibrate_bn(MobileNetV3Tiny(), lambda: (torch.randn(4, 3, 16, 16),))
    return dict(model=m, inputs=(rnd(rng, 1, 3, 16, 16),))


def case_efficientnet_tiny(rng):
    m = calibrate_bn(EfficientNetTiny(), lambda: (torch.randn(4, 3, 16, 16),))
    return dict(model=m, inputs=(rnd(rng, 1, 3, 16, 16),))


def case_conv_variants(rng):
    return dict(model=ConvVariants().eval(), inputs=(rnd(rng, 1, 4, 10, 10),))


def case_conv_transpose(rng):
    return dict(model=ConvTransposeVariants().eval(), inputs=(rnd(rng, 1, 4, 5, 6),))


def case_pool_variants(rng):
    return dict(model=PoolVariants().eval(), inputs=(rnd(rng, 1, 3, 7, 8),))


def case_resize_ops(rng):
    return dict(model=ResizeOps().eval(), inputs=(rnd(rng, 1, 4, 4, 6),))


def case_transformer_encoder(rng):
    m = TinyEncoder().eval()
    tokens = torch.from_numpy(rng.integers(0, 20, (2, 6)).astype(np.int64))
    pad = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    return dict(model=m, inputs=(tokens, pad))


def case_attention_ops(rng):
    return dict(model=AttentionOps().eval(), inputs=(rnd(rng, 2, 5, 8),))


def case_lstm(rng):
    return dict(model=LSTMNet().eval(), inputs=(rnd(rng, 2, 5, 4), rnd(rng, 2, 2, 8, scale=0.5),
                                                rnd(rng, 2, 2, 8, scale=0.5)))


def case_gru(rng):
    return dict(model=GRUNet().eval(), inputs=(rnd(rng, 2, 7, 5),))


def case_elementwise_float(rng):
    a = rnd(rng, 3, 5)
    b = rnd(rng, 3, 5)
    b = torch.where(b.abs() < 0.2, torch.full_like(b, 0.7), b)  # no division by ~0
    return dict(model=ElementwiseFloat().eval(), inputs=(a, b))


def case_elementwise_int(rng):
    a = torch.from_numpy(rng.integers(-20, 21, (3, 6)).astype(np.int64))
    b = torch.from_numpy(rng.integers(1, 6, (3, 6)).astype(np.int64) * rng.choice([-1, 1], (3, 6)))
    return dict(model=ElementwiseInt().eval(), inputs=(a, b))


def case_reductions(rng):
    return dict(model=Reductions().eval(), inputs=(rnd(rng, 2, 3, 4, 5),))


def case_indexing_ops(rng):
    x = rnd(rng, 2, 4, 5)
    idx = torch.tensor([3, 0, 3], dtype=torch.int64)
    gidx = torch.from_numpy(rng.integers(0, 5, (2, 4, 3)).astype(np.int64))
    return dict(model=IndexingOps().eval(), inputs=(x, idx, gidx))


def case_slice_assign(rng):
    return dict(model=SliceAssign().eval(), inputs=(rnd(rng, 6, 6), rnd(rng, 1, 6), rnd(rng, 2, 3)))


def case_long_rows(rng):
    return dict(model=LongRows().eval(), inputs=(rnd(rng, 4, 1003, scale=10.0) + 3.0,))


def case_strided_views(rng):
    return dict(model=StridedViews().eval(), inputs=(rnd(rng, 4, 6),))


def case_norm_ops(rng):
    return dict(model=NormOps().eval(), inputs=(rnd(rng, 2, 8, 5, 6, scale=2.0) + 0.5,))


def case_two_methods_cnn(rng):
    feat = calibrate_bn(TwoMethodsFeatures(), lambda: (torch.randn(4, 3, 4, 4),))
    head = TwoMethodsHead().eval()
    return dict(methods={"features": (feat, (rnd(rng, 2, 3, 4, 4),)),
                         "head": (head, (rnd(rng, 3, 24),))})


def case_dynamic_batch(rng):
    m = calibrate_bn(DynamicBatch(), lambda: (torch.randn(4, 3, 8, 8),))
    batch = Dim("batch", min=1, max=8)
    return dict(model=m, inputs=(rnd(rng, 2, 3, 8, 8),), dynamic_shapes=({0: batch},),
                dynamic_dims=[{"input": 0, "dim": 0, "name": "batch", "min": 1, "max": 8}],
                extra={"b1": (rnd(rng, 1, 3, 8, 8),), "b5": (rnd(rng, 5, 3, 8, 8),),
                       "b8": (rnd(rng, 8, 3, 8, 8),)})


# --------------------------------------------------------------------------------------------
# Quantized families (spec "quant"): PT2E with executorch's XNNPACKQuantizer, calibrated on the
# spec's batches, then exported like the others. Weights are rescaled so that the per-channel
# scales differ from channel to channel.

class QuantCNN(nn.Module):
    """int8 CNN: conv 3x3 + relu, depthwise 3x3 (groups=C) + relu, pointwise 1x1, residual add +
    relu, avg_pool2d 2x2, strided conv 3x3 + relu, global mean (keepdim) + flatten, linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 8, 1)
        self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16, 10)
        spread_channel_scales(self)

    def forward(self, x):
        y = F.relu(self.c1(x))
        z = F.relu(self.dw(y))
        y = F.relu(self.pw(z) + y)
        y = F.avg_pool2d(y, 2)
        y = F.relu(self.c2(y))
        return self.fc(torch.flatten(y.mean((2, 3), keepdim=True), 1))


class QuantOps(nn.Module):
    """int8 ops whose XNNPACK arithmetic differs from TFLite's: conv + hardtanh, max pool,
    residual add and sub of two requantized branches, concatenation, a 1x1 conv, and a mean over
    a small (4x4) window, then linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.a = nn.Conv2d(8, 8, 1)
        self.b = nn.Conv2d(8, 8, 3, padding=1)
        self.mix = nn.Conv2d(16, 8, 1)
        self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16, 6)
        spread_channel_scales(self)

    def forward(self, x):
        y = F.hardtanh(self.c1(x), -1.0, 1.0)
        y = F.max_pool2d(y, 2)
        s = F.relu(self.a(y) + y)
        d = self.b(y) - y
        z = self.mix(torch.cat([s, d], 1))
        z = F.max_pool2d(F.relu(self.c2(z)), 2)
        m = z.mean((2, 3), keepdim=True)
        return self.fc(torch.flatten(m, 1))


class QuantMLP(nn.Module):
    """int8 MLP: linear + relu, linear + hardtanh(-1, 1), residual add, linear (logits)."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(16, 32), nn.Linear(32, 32), nn.Linear(32, 10)
        spread_channel_scales(self)

    def forward(self, x):
        y = F.relu(self.l1(x))
        y = F.hardtanh(self.l2(y), -1.0, 1.0) + y
        return self.l3(y)


class DynQuantBlock(nn.Module):
    """Transformer-style MLP block on [batch, tokens, 16] with dynamically quantized linears only
    (per-token int8 activations, per-channel int8 weights): layer norm (float), linear 16->32 +
    gelu, linear 32->16, residual add, linear 16->8 + relu, linear 8->4 head."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.up, self.down = nn.Linear(16, 32), nn.Linear(32, 16)
        self.h1, self.h2 = nn.Linear(16, 8), nn.Linear(8, 4)
        spread_channel_scales(self)

    def forward(self, x):
        y = x + self.down(F.gelu(self.up(self.norm(x))))
        return self.h2(F.relu(self.h1(y)))


class Int4Linear(nn.Module):
    """4-bit weights (per-channel, qmin -8 / qmax 7) with dynamically quantized int8 activations:
    linear 16->24 + relu, linear 24->6."""
    # Not 15 input channels: with an odd input-channel count ExecuTorch 1.5.1's own XNNPACK run
    # is off by ~1.2 (on outputs of magnitude ~1) from the fake-quantized model (even counts: ~1e-2).

    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(16, 24), nn.Linear(24, 6)
        spread_channel_scales(self)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


class BlockInt4Linear(nn.Module):
    """Blockwise 4-bit weights (torchao Int8DynamicActivationIntxWeightConfig, int4, group 32:
    XNNPACK qbint4 with bf16 scales) and per-token dynamically quantized int8 activations:
    linear 64->32 + relu (2 blocks per row), linear 32->8 (1 block per row)."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(64, 32), nn.Linear(32, 8)
        spread_channel_scales(self)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def spread_channel_scales(model):
    """Multiplies each output channel of every conv / linear weight by a factor in [0.25, 2], so
    per-channel quantization has distinct scales."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                shape = (-1,) + (1,) * (m.weight.dim() - 1)
                m.weight.mul_(torch.empty(m.weight.shape[0]).uniform_(0.25, 2.0).view(shape))


def q_static(per_channel):
    return {"is_per_channel": per_channel}


def q_dynamic(**extra):
    return {"is_per_channel": True, "is_dynamic": True, **extra}


def case_q8_cnn(rng):
    return dict(model=QuantCNN().eval(), inputs=(rnd(rng, 1, 3, 16, 16),),
                quant={"config": q_static(True), "calibration": [(rnd(rng, 1, 3, 16, 16),) for _ in range(8)]})


def case_q8_ops(rng):
    return dict(model=QuantOps().eval(), inputs=(rnd(rng, 1, 3, 16, 16),),
                quant={"config": q_static(True), "calibration": [(rnd(rng, 1, 3, 16, 16),) for _ in range(8)]})


def case_q8t_cnn(rng):
    """The same network with per-tensor weights (is_per_channel=False)."""
    return dict(model=QuantCNN().eval(), inputs=(rnd(rng, 1, 3, 16, 16),), notes="Per-tensor weights.",
                quant={"config": q_static(False), "calibration": [(rnd(rng, 1, 3, 16, 16),) for _ in range(8)]})


def case_q8_mlp(rng):
    return dict(model=QuantMLP().eval(), inputs=(rnd(rng, 3, 16),),
                quant={"config": q_static(True), "calibration": [(rnd(rng, 3, 16),) for _ in range(8)]})


def case_qd8_mlp(rng):
    return dict(model=DynQuantBlock().eval(), inputs=(rnd(rng, 2, 5, 16),),
                quant={"config": q_dynamic(), "calibration": [(rnd(rng, 2, 5, 16),) for _ in range(2)]})


def case_q4_linear(rng):
    return dict(model=Int4Linear().eval(), inputs=(rnd(rng, 3, 16),),
                quant={"config": q_dynamic(weight_qmin=-8, weight_qmax=7),
                       "calibration": [(rnd(rng, 3, 16),) for _ in range(2)]})



def case_qb4_linear(rng):
    return dict(model=BlockInt4Linear().eval(), inputs=(rnd(rng, 3, 64),), portable=False,
                why_single=("portable twin not made: torchao::choose_qparams_affine / quantize_affine / "
                            "dequantize_affine have no ExecuTorch out variants"),
                quant={"torchao": {"weight_dtype": "int4", "group_size": 32}})


CASES = {name[len("case_"):]: fn for name, fn in list(globals().items()) if name.startswith("case_")}


# --------------------------------------------------------------------------------------------
# Export, run, describe.

def quantize_module(mod, args, quant):
    """PT2E: torch.export -> prepare_pt2e(XNNPACKQuantizer with get_symmetric_quantization_config(
    **quant["config"])) -> one forward per calibration batch -> convert_pt2e. Returns the
    converted GraphModule (float in, float out; quantize / dequantize ops around every quantized
    op: the fake-quantized eager model) and the scale / zero point of the dequantize that
    produces each output (None where an output is not dequantized from int8).
    quant["torchao"] = {"weight_dtype": "int4", "group_size": G} instead: torchao's quantize_ with
    Int8DynamicActivationIntxWeightConfig(PerGroup(G)) on a copy (blockwise weights, which the
    PT2E quantizer does not make); returns that module and no output parameters."""
    if quant.get("torchao"):
        import copy
        from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_
        from torchao.quantization.granularity import PerGroup
        from torchao.utils import unwrap_tensor_subclass
        cfg, m = quant["torchao"], copy.deepcopy(mod)
        quantize_(m, Int8DynamicActivationIntxWeightConfig(weight_dtype=getattr(torch, cfg["weight_dtype"]),
                                                           weight_granularity=PerGroup(cfg["group_size"])))
        return unwrap_tensor_subclass(m).eval(), []
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(**quant["config"]))
    gm = prepare_pt2e(torch.export.export(mod, args, strict=False).module(), quantizer)
    with torch.no_grad():
        for batch in quant["calibration"]:
            gm(*batch)
    gm = convert_pt2e(gm)
    out_q = []
    for node in gm.graph.nodes:
        if node.op == "output":
            for a in node.args[0]:
                if getattr(a, "target", None) == torch.ops.quantized_decomposed.dequantize_per_tensor.default:
                    out_q.append({"scale": float(a.args[1]), "zero_point": int(a.args[2])})
                else:
                    out_q.append(None)
    return gm, out_q


QUANT_FLOW = {
    False: ("torch.export.export(strict=False).module() -> prepare_pt2e(XNNPACKQuantizer().set_global("
            "get_symmetric_quantization_config(**config))) -> calibration batches -> convert_pt2e"),
    True: ("torchao quantize_(Int8DynamicActivationIntxWeightConfig(weight_dtype, PerGroup(group_size))) -> "
           "unwrap_tensor_subclass"),
}


def export_program(methods, dynamic, lower):
    eps = {}
    for name, (mod, args) in methods.items():
        eps[name] = torch.export.export(mod, args, dynamic_shapes=dynamic.get(name), strict=False)
    arg = eps if len(eps) > 1 else eps[next(iter(eps))]
    if lower:
        edge = to_edge_transform_and_lower(arg, partitioner=[XnnpackPartitioner()])
    else:
        edge = to_edge(arg, compile_config=EdgeCompileConfig())
    return edge.to_executorch(ExecutorchBackendConfig()).buffer


def run_runtime(path, method, inputs):
    prog = Runtime.get().load_program(path)
    out = prog.load_method(method).execute(list(inputs))
    return [o.detach().clone() if isinstance(o, torch.Tensor) else o for o in out]


def eager(mod, inputs):
    with torch.no_grad():
        out = mod(*inputs)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def max_diff(a, b):
    a, b = a.detach(), b.detach()
    if tuple(a.shape) != tuple(b.shape):
        return f"shape {list(a.shape)} vs {list(b.shape)}"
    if a.dtype.is_floating_point:
        both_inf = torch.isinf(a) & torch.isinf(b) & (a == b)
        both_nan = torch.isnan(a) & torch.isnan(b)
        d = (a.double() - b.double()).abs()
        d[both_inf | both_nan] = 0
        return float(d.max()) if d.numel() else 0.0
    return int((a != b).sum())  # integer / bool: number of differing elements


SCALAR_TYPE = {0: "Byte", 1: "Char", 2: "Short", 3: "Int", 4: "Long", 5: "Half", 6: "Float", 7: "Double",
               11: "Bool", 15: "BFloat16"}


def describe_program(data):
    """Header, segments and per-plan facts read off the .pte bytes (the flatbuffer is parsed by
    executorch's own deserializer; segment data is not restored into it)."""
    root = int.from_bytes(data[0:4], "little")
    meta = {"file_identifier": data[4:8].decode("latin1"), "root_table_uoffset": root, "file_size": len(data)}
    program_size = len(data)
    if data[8:12] == b"eh00":
        hlen = int.from_bytes(data[12:16], "little")
        program_size = int.from_bytes(data[16:24], "little")
        seg_base = int.from_bytes(data[24:32], "little")
        seg_size = int.from_bytes(data[32:40], "little") if hlen >= 32 else None
        meta["extended_header"] = {"offset": 8, "magic": "eh00", "length": hlen, "program_size": program_size,
                                   "segment_base_offset": seg_base, "segment_data_size": seg_size}
    else:
        meta["extended_header"] = None
    p = _flatbuffer_to_program(data[:program_size])
    meta["schema_version"] = p.version
    meta["constant_buffer_entries_inline"] = len(p.constant_buffer)
    meta["backend_delegate_data_inline"] = len(p.backend_delegate_data)
    meta["segments"] = [{"offset": s.offset, "size": s.size} for s in p.segments]
    meta["constant_segment"] = {"segment_index": p.constant_segment.segment_index,
                                "offsets": list(p.constant_segment.offsets)}
    meta["named_data"] = [{"key": n.key, "segment_index": n.segment_index} for n in (p.named_data or [])]
    meta["mutable_data_segments"] = len(p.mutable_data_segments or [])
    plans = []
    for plan in p.execution_plan:
        kinds, types, dyn, instr = {}, {}, {}, {}
        for v in plan.values:
            k = type(v.val).__name__
            kinds[k] = kinds.get(k, 0) + 1
            if isinstance(v.val, S.Tensor):
                t = SCALAR_TYPE.get(int(v.val.scalar_type), str(int(v.val.scalar_type)))
                types[t] = types.get(t, 0) + 1
                d = S.TensorShapeDynamism(v.val.shape_dynamism).name
                dyn[d] = dyn.get(d, 0) + 1
        for ch in plan.chains:
            for ins in ch.instructions:
                k = type(ins.instr_args).__name__
                instr[k] = instr.get(k, 0) + 1
        ops = [f"{o.name}.{o.overload}" if o.overload else o.name for o in plan.operators]

        def io(ix):
            out = []
            for i in ix:
                v = plan.values[i].val
                if isinstance(v, S.Tensor):
                    out.append({"value": i, "scalar_type": SCALAR_TYPE.get(int(v.scalar_type)),
                                "sizes": list(v.sizes), "dim_order": list(v.dim_order),
                                "shape_dynamism": S.TensorShapeDynamism(v.shape_dynamism).name})
                else:
                    out.append({"value": i, "kind": type(v).__name__})
            return out

        plans.append({
            "name": plan.name,
            "operators": ops,
            "delegates": [{"id": d.id, "processed_location": d.processed.location.name,
                           "processed_index": d.processed.index,
                           "compile_specs": [c.key for c in d.compile_specs]} for d in plan.delegates],
            "evalue_kinds": kinds,
            "tensor_scalar_types": types,
            "tensor_shape_dynamism": dyn,
            "instruction_kinds": instr,
            "inputs": io(plan.inputs),
            "outputs": io(plan.outputs),
            "num_values": len(plan.values),
            "non_const_buffer_sizes": list(plan.non_const_buffer_sizes),
        })
    meta["execution_plan"] = plans
    return meta


XNN_INVALID_ID = 0xFFFFFFFF


def xnnpack_flatc_json(fb):
    """Decodes one XNNPACK graph flatbuffer to a dict with executorch's own flatc and writer schema
    (backends/xnnpack/serialization/schema.fbs, identifier XN01). flatc prints a float field with
    6 significant digits only, so the schema is patched to read every float field as its uint32
    bits and they are turned back into exact floats here."""
    import importlib.resources
    import tempfile
    from executorch.exir._serialize._flatbuffer import _run_flatc
    pkg = importlib.resources.files("executorch.backends.xnnpack.serialization")
    text = pkg.joinpath("schema.fbs").read_text()
    field = r"(\b\w+\s*:\s*\[?\s*)float(\s*\]?\s*;)"
    floats = {m.group(1).split(":")[0].strip() for m in re.finditer(field, text)}
    with tempfile.TemporaryDirectory(prefix="xnn_") as tmp:
        schema, path = os.path.join(tmp, "schema.fbs"), os.path.join(tmp, "graph.bin")
        with open(schema, "w") as f:
            f.write(re.sub(field, r"\1uint\2", text))
        with open(path, "wb") as f:
            f.write(fb)
        _run_flatc(["--json", "--raw-binary", "--strict-json", "--defaults-json", "-o", tmp, schema, "--", path])
        graph = json.load(open(os.path.join(tmp, "graph.json")))

    def bits(u):
        f = float(np.array(u, dtype=np.uint32).view(np.float32))
        return f if np.isfinite(f) else str(f)  # "inf" / "-inf" / "nan": JSON has no non-finite numbers

    def fix(x):
        if isinstance(x, dict):
            return {k: ([bits(u) for u in v] if isinstance(v, list) else bits(v)) if k in floats else fix(v)
                    for k, v in x.items()}
        return [fix(v) for v in x] if isinstance(x, list) else x
    return fix(graph)


def describe_xnnpack(data, desc):
    """Decodes every XnnpackBackend payload (XH00 header -> XNNGraph flatbuffer) of a program and
    summarises it for meta.json: the XNNPACK datatypes of its values, its nodes (type, value ids,
    non-id parameters, output range) and every value (datatype, dims in XNNPACK's NHWC / OHWI
    layout, external / constant, quantization parameters with per-channel scales read from named
    data). Layout facts: loaders/schema/xnnpack.fbs and upstream xnnpack_graph_serialize.py."""
    eh = desc["extended_header"]
    base = eh["segment_base_offset"] if eh else None
    segs = desc["segments"]
    named = {n["key"]: n["segment_index"] for n in desc["named_data"]}

    def segment(i):
        return data[base + segs[i]["offset"]:base + segs[i]["offset"] + segs[i]["size"]]

    out = []
    for plan in desc["execution_plan"]:
        for di, d in enumerate(plan["delegates"]):
            if d["id"] != "XnnpackBackend":
                continue
            if d["processed_location"] != "SEGMENT":
                out.append({"plan": plan["name"], "delegate_index": di, "note": "inline payload not decoded"})
                continue
            payload = segment(d["processed_index"])
            if payload[4:8] == b"XH00":
                fb_off, fb_size = int.from_bytes(payload[10:14], "little"), int.from_bytes(payload[14:18], "little")
                fb = payload[fb_off:fb_off + fb_size]
            else:
                fb = payload
            g = xnnpack_flatc_json(fb)
            cdata = g.get("constant_data") or []

            def const_bytes(idx):
                c = cdata[idx] if idx < len(cdata) else {}
                key = c.get("named_key")
                return segment(named[key])[:c.get("size", 0)] if key in named else None

            values, dtypes = {}, {}
            for xv in g.get("xvalues", []):
                kind, u = xv.get("xvalue_union_type"), xv.get("xvalue_union") or {}
                tv = u.get("tensor_value", u) if kind == "XNNQuantizedTensorValue" else u
                dt = str(tv.get("datatype", "")).replace("xnn_datatype_", "")
                v = {"id": tv.get("id_out"), "datatype": dt, "dims": tv.get("dims", [])}
                flags = tv.get("flags", 0)
                if flags:
                    v["external"] = {1: "input", 2: "output", 3: "input+output"}.get(flags, flags)
                    v["external_id"] = tv.get("external_id")
                if tv.get("constant_buffer_idx"):
                    c = cdata[tv["constant_buffer_idx"]]
                    v["constant_bytes"] = c.get("size")
                qt, qp = u.get("quant_params_type"), u.get("quant_params") or {}
                if kind == "XNNQuantizedTensorValue" and qt and qt != "NONE":
                    q = {"type": qt}
                    if qt == "PerTensorQuant":
                        q.update(scale=qp.get("scale"), zero_point=qp.get("zero_point", 0))
                    elif qt == "PerTokenDynamicQuant":
                        q.update(num_nonbatch_dims=qp.get("num_nonbatch_dims"))
                    else:
                        q.update(channel_dim=qp.get("channel_dim"), num_scales=qp.get("num_scales"))
                        if qt == "PerChannelGroupQuant":
                            q["group_size"] = qp.get("group_size")
                        scales = qp.get("scale") or []
                        if qp.get("scale_buffer_idx"):
                            raw = const_bytes(qp["scale_buffer_idx"])
                            n = qp.get("num_scales") or 0
                            if raw is not None and len(raw) == 2 * n:  # bf16 (blockwise)
                                q["scale_encoding"] = "bf16"
                                scales = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
                            elif raw is not None:
                                scales = np.frombuffer(raw, "<f4")
                            q["scale_source"] = "named data"
                        q["scales"] = [float(x) for x in scales]
                    v["quant"] = q
                dtypes[dt] = dtypes.get(dt, 0) + 1
                values[v["id"]] = v
            nodes, kinds = [], {}
            for xn in g.get("xnodes", []):
                op = str(xn.get("xnode_union_type", "")).replace("XNN", "", 1)
                u = xn.get("xnode_union") or {}
                ids = {k: v for k, v in u.items() if k.endswith("_id") and v != XNN_INVALID_ID}
                outs = [v for k, v in ids.items() if k.startswith("output")]
                ins = [v for k, v in ids.items() if not k.startswith("output")]
                params = {k: v for k, v in u.items() if not k.endswith("_id") and v not in (0, None, [], "")}
                sig = (f"{op}(" + ", ".join(values[i]["datatype"] for i in ins if i in values) + " -> "
                       + ", ".join(values[i]["datatype"] for i in outs if i in values) + ")")
                n = {"op": op, "signature": sig, "inputs": ins, "outputs": outs}
                if params:
                    n["params"] = params
                if xn.get("output_min_max"):
                    mm = xn["output_min_max"]
                    n["output_min_max"] = [mm.get("output_min", 0.0), mm.get("output_max", 0.0)]
                nodes.append(n)
                kinds[sig] = kinds.get(sig, 0) + 1
            out.append({"plan": plan["name"], "delegate_index": di, "payload_bytes": len(payload),
                        "flatbuffer_identifier": fb[4:8].decode("latin1"), "version": g.get("version"),
                        "num_externs": g.get("num_externs"), "input_ids": g.get("input_ids", []),
                        "output_ids": g.get("output_ids", []), "datatypes": dict(sorted(dtypes.items())),
                        "node_signatures": dict(sorted(kinds.items())), "nodes": nodes,
                        "values": [values[k] for k in sorted(values)]})
    return out


def save_npy(path, t):
    np.save(path, t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t))


def build_case(name, spec, out_root, lower):
    """Exports one program, runs it twice in fresh runtimes, writes the folder; returns the
    index entry."""
    case = name + ("_xnnpack" if lower else "")
    methods = spec.get("methods") or {"forward": (spec["model"], spec["inputs"])}
    float_methods, out_quant, quant = methods, {}, spec.get("quant")
    if quant:
        methods = {}
        for mname, (mod, args) in float_methods.items():
            gm, out_quant[mname] = quantize_module(mod, args, quant)
            methods[mname] = (gm, args)
    dynamic = {"forward": spec["dynamic_shapes"]} if spec.get("dynamic_shapes") else {}
    data = export_program(methods, dynamic, lower)
    desc = describe_program(data)
    delegates = sorted({d["id"] for p in desc["execution_plan"] for d in p["delegates"]})
    if lower and not delegates:
        return None, f"{case}: XNNPACK took no node; twin skipped"
    folder = os.path.join(out_root, case)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    path = os.path.join(folder, "program.pte")
    with open(path, "wb") as f:
        f.write(data)
    multi = len(methods) > 1
    meta_methods, extra_cases, worst, worst_float = {}, [], 0.0, 0.0
    sets = [(None, mname, mod, args) for mname, (mod, args) in methods.items()]
    for ename, args in (spec.get("extra") or {}).items():
        sets.append((ename, "forward", methods["forward"][0], args))
    for ename, mname, mod, args in sets:
        ref_float = eager(float_methods[mname][0], args) if quant else None
        tag = f"{mname}_" if multi else (f"{ename}_" if ename else "")
        first = run_runtime(path, mname, args)
        second = run_runtime(path, mname, args)
        ref = eager(mod, args)
        ins, outs = [], []
        for i, t in enumerate(args):
            fn = f"input_{tag}{i}.npy"
            save_npy(os.path.join(folder, fn), t)
            ins.append({"file": fn, "shape": list(t.shape), "dtype": str(t.numpy().dtype)})
        if len(first) != len(ref):
            raise RuntimeError(f"{case}/{mname}: runtime gave {len(first)} outputs, eager {len(ref)}")
        for j, (o, o2, r) in enumerate(zip(first, second, ref)):
            fn = f"expected_{tag}{j}.npy"
            save_npy(os.path.join(folder, fn), o)
            d = max_diff(o, r)
            entry = {"file": fn, "shape": list(o.shape), "dtype": str(o.numpy().dtype),
                     ("max_abs_diff_vs_eager_torch" if o.dtype.is_floating_point
                      else "mismatches_vs_eager_torch"): d,
                     "identical_on_second_run": bool(torch.equal(o, o2) or (
                         o.dtype.is_floating_point and torch.equal(torch.nan_to_num(o), torch.nan_to_num(o2))))}
            if isinstance(d, (int, float)) and o.dtype.is_floating_point:
                worst = max(worst, d)
            if quant:  # d above is against the fake-quantized eager model
                df = max_diff(o, ref_float[j])
                entry["max_abs_diff_vs_float_eager"] = df
                entry["output_dequantize"] = out_quant[mname][j] if j < len(out_quant[mname]) else None
                if isinstance(df, float):
                    worst_float = max(worst_float, df)
            outs.append(entry)
        if ename:
            extra_cases.append({"name": ename, "inputs": [x["file"] for x in ins],
                                "outputs": [x["file"] for x in outs], "input_shapes": [x["shape"] for x in ins],
                                "output_details": outs})
        else:
            meta_methods[mname] = {"inputs": ins, "outputs": outs}
    v = versions()
    meta = {"name": case, **desc, "delegate": "xnnpack" if delegates else None, "delegate_ids": delegates,
            "executorch_version": v["executorch"], "torch_version": v["torch"], "python_version": v["python"],
            "sha256": hashlib.sha256(data).hexdigest(),
            "export": ((QUANT_FLOW[bool(quant.get("torchao"))] + " -> " if quant else "")
                       + "torch.export.export(strict=False) -> "
                       + ("to_edge_transform_and_lower(partitioner=[XnnpackPartitioner()])" if lower else
                          "to_edge(EdgeCompileConfig())") + " -> to_executorch(ExecutorchBackendConfig())"),
            "description": " ".join(((type(float_methods[next(iter(float_methods))][0]).__doc__ or "")
                                     + (" " + spec["notes"] if spec.get("notes") else "")).split()),
            "dynamic_shapes": ({"forward": spec["dynamic_dims"]} if dynamic else None),
            "methods": meta_methods, "runtime_method_names": sorted(Runtime.get().load_program(path).method_names),
            "max_abs_diff_vs_eager_torch": worst}
    if extra_cases:
        meta["extra_cases"] = extra_cases
    if quant:
        meta["quantization"] = {
            "flow": QUANT_FLOW[bool(quant.get("torchao"))],
            "config": quant.get("config") or quant["torchao"], "calibration_batches": len(quant.get("calibration", [])),
            "reference_eager": "max_abs_diff_vs_eager_torch is against the quantized (fake-quantized) eager model",
            "max_abs_diff_vs_float_eager": worst_float, "output_dequantize": out_quant}
    if delegates:
        meta["xnnpack"] = describe_xnnpack(data, desc)
        meta["xnnpack_datatypes"] = sorted({t for g in meta["xnnpack"] for t in g.get("datatypes", {})})
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    ops = sorted({o for p in desc["execution_plan"] for o in p["operators"]})
    entry = {"name": case, "files": sorted(os.listdir(folder)), "bytes": len(data),
             "delegate": meta["delegate"], "methods": sorted(meta_methods),
             "extended_header": desc["extended_header"] is not None,
             "dynamic": bool(dynamic), "operators": ops, "max_abs_diff_vs_eager_torch": worst}
    if quant:
        entry["quantization"] = quant.get("config") or quant["torchao"]
        entry["max_abs_diff_vs_float_eager"] = worst_float
    if delegates:
        entry["xnnpack_datatypes"] = meta["xnnpack_datatypes"]
    return entry, None


def write_operators_md(out_root, entries):
    uses = {}
    for e in entries:
        for op in e["operators"]:
            uses.setdefault(op, []).append(e["name"])
    lines = ["# Operators in tests/data/pte", "",
             "Every distinct `name.overload` in the programs' operator tables (portable programs and the",
             "operators left outside the XNNPACK delegate in the `_xnnpack` twins), with the cases that use it.",
             f"Regenerated by `tools/pte_export.py`; {len(uses)} operators over {len(entries)} programs.", "",
             "| operator | cases |", "|---|---|"]
    for op in sorted(uses):
        lines.append(f"| `{op}` | {', '.join(sorted(uses[op]))} |")
    lines += ["", "Notes (read off these programs):",
              "- Not every entry is an `.out` kernel: `aten::sym_size.int` (writes an Int EValue) and",
              "  `executorch_prim::et_view.default` (a view whose sizes come from Int EValues) appear where a",
              "  batch is dynamic (dynamic_batch*). `aten::max.dim_max` is max.dim's out variant (values, indices).",
              "- to_edge decomposes several modules, so their names never appear: relu6 -> hardtanh,",
              "  hardswish / hardsigmoid -> add, clamp, mul, div; silu -> sigmoid, mul; flatten / reshape of a",
              "  static contiguous tensor -> no instruction (an alias in memory planning), else view_copy;",
              "  nn.LSTM / nn.GRU -> unrolled addmm / bmm / split_with_sizes_copy / sigmoid / tanh / mul / add;",
              "  nn.TransformerEncoderLayer -> bmm, _softmax, native_layer_norm, gelu, where, any, ...",
              "- The `_xnnpack` twins list only what XNNPACK left to the portable kernels; the rest is one or",
              "  more DelegateCalls to `XnnpackBackend` (see each meta.json's execution_plan).",
              "- The quantized portable programs (q8_*, q8t_*, qd8_*, q4_*) compute in float between",
              "  `quantized_decomposed::quantize_per_tensor` / `dequantize_per_tensor` (int8; scale and zero point",
              "  as Double / Int arguments) and dequantize the int8 weights with `dequantize_per_channel` (or",
              "  `dequantize_per_tensor` for q8t_*); the dynamic ones (qd8_*, q4_*) get per-tensor parameters at run",
              "  time from `choose_qparams.Tensor_out` and pass them as tensors (`*.Tensor_out`). The XNNPACK",
              "  datatypes of the `_xnnpack` twins are in index.json (`xnnpack_datatypes`), decoded in each",
              "  meta.json (`xnnpack`).",
              ]
    with open(os.path.join(out_root, "OPERATORS.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def export_mobilenet_v2(out):
    """torchvision MobileNetV2 (weights=None), BN statistics calibrated with a few random batches
    (untouched BN gives logits near 1e-9), 1x3x224x224; portable and XNNPACK programs side by side
    in OUT with input_0.npy, expected_0.npy (portable runtime), expected_xnnpack_0.npy and meta.json."""
    import torchvision
    rng = seed_for("mobilenet_v2")
    m = torchvision.models.mobilenet_v2(weights=None)
    calibrate_bn(m, lambda: (torch.randn(4, 3, 224, 224),), batches=3)
    x = rnd(rng, 1, 3, 224, 224)
    os.makedirs(out, exist_ok=True)
    ref = eager(m, (x,))[0]
    save_npy(os.path.join(out, "input_0.npy"), x)
    meta = {"model": "torchvision.models.mobilenet_v2(weights=None), BN calibrated", "input": [1, 3, 224, 224],
            **versions(), "programs": {}}
    for lower, fname, exp in ((False, "mobilenet_v2_portable.pte", "expected_0.npy"),
                              (True, "mobilenet_v2_xnnpack.pte", "expected_xnnpack_0.npy")):
        data = export_program({"forward": (m, (x,))}, {}, lower)
        path = os.path.join(out, fname)
        with open(path, "wb") as f:
            f.write(data)
        got = run_runtime(path, "forward", (x,))[0]
        save_npy(os.path.join(out, exp), got)
        desc = describe_program(data)
        meta["programs"][fname] = {"bytes": len(data), "expected": exp, "max_abs_diff_vs_eager_torch": max_diff(got, ref),
                                   "operators": desc["execution_plan"][0]["operators"],
                                   "delegates": [d["id"] for d in desc["execution_plan"][0]["delegates"]]}
        print(f"{path}: {len(data)} bytes, max diff vs eager {max_diff(got, ref):.3g}", flush=True)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "pte"))
    ap.add_argument("--only", help="regular expression on case names (index.json keeps the others)")
    ap.add_argument("--no-xnnpack", action="store_true")
    ap.add_argument("--any-version", action="store_true")
    ap.add_argument("--mobilenet-v2", metavar="DIR", help="only export torchvision MobileNetV2 into DIR")
    args = ap.parse_args()
    v = versions()
    if not args.any_version:
        for k in ("executorch", "torch"):
            if not v[k].startswith(VERSIONS[k]):
                sys.exit(f"{k} {v[k]} found, {VERSIONS[k]} expected (--any-version to go on)")
    torch.set_num_threads(1)
    if args.mobilenet_v2:
        export_mobilenet_v2(args.mobilenet_v2)
        return
    os.makedirs(args.out, exist_ok=True)
    index_path = os.path.join(args.out, "index.json")
    old = {}
    if args.only and os.path.exists(index_path):
        old = {c["name"]: c for c in json.load(open(index_path))["cases"]}
    entries = dict(old)
    problems = json.load(open(index_path)).get("skipped", {}) if old else {}
    for name, fn in CASES.items():
        if args.only and not re.search(args.only, name):
            continue
        for lower in ((False,) if args.no_xnnpack else (False, True)):
            case = name + ("_xnnpack" if lower else "")
            entries.pop(case, None)
            problems.pop(case, None)
            spec = fn(seed_for(name))  # same weights and inputs for the twin
            if spec.get("portable" if not lower else "xnnpack", True) is False:
                problems[case] = spec.get("why_single", "not made (the spec asks for one program only)")
                shutil.rmtree(os.path.join(args.out, case), ignore_errors=True)
                print(f"{case:32} not made: {problems[case]}", flush=True)
                continue
            try:
                entry, why = build_case(name, spec, args.out, lower)
            except Exception as e:  # record and go on: a failure of one family must not stop the rest
                entry, why = None, f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"
            if entry:
                entries[case] = entry
                print(f"{case:32} {entry['bytes']:8} B  diff {entry['max_abs_diff_vs_eager_torch']:.2g}  "
                      f"{len(entry['operators'])} ops {'delegate ' + entry['delegate'] if entry['delegate'] else ''}",
                      flush=True)
            else:
                problems[case] = why
                shutil.rmtree(os.path.join(args.out, case), ignore_errors=True)
                print(f"{case:32} SKIPPED: {why}", flush=True)
    ordered = [entries[k] for k in sorted(entries)]
    with open(index_path, "w") as f:
        json.dump({"format": "pte", "generator": "tools/pte_export.py", "versions": v, "cases": ordered,
                   "skipped": problems}, f, indent=1)
        f.write("\n")
    write_operators_md(args.out, ordered)
    total = sum(e["bytes"] for e in ordered)
    print(f"{len(ordered)} programs, {total} bytes of .pte; skipped: {len(problems)}")


if __name__ == "__main__":
    main()
