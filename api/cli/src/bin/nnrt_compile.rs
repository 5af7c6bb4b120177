//! `nnrt-compile MODEL -o DIR [--method M] [--threads N] [--name NAME] [--shape_prepare SHAPES] [--nnrt DIR]`:
//! compiles a model ahead of time into an artifact (a Rust crate with a C header, and a
//! parameters file) that runs it on nnrt's CPU kernels with no loader, graph building or planning
//! at run time. See `nnrt_cli::compile`.

use anyhow::{bail, Result};
use nnrt_cli::args::{parse_shapes, Args, Spec, Takes};
use nnrt_cli::compile::{compile, Options};
use nnrt_cli::logger;

const USAGE: &str = "usage: nnrt-compile MODEL -o DIR [--method NAME] [--threads N] [--name NAME] [--shape_prepare SHAPES] [--nnrt DIR]";

const SPECS: &[Spec] = &[
    Spec { names: &["-o", "--output"], key: "output", takes: Takes::Value, help: "the directory to write the artifact's crate and parameters file into" },
    Spec { names: &["--method", "--signature"], key: "method", takes: Takes::Value, help: "compile this method (ExecuTorch) or signature (TFLite) instead of the default" },
    Spec { names: &["--threads"], key: "threads", takes: Takes::Value, help: "threads of the artifact's kernel pool (default 1)" },
    Spec { names: &["--name"], key: "name", takes: Takes::Value, help: "the artifact's name: C prefix and crate name (default: from the model's file name)" },
    Spec { names: &["--shape_prepare"], key: "shape_prepare", takes: Takes::Value, help: "fix input shapes before compiling: '[idx,[dims],...]'" },
    Spec { names: &["--nnrt"], key: "nnrt", takes: Takes::Value, help: "the nnrt source tree the crate depends on (default: the one this tool was built from)" },
    Spec { names: &["-v", "--verbose_level"], key: "verbose", takes: Takes::Maybe, help: "log more" },
];

fn main() {
    if let Err(e) = run() {
        eprintln!("nnrt-compile: error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args = Args::parse(std::env::args().skip(1), SPECS)?;
    if args.has("help") {
        println!("{USAGE}");
        for s in SPECS.iter().chain(nnrt_cli::args::COMMON) {
            println!("  {:24} {}", s.names.join(", "), s.help);
        }
        return Ok(());
    }
    if args.has("version") {
        println!("{}", nnrt_cli::version_line("nnrt-compile"));
        return Ok(());
    }
    logger::init(if args.has("verbose") { args.parsed::<u8>("verbose")?.unwrap_or(1) } else { 0 });
    let model = match args.positional.as_slice() {
        [p] => std::path::PathBuf::from(p),
        _ => bail!("{USAGE}"),
    };
    let Some(out) = args.value("output") else { bail!("no output directory: {USAGE}") };
    let threads = args.parsed::<usize>("threads")?.unwrap_or(1);
    if threads == 0 || threads > nnrt_core::MAX_THREADS {
        bail!("--threads {threads}: expected 1 to {}", nnrt_core::MAX_THREADS);
    }
    let nnrt = match args.value("nnrt") {
        Some(d) => d.into(),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    };
    let shapes = match args.value("shape_prepare") {
        Some(s) => parse_shapes(s)?,
        None => Vec::new(),
    };
    let opts = Options { method: args.value("method").map(String::from), threads, name: args.value("name").map(String::from), nnrt };
    let s = compile(&model, std::path::Path::new(out), &opts, &shapes)?;
    println!("{}: {} ops in {} steps, arena {} bytes, parameters {} bytes", s.name, s.ops, s.steps, s.arena_size, s.params_bytes);
    for f in &s.files {
        println!("  wrote {}", f.display());
    }
    Ok(())
}
