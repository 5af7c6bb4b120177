//! `nnpackage_run`: loads a model (nnpackage folder or zip, .tflite, .circle), runs it and reports
//! timings; accepts onert_run's options plus `--load:npy` / `--dump:npy`.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use nnrt::{DType, Session};
use nnrt_cli::args::{parse_shapes, Args, Spec, Takes};
use nnrt_cli::{logger, npy};

const SPECS: &[Spec] = &[
    Spec { names: &["--load:npy"], key: "load_npy", takes: Takes::Value, help: "read inputs from PREFIX.0.npy, PREFIX.1.npy, ... (their shapes set the input shapes)" },
    Spec { names: &["--dump:npy"], key: "dump_npy", takes: Takes::Value, help: "write outputs to PREFIX.0.npy, PREFIX.1.npy, ..." },
    Spec { names: &["--load:raw"], key: "load_raw", takes: Takes::Value, help: "read inputs as raw bytes from PREFIX.0, PREFIX.1, ..." },
    Spec { names: &["--dump:raw"], key: "dump_raw", takes: Takes::Value, help: "write outputs as raw bytes to PREFIX.0, PREFIX.1, ..." },
    Spec { names: &["-r", "--num_runs"], key: "num_runs", takes: Takes::Value, help: "timed runs (default 1)" },
    Spec { names: &["-w", "--warmup_runs"], key: "warmup_runs", takes: Takes::Value, help: "untimed runs before the timed ones (default 0)" },
    Spec { names: &["--threads"], key: "threads", takes: Takes::Value, help: "kernel threads (default: NUM_THREADS, else all cores)" },
    Spec { names: &["--backends"], key: "backends", takes: Takes::Value, help: "backends in order of preference, e.g. 'cpu' (default: BACKENDS, else cpu)" },
    Spec { names: &["-p", "--write_report"], key: "report", takes: Takes::Value, help: "write timings as JSON to FILE" },
    Spec { names: &["-m", "--mem_poll"], key: "mem_poll", takes: Takes::Maybe, help: "report peak resident memory" },
    Spec { names: &["--shape_prepare"], key: "shape_prepare", takes: Takes::Value, help: "input shapes before prepare: '[idx,[dims],...]'" },
    Spec { names: &["--shape_run"], key: "shape_run", takes: Takes::Value, help: "input shapes after prepare: '[idx,[dims],...]'" },
    Spec { names: &["--signature", "--method"], key: "signature", takes: Takes::Value, help: "run this signature (TFLite SignatureDef key) instead of the main graph" },
    Spec { names: &["--custom-op-lib"], key: "custom_op_lib", takes: Takes::Value, help: "load the custom-op plugin (shared library) at PATH; repeatable" },
    Spec { names: &["--device-lib"], key: "device_lib", takes: Takes::Value, help: "load the device driver (shared library, plugin ABI 2) at PATH, e.g. for Edge TPU models; repeatable" },
    Spec { names: &["--allow-package-plugins"], key: "allow_package_plugins", takes: Takes::Nothing, help: "load the plugins in the package's custom_op/ folder (runs the package's code)" },
    Spec { names: &["--profile"], key: "profile", takes: Takes::Nothing, help: "print time per op and per op kind over the timed runs" },
    Spec { names: &["--labels"], key: "labels", takes: Takes::Value, help: "label file (one per line) for output 0's classes: print the top classes with their labels" },
    Spec { names: &["--top"], key: "top", takes: Takes::Value, help: "print the N best classes of output 0 with their scores (default 5 with --labels)" },
    Spec { names: &["-v", "--verbose_level"], key: "verbose", takes: Takes::Maybe, help: "log more (-v 1 info, -v 2 debug)" },
];

fn usage() -> String {
    let mut s = String::from("usage: nnpackage_run PATH [options]\n\nPATH: an nnpackage folder or zip, a .tflite or a .circle file\n\noptions:\n");
    for spec in SPECS.iter().chain(nnrt_cli::args::COMMON) {
        s.push_str(&format!("  {:28} {}\n", spec.names.join(", "), spec.help));
    }
    s.push_str("\nenvironment: BACKENDS, NUM_THREADS, OP_BACKEND_ALLOPS, OP_BACKEND_<Op>, OP_BACKEND_MAP\n");
    s.push_str(&format!("backends in this build: {}\n", nnrt::built_with()));
    s
}

fn main() {
    match run() {
        Ok(()) => {}
        Err(e) => {
            let msg = format!("{e:#}").replace('\n', " ");
            eprintln!("nnpackage_run: error: {msg}");
            std::process::exit(1);
        }
    }
}

/// Deterministic filler for inputs the caller did not give.
fn random_bytes(dtype: DType, n: usize, seed: &mut u64) -> Vec<u8> {
    let mut next = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let mut out = Vec::with_capacity(n * dtype.size());
    for _ in 0..n {
        let r = next();
        match dtype {
            DType::F32 => out.extend_from_slice(&(((r >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0).to_le_bytes()),
            DType::F16 => out.extend_from_slice(&[0, 0]),
            DType::U8 | DType::I8 => out.push(r as u8),
            DType::I16 => out.extend_from_slice(&(r as i16).to_le_bytes()),
            DType::I32 => out.extend_from_slice(&((r % 8) as i32).to_le_bytes()),
            DType::I64 => out.extend_from_slice(&((r % 8) as i64).to_le_bytes()),
            DType::Bool => out.push((r & 1) as u8),
            DType::C64 => {
                for part in [r >> 40, (r >> 16) & 0xff_ffff] {
                    out.extend_from_slice(&((part as f32 / (1u64 << 24) as f32) * 2.0 - 1.0).to_le_bytes());
                }
            }
        }
    }
    out
}

fn peak_rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Prints mean time per run for each op (slowest first) and each op kind.
fn print_profile(times: &[(usize, String, String, std::time::Duration)], runs: usize) {
    let total: f64 = times.iter().map(|t| ms(t.3)).sum::<f64>() / runs as f64;
    let mut by_op: Vec<_> = times.iter().collect();
    by_op.sort_by_key(|t| std::cmp::Reverse(t.3));
    println!("profile (mean per run over {runs} runs, {total:.3} ms in ops):");
    println!("  {:>5}  {:24} {:8} {:>10} {:>6}", "op", "kind", "backend", "ms", "%");
    for (op, kind, backend, t) in &by_op {
        let m = ms(*t) / runs as f64;
        println!("  {op:>5}  {kind:24} {backend:8} {m:>10.4} {:>5.1}%", 100.0 * m / total.max(1e-12));
    }
    let mut kinds: Vec<(String, f64, usize)> = Vec::new();
    for (_, kind, _, t) in times {
        match kinds.iter_mut().find(|k| k.0 == *kind) {
            Some(k) => {
                k.1 += ms(*t);
                k.2 += 1;
            }
            None => kinds.push((kind.clone(), ms(*t), 1)),
        }
    }
    kinds.sort_by(|a, b| b.1.total_cmp(&a.1));
    println!("  by kind:");
    for (kind, t, n) in kinds {
        let m = t / runs as f64;
        println!("    {kind:24} {n:4} ops {m:>10.4} ms {:>5.1}%", 100.0 * m / total.max(1e-12));
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn run() -> Result<()> {
    let args = Args::parse(std::env::args().skip(1), SPECS)?;
    if args.has("help") {
        print!("{}", usage());
        return Ok(());
    }
    if args.has("version") {
        println!("{}", nnrt_cli::version_line("nnpackage_run"));
        return Ok(());
    }
    let verbosity = if args.has("verbose") { args.parsed::<u8>("verbose")?.unwrap_or(1) } else { 0 };
    logger::init(verbosity);
    let path = match args.positional.as_slice() {
        [p] => p.clone(),
        [] => bail!("no model given\n{}", usage()),
        more => bail!("expected one model path, got {}: {}", more.len(), more.join(" ")),
    };
    for key in ["num_runs", "warmup_runs", "threads", "top"] {
        args.parsed::<usize>(key)?;
    }

    let labels = args.value("labels").map(nnrt_cli::classify::read_labels).transpose()?.unwrap_or_default();

    let t = Instant::now();
    let mut s = Session::load(&path)?;
    let load_ms = ms(t.elapsed());
    // The first Ctrl-C cancels the run in progress (it ends with "run cancelled", exit 1); a
    // second, for a kernel that does not return, ends the process.
    let cancel = s.cancel_handle();
    let pressed = std::sync::atomic::AtomicBool::new(false);
    let _ = ctrlc::set_handler(move || {
        if pressed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(130);
        }
        cancel.cancel();
    });
    if let Some(b) = args.value("backends") {
        s.set_backends(b)?;
    }
    if let Some(n) = args.parsed::<usize>("threads")? {
        s.set_threads(n)?;
    }
    for lib in args.values("custom_op_lib") {
        let ops = s.load_custom_op_library(lib)?;
        log::info!("{lib}: custom ops {}", ops.join(", "));
    }
    for lib in args.values("device_lib") {
        let ops = s.load_device_library(lib)?;
        log::info!("{lib}: device ops {}", ops.join(", "));
    }
    if args.has("allow_package_plugins") {
        s.set_config(nnrt::ALLOW_PACKAGE_PLUGINS, "1")?;
    }

    if let Some(sig) = args.value("signature") {
        s.select_signature(sig)?;
    }
    let n_in = s.input_count();
    let mut inputs: Vec<Option<Vec<u8>>> = vec![None; n_in];
    if let Some(prefix) = args.value("load_npy") {
        for (i, slot) in inputs.iter_mut().enumerate() {
            let file = format!("{prefix}.{i}.npy");
            let a = npy::read(&file)?;
            let info = s.input_info(i)?;
            if a.dtype != info.dtype {
                bail!("{file}: holds {} but input {i} ('{}') is {}", a.dtype, info.name, info.dtype);
            }
            if a.dims != info.dims {
                s.set_input_shape(i, &a.dims).with_context(|| format!("{file}: cannot use its shape"))?;
            }
            *slot = Some(a.data);
        }
    }
    if let Some(shapes) = args.value("shape_prepare") {
        for (i, dims) in parse_shapes(shapes)? {
            s.set_input_shape(i, &dims)?;
        }
    }
    let t = Instant::now();
    s.prepare()?;
    let prepare_ms = ms(t.elapsed());
    if let Some(shapes) = args.value("shape_run") {
        for (i, dims) in parse_shapes(shapes)? {
            s.set_input_shape(i, &dims)?;
        }
    }
    if let Some(prefix) = args.value("load_raw") {
        for (i, slot) in inputs.iter_mut().enumerate() {
            let file = format!("{prefix}.{i}");
            *slot = Some(std::fs::read(&file).with_context(|| format!("cannot read {file}"))?);
        }
    }
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for (i, data) in inputs.into_iter().enumerate() {
        let data = match data {
            Some(d) => d,
            None => {
                let info = s.input_info(i)?;
                random_bytes(info.dtype, info.dims.iter().product(), &mut seed)
            }
        };
        s.set_input(i, &data)?;
    }

    let warmup = args.parsed::<usize>("warmup_runs")?.unwrap_or(0);
    let runs = args.parsed::<usize>("num_runs")?.unwrap_or(1).max(1);
    for _ in 0..warmup {
        s.run()?;
    }
    let profile = args.has("profile") || verbosity >= 2;
    if profile {
        s.set_profiling(true)?;
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        s.run()?;
        times.push(ms(t.elapsed()));
    }

    for i in 0..s.output_count() {
        let info = s.output_info(i)?;
        let data = s.output(i)?;
        if let Some(prefix) = args.value("dump_npy") {
            npy::write(&format!("{prefix}.{i}.npy"), info.dtype, &info.dims, data)?;
        }
        if let Some(prefix) = args.value("dump_raw") {
            let file = format!("{prefix}.{i}");
            std::fs::write(&file, data).with_context(|| format!("cannot write {file}"))?;
        }
    }

    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let min = sorted[0];
    let max = sorted[sorted.len() - 1];
    let median = if sorted.len() % 2 == 1 { sorted[sorted.len() / 2] } else { (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0 };
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let geomean = (times.iter().map(|t| t.max(1e-9).ln()).sum::<f64>() / times.len() as f64).exp();
    let backends = s.config().get("BACKENDS").unwrap_or("cpu").to_string();
    println!("load:    {load_ms:.3} ms");
    println!("prepare: {prepare_ms:.3} ms");
    println!("execute: min {min:.3} ms, median {median:.3} ms, mean {mean:.3} ms, max {max:.3} ms, geomean {geomean:.3} ms ({runs} runs, {} threads, backends {backends})", s.threads());
    if profile {
        print_profile(&s.op_times(), runs);
    }
    let top = args.parsed::<usize>("top")?.or(args.has("labels").then_some(5));
    if let Some(k) = top {
        use nnrt_cli::classify;
        let info = s.output_info(0)?;
        let scores = classify::scores(&info, s.output(0)?)?;
        if !labels.is_empty() && labels.len() != scores.len() {
            log::warn!("{} labels for {} classes", labels.len(), scores.len());
        }
        for line in classify::report(&info, &classify::top_k(&scores, k), &labels) {
            println!("{line}");
        }
    }
    let rss = if args.has("mem_poll") || args.has("report") { peak_rss_kb() } else { None };
    if args.has("mem_poll") {
        match rss {
            Some(kb) => println!("peak RSS: {kb} KB"),
            None => println!("peak RSS: unknown (no /proc/self/status)"),
        }
    }
    if let Some(file) = args.value("report") {
        let report = serde_json::json!({
            "load_ms": load_ms,
            "prepare_ms": prepare_ms,
            "execute_ms": {"min": min, "median": median, "mean": mean, "max": max, "geomean": geomean},
            "runs": runs,
            "threads": s.threads(),
            "backends": backends,
            "peak_rss_kb": rss,
        });
        std::fs::write(file, serde_json::to_string_pretty(&report)? + "\n").with_context(|| format!("cannot write {file}"))?;
    }
    Ok(())
}
