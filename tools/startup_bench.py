"""Start-up cost of nnrt and LiteRT (XNNPACK) on the same .tflite models: load + prepare time,
the first run, and the peak memory a process adds, each measured in a fresh process so that
neither runtime's caches or allocator state help the other. nnrt runs through its C ABI
(`target/release/libnnfw.so`, ctypes), LiteRT through its Python interpreter (XNNPACK applied
when the interpreter is built, as in an app). Both child processes import the same modules
before the clock starts, so the Python and numpy baseline is the same on both sides.

  V/bin/python tools/startup_bench.py MODELS [--threads 1] [--rounds 5]

MODELS: comma-separated corpus names (../shared/corpus/tflite/NAME/model.tflite), paths to .tflite
files, or directories (every NAME/model.tflite below). Rounds alternate the two runtimes. Prints per
model the median load+prepare, first run and peak RSS added (VmHWM after the first run minus VmRSS
before loading), and nnrt/LiteRT ratios. V: a Python with ai-edge-litert and numpy.
"""
import ctypes as C, json, os, statistics, subprocess, sys, time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
CORPUS = os.path.join(ROOT, '..', 'shared', 'corpus', 'tflite')


class TensorInfo(C.Structure):
    """nnfw.h's nnfw_tensorinfo."""
    _fields_ = [('dtype', C.c_int32), ('rank', C.c_int32), ('dims', C.c_int32 * 6)]


# Bytes per element of each NNFW_TYPE (nnfw.h).
ELEMENT_BYTES = {0: 4, 1: 4, 2: 1, 3: 1, 4: 1, 5: 8, 6: 1, 7: 2}


def status_kib(field):
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    raise RuntimeError(field)


def child(runtime, model, threads):
    """One measurement in this (fresh) process; prints a JSON line."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter
    lib = C.CDLL(os.path.join(ROOT, 'target', 'release', 'libnnfw.so'))
    data = open(model, 'rb').read()  # warm the page cache alike for both
    del data
    base = status_kib('VmRSS')
    a = time.perf_counter()
    if runtime == 'nnrt':
        s = C.c_void_p()
        assert lib.nnfw_create_session(C.byref(s)) == 0
        assert lib.nnfw_load_model_from_file(s, model.encode()) == 0, 'load'
        assert lib.nnfw_set_config(s, b'NUM_THREADS', str(threads).encode()) == 0
        assert lib.nnfw_prepare(s) == 0, 'prepare'
        b = time.perf_counter()
        n = C.c_uint32()
        assert lib.nnfw_input_size(s, C.byref(n)) == 0
        keep = []
        for i in range(n.value):
            info = TensorInfo()
            assert lib.nnfw_input_tensorinfo(s, i, C.byref(info)) == 0
            count = 1
            for d in info.dims[:info.rank]:
                count *= d
            buf = C.create_string_buffer(count * ELEMENT_BYTES[info.dtype])
            keep.append(buf)
            assert lib.nnfw_set_input(s, i, info.dtype, buf, C.c_size_t(len(buf))) == 0
        assert lib.nnfw_run(s) == 0, 'run'
    else:
        it = Interpreter(model_path=model, num_threads=threads)
        it.allocate_tensors()
        b = time.perf_counter()
        for d in it.get_input_details():
            it.set_tensor(d['index'], np.zeros(d['shape'], d['dtype']))
        it.invoke()
    c = time.perf_counter()
    print(json.dumps({'prepare': (b - a) * 1e3, 'first': (c - b) * 1e3, 'rss': (status_kib('VmHWM') - base) / 1024}))


def measure(runtime, model, threads):
    out = subprocess.run([sys.executable, __file__, '--child', runtime, model, str(threads)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f'{runtime} on {model}: {out.stderr.strip()[-400:]}')
    return json.loads(out.stdout.strip().splitlines()[-1])


def models(spec):
    for name in spec.split(','):
        if name.endswith('.tflite'):
            yield name, name
        elif os.path.isdir(name):
            for d in sorted(os.listdir(name)):
                p = os.path.join(name, d, 'model.tflite')
                if os.path.exists(p):
                    yield d, p
        else:
            yield name, os.path.join(CORPUS, name, 'model.tflite')


def main(argv):
    threads, rounds = 1, 5
    if '--threads' in argv:
        threads = int(argv[argv.index('--threads') + 1])
    if '--rounds' in argv:
        rounds = int(argv[argv.index('--rounds') + 1])
    print(f'{"model":44} {"prepare ms nnrt/lite":>22} {"first run ms nnrt/lite":>23} {"peak RSS MiB nnrt/lite":>24}')
    for name, path in models(argv[0]):
        got = {'nnrt': [], 'lite': []}
        try:
            for _ in range(rounds):
                for rt in ('nnrt', 'lite'):
                    got[rt].append(measure(rt, path, threads))
        except RuntimeError as e:
            print(f'{name[-44:]:44} skipped: {str(e).splitlines()[-1]}', flush=True)
            continue
        med = {rt: {k: statistics.median(r[k] for r in got[rt]) for k in ('prepare', 'first', 'rss')} for rt in got}
        n, l = med['nnrt'], med['lite']
        cols = [f'{n[k]:7.1f}/{l[k]:7.1f}={n[k] / max(l[k], 1e-9):5.2f}' for k in ('prepare', 'first', 'rss')]
        print(f'{name[-44:]:44} {cols[0]:>22} {cols[1]:>23} {cols[2]:>24}', flush=True)


if __name__ == '__main__':
    if sys.argv[1:2] == ['--child']:
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main(sys.argv[1:])
