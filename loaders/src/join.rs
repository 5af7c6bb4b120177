//! Multi-model nnpackages (MANIFEST 1.3): `pkg-inputs`, `pkg-outputs` and `model-connect` join
//! several models into one graph. Each connected input of a later model becomes the earlier
//! model's output tensor itself (no copy); the package's inputs and outputs follow the MANIFEST.

use nnrt_core::{LoadError, Model, OpKind, OperandId, Subgraph, SubgraphId};

use crate::nnpackage::{IoRef, Package};

fn err(pkg: &Package, reason: impl Into<String>) -> LoadError {
    LoadError::Package { path: pkg.manifest.models.join(", "), reason: reason.into() }
}

/// Models in an order where every `model-connect` source comes before its targets.
fn order(pkg: &Package) -> Result<Vec<usize>, LoadError> {
    let n = pkg.models.len();
    let mut indegree = vec![0usize; n];
    let mut edges = vec![Vec::new(); n];
    for (from, to) in &pkg.manifest.model_connect {
        for t in to {
            if t.model != from.model && !edges[from.model].contains(&t.model) {
                edges[from.model].push(t.model);
                indegree[t.model] += 1;
            }
        }
    }
    let mut ready: Vec<usize> = (0..n).filter(|&m| indegree[m] == 0).rev().collect();
    let mut out = Vec::with_capacity(n);
    while let Some(m) = ready.pop() {
        out.push(m);
        for &t in edges[m].iter().rev() {
            indegree[t] -= 1;
            if indegree[t] == 0 {
                ready.push(t);
            }
        }
    }
    if out.len() != n {
        return Err(err(pkg, "MANIFEST model-connect forms a cycle between models"));
    }
    Ok(out)
}

/// The package as one model: the single model as it is, or several joined by the MANIFEST.
pub fn join(pkg: &Package) -> Result<Model, LoadError> {
    if pkg.models.len() == 1 {
        return Ok(pkg.models[0].clone());
    }
    let m = &pkg.manifest;
    if m.pkg_inputs.is_empty() || m.pkg_outputs.is_empty() {
        return Err(err(pkg, format!("the package has {} models but its MANIFEST sets no pkg-inputs/pkg-outputs (MANIFEST 1.3) to join them", pkg.models.len())));
    }
    let all_refs = m.pkg_inputs.iter().chain(&m.pkg_outputs).chain(m.model_connect.iter().flat_map(|(f, t)| std::iter::once(f).chain(t)));
    for r in all_refs {
        if r.model >= pkg.models.len() {
            return Err(err(pkg, format!("MANIFEST refers to model {} ({}:{}:{}), but the package has {} models", r.model, r.model, r.subgraph, r.io, pkg.models.len())));
        }
        if r.subgraph != 0 {
            return Err(err(pkg, format!("MANIFEST refers to subgraph {} of model {}; only the entry subgraph (0) of each model can be joined", r.subgraph, r.model)));
        }
    }
    // Each input of a model is fed once: by the caller (pkg-inputs) or by one model-connect.
    let mut fed: Vec<(usize, usize, &str)> = m.pkg_inputs.iter().map(|r| (r.model, r.io, "pkg-inputs")).collect();
    for t in m.model_connect.iter().flat_map(|(_, to)| to) {
        if let Some(&(_, _, by)) = fed.iter().find(|&&(mm, i, _)| (mm, i) == (t.model, t.io)) {
            return Err(err(pkg, format!("MANIFEST feeds input {} of model {} twice: by {by} and by model-connect", t.io, t.model)));
        }
        fed.push((t.model, t.io, "model-connect"));
    }
    // Offsets of each model's operands in the joined entry graph and of its other subgraphs.
    let order = order(pkg)?;
    let mut operand_base = vec![0usize; pkg.models.len()];
    let mut subgraph_base = vec![0usize; pkg.models.len()];
    let (mut operands, mut subgraphs) = (0usize, 1usize);
    for &k in &order {
        operand_base[k] = operands;
        operands += pkg.models[k].entry().operands.len();
        subgraph_base[k] = subgraphs - 1; // the model's subgraph s > 0 lands at base + s
        subgraphs += pkg.models[k].subgraphs.len() - 1;
    }
    let io = |r: &IoRef, input: bool| -> Result<OperandId, LoadError> {
        let g = pkg.models[r.model].entry();
        let list = if input { &g.inputs } else { &g.outputs };
        let what = if input { "input" } else { "output" };
        let id = list.get(r.io).ok_or_else(|| err(pkg, format!("MANIFEST refers to {what} {} of model {}, which has {}", r.io, r.model, list.len())))?;
        Ok(OperandId::new(operand_base[r.model] + id.index()))
    };
    // Inputs fed by another model's output are replaced by that output.
    let mut alias: Vec<Option<OperandId>> = vec![None; operands];
    for (from, to) in &m.model_connect {
        let src = io(from, false)?;
        for t in to {
            let dst = io(t, true)?;
            let (a, b) = (&pkg.models[from.model], &pkg.models[t.model]);
            let (so, to_) = (a.entry().operand(a.entry().outputs[from.io]), b.entry().operand(b.entry().inputs[t.io]));
            if so.dtype != to_.dtype || so.default_dims.iter().product::<usize>() != to_.default_dims.iter().product::<usize>() {
                return Err(err(pkg, format!(
                    "model-connect {}:0:{} -> {}:0:{}: {} {} output cannot feed {} {} input",
                    from.model, from.io, t.model, t.io, so.dtype, so.shape, to_.dtype, to_.shape
                )));
            }
            alias[dst.index()] = Some(src);
        }
    }
    let remap = |id: OperandId| alias[id.index()].unwrap_or(id);
    let mut entry = Subgraph { name: "joined".into(), ..Subgraph::default() };
    let mut extra: Vec<Subgraph> = Vec::new();
    let shift_op = |kind: &mut OpKind, base: usize| match kind {
        OpKind::If { then_branch, else_branch } => {
            *then_branch = SubgraphId::new(then_branch.index() + base);
            *else_branch = SubgraphId::new(else_branch.index() + base);
        }
        OpKind::While { cond, body } => {
            *cond = SubgraphId::new(cond.index() + base);
            *body = SubgraphId::new(body.index() + base);
        }
        _ => {}
    };
    for &k in &order {
        let model = &pkg.models[k];
        let g = model.entry();
        let base = operand_base[k];
        entry.operands.extend(g.operands.iter().cloned());
        for op in &g.ops {
            let mut op = op.clone();
            for i in op.inputs.iter_mut().flatten() {
                *i = remap(OperandId::new(base + i.index()));
            }
            for o in op.outputs.iter_mut() {
                *o = OperandId::new(base + o.index());
            }
            shift_op(&mut op.kind, subgraph_base[k]);
            entry.ops.push(op);
        }
        for sg in &model.subgraphs[1..] {
            let mut sg = sg.clone();
            for op in &mut sg.ops {
                shift_op(&mut op.kind, subgraph_base[k]);
            }
            extra.push(sg);
        }
    }
    entry.inputs = m.pkg_inputs.iter().map(|r| io(r, true)).collect::<Result<_, _>>()?;
    entry.outputs = m.pkg_outputs.iter().map(|r| io(r, false).map(remap)).collect::<Result<_, _>>()?;
    let mut subgraphs = vec![entry];
    subgraphs.extend(extra);
    Ok(Model { subgraphs, signatures: Vec::new(), source: pkg.manifest.models.join("+") })
}
