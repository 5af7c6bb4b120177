//! ExecuTorch programs (`.pte`, identifier `ET12`) into nnrt's IR; the frontend of
//! [`Format::ExecuTorch`].
//!
//! Each execution plan (method) becomes one subgraph and one [`Signature`] keyed by the method's
//! name; the first method is the entry. Portable operators (`KernelCall`s, by `name.overload`)
//! are mapped by [`ops`] onto IR ops; a `DelegateCall` is decoded by its backend's reader in
//! [`delegate`]. Constants borrow from the memory-mapped file. Programs are NCHW: image ops are
//! imported with the transposes nnrt's NHWC kernels need around them.

mod args;
mod container;
mod delegate;
mod fold;
mod method;
mod ops;
mod xnnpack;

use nnrt_core::{Blob, LoadError, Model, OpKind, Signature, SubgraphId};

use crate::format::{Format, FormatInfo, Loaded};
use crate::import::UnsupportedOps;
use container::Container;
use method::{op_name, MethodBuilder};

/// Loads an ExecuTorch program held in `blob`.
pub fn load(path: &str, blob: Blob) -> Result<Loaded, LoadError> {
    let c = Container::open(path, &blob)?;
    let plans = c.program.execution_plan().unwrap_or_default();
    if plans.is_empty() {
        return Err(c.malformed("the program has no execution plans (methods)"));
    }
    // Every operator of every method first, so that one error lists all that nnrt lacks.
    let mut unsupported = UnsupportedOps::new();
    for (mi, plan) in plans.iter().enumerate() {
        let names: Vec<String> = plan.operators().map(|o| o.iter().map(|o| op_name(&o)).collect()).unwrap_or_default();
        for (k, name) in names.iter().enumerate() {
            if ops::find(name).is_none() {
                let detail = format!(" (method '{}', operator {k})", plan.name().unwrap_or_default());
                unsupported.collect(LoadError::UnsupportedOp { path: path.to_string(), subgraph: mi, index: k, op: name.clone(), detail })?;
            }
        }
    }
    unsupported.finish([])?;
    let mut model = Model { source: path.to_string(), ..Model::default() };
    for (mi, plan) in plans.iter().enumerate() {
        let name = plan.name().unwrap_or_default().to_string();
        let mut b = MethodBuilder::new(&c, &plan, &name);
        let mut inputs = Vec::new();
        for i in plan.inputs().unwrap_or_default().iter() {
            inputs.push(b.input(i64::from(i))?);
        }
        b.g.inputs = inputs.clone();
        b.run(&plan)?;
        b.write_back_state()?;
        let mut outputs = Vec::new();
        for o in plan.outputs().unwrap_or_default().iter() {
            let v = b.value(i64::from(o))?;
            if v.val_as_tensor().is_none() {
                return Err(b.err(format!("output value {o} is {}; nnrt runs methods whose outputs are tensors", v.val_type().variant_name().unwrap_or("unknown"))));
            }
            let mut id = b.read(i64::from(o))?;
            b.materialize(id);
            // A graph output must be an op's result: copy an input or a constant returned as is,
            // and an operand returned twice.
            if b.g.inputs.contains(&id) || b.g.operand(id).data.is_some() || outputs.contains(&id) {
                let dims = b.dims(id);
                let copy = b.temp(b.dtype(id), &dims);
                b.emit_all(OpKind::Reshape { new_shape: Some(dims.iter().map(|&d| d as i32).collect()) }, &[id], vec![copy]);
                id = copy;
            }
            outputs.push(id);
        }
        b.g.outputs = outputs.clone();
        fold::fold_conv_affine(&mut b.g);
        let named = |ids: &[nnrt_core::OperandId], what: &str| ids.iter().enumerate().map(|(k, &id)| (format!("{what}{k}"), id)).collect::<Vec<_>>();
        model.signatures.push(Signature { key: name, subgraph: SubgraphId::new(mi), inputs: named(&inputs, "input_"), outputs: named(&outputs, "output_") });
        model.subgraphs.push(b.g);
    }
    let info = FormatInfo {
        format: Format::ExecuTorch,
        schema_version: c.program.version(),
        description: None,
        subgraphs: model.subgraphs.len(),
        signatures: model.signatures.len(),
        entry_operators: plans
            .iter()
            .map(|p| {
                let mut ops: Vec<String> = p.operators().map(|o| o.iter().map(|o| op_name(&o)).collect()).unwrap_or_default();
                ops.extend(p.delegates().unwrap_or_default().iter().map(|d| format!("delegate {}", d.id().unwrap_or_default())));
                (p.name().unwrap_or_default().to_string(), ops)
            })
            .collect(),
        edgetpu: Vec::new(),
    };
    Ok(Loaded { model, info })
}

#[cfg(test)]
mod tests;
