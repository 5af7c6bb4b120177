//! NHWC spatial rearrangements: RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR, TOSA's RESIZE, SPACE_TO_DEPTH,
//! DEPTH_TO_SPACE, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND.

use super::Shapes::One;
use super::{fixed, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots!(
    INPUT = 0: "Input slot of the image (every op of the family).", SIZE = 1: "Input slot of RESIZE_*'s constant `[new_h, new_w]`.",
    BLOCK_SHAPE = 1: "Input slot of the *_ND ops' block shape.", CROPS = 2: "Input slot of BATCH_TO_SPACE_ND's `[m, 2]` crops.",
    PADDINGS = 2: "Input slot of SPACE_TO_BATCH_ND's `[m, 2]` paddings."
);
/// The slot of either `[m, 2]` input (crops or paddings).
const PADS: usize = CROPS;

/// How RESIZE_* interpolates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResizeMode {
    /// Bilinear interpolation.
    Bilinear,
    /// Nearest neighbour.
    Nearest,
}

/// Parameters of RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR (NHWC; size in input 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Resize {
    /// Interpolation.
    pub mode: ResizeMode,
    /// Map corner pixels onto corner pixels (scale `(in-1)/(out-1)`).
    pub align_corners: bool,
    /// Sample at pixel centres (`(x + 0.5) * scale - 0.5`).
    pub half_pixel_centers: bool,
}

/// Parameters of TOSA's RESIZE (NHWC): output pixel `o` samples input position
/// `(o * scale_d + offset) / scale_n` per axis; the output size follows from `border`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResizeScaled {
    /// Interpolation.
    pub mode: ResizeMode,
    /// `[scale_y_n, scale_y_d, scale_x_n, scale_x_d]`.
    pub scale: [i32; 4],
    /// `[offset_y, offset_x]`.
    pub offset: [i32; 2],
    /// `[border_y, border_x]`.
    pub border: [i32; 2],
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::Resize(r) => match r.mode {
            ResizeMode::Bilinear => fixed("ResizeBilinear", 2, 1, One(resize)),
            ResizeMode::Nearest => fixed("ResizeNearestNeighbor", 2, 1, One(resize)),
        },
        OpKind::ResizeScaled(_) => fixed("ResizeScaled", 1, 1, One(resize_scaled)),
        OpKind::SpaceToDepth { .. } => fixed("SpaceToDepth", 1, 1, One(space_to_depth)),
        OpKind::DepthToSpace { .. } => fixed("DepthToSpace", 1, 1, One(depth_to_space)),
        OpKind::BatchToSpaceNd => fixed("BatchToSpaceNd", 3, 1, One(batch_to_space)),
        OpKind::SpaceToBatchNd => fixed("SpaceToBatchNd", 3, 1, One(space_to_batch)),
        _ => return None,
    })
}

/// RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR: NHWC input, constant `[new_h, new_w]`.
fn resize(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Resize(r) = cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.expect_rank(INPUT, 4)?;
    if r.align_corners && r.half_pixel_centers {
        return Err(cx.err("align_corners and half_pixel_centers cannot both be set"));
    }
    cx.expect_dtype(SIZE, &[DType::I32])?;
    let size = cx.const_ints(SIZE)?;
    if size.len() != 2 || size.iter().any(|&v| v <= 0) {
        return Err(cx.input_err(SIZE, format!("size {size:?} must be two positive values [height, width]")));
    }
    Ok(vec![x[0], size[0] as usize, size[1] as usize, x[3]])
}

/// TOSA RESIZE: `OH = ((IH - 1) * scale_y_n - offset_y + border_y) / scale_y_d + 1` (exact
/// division), the same for the width, within the specification's bounds. Types: float32 to
/// float32; int8 to int8 (nearest) or int32 (bilinear, unnormalized); int16 to int16 or int64
/// (TOSA's int48).
fn resize_scaled(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::ResizeScaled(r) = cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.expect_rank(INPUT, 4)?;
    let t = cx.expect_dtype(INPUT, &[DType::F32, DType::I8, DType::I16])?;
    let want = match (t, r.mode) {
        (DType::F32, _) => DType::F32,
        (_, ResizeMode::Nearest) => t,
        (DType::I8, ResizeMode::Bilinear) => DType::I32,
        _ => DType::I64,
    };
    cx.expect_out_dtype(0, want)?;
    let [yn, yd, xn, xd] = r.scale;
    let bad = yn <= 0 || yd <= 0 || xn <= 0 || xd <= 0 || yn > 1 << 11 || xn > 1 << 11 || yd >= 16 * yn || xd >= 16 * xn;
    let (oy, ox) = (r.offset[0], r.offset[1]);
    let (by, bx) = (r.border[0], r.border[1]);
    let bad = bad || oy < -yn || oy >= 16 * yn || ox < -xn || ox >= 16 * xn || by < -16 * yn || by >= yn || bx < -16 * xn || bx >= xn;
    if bad {
        return Err(cx.err(format!("scale {:?}, offset {:?} and border {:?} are outside TOSA's bounds", r.scale, r.offset, r.border)));
    }
    let size = |i: usize, n: i32, d: i32, off: i32, border: i32| -> Result<usize, CompileError> {
        let num = (x[i] as i64 - 1) * i64::from(n) - i64::from(off) + i64::from(border);
        if x[i] == 0 || num < 0 || num % i64::from(d) != 0 || x[i] >= 16384 {
            return Err(cx.err(format!("input dim {i} ({}) with scale {n}/{d}, offset {off} and border {border} gives no whole output size", x[i])));
        }
        let o = (num / i64::from(d) + 1) as usize;
        if o >= 16384 {
            return Err(cx.err(format!("output dim {i} would be {o}; TOSA allows under 16384")));
        }
        Ok(o)
    };
    Ok(vec![x[0], size(1, yn, yd, oy, by)?, size(2, xn, xd, ox, bx)?, x[3]])
}

/// SPACE_TO_DEPTH: `block`×`block` cells of each channel become channels.
fn space_to_depth(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::SpaceToDepth { block: b } = cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.expect_rank(INPUT, 4)?;
    if b == 0 || x[1] % b != 0 || x[2] % b != 0 {
        return Err(cx.input_err(INPUT, format!("height and width of {} must be multiples of block_size {b}", fmt_dims(x))));
    }
    Ok(vec![x[0], x[1] / b, x[2] / b, x[3] * b * b])
}

/// DEPTH_TO_SPACE: groups of `block`² channels become `block`×`block` cells.
fn depth_to_space(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::DepthToSpace { block: b } = cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.expect_rank(INPUT, 4)?;
    if b == 0 || x[3] % (b * b) != 0 {
        return Err(cx.input_err(INPUT, format!("channels of {} must be a multiple of block_size² = {}", fmt_dims(x), b * b)));
    }
    Ok(vec![x[0], x[1] * b, x[2] * b, x[3] / (b * b)])
}

/// Block shape (input 1) and `[m, 2]` crops or paddings (input 2) of the *_ND ops.
fn blocks(cx: &Cx, what: &str) -> Result<(Vec<usize>, Vec<[usize; 2]>), CompileError> {
    let x = cx.input(INPUT)?;
    let block = cx.const_ints(BLOCK_SHAPE)?;
    let m = block.len();
    if m == 0 || x.len() < m + 1 || block.iter().any(|&b| b < 1) {
        return Err(cx.input_err(BLOCK_SHAPE, format!("block shape {block:?} must be >= 1 for each of up to {} spatial dims of {}", x.len().saturating_sub(1), fmt_dims(x))));
    }
    let pads = cx.const_ints(PADS)?;
    if cx.input(PADS)? != [m, 2] || pads.iter().any(|&v| v < 0) {
        return Err(cx.input_err(PADS, format!("{what} {pads:?} must be [{m}, 2] values >= 0")));
    }
    let pads = pads.chunks_exact(2).map(|c| [c[0] as usize, c[1] as usize]).collect();
    Ok((block.iter().map(|&b| b as usize).collect(), pads))
}

fn batch_to_space(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    let (block, crops) = blocks(cx, "crops")?;
    let prod: usize = block.iter().product();
    if x[0] % prod != 0 {
        return Err(cx.input_err(INPUT, format!("batch {} is not a multiple of the block product {prod}", x[0])));
    }
    let mut out = x.to_vec();
    out[0] = x[0] / prod;
    for (i, (&b, c)) in block.iter().zip(&crops).enumerate() {
        let full = x[1 + i] * b;
        if c[0] + c[1] > full {
            return Err(cx.input_err(CROPS, format!("crops {c:?} exceed dim {} of size {full}", 1 + i)));
        }
        out[1 + i] = full - c[0] - c[1];
    }
    Ok(out)
}

fn space_to_batch(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    let (block, pads) = blocks(cx, "paddings")?;
    let mut out = x.to_vec();
    out[0] = x[0] * block.iter().product::<usize>();
    for (i, (&b, p)) in block.iter().zip(&pads).enumerate() {
        let padded = x[1 + i] + p[0] + p[1];
        if padded % b != 0 {
            return Err(cx.input_err(PADDINGS, format!("padded dim {} ({padded}) is not a multiple of block {b}", 1 + i)));
        }
        out[1 + i] = padded / b;
    }
    Ok(out)
}

