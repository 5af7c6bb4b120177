//! `nnrt-compile`: a model, prepared by nnrt's own load → passes → partition (cpu) → plan, written
//! as an artifact: a Rust crate (static library and rlib) with a C header, and a parameters file.
//!
//! The crate's code holds the prepared graph as literals (operands with their dtypes, dims and
//! quantization; ops with their parameters), the steps nnrt's CPU backend chose (fusions
//! included), the memory plan as constant offsets and the inputs and outputs by name. At create
//! it maps the parameters file (checked against the model and kernel ABI hashes), builds the
//! kernels of those steps with `nnrt-backend-cpu` (weights are packed there, as at prepare) and
//! runs them over one arena: no loader, flatbuffers, serde, zip or wgpu, no shape inference,
//! partitioning or planning. What is not static (shapes known only at run time, IF/WHILE,
//! custom-op plugins, state tensors) is refused with the op and the reason.

pub mod lit;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use nnrt::Session;
use nnrt_core::{CompileCtx, Config, DType, OpId, Operand, OperandId, Subgraph};

use lit::Lit;

/// What `nnrt-compile` was asked for.
#[derive(Clone, Debug)]
pub struct Options {
    /// The method (ExecuTorch) or signature (TFLite) to compile; the default one when `None`.
    pub method: Option<String>,
    /// Threads of the artifact's kernel pool (its kernels are chosen for this count).
    pub threads: usize,
    /// The artifact's name (C prefix, crate name); from the model's file name when `None`.
    pub name: Option<String>,
    /// The nnrt source tree the generated crate depends on (its `aot/` crate).
    pub nnrt: PathBuf,
}

/// What was written.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The artifact's name.
    pub name: String,
    /// Ops of the prepared graph.
    pub ops: usize,
    /// Steps (kernels) after fusion.
    pub steps: usize,
    /// The arena's size in bytes (the runtime's plan).
    pub arena_size: usize,
    /// Bytes of the parameters file.
    pub params_bytes: usize,
    /// The files written.
    pub files: Vec<PathBuf>,
}

/// An identifier from `s`: lowercase ASCII letters, digits and `_`, not starting with a digit.
pub fn sanitize(s: &str) -> String {
    let mut out: String = s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    while out.contains("__") {
        out = out.replace("__", "_");
    }
    let out = out.trim_matches('_').to_string();
    match out.chars().next() {
        None => "model".into(),
        Some(c) if c.is_ascii_digit() => format!("m_{out}"),
        Some(_) => out,
    }
}

/// Names for the ports `names`, each sanitised and made unique (`_2`, `_3` … on a clash, also
/// with the by-index functions' `input_at` / `output_at`), with `fallback{i}` for an empty name.
fn port_names(names: &[String], fallback: &str) -> Vec<String> {
    // `set_input_at` / `get_output_at` are the by-index functions.
    let mut seen: std::collections::HashSet<String> = ["input_at", "output_at"].map(String::from).into();
    names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let base = if n.trim_matches(|c: char| !c.is_ascii_alphanumeric()).is_empty() { format!("{fallback}{i}") } else { sanitize(n) };
            let mut name = base.clone();
            let mut k = 2;
            while !seen.insert(name.clone()) {
                name = format!("{base}_{k}");
                k += 1;
            }
            name
        })
        .collect()
}

fn c_type(d: DType) -> &'static str {
    match d {
        DType::F32 | DType::C64 => "float",
        DType::F16 => "uint16_t",
        DType::I8 => "int8_t",
        DType::U8 | DType::Bool => "uint8_t",
        DType::I16 => "int16_t",
        DType::I32 => "int32_t",
        DType::I64 => "int64_t",
    }
}

fn rust_type(d: DType) -> &'static str {
    match d {
        DType::F32 | DType::C64 => "f32",
        DType::F16 => "u16",
        DType::I8 => "i8",
        DType::U8 | DType::Bool => "u8",
        DType::I16 => "i16",
        DType::I32 => "i32",
        DType::I64 => "i64",
    }
}

/// `NNFW_TYPE`'s value for a dtype.
fn nnfw_type(d: DType) -> i32 {
    match d {
        DType::F32 => 0,
        DType::I32 => 1,
        DType::U8 => 3,
        DType::Bool => 4,
        DType::I64 => 5,
        DType::I8 => 6,
        DType::I16 => 7,
        DType::F16 => 8,
        DType::C64 => 0,
    }
}

/// Why op `i` of the prepared graph cannot be compiled ahead of time, if it cannot.
fn refusal(s: &Session, g: &Subgraph, i: usize, backend: &str) -> Option<String> {
    let p = s.prepared()?;
    let op = &g.ops[i];
    let kind = op.kind.name();
    let at = format!("op {} ({kind})", p.origin()[i]);
    if backend != "cpu" {
        return Some(match op.kind {
            nnrt_core::OpKind::If { .. } | nnrt_core::OpKind::While { .. } => format!("{at} is control flow: IF and WHILE call subgraphs at run time, which an artifact does not do; compile the branches' models separately or run this model with nnpackage_run"),
            _ => format!("{at} runs on backend '{backend}' (a custom-op plugin or a device), not on nnrt's CPU kernels, which are all an artifact links"),
        });
    }
    for id in op.inputs.iter().flatten().chain(&op.outputs) {
        let o = g.operand(*id);
        if p.is_dynamic(*id) {
            return Some(format!("{at}: tensor {id} ('{}') has a shape known only at run time; an artifact's memory plan is static (set the input shapes with --shape or export with static shapes)", o.name));
        }
    }
    None
}

/// Compiles the model at `model` into an artifact in `out`.
pub fn compile(model: &Path, out: &Path, opts: &Options, shapes: &[(usize, Vec<usize>)]) -> Result<Summary> {
    let aot_crate = opts.nnrt.join("aot");
    if !aot_crate.join("Cargo.toml").is_file() {
        bail!("{}: no nnrt-aot crate there (aot/Cargo.toml); give the nnrt source tree with --nnrt DIR", opts.nnrt.display());
    }
    let mut s = Session::load(model)?;
    if let Some(m) = &opts.method {
        s.select_signature(m)?;
    }
    s.set_backends("cpu")?;
    s.set_threads(opts.threads)?;
    for (i, dims) in shapes {
        s.set_input_shape(*i, dims)?;
    }
    s.prepare()?;
    let p = s.prepared().context("the model was not prepared")?;
    let g = p.graph();
    let backends: Vec<String> = p.assignments().map(|(b, _)| b.to_string()).collect();
    let refused: Vec<String> = (0..g.ops.len()).filter_map(|i| refusal(&s, g, i, &backends[i])).collect();
    if !refused.is_empty() {
        bail!("{}: cannot compile ahead of time:\n  {}", model.display(), refused.join("\n  "));
    }
    for &id in g.inputs.iter().chain(&g.outputs) {
        if p.is_dynamic(id) {
            bail!("{}: tensor {id} ('{}') has a shape known only at run time", model.display(), g.operand(id).name);
        }
    }
    let n = g.operands.len();
    let dims: Vec<Vec<usize>> = (0..n).map(|i| p.dims(OperandId::new(i)).to_vec()).collect();
    let ids: Vec<OpId> = p.partitions().iter().flat_map(|part| part.ops.iter().copied()).collect();
    let config = Config::default();
    let ctx = CompileCtx { graph: g, shapes: &dims, threads: opts.threads, config: &config, origin: p.origin() };
    // The steps, with every weight block their packers make (written after the constants).
    let (steps, blocks) = nnrt_backend_cpu::prepack::record(|| nnrt_backend_cpu::aot::steps(&ctx, &ids));
    let steps = steps?;
    let hints = nnrt_backend_cpu::aot::plan_hints(&steps);
    let plan = nnrt_core::plan_for_threads(g, &dims, &vec![false; n], &hints, opts.threads)?;
    // The runtime's arena holds the plan plus a cache line of slack (TensorArena::try_new); the
    // artifact's is made the same way.
    if plan.size.div_ceil(8) * 8 + 64 != p.arena_size() {
        bail!("internal: the artifact's memory plan ({} bytes) differs from the runtime's ({} bytes)", plan.size, p.arena_size());
    }

    let stem = model.file_stem().and_then(|s| s.to_str()).unwrap_or("model");
    let name = sanitize(opts.name.as_deref().unwrap_or(stem));
    let upper = name.to_ascii_uppercase();

    // Constants, in operand order.
    let mut constants: Vec<&[u8]> = Vec::new();
    let mut const_index = vec![None; n];
    for (i, o) in g.operands.iter().enumerate() {
        if let Some(d) = &o.data {
            const_index[i] = Some(constants.len());
            constants.push(d.bytes());
        }
    }

    let first_packed = constants.len();
    constants.extend(blocks.iter().map(|b| b.bytes.as_slice()));
    let graph_code = graph_fn(g, &dims, &const_index);
    let mut hash = nnrt_aot::fnv(nnrt_aot::FNV_OFFSET, graph_code.as_bytes());
    for c in &constants {
        hash = nnrt_aot::fnv(hash, &(c.len() as u64).to_le_bytes());
        hash = nnrt_aot::fnv(hash, c);
    }

    let in_names = port_names(&g.inputs.iter().map(|&i| g.operand(i).name.clone()).collect::<Vec<_>>(), "input");
    let out_names = port_names(&g.outputs.iter().map(|&i| g.operand(i).name.clone()).collect::<Vec<_>>(), "output");
    let ports = |list: &[OperandId]| -> String {
        list.iter()
            .map(|&id| {
                let o = g.operand(id);
                format!("nnrt_aot::Port {{ name: {:?}, operand: {}, dtype: {}, dims: &{:?} }}", o.name, id.0, o.dtype.lit(), dims[id.index()])
            })
            .collect::<Vec<_>>()
            .join(",\n    ")
    };
    let step_ops: Vec<Vec<u32>> = steps.iter().map(|s| s.ops().iter().map(|o| o.0).collect()).collect();

    let mut src = String::new();
    let w = &mut src;
    let _ = writeln!(w, "//! Artifact `{name}`, generated by nnrt-compile {} from `{}`{}. Do not edit: regenerate.", env!("CARGO_PKG_VERSION"), model.file_name().and_then(|f| f.to_str()).unwrap_or(""), opts.method.as_ref().map(|m| format!(" (method {m})")).unwrap_or_default());
    let _ = writeln!(w, "//!\n//! {} ops in {} steps on {} thread(s); arena {} bytes; {} constants in the parameters file.", g.ops.len(), steps.len(), opts.threads, plan.size, constants.len());
    let _ = writeln!(w, "#![allow(clippy::all, unsafe_code)]\n\nuse nnrt_aot::core as n;\nuse nnrt_aot::{{Artifact, Error, Params}};\n");
    let _ = writeln!(w, "/// The model's hash: the parameters file must carry the same.\npub const MODEL_HASH: u64 = {hash:#018x};");
    let _ = writeln!(w, "/// Bytes of the tensor arena (nnrt's memory plan for this model).\npub const ARENA_SIZE: usize = {};", plan.size);
    let _ = writeln!(w, "/// Threads of the kernel pool.\npub const THREADS: usize = {};", opts.threads);
    let _ = writeln!(w, "const CONSTANTS: usize = {};\n", constants.len());
    let _ = writeln!(w, "/// Graph inputs, in order.\npub const INPUTS: &[nnrt_aot::Port] = &[\n    {}\n];", ports(&g.inputs));
    let _ = writeln!(w, "/// Graph outputs, in order.\npub const OUTPUTS: &[nnrt_aot::Port] = &[\n    {}\n];\n", ports(&g.outputs));
    let _ = writeln!(w, "/// The ops of each kernel step, as nnrt's runtime chose them (fusions included).\nconst STEPS: &[&[u32]] = &[");
    for (s, ops) in steps.iter().zip(&step_ops) {
        let _ = writeln!(w, "    &{ops:?}, // {}", s.kind());
    }
    let _ = writeln!(w, "];\n\n/// The weight blocks packed at compile time, in the order the steps ask for them.\nconst PACKED: &[nnrt_aot::Packed] = &[");
    for b in &blocks {
        let _ = writeln!(w, "    nnrt_aot::Packed {{ tag: {}, facts: {:?}, elem: {}, bytes: {} }},", b.key.tag, b.key.facts, b.key.elem, b.bytes.len());
    }
    let _ = writeln!(w, "];\n\n/// Each operand's byte range in the arena.\nconst SLOTS: &[Option<(usize, usize)>] = &[");
    for (i, s) in plan.slots.iter().enumerate() {
        let _ = writeln!(w, "    {}, // {}", s.as_ref().map_or("None".to_string(), |r| format!("Some(({}, {}))", r.start, r.end)), i);
    }
    let _ = writeln!(w, "];\n\n/// Each operand's dims.\nconst DIMS: &[&[usize]] = &[");
    for d in &dims {
        let _ = writeln!(w, "    &{d:?},");
    }
    let origin: Vec<u32> = p.origin().iter().map(|o| o.0).collect();
    let _ = writeln!(w, "];\n\n/// Each op's index in the model as loaded.\nconst ORIGIN: &[u32] = &{origin:?};\n");
    w.push_str(&graph_code);
    let _ = writeln!(
        w,
        r#"
/// Maps the parameters file at `params_path`, checks it, builds the kernels and the arena.
pub fn create(params_path: &str) -> Result<Artifact, Error> {{
    let params = Params::open(params_path, MODEL_HASH, CONSTANTS)?;
    let graph = graph(&params)?;
    let plan = nnrt_aot::Plan {{
        name: {name:?},
        threads: THREADS,
        dims: DIMS.iter().map(|d| d.to_vec()).collect(),
        origin: ORIGIN.iter().map(|&i| n::OpId(i)).collect(),
        steps: STEPS,
        arena_size: ARENA_SIZE,
        slots: SLOTS,
        inputs: INPUTS,
        outputs: OUTPUTS,
        packed: PACKED,
        first_packed: {first_packed},
    }};
    Artifact::new(params, graph, plan)
}}
"#
    );
    for (k, (&id, pn)) in g.inputs.iter().zip(&in_names).enumerate() {
        let t = rust_type(g.operand(id).dtype);
        let _ = writeln!(w, "/// Sets input {k} (`{}`).\npub fn set_{pn}(a: &mut Artifact, data: &[{t}]) -> Result<(), Error> {{\n    a.set_input({k}, nnrt_aot::bytes_of(data))\n}}\n", g.operand(id).name);
    }
    for (k, (&id, pn)) in g.outputs.iter().zip(&out_names).enumerate() {
        let t = rust_type(g.operand(id).dtype);
        let _ = writeln!(w, "/// Output {k} (`{}`) after a run.\npub fn get_{pn}(a: &Artifact) -> Result<Vec<{t}>, Error> {{\n    a.output({k}).map(nnrt_aot::values_of)\n}}\n", g.operand(id).name);
    }
    // The C interface.
    let _ = writeln!(w, "// ---- C interface (include/{name}.h) ----\n\nuse std::ffi::{{c_char, c_void}};\n");
    let c = |w: &mut String, sig: &str, body: &str| {
        let _ = writeln!(w, "#[no_mangle]\npub unsafe extern \"C\" fn {sig} {{\n    unsafe {{ {body} }}\n}}\n");
    };
    c(w, &format!("{name}_create(params_path: *const c_char, out: *mut *mut Artifact) -> i32"), &format!("nnrt_aot::ffi::create(\"{name}_create\", params_path, out, create)"));
    c(w, &format!("{name}_set_input_at(a: *mut Artifact, index: u32, data: *const c_void, bytes: usize) -> i32"), &format!("nnrt_aot::ffi::set_input(\"{name}_set_input_at\", a, index, data, bytes)"));
    for (k, pn) in in_names.iter().enumerate() {
        c(w, &format!("{name}_set_{pn}(a: *mut Artifact, data: *const c_void, bytes: usize) -> i32"), &format!("nnrt_aot::ffi::set_input(\"{name}_set_{pn}\", a, {k}, data, bytes)"));
    }
    c(w, &format!("{name}_run(a: *mut Artifact) -> i32"), &format!("nnrt_aot::ffi::run(\"{name}_run\", a)"));
    c(w, &format!("{name}_get_output_at(a: *mut Artifact, index: u32, data: *mut c_void, bytes: usize) -> i32"), &format!("nnrt_aot::ffi::get_output(\"{name}_get_output_at\", a, index, data, bytes)"));
    for (k, pn) in out_names.iter().enumerate() {
        c(w, &format!("{name}_get_{pn}(a: *mut Artifact, data: *mut c_void, bytes: usize) -> i32"), &format!("nnrt_aot::ffi::get_output(\"{name}_get_{pn}\", a, {k}, data, bytes)"));
    }
    let _ = writeln!(w, "#[no_mangle]\npub extern \"C\" fn {name}_last_error() -> *const c_char {{\n    nnrt_aot::ffi::last_error()\n}}\n");
    c(w, &format!("{name}_packed_blocks(a: *mut Artifact, mapped: *mut u32, total: *mut u32) -> i32"), &format!("nnrt_aot::ffi::packed_blocks(\"{name}_packed_blocks\", a, mapped, total)"));
    c(w, &format!("{name}_destroy(a: *mut Artifact)"), "nnrt_aot::ffi::destroy(a)");

    // The header.
    let mut h = String::new();
    let hw = &mut h;
    let _ = writeln!(hw, "/* Artifact {name}: generated by nnrt-compile {} from {}. Do not edit: regenerate. */", env!("CARGO_PKG_VERSION"), model.file_name().and_then(|f| f.to_str()).unwrap_or(""));
    let _ = writeln!(hw, "#ifndef {upper}_H\n#define {upper}_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {{\n#endif\n");
    let _ = writeln!(hw, "/* Status codes: the values of nnfw.h's NNFW_STATUS. */\n#define {upper}_OK 0\n#define {upper}_ERROR 1\n#define {upper}_UNEXPECTED_NULL 2\n#define {upper}_INVALID_STATE 3\n#define {upper}_INSUFFICIENT_OUTPUT_SIZE 5\n");
    let _ = writeln!(hw, "/* Element types: the values of nnfw.h's NNFW_TYPE. */\n#define {upper}_TYPE_FLOAT32 0\n#define {upper}_TYPE_INT32 1\n#define {upper}_TYPE_UINT8 3\n#define {upper}_TYPE_BOOL 4\n#define {upper}_TYPE_INT64 5\n#define {upper}_TYPE_INT8 6\n#define {upper}_TYPE_INT16 7\n#define {upper}_TYPE_FLOAT16 8\n");
    let _ = writeln!(hw, "#define {upper}_INPUT_COUNT {}\n#define {upper}_OUTPUT_COUNT {}\n#define {upper}_ARENA_BYTES {}\n", g.inputs.len(), g.outputs.len(), plan.size);
    let port_defs = |hw: &mut String, kind: &str, list: &[OperandId], names: &[String]| {
        for (k, (&id, pn)) in list.iter().zip(names).enumerate() {
            let o: &Operand = g.operand(id);
            let d = &dims[id.index()];
            let pu = pn.to_ascii_uppercase();
            let _ = writeln!(hw, "/* {kind} {k}: '{}', {} {:?} */", o.name.replace("*/", "* /"), o.dtype, d);
            let _ = writeln!(hw, "#define {upper}_{kind}_{pu}_INDEX {k}\n#define {upper}_{kind}_{pu}_TYPE {}\n#define {upper}_{kind}_{pu}_RANK {}", nnfw_type(o.dtype), d.len());
            let _ = writeln!(hw, "#define {upper}_{kind}_{pu}_DIMS {{{}}}", d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "));
            let _ = writeln!(hw, "#define {upper}_{kind}_{pu}_BYTES {}", d.iter().product::<usize>() * o.dtype.size());
            if let nnrt_core::Quantization::PerTensor { scale, zero_point } = o.quant {
                let _ = writeln!(hw, "#define {upper}_{kind}_{pu}_SCALE {scale:e}f\n#define {upper}_{kind}_{pu}_ZERO_POINT {zero_point}");
            }
            let _ = writeln!(hw);
        }
    };
    port_defs(hw, "INPUT", &g.inputs, &in_names);
    port_defs(hw, "OUTPUT", &g.outputs, &out_names);
    let _ = writeln!(hw, "/** An instance of the artifact: its kernels and arena. One thread at a time per instance. */\ntypedef struct {name} {name};\n");
    let _ = writeln!(hw, "/** Maps the parameters file, checks it belongs to this artifact and nnrt version, builds the kernels.\n *  On failure *out is NULL and {name}_last_error() says why. */\nint {name}_create(const char *params_path, {name} **out);");
    let _ = writeln!(hw, "/** Copies `bytes` bytes (exactly the input's size) into input `index`. */\nint {name}_set_input_at({name} *a, uint32_t index, const void *data, size_t bytes);");
    for (&id, pn) in g.inputs.iter().zip(&in_names) {
        let _ = writeln!(hw, "int {name}_set_{pn}({name} *a, const void *data, size_t bytes); /* {} */", c_type(g.operand(id).dtype));
    }
    let _ = writeln!(hw, "/** Runs the model on the inputs set. */\nint {name}_run({name} *a);");
    let _ = writeln!(hw, "/** Copies output `index` into `data` (`bytes` of room, at least the output's size); after a run. */\nint {name}_get_output_at({name} *a, uint32_t index, void *data, size_t bytes);");
    for (&id, pn) in g.outputs.iter().zip(&out_names) {
        let _ = writeln!(hw, "int {name}_get_{pn}({name} *a, void *data, size_t bytes); /* {} */", c_type(g.operand(id).dtype));
    }
    let _ = writeln!(hw, "/** Of the weight blocks packed by nnrt-compile, how many were used as they are (mapped) out of all;\n *  fewer on a CPU with another instruction set (those were packed at create). */\nint {name}_packed_blocks({name} *a, uint32_t *mapped, uint32_t *total);");
    let _ = writeln!(hw, "/** The message of the last failing call on this thread. */\nconst char *{name}_last_error(void);\n/** Frees an instance (NULL does nothing). */\nvoid {name}_destroy({name} *a);\n");
    let _ = writeln!(hw, "#ifdef __cplusplus\n}}\n#endif\n\n#endif /* {upper}_H */");

    let nnrt_dir = opts.nnrt.canonicalize().with_context(|| opts.nnrt.display().to_string())?;
    let cargo = format!(
        "# Artifact {name}, generated by nnrt-compile {}. Build: cargo build --release (static library target/release/lib{name}.a).\n[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[lib]\npath = \"src/lib.rs\"\ncrate-type = [\"staticlib\", \"rlib\"]\n\n[dependencies]\nnnrt-aot = {{ path = {:?} }}\n\n[profile.release]\ndebug = \"line-tables-only\"\ncodegen-units = 16\n\n[workspace]\n",
        env!("CARGO_PKG_VERSION"),
        nnrt_dir.join("aot").display().to_string()
    );
    let params = nnrt_aot::write_params(hash, &constants);
    let sizes = |l: &[OperandId]| match l.is_empty() {
        true => "0".to_string(),
        false => l.iter().map(|&id| (dims[id.index()].iter().product::<usize>() * g.operand(id).dtype.size()).to_string()).collect::<Vec<_>>().join(", "),
    };

    let files = [
        (out.join("Cargo.toml"), cargo.into_bytes()),
        (out.join("src").join("lib.rs"), src.into_bytes()),
        (out.join("include").join(format!("{name}.h")), h.into_bytes()),
        (out.join(format!("{name}.params")), params.clone()),
        (out.join("example").join("main.c"), example_c(&name, &sizes(&g.outputs)).into_bytes()),
    ];
    let mut written = Vec::new();
    for (path, bytes) in &files {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path.clone());
    }
    // The same dependency versions as the nnrt tree the crate builds against.
    let lock = nnrt_dir.join("Cargo.lock");
    if lock.is_file() {
        std::fs::copy(&lock, out.join("Cargo.lock")).with_context(|| format!("cannot copy {}", lock.display()))?;
    }
    Ok(Summary { name, ops: g.ops.len(), steps: steps.len(), arena_size: plan.size, params_bytes: params.len(), files: written })
}

/// The prepared graph as a function that rebuilds it from the parameters file.
fn graph_fn(g: &Subgraph, dims: &[Vec<usize>], const_index: &[Option<usize>]) -> String {
    let mut w = String::new();
    let _ = writeln!(w, "/// The graph nnrt prepared, with its constants borrowed from `p`.\nfn graph(p: &Params) -> Result<n::Subgraph, Error> {{");
    let _ = writeln!(w, "    let mut g = n::Subgraph {{ name: {}, numerics: {}, ..Default::default() }};", g.name.lit(), g.numerics.lit());
    let _ = writeln!(w, "    g.operands.reserve_exact({});", g.operands.len());
    for (i, o) in g.operands.iter().enumerate() {
        let data = match (const_index[i], &o.data) {
            (Some(k), Some(d)) => format!("Some(p.constant({k}, {})?)", d.len()),
            _ => "None".into(),
        };
        let _ = writeln!(
            w,
            "    g.operands.push(nnrt_aot::operand({:?}, {}, &{:?}, {}, {}, {data}, {})); // {i}",
            o.name,
            o.dtype.lit(),
            dims[i],
            o.layout.lit(),
            o.quant.lit(),
            o.is_variable
        );
    }
    let _ = writeln!(w, "    g.ops.reserve_exact({});", g.ops.len());
    for (i, op) in g.ops.iter().enumerate() {
        let ins: Vec<String> = op.inputs.iter().map(|x| x.map_or("None".into(), |id| format!("Some({})", id.0))).collect();
        let outs: Vec<String> = op.outputs.iter().map(|id| id.0.to_string()).collect();
        let _ = writeln!(w, "    g.ops.push(nnrt_aot::op({}, &[{}], &[{}])); // {i}", op.kind.lit(), ins.join(", "), outs.join(", "));
    }
    let ids = |l: &[OperandId]| l.iter().map(|i| i.0.to_string()).collect::<Vec<_>>().join(", ");
    let _ = writeln!(w, "    g.inputs = nnrt_aot::ids(&[{}]);\n    g.outputs = nnrt_aot::ids(&[{}]);\n    Ok(g)\n}}", ids(&g.inputs), ids(&g.outputs));
    w
}

/// A C program that runs the artifact once: each input read from a raw file, each output written
/// to one (the worked example of the README, and what the tests link).
fn example_c(name: &str, out_sizes: &str) -> String {
    let upper = name.to_ascii_uppercase();
    format!(
        r#"/* Runs artifact {name} once: {name}_example PARAMS IN_0.raw ... OUT_0.raw ...
 * Each input file holds the input's bytes exactly; each output is written raw. With NNRT_AOT_TIMES
 * set in the environment it prints the create and first-run times to stderr. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "{name}.h"

static const size_t out_bytes[] = {{{out_sizes}}};

static int fail(const char *what) {{
  fprintf(stderr, "%s: %s\n", what, {name}_last_error());
  return 1;
}}

int main(int argc, char **argv) {{
  if (argc != 2 + {upper}_INPUT_COUNT + {upper}_OUTPUT_COUNT) {{
    fprintf(stderr, "usage: %s PARAMS INPUT.raw x%d OUTPUT.raw x%d\n", argv[0], {upper}_INPUT_COUNT, {upper}_OUTPUT_COUNT);
    return 2;
  }}
  {name} *a = NULL;
  struct timespec t0, t1, t2;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if ({name}_create(argv[1], &a) != {upper}_OK) return fail("create");
  clock_gettime(CLOCK_MONOTONIC, &t1);
  for (int i = 0; i < {upper}_INPUT_COUNT; i++) {{
    FILE *f = fopen(argv[2 + i], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) {{ perror(argv[2 + i]); return 1; }}
    long size = ftell(f);
    rewind(f);
    if (size < 0) {{ perror(argv[2 + i]); return 1; }}
    void *buf = malloc(size ? (size_t)size : 1);
    size_t got = fread(buf, 1, (size_t)size, f);
    fclose(f);
    /* set_input_at checks the size: exactly {upper}'s input size. */
    if ({name}_set_input_at(a, (uint32_t)i, buf, got) != {upper}_OK) return fail("set_input_at");
    free(buf);
  }}
  if ({name}_run(a) != {upper}_OK) return fail("run");
  clock_gettime(CLOCK_MONOTONIC, &t2);
  if (getenv("NNRT_AOT_TIMES")) {{
    uint32_t mapped = 0, total = 0;
    {name}_packed_blocks(a, &mapped, &total);
    fprintf(stderr, "create %.3f ms, first run %.3f ms, %u of %u packed weight blocks mapped\n",
            (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
            (t2.tv_sec - t1.tv_sec) * 1e3 + (t2.tv_nsec - t1.tv_nsec) / 1e6, mapped, total);
  }}
  for (int i = 0; i < {upper}_OUTPUT_COUNT; i++) {{
    void *buf = malloc(out_bytes[i] ? out_bytes[i] : 1);
    if ({name}_get_output_at(a, (uint32_t)i, buf, out_bytes[i]) != {upper}_OK) return fail("get_output_at");
    FILE *f = fopen(argv[2 + {upper}_INPUT_COUNT + i], "wb");
    if (!f || fwrite(buf, 1, out_bytes[i], f) != out_bytes[i]) {{ perror(argv[2 + {upper}_INPUT_COUNT + i]); return 1; }}
    fclose(f);
    free(buf);
  }}
  {name}_destroy(a);
  return 0;
}}
"#,
    )
}
