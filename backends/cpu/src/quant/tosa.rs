//! TOSA's integer scaling (the specification's `apply_scale_32` / `apply_scale_16` and
//! RESCALE): one widening multiply and one rounding right shift, where TFLite rounds twice
//! (see [`super::fixedpoint`]); each format keeps its own path.

/// A lane type RESCALE reads and writes: int8, int16 (either may hold unsigned bits) or int32.
pub trait Lane: Copy {
    /// The value, zero-extended when `unsigned`, else sign-extended.
    fn widen(self, unsigned: bool) -> i64;
    /// `v` clipped to the type's (unsigned) range, as its bits.
    fn narrow(v: i64, unsigned: bool) -> Self;
}

impl Lane for i8 {
    fn widen(self, unsigned: bool) -> i64 {
        if unsigned { i64::from(self as u8) } else { i64::from(self) }
    }
    fn narrow(v: i64, unsigned: bool) -> Self {
        if unsigned { v.clamp(0, 255) as u8 as i8 } else { v.clamp(-128, 127) as i8 }
    }
}

impl Lane for i16 {
    fn widen(self, unsigned: bool) -> i64 {
        if unsigned { i64::from(self as u16) } else { i64::from(self) }
    }
    fn narrow(v: i64, unsigned: bool) -> Self {
        if unsigned { v.clamp(0, 65535) as u16 as i16 } else { v.clamp(-32768, 32767) as i16 }
    }
}

impl Lane for i32 {
    fn widen(self, _: bool) -> i64 {
        i64::from(self)
    }
    fn narrow(v: i64, _: bool) -> Self {
        v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
    }
}

/// TOSA's int48 (held in int64): RESCALE input only.
impl Lane for i64 {
    fn widen(self, _: bool) -> i64 {
        self
    }
    fn narrow(v: i64, _: bool) -> Self {
        v
    }
}

/// `apply_scale_32`: `(value * multiplier + round) >> shift` in one step, `round` being half
/// of the last bit (plus or minus 2^30 for DOUBLE_ROUND when `shift > 31`). The specification
/// requires the result to fit int32; a value outside that saturates here.
#[inline]
pub fn apply_scale_32(value: i64, multiplier: i32, shift: u32, double_round: bool) -> i64 {
    let mut round = 1i128 << (shift - 1);
    if double_round && shift > 31 {
        round += if value >= 0 { 1 << 30 } else { -(1 << 30) };
    }
    let r = (i128::from(value) * i128::from(multiplier) + round) >> shift;
    r.clamp(i128::from(i32::MIN), i128::from(i32::MAX)) as i64
}

/// [`apply_scale_32`] of an int32 value in 64-bit arithmetic, for the fused convolution epilogues:
/// `|value * multiplier| <= 2^62` and the rounding term is below `2^61 + 2^30`, so nothing
/// overflows. `shift` must be 1..=62 (RESCALE's checks give 2..=62).
#[inline(always)]
pub fn apply_scale_32_i32(value: i32, multiplier: i32, shift: u32, double_round: bool) -> i32 {
    let mut round = 1i64 << (shift - 1);
    if double_round && shift > 31 {
        round += if value >= 0 { 1 << 30 } else { -(1 << 30) };
    }
    let r = (i64::from(value) * i64::from(multiplier) + round) >> shift;
    r.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// `apply_scale_16`: as [`apply_scale_32`] with a 16-bit multiplier and a 48-bit value.
#[inline]
pub fn apply_scale_16(value: i64, multiplier: i16, shift: u32) -> i64 {
    let r = (i128::from(value) * i128::from(multiplier) + (1i128 << (shift - 1))) >> shift;
    r.clamp(i128::from(i32::MIN), i128::from(i32::MAX)) as i64
}

/// RESCALE's constants: per channel (of the last dim) or one for all.
#[derive(Clone, Debug)]
pub struct Rescale {
    /// Multipliers (int32 values, or int16 ones when not `scale32`).
    pub multiplier: Vec<i32>,
    /// Right shifts, 2..=62.
    pub shift: Vec<u32>,
    pub scale32: bool,
    pub double_round: bool,
    pub input_zp: i64,
    pub output_zp: i64,
    pub input_unsigned: bool,
    pub output_unsigned: bool,
}

impl Rescale {
    /// One value of channel `c`.
    #[inline(always)]
    pub(crate) fn one<TI: Lane, TO: Lane>(&self, v: TI, c: usize) -> TO {
        let value = v.widen(self.input_unsigned) - self.input_zp;
        let r = if self.scale32 {
            // An int32 value needs no 128-bit product (see apply_scale_32_i32).
            match i32::try_from(value) {
                Ok(v32) => i64::from(apply_scale_32_i32(v32, self.multiplier[c], self.shift[c], self.double_round)),
                Err(_) => apply_scale_32(value, self.multiplier[c], self.shift[c], self.double_round),
            }
        } else {
            apply_scale_16(value, self.multiplier[c] as i16, self.shift[c])
        };
        // The zero point is added in int32 (apply_add_s), then clipped to the output type.
        let r = (r + self.output_zp).clamp(i64::from(i32::MIN), i64::from(i32::MAX));
        TO::narrow(r, self.output_unsigned)
    }

    /// RESCALE over `x` (row-major; channel = index modulo the number of multipliers).
    pub fn run<TI: Lane, TO: Lane>(&self, x: &[TI], out: &mut [TO]) {
        let n = self.multiplier.len().max(1);
        if n == 1 {
            // One scale for all: one flat loop (rows of one value cost a loop each).
            for (o, &v) in out.iter_mut().zip(x) {
                *o = self.one(v, 0);
            }
            return;
        }
        for (o, x) in out.chunks_mut(n).zip(x.chunks(n)) {
            for (c, (o, &v)) in o.iter_mut().zip(x).enumerate() {
                *o = self.one(v, c);
            }
        }
    }

    /// The result for each byte of an int8 input, per channel: `table[c * 256 + byte]`.
    pub fn table8<TO: Lane>(&self) -> Vec<TO> {
        let n = self.multiplier.len().max(1);
        (0..n).flat_map(|c| (0..=255u8).map(move |b| self.one::<i8, TO>(b as i8, c))).collect()
    }
}

/// RESCALE of an int8 input through its [`Rescale::table8`] (`n` channels).
pub fn rescale_by_table<TO: Copy>(table: &[TO], n: usize, x: &[i8], out: &mut [TO]) {
    if n == 1 {
        let t: &[TO; 256] = match table.get(..256).and_then(|t| t.try_into().ok()) {
            Some(t) => t,
            None => return,
        };
        for (o, &v) in out.iter_mut().zip(x) {
            *o = t[v as u8 as usize];
        }
        return;
    }
    for (o, x) in out.chunks_mut(n).zip(x.chunks(n)) {
        for (c, (o, &v)) in o.iter_mut().zip(x).enumerate() {
            *o = table[c * 256 + v as u8 as usize];
        }
    }
}

/// Geometry of a plain-integer 2-D convolution (TOSA CONV2D / DEPTHWISE_CONV2D on int8 with
/// zero points): NHWC image, OHWI filter (depthwise: `[1, KH, KW, C*M]`), int32 sums.
#[derive(Clone, Copy, Debug)]
pub struct IntConv {
    /// Input dims `[n, h, w, c]`.
    pub input: [usize; 4],
    /// Output dims `[n, h, w, c]`.
    pub output: [usize; 4],
    /// Window height and width.
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    /// Padding before the first row and column.
    pub pad: [usize; 2],
    /// Depthwise: output channel `o` reads input channel `o / multiplier`.
    pub depthwise: bool,
    pub x_zp: i32,
    pub w_zp: i32,
}

/// An integer convolution's or matmul's sum type: int32 (int8 operands) or int64 (TOSA's int48,
/// int16 operands).
pub trait Acc: Copy {
    fn to_i64(self) -> i64;
    /// The 64-bit sum kept as this type (its low bits; the specification requires it to fit).
    fn from_i64(v: i64) -> Self;
}

impl Acc for i32 {
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
    fn from_i64(v: i64) -> Self {
        v as i32
    }
}

impl Acc for i64 {
    fn to_i64(self) -> i64 {
        self
    }
    fn from_i64(v: i64) -> Self {
        v
    }
}

impl IntConv {
    /// `out = Σ (x - x_zp)(w - w_zp) + bias` over the in-bounds taps (padding adds nothing),
    /// accumulated in 64 bits and kept as the output type (int32 for int8 images, int64 for
    /// int16 ones: the specification requires the sum to fit int32 / int48).
    pub fn run<X: Lane, O: Acc>(&self, x: &[X], w: &[i8], bias: Option<&[O]>, out: &mut [O]) {
        let [n, ih, iw, ic] = self.input;
        let [_, oh, ow, oc] = self.output;
        let [kh, kw] = self.kernel;
        let mult = if self.depthwise { (oc / ic.max(1)).max(1) } else { 1 };
        for b in 0..n {
            for oy in 0..oh {
                for ox in 0..ow {
                    for o in 0..oc {
                        let mut acc: i64 = bias.map_or(0, |bv| bv[o].to_i64());
                        for ky in 0..kh {
                            let y = (oy * self.stride[0] + ky * self.dilation[0]) as isize - self.pad[0] as isize;
                            if y < 0 || y as usize >= ih {
                                continue;
                            }
                            for kx in 0..kw {
                                let xx = (ox * self.stride[1] + kx * self.dilation[1]) as isize - self.pad[1] as isize;
                                if xx < 0 || xx as usize >= iw {
                                    continue;
                                }
                                let base = ((b * ih + y as usize) * iw + xx as usize) * ic;
                                if self.depthwise {
                                    let v = x[base + o / mult].widen(false) - i64::from(self.x_zp);
                                    let wv = i64::from(w[(ky * kw + kx) * oc + o]) - i64::from(self.w_zp);
                                    acc += v * wv;
                                } else {
                                    let wbase = ((o * kh + ky) * kw + kx) * ic;
                                    for c in 0..ic {
                                        acc += (x[base + c].widen(false) - i64::from(self.x_zp)) * (i64::from(w[wbase + c]) - i64::from(self.w_zp));
                                    }
                                }
                            }
                        }
                        out[((b * oh + oy) * ow + ox) * oc + o] = O::from_i64(acc);
                    }
                }
            }
        }
    }
}

/// Geometry of a plain-integer 3-D convolution (TOSA CONV3D on int8 / int16 with zero points):
/// NDHWC image, `[KD, KH, KW, IC, OC]` filter. Taps in the padding are skipped, as in the
/// specification's pseudo-code (so a zero point known only at run time needs no padded copy).
#[derive(Clone, Copy, Debug)]
pub struct IntConv3d {
    /// Input dims `[n, d, h, w, c]`.
    pub input: [usize; 5],
    /// Output dims `[n, d, h, w, c]`.
    pub output: [usize; 5],
    /// Window depth, height and width.
    pub kernel: [usize; 3],
    pub stride: [usize; 3],
    pub dilation: [usize; 3],
    /// Padding cells before the first input cell along depth, height and width.
    pub pad: [usize; 3],
    pub x_zp: i32,
    pub w_zp: i32,
}

impl IntConv3d {
    /// `out = Σ (x - x_zp)(w - w_zp) + bias`, summed in 64 bits, kept as the output type.
    pub fn run<X: Lane, O: Acc>(&self, x: &[X], w: &[i8], bias: Option<&[O]>, out: &mut [O]) {
        let [n, id, ih, iw, ic] = self.input;
        let [_, od, oh, ow, oc] = self.output;
        let [kd, kh, kw] = self.kernel;
        let (s, dl, p) = (self.stride, self.dilation, self.pad);
        let mut o_at = 0;
        for b in 0..n {
            for oz in 0..od {
                for oy in 0..oh {
                    for ox in 0..ow {
                        for o in 0..oc {
                            let mut acc: i64 = bias.map_or(0, |bv| bv[o].to_i64());
                            for dz in 0..kd {
                                let Some(z) = (oz * s[0] + dz * dl[0]).checked_sub(p[0]).filter(|&z| z < id) else { continue };
                                for dy in 0..kh {
                                    let Some(y) = (oy * s[1] + dy * dl[1]).checked_sub(p[1]).filter(|&y| y < ih) else { continue };
                                    for dx in 0..kw {
                                        let Some(xx) = (ox * s[2] + dx * dl[2]).checked_sub(p[2]).filter(|&v| v < iw) else { continue };
                                        let base = (((b * id + z) * ih + y) * iw + xx) * ic;
                                        let wbase = ((dz * kh + dy) * kw + dx) * ic;
                                        for c in 0..ic {
                                            let xv = x[base + c].widen(false) - i64::from(self.x_zp);
                                            let wv = i64::from(w[(wbase + c) * oc + o]) - i64::from(self.w_zp);
                                            acc += xv * wv;
                                        }
                                    }
                                }
                            }
                            out[o_at] = O::from_i64(acc);
                            o_at += 1;
                        }
                    }
                }
            }
        }
    }
}

/// Plain-integer MATMUL: `[b, m, k] x [b, k, n] -> [b, m, n]` sums of zero-point-corrected
/// int8 (int32 sums) or int16 (int64 sums) products (`b` of either side may be 1 and is then shared).
#[allow(clippy::too_many_arguments)]
pub fn matmul_int<X: Lane, O: Acc>(a: &[X], b: &[X], batches: [usize; 2], m: usize, k: usize, n: usize, zps: [i32; 2], out: &mut [O]) {
    let nb = batches[0].max(batches[1]);
    // Row by row: each `a` value times a whole row of `b`, added into a row of sums (contiguous,
    // so it vectorizes). int8 sums are kept in wrapping int32 (the low 32 bits of the exact sum,
    // which is what the result keeps), int16 ones in int64.
    let narrow = std::mem::size_of::<O>() == 4;
    let (mut row32, mut row64) = (vec![0i32; if narrow { n } else { 0 }], vec![0i64; if narrow { 0 } else { n }]);
    let (za, zb) = (i64::from(zps[0]), i64::from(zps[1]));
    let mut bz = vec![0i64; k * n];
    for bi in 0..nb {
        let ab = if batches[0] == 1 { 0 } else { bi };
        let bb = if batches[1] == 1 { 0 } else { bi };
        if bi == 0 || batches[1] != 1 {
            for (d, v) in bz.iter_mut().zip(&b[bb * k * n..(bb + 1) * k * n]) {
                *d = v.widen(false) - zb;
            }
        }
        for i in 0..m {
            let arow = &a[(ab * m + i) * k..(ab * m + i + 1) * k];
            let orow = &mut out[(bi * m + i) * n..(bi * m + i + 1) * n];
            if narrow {
                row32.fill(0);
                for (p, av) in arow.iter().enumerate() {
                    let av = (av.widen(false) - za) as i32;
                    for (r, &bv) in row32.iter_mut().zip(&bz[p * n..(p + 1) * n]) {
                        *r = r.wrapping_add(av.wrapping_mul(bv as i32));
                    }
                }
                for (o, &r) in orow.iter_mut().zip(&row32) {
                    *o = O::from_i64(i64::from(r));
                }
            } else {
                row64.fill(0);
                for (p, av) in arow.iter().enumerate() {
                    let av = av.widen(false) - za;
                    for (r, &bv) in row64.iter_mut().zip(&bz[p * n..(p + 1) * n]) {
                        *r += av * bv;
                    }
                }
                for (o, &r) in orow.iter_mut().zip(&row64) {
                    *o = O::from_i64(r);
                }
            }
        }
    }
}

/// The specification's `reciprocal_scale`: a multiplier and shift that divide by `count`
/// (`count` >= 1) through [`apply_scale_32`].
pub fn reciprocal_scale(count: u32) -> (i32, u32) {
    let k = 32 - (count - 1).leading_zeros(); // (1 << k) / 2 < count <= 1 << k
    let numerator = ((1i64 << 30) + 1) << k;
    ((numerator / i64::from(count)) as i32, 30 + k)
}

/// Plain-integer 2-D pooling over NHWC int8/int16 (TOSA): the maximum of the in-bounds taps,
/// or (`zps` given, int8) their zero-point-corrected sum divided by their count with
/// [`reciprocal_scale`], plus the output zero point, clipped.
#[derive(Clone, Copy, Debug)]
pub struct IntPool {
    pub input: [usize; 4],
    pub output: [usize; 4],
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub pad: [usize; 2],
    /// Average with (input, output) zero points; `None` for the maximum.
    pub average: Option<[i64; 2]>,
}

impl IntPool {
    /// Each output pixel: the in-bounds taps' rows of channels summed (or maxed) into one row,
    /// then each channel finished — the same integers as tap by tap, channel by channel.
    pub fn run<T: Lane>(&self, x: &[T], out: &mut [T]) {
        let [n, ih, iw, c] = self.input;
        let [_, oh, ow, _] = self.output;
        // Rows of up to 64 channels on the stack (no allocation per run).
        let (mut acc_s, mut max_s) = ([0i64; 64], [i64::MIN; 64]);
        let mut heap: (Vec<i64>, Vec<i64>);
        let (acc, max) = if c <= 64 {
            (&mut acc_s[..c], &mut max_s[..c])
        } else {
            heap = (vec![0i64; c], vec![i64::MIN; c]);
            (&mut heap.0[..], &mut heap.1[..])
        };
        for b in 0..n {
            for oy in 0..oh {
                for ox in 0..ow {
                    acc.fill(0);
                    max.fill(i64::MIN);
                    let mut count = 0u32;
                    for ky in 0..self.kernel[0] {
                        let y = (oy * self.stride[0] + ky) as isize - self.pad[0] as isize;
                        if y < 0 || y as usize >= ih {
                            continue;
                        }
                        for kx in 0..self.kernel[1] {
                            let xx = (ox * self.stride[1] + kx) as isize - self.pad[1] as isize;
                            if xx < 0 || xx as usize >= iw {
                                continue;
                            }
                            let at = ((b * ih + y as usize) * iw + xx as usize) * c;
                            let row = &x[at..at + c];
                            count += 1;
                            if self.average.is_some() {
                                for (a, v) in acc.iter_mut().zip(row) {
                                    *a += v.widen(false);
                                }
                            } else {
                                for (m, v) in max.iter_mut().zip(row) {
                                    *m = (*m).max(v.widen(false));
                                }
                            }
                        }
                    }
                    let o = &mut out[((b * oh + oy) * ow + ox) * c..][..c];
                    match self.average {
                        None => {
                            for (o, &m) in o.iter_mut().zip(max.iter()) {
                                *o = T::narrow(if count == 0 { 0 } else { m }, false);
                            }
                        }
                        Some([in_zp, out_zp]) => {
                            let (m, sh) = if count == 0 { (0, 1) } else { reciprocal_scale(count) };
                            for (o, &a) in o.iter_mut().zip(acc.iter()) {
                                let v = a - in_zp * i64::from(count);
                                let scaled = match i32::try_from(v) {
                                    Ok(v32) => i64::from(apply_scale_32_i32(v32, m, sh, false)),
                                    Err(_) => apply_scale_32(v, m, sh, false),
                                };
                                let r = if count == 0 { out_zp } else { scaled + out_zp };
                                *o = T::narrow(r, false);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// TOSA MUL on integers with NumPy broadcasting: products widened to 64 bits, rounded right by
/// `shift` when it is positive (int32 operands), kept as their low 32 bits otherwise.
pub fn int_mul<T: Lane>(a: &[T], a_dims: &[usize], b: &[T], b_dims: &[usize], shift: u32, out: &mut [i32], out_dims: &[usize]) {
    let mul = |x: T, y: T| {
        let p = x.widen(false) * y.widen(false);
        if shift > 0 { ((p + (1i64 << (shift - 1))) >> shift) as i32 } else { p as i32 }
    };
    // Without broadcasting, or against one value: no index arithmetic.
    let n = out.len();
    if a.len() == n && b.len() == n {
        out.iter_mut().zip(a.iter().zip(b)).for_each(|(o, (&x, &y))| *o = mul(x, y));
        return;
    }
    if let (true, [y]) = (a.len() == n, b) {
        out.iter_mut().zip(a).for_each(|(o, &x)| *o = mul(x, *y));
        return;
    }
    if let (true, [x]) = (b.len() == n, a) {
        out.iter_mut().zip(b).for_each(|(o, &y)| *o = mul(*x, y));
        return;
    }
    let rank = out_dims.len();
    // Strides of a and b over the output's dims (0 where they broadcast).
    let strides = |dims: &[usize]| -> Vec<usize> {
        let mut st = vec![0; rank];
        let off = rank - dims.len();
        let mut acc = 1;
        for d in (0..dims.len()).rev() {
            st[off + d] = if dims[d] == 1 { 0 } else { acc };
            acc *= dims[d];
        }
        st
    };
    let (sa, sb) = (strides(a_dims), strides(b_dims));
    let mut idx = vec![0usize; rank];
    for o in out.iter_mut() {
        let ia: usize = idx.iter().zip(&sa).map(|(i, s)| i * s).sum();
        let ib: usize = idx.iter().zip(&sb).map(|(i, s)| i * s).sum();
        *o = mul(a[ia], b[ib]);
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < out_dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// TABLE on int8: `table[x + 128]`.
pub fn table_i8(x: &[i8], table: &[i8], out: &mut [i8]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = table[(i32::from(v) + 128) as usize];
    }
}

/// TABLE on int16: the entry below `x` (every 128 values) shifted left by 7 plus the slope to
/// the next entry times the low 7 bits of `x`, as int32.
pub fn table_i16(x: &[i16], table: &[i16], out: &mut [i32]) {
    for (o, &v) in out.iter_mut().zip(x) {
        let index = ((i32::from(v) + 32768) >> 7) as usize;
        let fraction = i32::from(v) & 0x7f;
        let base = i32::from(table[index]);
        let next = i32::from(table[index + 1]);
        *o = (base << 7) + (next - base) * fraction;
    }
}

/// `f(a, b)` over two NumPy-broadcast operands into `out` of dims `out_dims`.
pub fn broadcast2<A: Copy, B: Copy, O>(a: &[A], a_dims: &[usize], b: &[B], b_dims: &[usize], out: &mut [O], out_dims: &[usize], mut f: impl FnMut(A, B) -> O) {
    let rank = out_dims.len();
    let strides = |dims: &[usize]| -> Vec<usize> {
        let mut st = vec![0; rank];
        let off = rank.saturating_sub(dims.len());
        let mut acc = 1;
        for d in (0..dims.len()).rev() {
            st[off + d] = if dims[d] == 1 { 0 } else { acc };
            acc *= dims[d];
        }
        st
    };
    let (sa, sb) = (strides(a_dims), strides(b_dims));
    let mut idx = vec![0usize; rank];
    for o in out.iter_mut() {
        let ia: usize = idx.iter().zip(&sa).map(|(i, s)| i * s).sum();
        let ib: usize = idx.iter().zip(&sb).map(|(i, s)| i * s).sum();
        *o = f(a[ia], b[ib]);
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < out_dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// LOGICAL_LEFT_SHIFT of a `bits`-bit value: the low bits of `a << b` (`b` clamped to the width).
pub fn left_shift(a: i64, b: i64, bits: u32) -> i64 {
    let s = b.clamp(0, i64::from(bits) - 1) as u32;
    let mask = if bits == 64 { -1i64 } else { (1i64 << bits) - 1 };
    let v = (a << s) & mask;
    // Back to a signed value of `bits` bits.
    if bits < 64 && v >> (bits - 1) & 1 == 1 { v - (1i64 << bits) } else { v }
}

/// ARITHMETIC_RIGHT_SHIFT: `a >> b`, plus the last bit shifted out with `round`.
pub fn right_shift(a: i64, b: i64, bits: u32, round: bool) -> i64 {
    let s = b.clamp(0, i64::from(bits) - 1);
    let mut r = a >> s;
    if round && s > 0 && (a >> (s - 1)) & 1 != 0 {
        r += 1;
    }
    r
}

/// LOGICAL_RIGHT_SHIFT: `a >> b` on the `bits` low bits as unsigned, back to a signed value.
pub fn logical_right_shift(a: i64, b: i64, bits: u32) -> i64 {
    let s = b.clamp(0, i64::from(bits) - 1) as u32;
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let v = ((a as u64) & mask) >> s;
    // Back to a signed value of `bits` bits (only a shift of 0 keeps the sign bit).
    if bits < 64 && v >> (bits - 1) & 1 == 1 { v as i64 - (1i64 << bits) } else { v as i64 }
}

/// INTDIV: `a / b` truncated toward zero; `None` when `b` is 0 (the specification's REQUIRE).
/// `i32::MIN / -1` (outside int32) wraps.
pub fn int_div(a: i32, b: i32) -> Option<i32> {
    (b != 0).then(|| a.wrapping_div(b))
}

/// NEGATE on an integer of `bits` bits: `-(a - in_zp) + out_zp` in 64 bits, clipped to the type.
pub fn negate(a: i64, in_zp: i64, out_zp: i64, bits: u32) -> i64 {
    let (lo, hi) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
    (out_zp - (a - in_zp)).clamp(lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rounding_step_half_away_from_minus_infinity() {
        // 3 * 2^30 >> 31 = 1.5 -> 2; -1.5 -> -1 (round adds half, then floors).
        assert_eq!(apply_scale_32(3, 1 << 30, 31, false), 2);
        assert_eq!(apply_scale_32(-3, 1 << 30, 31, false), -1);
        assert_eq!(apply_scale_16(5, 1 << 14, 15), 3);
    }

    proptest::proptest! {
        #[test]
        fn matmul_rows_are_the_sums_of_products(dims in (1usize..4, 1usize..5, 1usize..9, 1usize..7), bshared in proptest::prelude::any::<bool>(), seed in proptest::prelude::any::<u64>(), zps in (-128i32..128, -128i32..128)) {
            let (nb, m, k, n) = dims;
            let bb = if bshared { 1 } else { nb };
            let mut rng = crate::testdata::xorshift(seed);
            let a: Vec<i8> = (0..nb * m * k).map(|_| rng.next().unwrap_or(0) as i8).collect();
            let b: Vec<i8> = (0..bb * k * n).map(|_| rng.next().unwrap_or(0) as i8).collect();
            let mut got = vec![0i32; nb * m * n];
            matmul_int(&a, &b, [nb, bb], m, k, n, [zps.0, zps.1], &mut got);
            let a16: Vec<i16> = a.iter().map(|&v| i16::from(v)).collect();
            let b16: Vec<i16> = b.iter().map(|&v| i16::from(v)).collect();
            let mut wide = vec![0i64; nb * m * n];
            matmul_int(&a16, &b16, [nb, bb], m, k, n, [zps.0, zps.1], &mut wide);
            for bi in 0..nb {
                for i in 0..m {
                    for j in 0..n {
                        let want: i64 = (0..k).map(|p| (i64::from(a[(bi * m + i) * k + p]) - i64::from(zps.0)) * (i64::from(b[((if bshared { 0 } else { bi }) * k + p) * n + j]) - i64::from(zps.1))).sum();
                        proptest::prop_assert_eq!(i64::from(got[(bi * m + i) * n + j]), want);
                        proptest::prop_assert_eq!(wide[(bi * m + i) * n + j], want);
                    }
                }
            }
        }

        #[test]
        fn the_int8_table_is_rescale(x in proptest::collection::vec(proptest::prelude::any::<i8>(), 1..64), n in 1usize..4, m in 1i32..i32::MAX, s in 2u32..=40, zps in (-128i64..128, -128i64..128), flags in proptest::prelude::any::<[bool; 4]>()) {
            let [scale32, double_round, input_unsigned, output_unsigned] = flags;
            let m = if scale32 { m } else { m >> 16 };
            let r = Rescale {
                multiplier: (0..n as i32).map(|c| m.saturating_sub(c * 1000).max(1)).collect(),
                shift: vec![s; n],
                scale32,
                double_round,
                input_zp: if input_unsigned { zps.0 & 0xff } else { zps.0 },
                output_zp: if output_unsigned { zps.1 & 0xff } else { zps.1 },
                input_unsigned,
                output_unsigned,
            };
            let (mut want, mut got) = (vec![0i8; x.len()], vec![0i8; x.len()]);
            r.run::<i8, i8>(&x, &mut want);
            rescale_by_table(&r.table8::<i8>(), n, &x, &mut got);
            proptest::prop_assert_eq!(got, want);
        }

        #[test]
        fn the_64_bit_form_is_apply_scale_32(v in proptest::prelude::any::<i32>(), m in proptest::prelude::any::<i32>(), s in 2u32..=62, dr in proptest::prelude::any::<bool>()) {
            proptest::prop_assert_eq!(i64::from(apply_scale_32_i32(v, m, s, dr)), apply_scale_32(i64::from(v), m, s, dr));
        }
    }

    #[test]
    fn double_round_adds_a_second_rounding_above_shift_31() {
        // value * m = 2^32 + 2^30 (1.25 at shift 32): single -> 1, double rounds up at bit 30 first.
        let (v, m) = (5, 1 << 30);
        assert_eq!(apply_scale_32(v, m, 32, false), 1);
        assert_eq!(apply_scale_32(v, m, 32, true), 2);
        // -1.25: the second rounding moves toward zero by 2^30 first, -1 either way.
        assert_eq!(apply_scale_32(-v, m, 32, true), -1);
        assert_eq!(apply_scale_32(-7, m, 32, true), -2);
    }

    #[test]
    fn zero_points_apply_to_taps_inside_the_image_only() {
        // 1x2x2x1 image of 3s with zp 1 (value 2), 3x3 ones-filter with zp 0, pad 1: each
        // output sees the 4 in-bounds taps: 4 * 2 = 8, plus bias 1.
        let g = IntConv { input: [1, 2, 2, 1], output: [1, 2, 2, 1], kernel: [3, 3], stride: [1, 1], dilation: [1, 1], pad: [1, 1], depthwise: false, x_zp: 1, w_zp: 0 };
        let mut out = vec![0; 4];
        g.run(&[3; 4], &[1; 9], Some(&[1]), &mut out);
        assert_eq!(out, vec![9; 4]);
        let mut mm = vec![0; 1];
        matmul_int(&[2, 3], &[4, 5], [1, 1], 1, 2, 1, [2, -1], &mut mm);
        // (2 - 2) * (4 + 1) + (3 - 2) * (5 + 1)
        let want: i32 = [(2 - 2, 4 + 1), (3 - 2, 5 + 1)].iter().map(|(a, b)| a * b).sum();
        assert_eq!(mm, vec![want]);
    }

    #[test]
    fn average_divides_with_the_reciprocal_scale() {
        // 3 taps of sum 4 -> 1.333 -> 1; sum 5 -> 1.667 -> 2; exact quotients stay exact.
        for (sum, count, want) in [(4i64, 3u32, 1i64), (5, 3, 2), (9, 9, 1), (-5, 3, -2), (18, 4, 5)] {
            let (m, s) = reciprocal_scale(count);
            assert_eq!(apply_scale_32(sum, m, s, false), want, "{sum}/{count}");
        }
    }

    #[test]
    fn products_round_right_by_the_shift_and_broadcast() {
        let mut out = vec![0; 4];
        // [2,2] * [1,2] >> 2 with rounding: 15 -> 3.75 -> 4; -3 -> -0.75 -> -1; 35 -> 8.75 -> 9; 0.
        int_mul(&[3i32, -3, 7, 0], &[2, 2], &[5, 1], &[1, 2], 2, &mut out, &[2, 2]);
        assert_eq!(out, vec![4, -1, 9, 0]);
        let mut wide = vec![0; 2];
        int_mul(&[-128i8, 127], &[2], &[-128i8], &[1], 0, &mut wide, &[2]);
        assert_eq!(wide, vec![16384, -16256]);
    }

    #[test]
    fn tables_index_and_interpolate() {
        let t8: Vec<i8> = (0..256).map(|i| (i - 128) as i8).collect();
        let mut o8 = vec![0i8; 2];
        table_i8(&[-128, 127], &t8, &mut o8);
        assert_eq!(o8, vec![-128, 127]);
        let t16: Vec<i16> = (0..513).map(|i| i as i16).collect();
        let mut o16 = vec![0i32; 2];
        // -32768 -> index 0, fraction 0; -32768 + 64 -> index 0, fraction 64: 0 + 1 * 64.
        table_i16(&[-32768, -32704], &t16, &mut o16);
        assert_eq!(o16, vec![0, 64]);
    }

    #[test]
    fn shifts_round_and_wrap() {
        assert_eq!(right_shift(5, 1, 32, true), 3);
        assert_eq!(right_shift(5, 1, 32, false), 2);
        assert_eq!(right_shift(-5, 1, 32, true), -2);
        assert_eq!(left_shift(1, 31, 32, ), i64::from(i32::MIN));
        assert_eq!(left_shift(3, 7, 8), -128);
        assert_eq!((0u32.leading_zeros(), 1u32.leading_zeros()), (32, 31));
    }

    #[test]
    fn unsigned_lanes_and_per_channel_constants() {
        let r = Rescale { multiplier: vec![1 << 30, 1 << 29], shift: vec![30, 30], scale32: true, double_round: false, input_zp: 128, output_zp: 0, input_unsigned: true, output_unsigned: false };
        let x: Vec<i8> = vec![-1, -1, 0, 0]; // uint8 255, 255, 0, 0
        let mut out = vec![0i8; 4];
        r.run(&x, &mut out);
        // 127 * 1 = 127; 127 * 0.5 = 63.5 -> 64; -128 -> -128; -64.
        assert_eq!(out, vec![127, 64, -128, -64]);
    }
}
