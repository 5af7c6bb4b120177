//! [`replay`]: runs a family's cases on one [`Target`] and reports every failure at once.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use nnrt::{Error, Session};
use nnrt_core::{DType, Model};

use crate::case::{Case, Expect, Source, Target, Tol, Want};
use crate::values::V;

/// One output after a run: dims, type and bytes.
type Output = (Vec<usize>, DType, Vec<u8>);

/// The GPU adapter's name (`GPU_ADAPTER` picks one), or why there is none on this machine.
pub fn gpu_adapter() -> Result<&'static str, &'static str> {
    static ADAPTER: OnceLock<Result<String, String>> = OnceLock::new();
    #[cfg(feature = "gpu")]
    let found = ADAPTER.get_or_init(|| {
        nnrt_backend_gpu::GpuBackend::new(std::env::var("GPU_ADAPTER").ok().as_deref()).map(|b| b.gpu().adapter_name().to_string())
    });
    #[cfg(not(feature = "gpu"))]
    let found = ADAPTER.get_or_init(|| Err("nnrt-tests was built without its gpu feature".to_string()));
    found.as_ref().map(String::as_str).map_err(String::as_str)
}

/// Replays `cases` of `family` on `target`: skipped cases print their reason, failures are
/// collected and reported together. Without any GPU adapter (not even a software Vulkan one
/// such as lavapipe) the GPU targets print why and return.
pub fn replay(family: &str, cases: Vec<Case>, target: Target) {
    let family = family.rsplit("::").next().unwrap_or(family);
    if target.on_gpu() {
        match gpu_adapter() {
            Ok(name) => eprintln!("{family} on {target}: gpu adapter '{name}'"),
            Err(why) => {
                eprintln!("{family} on {target}: SKIPPED, no GPU adapter: {why}");
                return;
            }
        }
    }
    let (mut ran, mut failures) = (0, Vec::new());
    for case in &cases {
        if let Some(why) = case.skip_reason(target) {
            eprintln!("{family}/{} on {target}: skipped ({why})", case.name);
            continue;
        }
        ran += 1;
        let result = catch_unwind(AssertUnwindSafe(|| check(case, target))).unwrap_or_else(|p| Err(format!("panicked: {}", panic_text(&*p))));
        if let Err(e) = result {
            failures.push(format!("{family}/{} on {target}: {e}", case.name));
        }
    }
    eprintln!("{family} on {target}: {ran} of {} cases run", cases.len());
    assert!(failures.is_empty(), "{} of {ran} cases failed:\n{}", failures.len(), failures.join("\n"));
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

fn model(source: &Source) -> Result<Model, Error> {
    match source {
        Source::Ir(g) => Ok(g.model()),
        Source::Tflite(bytes) => Ok(nnrt_loaders::tflite::load_bytes("case.tflite", bytes.clone())?),
    }
}

fn session(source: &Source, target: Target) -> Result<Session, Error> {
    let mut s = Session::from_model(model(source)?)?;
    s.set_backends(target.backends())?;
    s.set_threads(target.threads())?;
    Ok(s)
}

/// Prepares, feeds, runs `runs` times and reads every output.
fn execute(source: &Source, feeds: &[V], runs: usize, target: Target) -> Result<Vec<Output>, Error> {
    let mut s = session(source, target)?;
    s.prepare()?;
    for _ in 0..runs {
        for (k, v) in feeds.iter().enumerate() {
            s.set_input(k, &v.bytes())?;
        }
        s.run()?;
    }
    (0..s.output_count())
        .map(|k| {
            let info = s.output_info(k)?;
            Ok((info.dims, info.dtype, s.output(k)?.to_vec()))
        })
        .collect()
}

fn check(case: &Case, target: Target) -> Result<(), String> {
    let run = |t: Target| execute(&case.source, &case.feeds, case.runs, t).map_err(|e| format!("{e}"));
    let gpu_tol = |tol: Tol| if target.on_gpu() { case.gpu_tol.unwrap_or(tol) } else { tol };
    match &case.expect {
        Expect::Prepare(needles) => {
            let mut s = session(&case.source, target).map_err(|e| format!("before prepare: {e}"))?;
            match s.prepare() {
                Err(e @ Error::Compile(_)) => contains_all(&e.to_string(), needles),
                Err(e) => Err(format!("expected a prepare (compile) error, got {e:?}")),
                Ok(()) => Err(format!("prepare succeeded; expected an error mentioning {needles:?}")),
            }
        }
        Expect::Run(needles) => match execute(&case.source, &case.feeds, case.runs, target) {
            Err(e @ Error::Run(_)) => contains_all(&e.to_string(), needles),
            Err(e) => Err(format!("expected a run error, got {e:?}")),
            Ok(_) => Err(format!("run succeeded; expected an error mentioning {needles:?}")),
        },
        Expect::Outputs(wants) => {
            if wants.is_empty() {
                return Err("the case checks nothing".into());
            }
            let got = run(target)?;
            if target == Target::Cpu2 && got != run(Target::Cpu1)? {
                return Err("1 and 2 threads disagree".into());
            }
            wants.iter().try_for_each(|w| check_want(&got, w, gpu_tol))
        }
        Expect::Cpu { reference, tol } => {
            let want = match reference {
                Some(g) => execute(&Source::Ir(g.clone()), g.feeds(), case.runs, Target::Cpu1).map_err(|e| format!("reference: {e}"))?,
                None => run(Target::Cpu1).map_err(|e| format!("on cpu: {e}"))?,
            };
            // Vulkan does not promise to keep a zero's sign (shaders run without
            // SignedZeroInfNanPreserve; NVIDIA's driver makes relu(-0) +0, lavapipe keeps -0), so
            // against a gpu the values are compared, +0 equal to -0; cpu against cpu, the bits.
            let bits = matches!(target, Target::Cpu1 | Target::Cpu2);
            compare_outputs(&run(target)?, &want, gpu_tol(*tol), bits)
        }
    }
}

fn contains_all(msg: &str, needles: &[&str]) -> Result<(), String> {
    match needles.iter().find(|n| !msg.contains(*n)) {
        Some(n) => Err(format!("the error should mention {n:?}: {msg}")),
        None => Ok(()),
    }
}

fn check_want(got: &[Output], w: &Want, tol_for: impl Fn(Tol) -> Tol) -> Result<(), String> {
    let (dims, dtype, bytes) = got.get(w.index).ok_or_else(|| format!("no output {} (of {})", w.index, got.len()))?;
    if let Some(want_dims) = &w.dims {
        if dims != want_dims {
            return Err(format!("output {}: dims {dims:?}, expected {want_dims:?}", w.index));
        }
    }
    let Some((want, tol)) = &w.values else { return Ok(()) };
    let mut values = V::from_bytes(*dtype, bytes).ok_or_else(|| format!("output {}: {dtype} is not comparable here", w.index))?;
    if let (Some(part), V::F32(v)) = (&w.part, &mut values) {
        *v = v.get(part.clone()).ok_or_else(|| format!("output {}: no elements {part:?}", w.index))?.to_vec();
    }
    match (values.as_f32(), want.as_f32()) {
        (Some(g), Some(e)) => compare_f32(&format!("output {}", w.index), g, e, tol_for(*tol), false),
        _ if values == *want => Ok(()),
        _ => Err(format!("output {}: got {values:?}, expected {want:?}", w.index)),
    }
}

fn compare_f32(what: &str, got: &[f32], want: &[f32], tol: Tol, bits: bool) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(&g, &w)| !tol.accepts(g, w, bits)) {
        Some(k) => Err(format!("{what}: element {k} is {}, expected {} (tolerance {} + {}·|want|: {})", got[k], want[k], tol.abs, tol.rel, tol.why)),
        None => Ok(()),
    }
}

fn compare_outputs(got: &[Output], want: &[Output], tol: Tol, bits: bool) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} outputs, the cpu gives {}", got.len(), want.len()));
    }
    for (k, ((gd, gt, gb), (wd, wt, wb))) in got.iter().zip(want).enumerate() {
        if (gd, gt) != (wd, wt) {
            return Err(format!("output {k}: {gt} {gd:?}, the cpu gives {wt} {wd:?}"));
        }
        match (V::from_bytes(*gt, gb), V::from_bytes(*wt, wb)) {
            (Some(V::F32(g)), Some(V::F32(w))) => compare_f32(&format!("output {k} against the cpu"), &g, &w, tol, bits)?,
            _ if gb == wb => {}
            _ => return Err(format!("output {k} ({gt}) differs from the cpu's")),
        }
    }
    Ok(())
}

/// With `NNRT_TESTS_DUMP_DIR` set, writes a TFLite case as the corpus lays models out
/// (`<dir>/<case>/model.tflite`, `input_<i>.npy`, `expected_0.npy`) so its reference can be
/// checked against LiteRT (e.g. with `../shared/tools/conform.py`'s reader).
pub fn dump(case: &Case) {
    let Some(root) = std::env::var_os("NNRT_TESTS_DUMP_DIR") else { return };
    let (Source::Tflite(bytes), Expect::Outputs(wants)) = (&case.source, &case.expect) else { return };
    let Some(Want { dims: Some(dims), values: Some((V::F32(want), _)), .. }) = wants.first() else { return };
    let name: String = case.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let dir = std::path::Path::new(&root).join(name);
    let write = |file: &str, data: Vec<u8>| {
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join(file), data)).unwrap_or_else(|e| panic!("dump {}: {e}", case.name));
    };
    write("model.tflite", bytes.clone());
    let s = session(&case.source, Target::Cpu1).unwrap_or_else(|e| panic!("dump {}: {e}", case.name));
    for (k, v) in case.feeds.iter().enumerate() {
        let input_dims = s.input_info(k).map(|t| t.dims).unwrap_or_default();
        write(&format!("input_{k}.npy"), crate::npy_f32(&input_dims, v.as_f32().unwrap_or_default()));
    }
    write("expected_0.npy", crate::npy_f32(dims, want));
}

/// Defines the four replay tests of a family module over the cases its functions return:
/// `cpu_1_thread`, `cpu_2_threads`, `gpu` and `gpu_cpu` (burn's backend test suite is the model:
/// one case list, run per backend).
#[macro_export]
macro_rules! replay_on_every_target {
    ($($cases:path),+ $(,)?) => {
        fn cases() -> Vec<$crate::Case> {
            let mut all = Vec::new();
            $(all.extend($cases());)+
            all
        }

        #[test]
        fn cpu_1_thread() {
            let cases = cases();
            cases.iter().for_each($crate::dump);
            $crate::replay(module_path!(), cases, $crate::Target::Cpu1);
        }

        #[test]
        fn cpu_2_threads() {
            $crate::replay(module_path!(), cases(), $crate::Target::Cpu2);
        }

        #[test]
        fn gpu() {
            $crate::replay(module_path!(), cases(), $crate::Target::Gpu);
        }

        #[test]
        fn gpu_cpu() {
            $crate::replay(module_path!(), cases(), $crate::Target::GpuCpu);
        }
    };
}
