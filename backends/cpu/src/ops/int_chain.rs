//! Runs of TOSA's plain-integer element-wise ops as one step: what the TOSA lowering of an int8
//! SOFTMAX (RESCALE, TABLEs, shifts, adds, CLZ and a Newton-Raphson reciprocal of IntMuls) and
//! of quantized ADD/MUL (RESCALEs around int32 arithmetic, CLAMP as MAXIMUM/MINIMUM) become.
//! Those ops run on a few elements each, so dispatching them one by one cost more than their
//! arithmetic. Here every value of the run lives in 64-bit lanes and each op is one loop over
//! them with the same integer steps as its own kernel (`quant::tosa`'s functions, the wrapping
//! int32 arithmetic of `binary_i32`); only the values read after the run are stored. The
//! results are the same integers as the ops one by one (the test compares them).
//!
//! The float element-wise ops and CASTs that TOSA's lowerings of QUANTIZE (MUL by the reciprocal
//! scale, ROUND, CAST, ADD of the zero point, CAST) and DEQUANTIZE (RESCALE, CAST, SUB, MUL) put
//! around such runs join them: a float32 value lives in a lane as its bits, and each op is the
//! same IEEE operation per element as its own kernel (`kernels::binary::op_f32`, the exact
//! roundings, `kernels::cast`'s conversions), so the results are the same bits.

use nnrt_core::{cast, cast_mut, Activation, BinaryOp, CompileCtx, DType, InputSource, IntBitsOp, OpId, OpKind, OperandId, UnaryOp};

use super::quantize::rescale_params;
use super::util::source;
use crate::kernel::Kernel;
use crate::kernels::binary::op_f32;
use crate::kernels::cast::{f32_to_i16, f32_to_i32, f32_to_i8};
use crate::simd::rescale::LaneRescale;
use crate::simd::{Wide, WideBody};
use lowered_quantize::LoweredQuantize;
use tabled::Tabled;
use crate::quant::tosa::{apply_scale_16, apply_scale_32, apply_scale_32_i32, left_shift, right_shift, Rescale};

mod lowered_quantize;
mod tabled;

/// Values larger than this run through the ops' own (vectorized) kernels.
const MAX_ELEMENTS: usize = 1024;
/// Fewer ops than this gain too little from one step, unless they become one table lookup
/// (two RESCALEs of an int8 value: TOSA's requantization of a graph's uint8 output is an int8
/// RESCALE then the unsigned one, 0.3 us each on 192 values, one lookup pass as a table).
const MIN_OPS: usize = 3;

/// A fused run: its kernel, what it reads and writes, and which ops and tensors it covers.
pub(crate) struct IntChain {
    pub kernel: Box<dyn Kernel>,
    /// The arena tensors the run reads, in the kernel's input order.
    pub inputs: Vec<InputSource>,
    /// The values read after the run (by later ops or as graph outputs), in the kernel's output
    /// order.
    pub outputs: Vec<OperandId>,
    /// The ops covered, in order.
    pub ops: Vec<OpId>,
    /// The values only the run reads: never written.
    pub elided: Vec<OperandId>,
    /// How the kernel computes the run.
    pub form: Form,
}

/// The forms of a run's kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Form {
    /// Each op one loop over the run's values ([`Run`]).
    Lanes,
    /// Each op one pass over 8 lanes or one value ([`Narrow`]): runs of at most [`NARROW`]
    /// elements.
    Narrow,
    /// TOSA's lowering of a float32 QUANTIZE as one loop ([`LoweredQuantize`]).
    Quantize,
    /// The results looked up in tables built at compile ([`Tabled`]).
    Tables,
}

/// What one op computes, lane by lane.
#[derive(Clone, Debug)]
enum Lane {
    /// Wrapping int32 ADD / SUB.
    Add,
    Sub,
    Max,
    Min,
    /// TOSA MUL: 64-bit product, rounded right by `shift` when positive, low 32 bits.
    IntMul(u32),
    /// LOGICAL_LEFT_SHIFT / ARITHMETIC_RIGHT_SHIFT of a `bits`-bit value.
    Shl(u32),
    Shr(u32, bool),
    Clz,
    /// TABLE of an int16 value (513 entries) to int32.
    Table16(Vec<i16>),
    /// TABLE of an int8 value: `table[x + 128]` of 256 entries.
    Table8(Vec<i64>),
    /// RESCALE from `.1` to `.2`, through the vector kernel `.3` where this CPU has one.
    Rescale(Rescale, DType, DType, Option<LaneRescale>),
    /// RESHAPE: the same values in the same order.
    Copy,
    /// RESCALE of int8: the result for each byte, per channel (`Rescale::table8`).
    Rescale8(Vec<i64>, usize),
    /// A float32 binary op without activation (`kernels::binary::op_f32`).
    FBin(crate::kernels::binary::BinaryOp),
    /// A float32 unary op that is one exact IEEE operation (ROUND half to even, FLOOR, CEIL,
    /// ABS, NEG).
    FUnary(UnaryOp),
    /// CAST from `.0` to `.1` (`kernels::cast`'s conversions).
    Cast(DType, DType),
}

/// One op of the run: `dst = lane(a, b)`, each a slot of [`Run::slots`], kept in `out`'s type.
#[derive(Clone, Debug)]
struct Step {
    lane: Lane,
    a: usize,
    b: Option<usize>,
    dst: usize,
    out: DType,
}

/// Lanes per value in the [`Narrow`] form: one 512-bit vector.
const NARROW: usize = 8;

/// The kernel of a run.
struct Run {
    /// `(slot, dtype)` loaded from input `k`.
    loads: Vec<(usize, DType)>,
    steps: Vec<Step>,
    /// `(slot, dtype)` stored to output `k`.
    stores: Vec<(usize, DType)>,
    /// One lane vector per value: 1 element, or the run's element count. Constants are filled
    /// at build and never written.
    slots: Vec<Vec<i64>>,
    /// The instructions the steps' loops are compiled for.
    wide: Wide,
}

/// The lane width of an integer type RESCALE and the chain's ops take.
pub(super) fn bits(t: DType) -> Option<u32> {
    match t {
        DType::I8 => Some(8),
        DType::I16 => Some(16),
        DType::I32 => Some(32),
        _ => None,
    }
}

/// The types a lane holds: the integers RESCALE takes, sign-extended, and float32 as its bits.
fn lane_type(t: DType) -> bool {
    bits(t).is_some() || t == DType::F32
}

/// A float32 lane's value.
#[inline(always)]
fn f(v: i64) -> f32 {
    f32::from_bits(v as u32)
}

/// A float32 value as a lane.
#[inline(always)]
fn lane(v: f32) -> i64 {
    i64::from(v.to_bits())
}

/// `v` kept as its type keeps it (the low bits, sign-extended), as the ops' kernels store it.
fn wrap(v: i64, t: DType) -> i64 {
    match t {
        DType::I8 => i64::from(v as i8),
        DType::I16 => i64::from(v as i16),
        _ => i64::from(v as i32),
    }
}

/// A constant operand's values, sign-extended.
fn const_lanes(ctx: &CompileCtx, id: OperandId) -> Option<Vec<i64>> {
    let o = ctx.graph.operand(id);
    let bytes = o.data.as_ref()?.bytes();
    let mut v = vec![0; bytes.len() / o.dtype.size().max(1)];
    (load(bytes, o.dtype, &mut v).ok()? == v.len()).then_some(v)
}

/// `bytes` of type `t` as lanes into `out`, written only when they are `out.len()` values;
/// returns how many values `bytes` holds.
fn load(bytes: &[u8], t: DType, out: &mut [i64]) -> Result<usize, String> {
    fn put<T: bytemuck::Pod>(bytes: &[u8], out: &mut [i64], lane: impl Fn(T) -> i64) -> Result<usize, String> {
        let v = cast::<T>(bytes)?;
        if v.len() == out.len() {
            out.iter_mut().zip(v).for_each(|(o, &x)| *o = lane(x));
        }
        Ok(v.len())
    }
    match t {
        DType::I8 => put(bytes, out, |x: i8| i64::from(x)),
        DType::I16 => put(bytes, out, |x: i16| i64::from(x)),
        DType::I32 => put(bytes, out, |x: i32| i64::from(x)),
        DType::F32 => put(bytes, out, lane),
        other => Err(format!("an int chain does not load {other}")),
    }
}

/// Stores lanes (the run's slot, or a table's entries looked up per element) as type `t`.
#[inline(always)]
fn store(v: impl IntoIterator<Item = i64>, t: DType, bytes: &mut [u8]) -> Result<(), String> {
    match t {
        DType::I8 => cast_mut::<i8>(bytes)?.iter_mut().zip(v).for_each(|(o, x)| *o = x as i8),
        DType::I16 => cast_mut::<i16>(bytes)?.iter_mut().zip(v).for_each(|(o, x)| *o = x as i16),
        DType::I32 => cast_mut::<i32>(bytes)?.iter_mut().zip(v).for_each(|(o, x)| *o = x as i32),
        DType::F32 => cast_mut::<f32>(bytes)?.iter_mut().zip(v).for_each(|(o, x)| *o = f(x)),
        other => return Err(format!("an int chain does not store {other}")),
    }
    Ok(())
}

/// The op's lane form and the operands it reads lane by lane, or `None` when it has none here.
fn lane_of(ctx: &CompileCtx, id: OpId) -> Option<(Lane, Vec<OperandId>)> {
    let g = ctx.graph;
    let op = g.op(id);
    let [y] = op.outputs.as_slice() else { return None };
    let (x0, ot) = (op.input(0)?, g.operand(*y).dtype);
    let xt = g.operand(x0).dtype;
    let two = || Some(vec![x0, op.input(1)?]);
    let same = |ids: &[OperandId]| ids.iter().all(|&i| g.operand(i).dtype == xt);
    let (lane, ins) = match &op.kind {
        OpKind::Binary { op: b, act: Activation::None } if xt == DType::F32 => {
            let ins = two()?;
            matches!(b, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Maximum | BinaryOp::Minimum).then_some(())?;
            (same(&ins) && ot == xt).then_some(())?;
            (Lane::FBin(super::elementwise::binary_kind(*b)), ins)
        }
        OpKind::Unary(u @ (UnaryOp::Round | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Abs | UnaryOp::Neg)) if xt == DType::F32 && ot == xt => (Lane::FUnary(*u), vec![x0]),
        OpKind::Cast if lane_type(xt) && lane_type(ot) && xt != ot => (Lane::Cast(xt, ot), vec![x0]),
        OpKind::Binary { op: b, act: Activation::None } => {
            let ins = two()?;
            let lane = match b {
                BinaryOp::Add if xt == DType::I32 => Lane::Add,
                BinaryOp::Sub if xt == DType::I32 => Lane::Sub,
                BinaryOp::Maximum => Lane::Max,
                BinaryOp::Minimum => Lane::Min,
                _ => return None,
            };
            (same(&ins) && ot == xt && bits(xt).is_some()).then_some(())?;
            (lane, ins)
        }
        OpKind::IntMul => {
            let ins = two()?;
            // The shift as the op's kernel reads it: one constant int8.
            let shift = g.operand(op.input(2)?).data.as_ref()?.bytes().first().copied()?;
            (same(&ins) && ot == DType::I32 && bits(xt).is_some()).then_some(())?;
            (Lane::IntMul(u32::from((shift as i8).clamp(0, 63) as u8)), ins)
        }
        OpKind::IntBits(IntBitsOp::LeftShift) => {
            let ins = two()?;
            (same(&ins) && ot == xt).then_some(())?;
            (Lane::Shl(bits(xt)?), ins)
        }
        OpKind::IntBits(IntBitsOp::RightShift { round }) => {
            let ins = two()?;
            (same(&ins) && ot == xt).then_some(())?;
            (Lane::Shr(bits(xt)?, *round), ins)
        }
        // A RESHAPE (to a constant shape) keeps the lanes as they are.
        OpKind::Reshape { .. } if ot == xt && lane_type(xt) && op.input(1).is_none_or(|s| g.operand(s).data.is_some()) => (Lane::Copy, vec![x0]),
        OpKind::IntBits(IntBitsOp::Clz) if xt == DType::I32 && ot == DType::I32 => (Lane::Clz, vec![x0]),
        OpKind::Table if xt == DType::I16 && ot == DType::I32 => {
            let t = const_lanes(ctx, op.input(1)?)?;
            (g.operand(op.input(1)?).dtype == DType::I16 && t.len() == 513).then_some(())?;
            (Lane::Table16(t.iter().map(|&v| v as i16).collect()), vec![x0])
        }
        OpKind::Table if xt == DType::I8 && ot == DType::I8 => {
            let t = const_lanes(ctx, op.input(1)?)?;
            (g.operand(op.input(1)?).dtype == DType::I8 && t.len() == 256).then_some(())?;
            (Lane::Table8(t), vec![x0])
        }
        OpKind::Rescale(_) => {
            (bits(xt).is_some() && bits(ot).is_some()).then_some(())?;
            let r = rescale_params(ctx, id).ok()?;
            let ch = r.multiplier.len();
            match xt {
                // As the op's kernel does for an int8 input (the same integers).
                DType::I8 if ch <= 64 => {
                    let table: Vec<i64> = match ot {
                        DType::I8 => r.table8::<i8>().into_iter().map(i64::from).collect(),
                        DType::I16 => r.table8::<i16>().into_iter().map(i64::from).collect(),
                        _ => r.table8::<i32>().into_iter().map(i64::from).collect(),
                    };
                    (Lane::Rescale8(table, ch), vec![x0])
                }
                _ => {
                    let v = LaneRescale::new(&r, bits(xt)?, bits(ot)?);
                    (Lane::Rescale(r, xt, ot, v), vec![x0])
                }
            }
        }
        _ => return None,
    };
    let plain = ins.iter().chain([y]).all(|&i| !g.operand(i).quant.is_quantized() && !g.operand(i).is_variable);
    plain.then_some((lane, ins))
}

/// The longest run of ops from `ids[0]` (consecutive in the graph, at least [`MIN_OPS`], or two
/// that become a table) that
/// has a lane form, whose values hold one element or the run's count (at most
/// [`MAX_ELEMENTS`]), each op's inputs either its output's count or one element.
pub(crate) fn fuse_int_chain(ctx: &CompileCtx, ids: &[OpId]) -> Option<IntChain> {
    fuse(ctx, ids, Form::Tables)
}

/// [`fuse_int_chain`] in at most the form `best` (tables; then the lowered QUANTIZE's loop or
/// narrow lanes; then lanes: the tests run each; `NNRT_CHAIN_TABLES=0` and `NNRT_CHAIN_NARROW=0` leave those out at run time).
fn fuse(ctx: &CompileCtx, ids: &[OpId], best: Form) -> Option<IntChain> {
    if super::util::fusion_off("int") {
        return None;
    }
    let g = ctx.graph;
    let count = |id: OperandId| nnrt_core::shape::num_elements(ctx.dims(id));
    let mut n: Option<usize> = None;
    let mut found: Vec<(OpId, Lane, Vec<OperandId>)> = Vec::new();
    for (j, &id) in ids.iter().enumerate() {
        // Ops of other backends may run between two that are not adjacent; a TOSA convolution
        // chain keeps its leading RESCALE.
        if (j > 0 && id.index() != ids[j - 1].index() + 1) || super::fuse_rescale_chain(ctx, &ids[j..]).is_some() {
            break;
        }
        let Some((lane, ins)) = lane_of(ctx, id) else { break };
        let Some(c) = count(g.op(id).outputs[0]) else { break };
        if c == 0 || c > MAX_ELEMENTS || n.is_some_and(|n| c != 1 && c != n) {
            break;
        }
        if ins.iter().any(|&i| count(i).is_none_or(|k| k != 1 && k != c)) {
            break;
        }
        if c != 1 {
            n = Some(c);
        }
        found.push((id, lane, ins));
    }
    if found.len() < 2 {
        return None;
    }
    let ops: Vec<OpId> = found.iter().map(|f| f.0).collect();
    let float_only = found.iter().all(|f| matches!(f.1, Lane::FBin(_) | Lane::FUnary(_) | Lane::Copy));
    let mut slot_of: Vec<(OperandId, usize)> = Vec::new();
    let mut slots: Vec<Vec<i64>> = Vec::new();
    let (mut inputs, mut loads, mut steps) = (Vec::new(), Vec::new(), Vec::new());
    let mut done: Vec<OpId> = Vec::with_capacity(found.len());
    for (id, lane, ins) in found {
        // An op the run computed already (same kind, inputs and output type: the TOSA
        // lowering repeats the RESCALEs of a shared input) reads that op's slot.
        let y = g.op(id).outputs[0];
        let twin = done.iter().map(|&d| g.op(d)).find(|d| d.kind == g.op(id).kind && d.inputs == g.op(id).inputs && g.operand(d.outputs[0]).dtype == g.operand(y).dtype);
        if let Some(s) = twin.and_then(|d| slot_of.iter().find(|(o, _)| *o == d.outputs[0])).map(|&(_, s)| s) {
            slot_of.push((y, s));
            continue;
        }
        done.push(id);
        let mut srcs = Vec::with_capacity(2);
        for x in ins {
            let s = match slot_of.iter().find(|(o, _)| *o == x) {
                Some(&(_, s)) => s,
                None => {
                    let lanes = match g.operand(x).data.is_some() {
                        true => const_lanes(ctx, x)?,
                        false => {
                            inputs.push(source(ctx, x));
                            loads.push((slots.len(), g.operand(x).dtype));
                            vec![0; count(x)?]
                        }
                    };
                    slots.push(lanes);
                    slot_of.push((x, slots.len() - 1));
                    slots.len() - 1
                }
            };
            srcs.push(s);
        }
        slots.push(vec![0; count(y)?]);
        slot_of.push((y, slots.len() - 1));
        steps.push(Step { lane, a: srcs[0], b: srcs.get(1).copied(), dst: slots.len() - 1, out: g.operand(y).dtype });
    }
    // Values read after the run are stored; the others are never written.
    let (mut outputs, mut stores, mut elided) = (Vec::new(), Vec::new(), Vec::new());
    for &id in &ops {
        let y = g.op(id).outputs[0];
        let outside = g.outputs.contains(&y) || g.ops.iter().enumerate().any(|(k, o)| !ops.iter().any(|i| i.index() == k) && o.inputs.iter().flatten().any(|&i| i == y));
        let slot = slot_of.iter().find(|(o, _)| *o == y).map(|&(_, s)| s)?;
        if outside {
            outputs.push(y);
            stores.push((slot, g.operand(y).dtype));
        } else {
            elided.push(y);
        }
    }
    let run = Run { loads, steps, stores, slots, wide: Wide::detect() };
    let tables = best == Form::Tables && std::env::var_os("NNRT_CHAIN_TABLES").is_none_or(|v| v != "0");
    let table = tables.then(|| Tabled::of(&run)).flatten();
    if table.is_none() && ops.len() < MIN_OPS {
        return None;
    }
    let (kernel, form): (Box<dyn Kernel>, Form) = match (table, best != Form::Lanes) {
        (Some(t), _) => (Box::new(t), Form::Tables),
        (None, true) => match (LoweredQuantize::of(&run), std::env::var_os("NNRT_CHAIN_NARROW").is_none_or(|v| v != "0").then(|| Narrow::of(&run)).flatten()) {
            (Some(q), _) => (Box::new(q), Form::Quantize),
            (None, Some(k)) => (Box::new(k), Form::Narrow),
            (None, None) => (Box::new(run), Form::Lanes),
        },
        (None, false) => (Box::new(run), Form::Lanes),
    };
    // A run of float ops alone (no integer op between them: a recurrent cell's gate
    // arithmetic) is slower in 64-bit lanes, one element at a time, than as the ops' own vector
    // kernels once it is longer than the narrow form (GRU: 0.22 us against 0.15 us a run).
    if form == Form::Lanes && float_only {
        return None;
    }
    Some(IntChain { kernel, inputs, outputs, ops, elided, form })
}

/// `out[i] = f(a[i], b[i])`, a one-element side read at every `i`.
#[inline(always)]
fn map2(a: &[i64], b: &[i64], out: &mut [i64], f: impl Fn(i64, i64) -> i64) {
    match (a.len(), b.len()) {
        (1, _) if out.len() != 1 => out.iter_mut().zip(b).for_each(|(o, &y)| *o = f(a[0], y)),
        (_, 1) if out.len() != 1 => out.iter_mut().zip(a).for_each(|(o, &x)| *o = f(x, b[0])),
        _ => out.iter_mut().zip(a.iter().zip(b)).for_each(|(o, (&x, &y))| *o = f(x, y)),
    }
}

/// `out[i] = f(a[i], i)`.
#[inline(always)]
fn map1(a: &[i64], out: &mut [i64], f: impl Fn(i64, usize) -> i64) {
    out.iter_mut().zip(a).enumerate().for_each(|(i, (o, &x))| *o = f(x, i));
}

/// `out[i] = f(a[i], c)` with `c = i mod ch`, walked by rows of `ch` (no division per lane;
/// one channel is its own loop, where `c` is the constant 0).
#[inline(always)]
fn per_channel(a: &[i64], out: &mut [i64], ch: usize, f: impl Fn(i64, usize) -> i64) {
    if ch <= 1 {
        out.iter_mut().zip(a).for_each(|(o, &x)| *o = f(x, 0));
        return;
    }
    for (o, a) in out.chunks_mut(ch).zip(a.chunks(ch)) {
        o.iter_mut().zip(a).enumerate().for_each(|(c, (o, &x))| *o = f(x, c));
    }
}

/// RESCALE of lanes of type `xt` to `ot`, through the op's own arithmetic (channel = index
/// modulo the channel count, as `Rescale::run` walks them).
fn rescale(r: &Rescale, a: &[i64], out: &mut [i64], xt: DType, ot: DType) {
    let ch = r.multiplier.len().max(1);
    if ch == 1 && rescale_flat(r, a, out, xt, ot) {
        return;
    }
    macro_rules! to {
        ($ti:ty) => {
            match ot {
                DType::I8 => per_channel(a, out, ch, |x, c| i64::from(r.one::<$ti, i8>(x as $ti, c))),
                DType::I16 => per_channel(a, out, ch, |x, c| i64::from(r.one::<$ti, i16>(x as $ti, c))),
                _ => per_channel(a, out, ch, |x, c| i64::from(r.one::<$ti, i32>(x as $ti, c))),
            }
        };
    }
    match xt {
        DType::I8 => to!(i8),
        DType::I16 => to!(i16),
        _ => to!(i32),
    }
}

/// A one-scale RESCALE of lanes: [`Rescale::one`]'s arithmetic with its constants hoisted out
/// of one flat loop (the input's unsigned view, the zero points, `apply_scale_32` in 64 bits
/// when the value fits int32, the int32 then output-type clip). False (nothing written) when
/// the constants are missing.
fn rescale_flat(r: &Rescale, a: &[i64], out: &mut [i64], xt: DType, ot: DType) -> bool {
    let (Some(&m), Some(&sh)) = (r.multiplier.first(), r.shift.first()) else { return false };
    let (dr, izp, ozp) = (r.double_round, r.input_zp, r.output_zp);
    let mask = match (xt, r.input_unsigned) {
        (DType::I8, true) => 0xff,
        (DType::I16, true) => 0xffff,
        _ => -1,
    };
    let (lo, hi) = match (ot, r.output_unsigned) {
        (DType::I8, false) => (-128, 127),
        (DType::I8, true) => (0, 255),
        (DType::I16, false) => (-32768, 32767),
        (DType::I16, true) => (0, 65535),
        _ => (i64::from(i32::MIN), i64::from(i32::MAX)),
    };
    let scale = |v: i64| -> i64 {
        if !r.scale32 {
            return apply_scale_16(v, m as i16, sh);
        }
        match i32::try_from(v) {
            Ok(v32) => i64::from(apply_scale_32_i32(v32, m, sh, dr)),
            Err(_) => apply_scale_32(v, m, sh, dr),
        }
    };
    // `lo..=hi` lies inside int32's range, so one clip stands for both. Without an input zero
    // point every value fits int32 (the branch is decided once, outside the loop).
    if izp == 0 && r.scale32 {
        for (o, &x) in out.iter_mut().zip(a) {
            let v = if mask >= 0 { x & mask } else { wrap(x, xt) };
            *o = wrap((i64::from(apply_scale_32_i32(v as i32, m, sh, dr)) + ozp).clamp(lo, hi), ot);
        }
        return true;
    }
    for (o, &x) in out.iter_mut().zip(a) {
        let s = scale(if mask >= 0 { x & mask } else { wrap(x, xt) } - izp);
        *o = wrap((s + ozp).clamp(lo, hi), ot);
    }
    true
}

impl Step {
    /// Inlined into [`Wide::run`]'s function, where its loops are vectorized for the CPU.
    #[inline(always)]
    fn eval(&self, a: &[i64], b: &[i64], out: &mut [i64]) {
        let t = self.out;
        match &self.lane {
            Lane::Add => map2(a, b, out, |x, y| wrap(x + y, t)),
            Lane::Sub => map2(a, b, out, |x, y| wrap(x - y, t)),
            Lane::Max => map2(a, b, out, |x, y| x.max(y)),
            Lane::Min => map2(a, b, out, |x, y| x.min(y)),
            &Lane::IntMul(shift) => map2(a, b, out, |x, y| {
                let p = x * y;
                i64::from(if shift > 0 { (p.wrapping_add(1i64 << (shift - 1)) >> shift) as i32 } else { p as i32 })
            }),
            &Lane::Shl(bits) => map2(a, b, out, |x, y| wrap(left_shift(x, y, bits), t)),
            &Lane::Shr(bits, round) => map2(a, b, out, |x, y| wrap(right_shift(x, y, bits, round), t)),
            Lane::Copy => out.iter_mut().zip(a).for_each(|(o, &x)| *o = x),
            Lane::Clz => map1(a, out, |x, _| i64::from((x as i32 as u32).leading_zeros())),
            Lane::Table16(table) => map1(a, out, |x, _| {
                let index = ((x + 32768) >> 7) as usize;
                let fraction = x & 0x7f;
                let (base, next) = (i64::from(table[index]), i64::from(table[index + 1]));
                wrap((base << 7) + (next - base) * fraction, DType::I32)
            }),
            Lane::Table8(table) => map1(a, out, |x, _| table[((x + 128) as usize) & 0xff]),
            Lane::Rescale(_, _, _, Some(v)) if a.len() == out.len() => v.run(a, out),
            Lane::Rescale(r, xt, ot, _) => rescale(r, a, out, *xt, *ot),
            &Lane::Rescale8(ref table, ch) => per_channel(a, out, ch, |x, c| table[c * 256 + (x as u8) as usize]),
            // One loop per operator (a match inside the loop would not vectorize).
            &Lane::FBin(op) => {
                use crate::kernels::binary::BinaryOp as K;
                macro_rules! per_op {
                    ($($k:ident),*) => {
                        match op {
                            $(K::$k => map2(a, b, out, |x, y| lane(op_f32(K::$k, f(x), f(y)))),)*
                            _ => map2(a, b, out, |x, y| lane(op_f32(op, f(x), f(y)))),
                        }
                    };
                }
                per_op!(Add, Sub, Mul, Div, Maximum, Minimum)
            }
            &Lane::FUnary(op) => match op {
                UnaryOp::Round => map1(a, out, |x, _| lane(f(x).round_ties_even())),
                UnaryOp::Floor => map1(a, out, |x, _| lane(f(x).floor())),
                UnaryOp::Ceil => map1(a, out, |x, _| lane(f(x).ceil())),
                UnaryOp::Abs => map1(a, out, |x, _| lane(f(x).abs())),
                _ => map1(a, out, |x, _| lane(-f(x))),
            },
            &Lane::Cast(from, to) => match (from, to) {
                (DType::F32, DType::I8) => map1(a, out, |x, _| i64::from(f32_to_i8(f(x)))),
                (DType::F32, DType::I16) => map1(a, out, |x, _| i64::from(f32_to_i16(f(x)))),
                (DType::F32, _) => map1(a, out, |x, _| i64::from(f32_to_i32(f(x)))),
                // Integers convert exactly to their nearest float; between integers the low
                // bits are kept.
                (_, DType::F32) => map1(a, out, |x, _| lane(x as f32)),
                _ => map1(a, out, |x, _| wrap(x, to)),
            },
        }
    }
}

/// The steps over the slots, compiled once per [`Wide`] form.
struct Steps<'a> {
    steps: &'a [Step],
    slots: &'a mut [Vec<i64>],
}

impl WideBody for Steps<'_> {
    #[inline(always)]
    fn body(&mut self) {
        for step in self.steps {
            let mut out = std::mem::take(&mut self.slots[step.dst]);
            let a = &self.slots[step.a];
            let b = step.b.map_or(&[][..], |b| &self.slots[b]);
            step.eval(a, b, &mut out);
            self.slots[step.dst] = out;
        }
    }
}

impl Kernel for Run {
    fn run(&mut self, ins: &[nnrt_core::TensorRef<'_>], outs: &mut [nnrt_core::TensorMut<'_>]) -> Result<(), String> {
        for (t, &(s, dtype)) in ins.iter().zip(&self.loads) {
            let (got, want) = (load(t.bytes, dtype, &mut self.slots[s])?, self.slots[s].len());
            if got != want {
                return Err(format!("an input of the int chain has {got} elements; {want} expected"));
            }
        }
        self.wide.run(&mut Steps { steps: &self.steps, slots: &mut self.slots });
        for (t, &(s, dtype)) in outs.iter_mut().zip(&self.stores) {
            store(self.slots[s].iter().copied(), dtype, t.bytes)?;
        }
        Ok(())
    }
}

/// The kernel of a run of at most [`NARROW`] elements: every value is one array of 8 lanes (a
/// one-element value repeated, a shorter one padded with copies of its first element), and each
/// op is one pass over the 8 lanes, or over lane 0 alone when its result is one element (then
/// repeated), compiled for that length: no slices of run-time length, loops or remainders per
/// op. TOSA's int8 SOFTMAX is ~40 such ops on 5 elements and on 1; as [`Run`]'s loops each cost
/// 10-20 ns.
struct Narrow {
    /// `(slot, dtype, elements)` loaded from input `k`.
    loads: Vec<(usize, DType, usize)>,
    /// The steps, each with whether its result is one element.
    steps: Vec<(Step, bool)>,
    /// `(slot, dtype, elements)` stored to output `k`.
    stores: Vec<(usize, DType, usize)>,
    slots: Vec<[i64; NARROW]>,
    wide: Wide,
}

impl Narrow {
    /// The narrow form of `run`: none when a value has more than [`NARROW`] elements. A
    /// per-channel op gives lane `i` channel `i` modulo the channels, padding lanes too: their
    /// values are never stored, and each op's result stays in its type's range as a real
    /// lane's does (no table is indexed out of range).
    fn of(run: &Run) -> Option<Narrow> {
        if run.slots.iter().any(|v| v.len() > NARROW || v.is_empty()) || run.steps.iter().any(|s| s.dst >= run.slots.len() || s.a.max(s.b.unwrap_or(0)) >= s.dst) {
            return None;
        }
        let pad = |v: &[i64]| {
            let mut a = [v[0]; NARROW];
            a[..v.len()].copy_from_slice(v);
            a
        };
        Some(Narrow {
            loads: run.loads.iter().map(|&(s, t)| (s, t, run.slots[s].len())).collect(),
            steps: run.steps.iter().map(|st| (st.clone(), run.slots[st.dst].len() == 1)).collect(),
            stores: run.stores.iter().map(|&(s, t)| (s, t, run.slots[s].len())).collect(),
            slots: run.slots.iter().map(|v| pad(v)).collect(),
            wide: run.wide,
        })
    }
}

/// The steps over 8-lane slots, compiled once per [`Wide`] form.
struct NarrowSteps<'a> {
    steps: &'a [(Step, bool)],
    slots: &'a mut [[i64; NARROW]],
}

impl WideBody for NarrowSteps<'_> {
    #[inline(always)]
    fn body(&mut self) {
        for (step, one) in self.steps {
            // Every op writes a slot after the ones it reads (`Narrow::of`). A one-input op
            // reads `a` as `b` too (unread): both have the constant length.
            let (before, from) = self.slots.split_at_mut(step.dst);
            let (a, b) = (&before[step.a], &before[step.b.unwrap_or(step.a)]);
            if *one {
                // Its inputs are one element too, repeated in every lane.
                let mut v = [0i64; 1];
                step.eval(&a[..1], &b[..1], &mut v);
                from[0] = [v[0]; NARROW];
            } else {
                step.eval(a, b, &mut from[0]);
            }
        }
    }
}

impl Kernel for Narrow {
    fn run(&mut self, ins: &[nnrt_core::TensorRef<'_>], outs: &mut [nnrt_core::TensorMut<'_>]) -> Result<(), String> {
        for (t, &(s, dtype, n)) in ins.iter().zip(&self.loads) {
            // Lanes `..n` from the input, the rest copies of the first.
            let slot = &mut self.slots[s];
            let got = load(t.bytes, dtype, &mut slot[..n])?;
            if got != n {
                return Err(format!("an input of the int chain has {got} elements; {n} expected"));
            }
            let first = slot[0];
            slot[n..].iter_mut().for_each(|o| *o = first);
        }
        self.wide.run(&mut NarrowSteps { steps: &self.steps, slots: &mut self.slots });
        for (t, &(s, dtype, n)) in outs.iter_mut().zip(&self.stores) {
            store(self.slots[s][..n].iter().copied(), dtype, t.bytes)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
