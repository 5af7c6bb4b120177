//! `nnrt-inspect --dot`: the prepared graph as Graphviz. Ops are nodes filled with their
//! backend's colour; a tensor an op reads is an edge labelled with its shape and dtype; the
//! copies a gpu partition makes are nodes of their own (an upload for each tensor it reads from
//! the host, a download for each tensor it produces that is used outside it, as
//! `backends/gpu/src/exec.rs` plans them); a transpose between NCHW and NHWC says so; the
//! subgraphs IF and WHILE call are clusters, placed when they are called (their ops are drawn
//! unplaced).

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use nnrt::{OpKind, Session, Subgraph, SubgraphId};

/// Fill colours by backend; other backends get the last one.
const COLOURS: &[(&str, &str)] = &[("cpu", "#9ecae1"), ("gpu", "#a1d99b"), ("custom", "#fdae6b"), ("core", "#d9d9d9")];
const OTHER: &str = "#bcbddc";

fn colour(backend: &str) -> &'static str {
    COLOURS.iter().find(|(b, _)| *b == backend).map_or(OTHER, |(_, c)| c)
}

/// A string as a quoted DOT string (`"` and `\` escaped, newlines as DOT line breaks).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Where each op of a drawn subgraph runs: (backend, partition index, fallback reason), or
/// `None` for a subgraph not placed (a callee, or a model whose prepare failed).
type Placement<'a> = Option<Vec<(&'a str, usize, Option<&'a str>)>>;

/// One subgraph to draw: its ops, operand dims and placement.
struct Drawn<'a> {
    graph: &'a Subgraph,
    /// The id its nodes are prefixed with.
    key: String,
    /// Model op index of each op (the prepared graph renumbers after folding).
    origin: Vec<usize>,
    dims: Box<dyn Fn(nnrt::OperandId) -> String + 'a>,
    placement: Placement<'a>,
}

/// The whole document for `s` (prepared, or not when `prepare_error` is given).
pub fn render(s: &Session, path: &str, prepare_error: Option<&nnrt::Error>) -> String {
    let model = s.model();
    let entry_id = s.entry();
    let backends = s.config().get("BACKENDS").unwrap_or("cpu").to_string();
    let mut out = String::new();
    let mut title = format!("{path}\nbackends {backends}");
    if let Some(e) = prepare_error {
        title.push_str(&format!("\nprepare failed: {e}"));
    }
    let _ = writeln!(out, "digraph nnrt {{");
    let _ = writeln!(out, "  graph [label={}, labelloc=t, fontname=\"Helvetica\", compound=true, newrank=true];", quote(&title));
    let _ = writeln!(out, "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", fontsize=10];");
    let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=8];");

    let entry = match (s.prepared(), prepare_error) {
        (Some(p), None) => {
            let names: Vec<(&str, Option<&str>)> = p.assignments().collect();
            let mut part_of = vec![0; names.len()];
            for (k, part) in p.partitions().iter().enumerate() {
                for op in &part.ops {
                    if let Some(slot) = part_of.get_mut(op.index()) {
                        *slot = k;
                    }
                }
            }
            let placement = names.iter().zip(&part_of).map(|(&(b, why), &k)| (b, k, why)).collect();
            let graph = p.graph();
            Drawn {
                graph,
                key: "s0".into(),
                origin: p.origin().iter().map(|o| o.index()).collect(),
                dims: Box::new(move |id| format!("{} {}", dims_text(p.dims(id)), graph.operand(id).dtype)),
                placement: Some(placement),
            }
        }
        _ => {
            let graph = model.subgraph(entry_id).unwrap_or_else(|| model.entry());
            unplaced(graph, "s0".into())
        }
    };
    let mut legend: Vec<&str> = entry.placement.iter().flatten().map(|(b, _, _)| *b).collect();
    legend.sort_unstable();
    legend.dedup();

    // The subgraphs control flow calls, reachable from the entry, each drawn once.
    let mut callees: Vec<(SubgraphId, String)> = Vec::new();
    let mut queue = vec![entry.graph];
    let mut seen: HashSet<SubgraphId> = HashSet::from([entry_id]);
    while let Some(g) = queue.pop() {
        for op in &g.ops {
            for (id, _) in called(&op.kind) {
                if seen.insert(id) {
                    if let Some(sub) = model.subgraph(id) {
                        callees.push((id, sub.name.clone()));
                        queue.push(sub);
                    }
                }
            }
        }
    }
    let entry_label = format!("subgraph {} '{}' (runs, prepared)", entry_id.index(), entry.graph.name);
    let mut links = Vec::new();
    draw(&mut out, &entry, &entry_label, &mut links);
    for (id, name) in &callees {
        if let Some(sub) = model.subgraph(*id) {
            let d = unplaced(sub, format!("s{}", id.index() + 1));
            draw(&mut out, &d, &format!("subgraph {} '{name}' (placed when called)", id.index()), &mut links);
        }
    }
    // Control-flow edges: from the calling op to the callee's cluster.
    for (from, callee, role) in links {
        let target = format!("s{}_anchor", callee.index() + 1);
        let _ = writeln!(out, "  {from} -> {target} [style=dashed, label={}, lhead=cluster_s{}];", quote(role), callee.index() + 1);
    }
    if !legend.is_empty() {
        let _ = writeln!(out, "  subgraph cluster_legend {{\n    label=\"backends\"; fontsize=10;");
        for b in &legend {
            let _ = writeln!(out, "    legend_{} [label={}, fillcolor=\"{}\"];", b.replace(|c: char| !c.is_ascii_alphanumeric(), "_"), quote(b), colour(b));
        }
        let _ = writeln!(out, "    legend_copy [label=\"host <-> gpu copy\", shape=box, style=\"dashed\"];\n  }}");
    }
    let _ = writeln!(out, "}}");
    out
}

/// A subgraph drawn with its declared shapes and no placement.
fn unplaced(graph: &Subgraph, key: String) -> Drawn<'_> {
    Drawn {
        graph,
        key,
        origin: (0..graph.ops.len()).collect(),
        dims: Box::new(move |id| format!("{} {}", graph.operand(id).shape, graph.operand(id).dtype)),
        placement: None,
    }
}

fn dims_text(dims: &[usize]) -> String {
    if dims.is_empty() {
        return "scalar".into();
    }
    dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x")
}

/// For a TRANSPOSE between the two image layouts (a constant permutation of 4-D tensors), the
/// layout change it makes: the permutes the ExecuTorch reader puts around NCHW image ops show as
/// such (`NCHW -> NHWC`).
fn layout_permute(g: &Subgraph, op: &nnrt::Operation) -> Option<&'static str> {
    if !matches!(op.kind, OpKind::Transpose) {
        return None;
    }
    let perm = g.operands.get(op.input(1)?.index())?;
    if perm.dtype != nnrt::DType::I32 {
        return None;
    }
    let bytes = perm.data.as_ref()?.bytes();
    let p: Vec<i32> = bytes.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    match p.as_slice() {
        [0, 2, 3, 1] => Some("NCHW -> NHWC"),
        [0, 3, 1, 2] => Some("NHWC -> NCHW"),
        _ => None,
    }
}

/// The subgraphs an op calls, with their roles.
fn called(kind: &OpKind) -> Vec<(SubgraphId, &'static str)> {
    match kind {
        OpKind::If { then_branch, else_branch } => vec![(*then_branch, "then"), (*else_branch, "else")],
        OpKind::While { cond, body } => vec![(*cond, "cond"), (*body, "body")],
        _ => Vec::new(),
    }
}

/// Writes one subgraph as a cluster (its ops, inputs, outputs, copies and edges); control-flow calls go to `links` (node, callee, role).
fn draw(out: &mut String, d: &Drawn<'_>, label: &str, links: &mut Vec<(String, SubgraphId, &'static str)>) {
    let k = &d.key;
    let g = d.graph;
    let _ = writeln!(out, "  subgraph cluster_{k} {{\n    label={}; fontsize=11;", quote(label));
    // An invisible point every cluster has, for edges that point at the cluster as a whole.
    let _ = writeln!(out, "    {k}_anchor [shape=point, style=invis];");
    let constant = |id: nnrt::OperandId| g.operands.get(id.index()).is_none_or(|o| o.data.is_some());
    let mut producer: HashMap<nnrt::OperandId, usize> = HashMap::new();
    for (i, op) in g.ops.iter().enumerate() {
        for &o in &op.outputs {
            producer.insert(o, i);
        }
    }
    for (n, &id) in g.inputs.iter().enumerate() {
        let o = g.operand(id);
        let _ = writeln!(out, "    {k}_in{n} [shape=ellipse, style=filled, fillcolor=\"#f0f0f0\", label={}];", quote(&format!("input {n}\n{}", o.name)));
    }
    for (i, op) in g.ops.iter().enumerate() {
        let index = d.origin.get(i).copied().unwrap_or(i);
        let (fill, backend_line, tooltip) = match d.placement.as_ref().and_then(|p| p.get(i)) {
            Some(&(b, _, why)) => (colour(b), b.to_string(), why.map(|w| format!("fallback: {w}"))),
            None => ("white", String::from("-"), None),
        };
        let tip = tooltip.map(|t| format!(", tooltip={}", quote(&t))).unwrap_or_default();
        let style = if tip.is_empty() { "" } else { ", penwidth=2, color=\"#d62728\"" };
        let layout = layout_permute(g, op).map(|p| format!("\n{p}")).unwrap_or_default();
        let _ = writeln!(out, "    {k}_op{i} [label={}, fillcolor=\"{fill}\"{tip}{style}];", quote(&format!("#{index} {}{layout}\n{backend_line}", op.kind.name())));
        for (callee, role) in called(&op.kind) {
            links.push((format!("{k}_op{i}"), callee, role));
        }
    }
    for (n, _) in g.outputs.iter().enumerate() {
        let name = &g.operand(g.outputs[n]).name;
        let _ = writeln!(out, "    {k}_out{n} [shape=ellipse, style=filled, fillcolor=\"#f0f0f0\", label={}];", quote(&format!("output {n}\n{name}")));
    }

    // Partition of each op and whether it is a gpu one (copies happen only at their borders).
    let part = |op: usize| d.placement.as_ref().and_then(|p| p.get(op)).map(|&(b, k, _)| (b, k));
    let on_gpu = |op: usize| part(op).is_some_and(|(b, _)| b == "gpu");
    let mut uploads: HashSet<(usize, nnrt::OperandId)> = HashSet::new();
    let mut downloads: HashSet<nnrt::OperandId> = HashSet::new();
    // The node a consumer outside the producer's partition reads tensor `t` from.
    let mut source = |out: &mut String, t: nnrt::OperandId, reader_part: Option<usize>| -> Option<String> {
        let label = quote(&(d.dims)(t));
        match producer.get(&t) {
            Some(&p) if on_gpu(p) && part(p).map(|x| x.1) != reader_part => {
                let node = format!("{k}_dl{}", t.index());
                if downloads.insert(t) {
                    let _ = writeln!(out, "  {node} [label=\"download\\ngpu -> host\", shape=box, style=dashed, fontsize=8];");
                    let _ = writeln!(out, "  {k}_op{p} -> {node} [label={label}];");
                }
                Some(node)
            }
            Some(&p) => Some(format!("{k}_op{p}")),
            None => g.inputs.iter().position(|&i| i == t).map(|n| format!("{k}_in{n}")),
        }
    };
    for (c, op) in g.ops.iter().enumerate() {
        let reader_part = part(c).map(|x| x.1);
        let mut drawn: HashSet<nnrt::OperandId> = HashSet::new();
        for t in op.inputs.iter().flatten().copied() {
            if constant(t) || !drawn.insert(t) {
                continue;
            }
            let label = quote(&(d.dims)(t));
            let from_same_part = producer.get(&t).is_some_and(|&p| part(p).map(|x| x.1) == reader_part && reader_part.is_some());
            let Some(src) = source(out, t, reader_part) else { continue };
            if on_gpu(c) && !from_same_part {
                let part_k = reader_part.unwrap_or(0);
                let node = format!("{k}_ul{part_k}_{}", t.index());
                if uploads.insert((part_k, t)) {
                    let _ = writeln!(out, "  {node} [label=\"upload\\nhost -> gpu\", shape=box, style=dashed, fontsize=8];");
                    let _ = writeln!(out, "  {src} -> {node} [label={label}];");
                }
                let _ = writeln!(out, "  {node} -> {k}_op{c};");
            } else {
                let _ = writeln!(out, "  {src} -> {k}_op{c} [label={label}];");
            }
        }
    }
    for (n, &t) in g.outputs.iter().enumerate() {
        let label = quote(&(d.dims)(t));
        if let Some(src) = source(out, t, None) {
            let _ = writeln!(out, "  {src} -> {k}_out{n} [label={label}];");
        }
    }
    // Closed after the copies and edges, so the copy nodes sit inside the subgraph's cluster.
    let _ = writeln!(out, "  }}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_what_dot_reads_specially() {
        assert_eq!(quote("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(dims_text(&[1, 224, 224, 3]), "1x224x224x3");
        assert_eq!(dims_text(&[]), "scalar");
    }

    #[test]
    fn transposes_between_image_layouts_are_named() {
        let mut g = Subgraph::default();
        let x = g.add_operand(nnrt::Operand::new("x", nnrt::DType::F32, &[1, 3, 8, 8]));
        let y = g.add_operand(nnrt::Operand::new("y", nnrt::DType::F32, &[1, 8, 8, 3]));
        let mut named = Vec::new();
        for perm in [[0i32, 2, 3, 1], [0, 3, 1, 2], [0, 1, 3, 2]] {
            let mut p = nnrt::Operand::new("perm", nnrt::DType::I32, &[4]);
            p.data = Some(nnrt::ConstData::owned(perm.iter().flat_map(|v| v.to_le_bytes()).collect()));
            let p = g.add_operand(p);
            let op = nnrt::Operation { kind: OpKind::Transpose, inputs: vec![Some(x), Some(p)], outputs: vec![y] };
            named.push(layout_permute(&g, &op));
        }
        assert_eq!(named, vec![Some("NCHW -> NHWC"), Some("NHWC -> NCHW"), None]);
    }
}
