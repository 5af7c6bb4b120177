//! Builtin operator codes and options tables into typed [`OpKind`]s, one file per op family.
//!
//! Adding a TFLite op is one match arm in its family's `map` (and a new family is one line in
//! [`FAMILIES`]); the helpers below read the option fields families share.

mod control;
mod conv;
mod elementwise;
mod index;
mod recurrent;
mod reduce;
mod shape;
mod unary;

use nnrt_core::{Activation, LoadError, OpKind, Padding, SubgraphId};

use super::{Loader, OpCode};
use crate::generated::tflite as t;
use t::BuiltinOperator as B;

/// One operator being mapped, and where it is (for errors).
pub(super) struct OpRef<'a, 'b> {
    /// The model being read.
    pub cx: &'a Loader<'a>,
    /// Subgraph index.
    pub si: usize,
    /// Op index in the subgraph.
    pub oi: usize,
    /// The op's operator code.
    pub code: &'a OpCode,
    /// The op's table.
    pub op: &'a t::Operator<'b>,
}

impl OpRef<'_, '_> {
    /// The error for an op nnrt does not support; `detail` starts with ": " when present.
    pub fn unsupported(&self, detail: String) -> LoadError {
        let code = self.code.code;
        LoadError::UnsupportedOp {
            path: self.cx.path.to_string(),
            subgraph: self.si,
            index: self.oi,
            op: B(code).variant_name().map(String::from).unwrap_or_else(|| format!("builtin code {code}")),
            detail,
        }
    }
}

/// A family's mapping: its op kind, or `None` when the code is not one of the family's.
type Family = fn(&OpRef<'_, '_>) -> Result<Option<OpKind>, LoadError>;

/// Every family, tried in turn (each operator code belongs to exactly one).
const FAMILIES: [Family; 8] = [conv::map, elementwise::map, unary::map, reduce::map, shape::map, index::map, recurrent::map, control::map];

/// Maps one operator. `si`/`oi` locate it for errors.
pub(super) fn map(cx: &Loader, si: usize, oi: usize, code: &OpCode, op: &t::Operator<'_>) -> Result<OpKind, LoadError> {
    let m = OpRef { cx, si, oi, code, op };
    for family in FAMILIES {
        if let Some(kind) = family(&m)? {
            return Ok(kind);
        }
    }
    Err(m.unsupported(String::new()))
}

pub(super) fn act(a: t::ActivationFunctionType) -> Activation {
    match a {
        t::ActivationFunctionType::RELU => Activation::Relu,
        t::ActivationFunctionType::RELU_N1_TO_1 => Activation::ReluN1To1,
        t::ActivationFunctionType::RELU6 => Activation::Relu6,
        t::ActivationFunctionType::TANH => Activation::Tanh,
        t::ActivationFunctionType::SIGN_BIT => Activation::SignBit,
        _ => Activation::None,
    }
}

pub(super) fn padding(p: t::Padding) -> Padding {
    if p == t::Padding::VALID {
        Padding::Valid
    } else {
        Padding::Same
    }
}

/// Strides and dilations of 0 (absent options) mean 1, as TFLite's defaults.
pub(super) fn pos(v: i32) -> usize {
    if v <= 0 {
        1
    } else {
        v as usize
    }
}

/// A count option (num_splits, values_count, num), or `fallback` (the tensor count) when the
/// options are absent or hold 0.
pub(super) fn count(option: Option<i32>, fallback: usize) -> usize {
    match option {
        Some(n) if n > 0 => n as usize,
        _ => fallback,
    }
}

pub(super) fn sub(cx: &Loader, i: i32) -> Result<SubgraphId, LoadError> {
    if i < 0 {
        return Err(cx.malformed(format!("negative subgraph index {i}")));
    }
    Ok(SubgraphId::new(i as usize))
}

#[cfg(test)]
mod tests;
