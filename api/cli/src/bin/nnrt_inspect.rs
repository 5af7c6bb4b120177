//! `nnrt-inspect PATH`: a model's inputs and outputs, then one line per op (index, kind,
//! inputs -> outputs, backend). `--partition` prints only the placement with fallback reasons.
//! `--custom-op-lib PATH` (repeatable) loads custom-op plugins first, so a model with custom ops
//! prepares: their output shapes come from the plugins' shape functions and they get a backend;
//! `--device-lib PATH` loads device drivers the same way. An Edge TPU model's packages are shown
//! whether or not a driver is loaded; a bare DarwiNN package (`DWN1`) can be inspected too.
//! `--json` prints one JSON document instead of text; `--dot` prints the prepared graph as
//! Graphviz (`nnrt-inspect --dot M | dot -Tsvg -o M.svg`).

use std::collections::HashMap;

use anyhow::{bail, Context, Result};
use nnrt::{darwinn, Quantization, Session};
use nnrt_cli::args::{Args, Spec, Takes};
use nnrt_cli::darwinn_view;
use serde_json::{json, Value};
use nnrt_cli::logger;

const USAGE: &str = "usage: nnrt-inspect PATH [--backends LIST] [--custom-op-lib PATH]... [--device-lib PATH]... [--partition | --json | --dot]";

/// `println!` that ends the program quietly when stdout is closed (`nnrt-inspect … | head`)
/// instead of panicking on the broken pipe.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout(), $($t)*).is_err() {
            std::process::exit(0);
        }
    }};
}

const SPECS: &[Spec] = &[
    Spec { names: &["--backends"], key: "backends", takes: Takes::Value, help: "backends in order of preference (default: BACKENDS, else cpu)" },
    Spec { names: &["--custom-op-lib"], key: "custom_op_lib", takes: Takes::Value, help: "load the custom-op plugin (shared library) at PATH; repeatable" },
    Spec { names: &["--device-lib"], key: "device_lib", takes: Takes::Value, help: "load the device driver (shared library, plugin ABI 2) at PATH; repeatable" },
    Spec { names: &["--partition"], key: "partition", takes: Takes::Nothing, help: "print one line per op: index, kind, backend, fallback reason" },
    Spec { names: &["--json"], key: "json", takes: Takes::Nothing, help: "print one JSON document: format, tensors, ops, Edge TPU packages" },
    Spec { names: &["--dot"], key: "dot", takes: Takes::Nothing, help: "print the prepared graph as Graphviz (ops coloured by backend, host<->gpu copies, shapes on edges); render with dot -Tsvg" },
    Spec { names: &["-v", "--verbose_level"], key: "verbose", takes: Takes::Maybe, help: "log more" },
];

fn main() {
    if let Err(e) = run() {
        eprintln!("nnrt-inspect: error: {}", format!("{e:#}").replace('\n', " "));
        std::process::exit(1);
    }
}

fn quant(q: &Quantization) -> String {
    match q {
        Quantization::None => String::new(),
        Quantization::PerTensor { scale, zero_point } => format!(" q(scale={scale}, zp={zero_point})"),
        Quantization::PerAxis { scales, axis, .. } => format!(" q(per-axis {axis}, {} scales)", scales.len()),
    }
}

fn run() -> Result<()> {
    let args = Args::parse(std::env::args().skip(1), SPECS)?;
    if args.has("help") {
        out!("{USAGE}");
        for s in SPECS.iter().chain(nnrt_cli::args::COMMON) {
            out!("  {:24} {}", s.names.join(", "), s.help);
        }
        out!("backends in this build: {}", nnrt::built_with());
        return Ok(());
    }
    if args.has("version") {
        out!("{}", nnrt_cli::version_line("nnrt-inspect"));
        return Ok(());
    }
    logger::init(if args.has("verbose") { args.parsed::<u8>("verbose")?.unwrap_or(1) } else { 0 });
    let path = match args.positional.as_slice() {
        [p] => p.clone(),
        _ => bail!("{USAGE}"),
    };
    // A bare DarwiNN package is not a model: shown on its own.
    if std::path::Path::new(&path).is_file() {
        let head = read_head(&path)?;
        if head.get(4..8) == Some(darwinn::IDENTIFIER.as_slice()) {
            let bytes = std::fs::read(&path).with_context(|| format!("cannot read {path}"))?;
            let p = darwinn::read_package(&bytes).with_context(|| path.clone())?;
            if args.has("json") {
                let doc = json!({"path": path, "format": "DarwiNN package (DWN1)", "packages": [darwinn_view::package_json(&p)]});
                out!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                out!("{path}: DarwiNN package (DWN1)");
                for line in darwinn_view::package_text(&p, "") {
                    out!("{line}");
                }
            }
            return Ok(());
        }
    }
    let mut s = Session::load(&path)?;
    if let Some(b) = args.value("backends") {
        s.set_backends(b)?;
    }
    for lib in args.values("custom_op_lib") {
        let ops = s.load_custom_op_library(lib)?;
        log::info!("{lib}: custom ops {}", ops.join(", "));
    }
    for lib in args.values("device_lib") {
        let ops = s.load_device_library(lib)?;
        log::info!("{lib}: device ops {}", ops.join(", "));
    }
    let prepare_error = s.prepare().err();
    let placements: HashMap<usize, nnrt::OpPlacement> = match &prepare_error {
        None => s.placements()?.into_iter().map(|p| (p.index, p)).collect(),
        Some(_) => HashMap::new(),
    };
    let model = s.model();
    let g = model.entry();
    if args.has("partition") {
        for (i, op) in g.ops.iter().enumerate() {
            match placements.get(&i) {
                Some(p) => match &p.fallback_reason {
                    Some(why) => out!("{i:4} {:24} {:6} (fallback: {why})", p.kind, p.backend),
                    None => out!("{i:4} {:24} {}", p.kind, p.backend),
                },
                None if prepare_error.is_none() => out!("{i:4} {:24} folded at prepare (constant)", op.kind.name()),
                None => out!("{i:4} {:24} -", op.kind.name()),
            }
        }
        if let Some(e) = prepare_error {
            bail!("prepare failed: {e}");
        }
        return Ok(());
    }
    if args.has("dot") {
        out!("{}", nnrt_cli::dot::render(&s, &path, prepare_error.as_ref()).trim_end_matches('\n'));
        return Ok(());
    }
    if args.has("json") {
        out!("{}", serde_json::to_string_pretty(&model_json(&s, &path, &placements, prepare_error.as_ref()))?);
        return Ok(());
    }
    out!("model: {path} ({} subgraphs, {} ops in the entry)", model.subgraphs.len(), g.ops.len());
    for info in &s.package().formats {
        out!("format: {info}");
        for op in &info.edgetpu {
            for line in darwinn_view::op_text(op) {
                out!("{line}");
            }
        }
    }
    for (what, list) in [("input", &g.inputs), ("output", &g.outputs)] {
        for (k, &id) in list.iter().enumerate() {
            let o = g.operand(id);
            // Shapes the model leaves open (Coral's decoder outputs, dynamic dims) as prepare
            // settled them, e.g. from a custom op plugin's shape function.
            let info = match (prepare_error.is_none(), what) {
                (false, _) => None,
                (true, "input") => s.input_info(k).ok(),
                (true, _) => s.output_info(k).ok(),
            };
            let declared = o.shape.to_string();
            let prepared = info.map(|i| format!("[{}]", i.dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(","))).filter(|p| *p != declared);
            let prepared = prepared.map(|p| format!(" (prepared {p})")).unwrap_or_default();
            out!("{what} {k}: {id} '{}' {} {declared}{prepared}{}", o.name, o.dtype, quant(&o.quant));
        }
    }
    // ExecuTorch methods are listed with their tensors and the operators they call.
    let entry_ops: HashMap<&str, &Vec<String>> = s.package().formats.iter().flat_map(|f| f.entry_operators.iter().map(|(n, o)| (n.as_str(), o))).collect();
    for sig in &model.signatures {
        let Some(ops) = entry_ops.get(sig.key.as_str()) else {
            let names: Vec<&str> = sig.inputs.iter().map(|(n, _)| n.as_str()).collect();
            let outs: Vec<&str> = sig.outputs.iter().map(|(n, _)| n.as_str()).collect();
            out!("signature '{}' ({}): inputs [{}] outputs [{}]", sig.key, sig.subgraph, names.join(", "), outs.join(", "));
            continue;
        };
        let sg = model.subgraph(sig.subgraph);
        let describe = |list: &[(String, nnrt::OperandId)]| -> String {
            list.iter()
                .map(|(n, id)| match sg.and_then(|g| g.operands.get(id.index())) {
                    Some(o) => format!("{n} {} {}", o.dtype, o.shape),
                    None => n.clone(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        out!("method '{}' ({}): inputs [{}] outputs [{}]", sig.key, sig.subgraph, describe(&sig.inputs), describe(&sig.outputs));
        out!("  operators: {}", ops.join(", "));
    }
    out!("ops:");
    for (i, op) in g.ops.iter().enumerate() {
        let backend = match placements.get(&i) {
            Some(p) => p.backend.clone(),
            None if prepare_error.is_none() => "folded".into(),
            None => "-".into(),
        };
        out!("{i:4} {op}  [{backend}]");
    }
    if let Some(e) = prepare_error {
        out!("prepare failed: {e}");
    }
    Ok(())
}

/// The first 8 bytes of a file (fewer if it is shorter).
fn read_head(path: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(8);
    std::fs::File::open(path).with_context(|| format!("cannot open {path}"))?.take(8).read_to_end(&mut head)?;
    Ok(head)
}

/// The whole report as one JSON document.
fn model_json(s: &Session, path: &str, placements: &HashMap<usize, nnrt::OpPlacement>, prepare_error: Option<&nnrt::Error>) -> Value {
    let model = s.model();
    let g = model.entry();
    let quant = |q: &Quantization| match q {
        Quantization::None => Value::Null,
        Quantization::PerTensor { scale, zero_point } => json!({"scale": f64::from(*scale), "zero_point": zero_point}),
        Quantization::PerAxis { scales, axis, .. } => json!({"axis": axis, "scales": scales.len()}),
    };
    let tensors = |list: &[nnrt::OperandId]| -> Vec<Value> {
        list.iter()
            .enumerate()
            .map(|(k, &id)| {
                let o = g.operand(id);
                json!({"index": k, "operand": id.index(), "name": o.name, "dtype": o.dtype.to_string(), "shape": o.shape.to_string(), "quantization": quant(&o.quant)})
            })
            .collect()
    };
    let ops: Vec<Value> = g
        .ops
        .iter()
        .enumerate()
        .map(|(i, op)| {
            let p = placements.get(&i);
            json!({
                "index": i,
                "kind": op.kind.name(),
                "inputs": op.inputs.iter().map(|x| x.map(|id| id.index())).collect::<Vec<_>>(),
                "outputs": op.outputs.iter().map(|id| id.index()).collect::<Vec<_>>(),
                "backend": p.map(|p| p.backend.clone()),
                "fallback_reason": p.and_then(|p| p.fallback_reason.clone()),
            })
        })
        .collect();
    let formats: Vec<Value> = s
        .package()
        .formats
        .iter()
        .map(|f| {
            json!({
                "format": f.format.name(),
                "identifier": f.format.identifier().escape_ascii().to_string(),
                "schema_version": f.schema_version,
                "description": f.description,
                "subgraphs": f.subgraphs,
                "signatures": f.signatures,
            })
        })
        .collect();
    let edgetpu: Vec<Value> = s.package().formats.iter().flat_map(|f| f.edgetpu.iter().map(darwinn_view::op_json)).collect();
    json!({
        "path": path,
        "formats": formats,
        "subgraphs": model.subgraphs.len(),
        "inputs": tensors(&g.inputs),
        "outputs": tensors(&g.outputs),
        "ops": ops,
        "prepared": prepare_error.is_none(),
        "prepare_error": prepare_error.map(|e| e.to_string()),
        "edgetpu_custom_ops": edgetpu,
    })
}
