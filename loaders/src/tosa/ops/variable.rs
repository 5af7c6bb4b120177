//! VARIABLE, VARIABLE_READ and VARIABLE_WRITE (the variable extension): state kept across runs
//! of a session.
//!
//! A variable is a tensor marked `variable` (with `variable_name`; its data, when present, is
//! the initial value); it becomes an operand with `is_variable`, plus a bool written flag and a
//! constant initial value (see the block builder). The serialization library writes reads and
//! writes as IDENTITY with a `VariableReadAttribute` (the variable in, a tensor out) or a
//! `VariableWriteAttribute` (a tensor in, the variable out); the VARIABLE_READ / VARIABLE_WRITE
//! operator codes are taken the same way, and VARIABLE (a declaration whose output is the
//! variable tensor) adds no op. Each becomes `VariableRead` / `VariableWrite`, which keep the
//! file's order. Types and shapes must match the variable's exactly; any other operator that
//! names a variable tensor is refused (TOSA reads and writes variables only through these).

use nnrt_core::{LoadError, OpKind, OperandId};

use super::{BlockBuilder, Op};
use crate::generated::tosa;

/// Whether `o` is a variable operator: VARIABLE*, or IDENTITY with a variable attribute.
pub(super) fn is_variable_op(o: &Op<'_>) -> bool {
    let a = o.t.attribute_type();
    matches!(o.kind, tosa::Op::VARIABLE | tosa::Op::VARIABLE_READ | tosa::Op::VARIABLE_WRITE)
        || (o.kind == tosa::Op::IDENTITY && matches!(a, tosa::Attribute::VariableReadAttribute | tosa::Attribute::VariableWriteAttribute))
}

/// Refuses an ordinary operator that reads or writes a variable tensor directly.
pub(super) fn check_not_variable(b: &BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    for n in o.inputs.iter().chain(&o.outputs) {
        if let Ok(id) = b.tensor_id(n) {
            if b.variables.contains_key(&id) {
                return Err(b.err(format!("names variable tensor '{n}'; variables are read and written only by VARIABLE_READ and VARIABLE_WRITE")));
            }
        }
    }
    Ok(())
}

/// The variable operand named `name`, or an error saying what `what` needed.
fn variable(b: &BlockBuilder<'_, '_>, name: &str, what: &str) -> Result<OperandId, LoadError> {
    let id = b.tensor_id(name)?;
    if !b.variables.contains_key(&id) {
        return Err(b.err(format!("{what} '{name}' is not a variable tensor (one marked `variable`, which VARIABLE declares)")));
    }
    Ok(id)
}

pub(super) fn map(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    let read = o.kind == tosa::Op::VARIABLE_READ || o.t.attribute_type() == tosa::Attribute::VariableReadAttribute;
    let write = o.kind == tosa::Op::VARIABLE_WRITE || o.t.attribute_type() == tosa::Attribute::VariableWriteAttribute;
    if o.kind == tosa::Op::VARIABLE && !read && !write {
        // A declaration: its outputs must be variable tensors; the tensors carry the rest.
        for n in &o.outputs {
            variable(b, n, "VARIABLE's output")?;
        }
        return Ok(());
    }
    if b.region.0 != 0 {
        return Err(o.unsupported(b, "nnrt keeps variables for the entry block only"));
    }
    if o.inputs.len() != 1 || o.outputs.len() != 1 {
        return Err(b.err(format!("has {} inputs and {} outputs; a variable read or write takes one of each", o.inputs.len(), o.outputs.len())));
    }
    let (var, value) = if read { (variable(b, o.inputs[0], "the variable read")?, o.output(b, 0)?) } else { (variable(b, o.outputs[0], "the variable written")?, o.input(b, 0)?) };
    let tensor = if read { o.outputs[0] } else { o.inputs[0] };
    let (vt, vd) = (b.dtype(var), b.dims(var));
    if b.dtype(value) != vt || b.dims(value) != vd {
        return Err(b.err(format!("tensor '{tensor}' is {} {:?}; the variable is {vt} {vd:?}", b.dtype(value), b.dims(value))));
    }
    if b.variables.contains_key(&value) {
        return Err(b.err(format!("tensor '{tensor}' is a variable too; a read or write copies between a variable and an ordinary tensor")));
    }
    let (flag, initial) = b.variables.get(&var).map(|v| (v.flag, v.initial)).ok_or_else(|| b.err("variable without its flag"))?;
    if read {
        b.emit(OpKind::VariableRead, &[Some(var), Some(flag), initial], vec![value]);
    } else {
        b.emit_all(OpKind::VariableWrite, &[value, var, flag], Vec::new());
    }
    Ok(())
}
