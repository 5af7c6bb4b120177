"""Records LiteRT's outputs for the one-op models `benches/examples/op_models` writes, so that
`conform.py --corpus DIR` checks nnrt against them: expected_<j>.npy from LiteRT's reference
kernels and expected_xnnpack_<j>.npy from its default (XNNPACK) kernels, per model folder.
Needs a Python with ai-edge-litert and numpy:

  cargo run --release -p nnrt-benches --example op_models -- /tmp/opbench
  V/bin/python tools/op_models_refs.py /tmp/opbench [REGEX]
  python3 ../shared/tools/conform.py --cli target/release/nnpackage_run --corpus /tmp/opbench --only ew_ --backends cpu
"""
import os, re, sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

root = sys.argv[1]
only = re.compile(sys.argv[2] if len(sys.argv) > 2 else '.')
for name in sorted(os.listdir(root)):
    folder = os.path.join(root, name)
    if not only.search(name) or not os.path.exists(os.path.join(folder, 'model.tflite')):
        continue
    for tag, kw in (('', dict(experimental_op_resolver_type=OpResolverType.BUILTIN_REF)), ('xnnpack_', {})):
        it = Interpreter(model_path=os.path.join(folder, 'model.tflite'), **kw)
        it.allocate_tensors()
        for i, d in enumerate(it.get_input_details()):
            it.set_tensor(d['index'], np.load(os.path.join(folder, f'input_{i}.npy')))
        it.invoke()
        for j, o in enumerate(it.get_output_details()):
            np.save(os.path.join(folder, f'expected_{tag}{j}.npy'), it.get_tensor(o['index']))
