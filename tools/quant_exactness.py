#!/usr/bin/env python3
"""Exactness report: runs nnpackage_run on corpus models and prints, per output, max |diff|
against expected_<j>.npy (LiteRT's reference kernels) and how many elements differ. Quantized
models should show 0; conform.py's tolerances are a ceiling, not the target. Needs numpy.

  python3 tools/quant_exactness.py target/release/nnpackage_run 'REGEX' [../shared/corpus/tflite]
"""
import os, re, subprocess, sys, tempfile
import numpy as np

cli = sys.argv[1]
pat = re.compile(sys.argv[2])
corpus = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared', 'corpus', 'tflite')
for name in sorted(os.listdir(corpus)):
    d = os.path.join(corpus, name)
    if not os.path.isdir(d) or not pat.search(name): continue
    with tempfile.TemporaryDirectory() as t:
        n = len([f for f in os.listdir(d) if re.fullmatch(r'input_\d+\.npy', f)])
        for i in range(n): os.symlink(os.path.join(d, f'input_{i}.npy'), os.path.join(t, f'in.{i}.npy'))
        p = subprocess.run([cli, os.path.join(d, 'model.tflite'), '--load:npy', os.path.join(t, 'in'), '--dump:npy', os.path.join(t, 'out'), '--backends', 'cpu'], capture_output=True, text=True)
        if p.returncode: print(f'{name:55s} ERROR {p.stderr.strip().splitlines()[-1][:120]}'); continue
        res = []
        j = 0
        while os.path.exists(os.path.join(d, f'expected_{j}.npy')):
            e = np.load(os.path.join(d, f'expected_{j}.npy')); g = np.load(os.path.join(t, f'out.{j}.npy'))
            diff = np.abs(g.astype(np.float64) - e.astype(np.float64))
            res.append(f'out{j}: max|diff|={diff.max():.3g} ndiff={int((diff > 0).sum())}/{diff.size}')
            j += 1
        print(f'{name:55s} ' + '; '.join(res))
