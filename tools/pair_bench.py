"""Paired, interleaved latency of nnrt and LiteRT (XNNPACK) in one process: nnrt through the C ABI
(`target/release/libnnfw.so`, loaded with ctypes), LiteRT through its Python interpreter, both on
zero inputs, alternating batches of 10 runs for 15 rounds, so that the machine's slow and fast
phases hit both alike (bench.py runs 30 of one, then 30 of the other, and on a shared machine its
per-row ratios swing by +-0.3). Prints min and median of each and their ratio nnrt/LiteRT.
The C ABI copies outputs into the caller's buffers, which one-op models with large outputs feel;
PAIR_NO_OUTPUTS=1 lends no output buffers (nnrt keeps its outputs, as LiteRT does) and adds a
copy of the inputs' bytes to LiteRT's time (nnrt's C ABI copies them into its arena on each run), for one-op models cut
by tools/split_ops.py.
Needs a Python with ai-edge-litert and numpy:

  V/bin/python tools/pair_bench.py keras_mobilenet_v2_224_float,keras_mobilenet_v2_224_int8 [1,2]

Models are corpus names (../shared/corpus/tflite/NAME/model.tflite) or paths to .tflite files.
"""
import ctypes as C, os, sys, time
import numpy as np
from ai_edge_litert.interpreter import Interpreter

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
LIB = C.CDLL(os.path.join(ROOT, 'target', 'release', 'libnnfw.so'))
CORPUS = os.path.join(ROOT, '..', 'shared', 'corpus', 'tflite')
# NNFW_TYPE of numpy dtypes (nnfw.h).
NNFW = {np.dtype('float32'): 0, np.dtype('int32'): 1, np.dtype('uint8'): 2, np.dtype('bool'): 3, np.dtype('int64'): 5, np.dtype('int8'): 6, np.dtype('int16'): 7}


def bench_pair(model, threads, rounds=15, per=10):
    it = Interpreter(model_path=model, num_threads=threads)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d['index'], np.zeros(d['shape'], d['dtype']))
    s = C.c_void_p()
    assert LIB.nnfw_create_session(C.byref(s)) == 0
    assert LIB.nnfw_load_model_from_file(s, model.encode()) == 0, 'load'
    assert LIB.nnfw_set_config(s, b'NUM_THREADS', str(threads).encode()) == 0
    assert LIB.nnfw_prepare(s) == 0, 'prepare'
    keep = []
    lent = [(it.get_input_details(), LIB.nnfw_set_input)]
    # One-op mode: LiteRT's time includes a copy of the input bytes, as nnrt's C ABI makes one.
    copy_in = bool(os.environ.get('PAIR_NO_OUTPUTS'))
    ins = it.get_input_details()
    xs = [np.zeros(d['shape'], d['dtype']) for d in ins]
    ys = [np.ones(d['shape'], d['dtype']) for d in ins]
    if not copy_in:
        lent.append((it.get_output_details(), LIB.nnfw_set_output))
    for dets, setter in lent:
        for i, d in enumerate(dets):
            x = np.zeros(d['shape'], d['dtype'])
            keep.append(x)
            assert setter(s, i, NNFW[x.dtype], x.ctypes.data_as(C.c_void_p), C.c_size_t(x.nbytes)) == 0
    for _ in range(5):
        it.invoke()
        assert LIB.nnfw_run(s) == 0
    lite, ours = [], []
    for _ in range(rounds):
        for _ in range(per):
            a = time.perf_counter()
            if copy_in:
                for x, y in zip(xs, ys):
                    np.copyto(y, x)
            it.invoke()
            lite.append(time.perf_counter() - a)
        for _ in range(per):
            a = time.perf_counter(); LIB.nnfw_run(s); ours.append(time.perf_counter() - a)
    LIB.nnfw_close_session(s)
    lite.sort(); ours.sort()
    return ours[0] * 1e3, lite[0] * 1e3, ours[len(ours) // 2] * 1e3, lite[len(lite) // 2] * 1e3


if __name__ == '__main__':
    threads = [int(t) for t in (sys.argv[2] if len(sys.argv) > 2 else '1,2').split(',')]
    for name in sys.argv[1].split(','):
        path = name if name.endswith('.tflite') else os.path.join(CORPUS, name, 'model.tflite')
        for t in threads:
            a, b, c, d = bench_pair(path, t)
            print(f'{name[-40:]:40} t={t} min {a:7.3f}/{b:7.3f}={a / b:5.2f}  med {c:7.3f}/{d:7.3f}={c / d:5.2f}', flush=True)
