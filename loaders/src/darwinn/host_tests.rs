use proptest::prelude::*;

use super::*;
use crate::darwinn::{DataType, Layer, LayerKind, Numerics, OutputLayout};

/// A tile grid: rows of tiles of `y_parts` heights, columns of `x_parts` widths; each tile
/// stores its rows one after the other, each element `z_stride` elements apart (z padded), and
/// `tile_pad` unused elements after each tile.
struct Grid {
    y_parts: Vec<usize>,
    x_parts: Vec<usize>,
    z: usize,
    z_stride: usize,
    tile_pad: usize,
}

impl Grid {
    fn starts(parts: &[usize]) -> Vec<usize> {
        parts.iter().scan(0, |s, &p| {
            let here = *s;
            *s += p;
            Some(here)
        }).collect()
    }

    fn tile_sizes(&self) -> Vec<usize> {
        let mut v = Vec::new();
        for &h in &self.y_parts {
            for &w in &self.x_parts {
                v.push(h * w * self.z_stride + self.tile_pad);
            }
        }
        v
    }

    /// The schema's maps for this grid, built from their definitions.
    fn layout(&self) -> OutputLayout {
        let nx = self.x_parts.len();
        let offsets = Grid::starts(&self.tile_sizes());
        let (mut yt, mut yl, mut xt, mut xl, mut rs) = (vec![], vec![], vec![], vec![], vec![]);
        for (ty, &h) in self.y_parts.iter().enumerate() {
            for ly in 0..h {
                yt.push((ty * nx) as i32);
                yl.push(ly as i32);
            }
        }
        for (tx, &w) in self.x_parts.iter().enumerate() {
            for lx in 0..w {
                xt.push(tx as i32);
                xl.push((lx * self.z_stride) as i32);
                rs.push((w * self.z_stride) as i32);
            }
        }
        OutputLayout {
            y_coordinate_to_linear_tile_id_map: yt,
            x_coordinate_to_linear_tile_id_map: xt,
            linearized_tile_byte_offset: offsets.iter().map(|&o| o as i32).collect(),
            x_coordinate_to_local_byte_offset: xl,
            y_coordinate_to_local_y_offset: yl,
            x_coordinate_to_local_y_row_size: rs,
        }
    }

    fn layer(&self, dt: DataType) -> Layer {
        let ys: usize = self.y_parts.iter().sum();
        let xs: usize = self.x_parts.iter().sum();
        let total: usize = self.tile_sizes().iter().sum();
        Layer {
            name: "out".into(),
            size_bytes: (total * dt.size()) as i32,
            y_dim: ys as i32,
            x_dim: xs as i32,
            z_dim: self.z as i32,
            numerics: None,
            data_type: dt,
            kind: LayerKind::Output { layout: Some(self.layout()), data_type: 0, shape_info: None },
            execution_count_per_inference: 1,
            cache_on_dram: false,
            shape: None,
        }
    }

    /// What a device writes: tile by tile, row by row, the tensor `value(y, x, z)` (one byte
    /// per element of width `w`, repeated), padding 0xEE. Independent of the maps.
    fn device_bytes(&self, w: usize, value: impl Fn(usize, usize, usize) -> u8) -> Vec<u8> {
        let mut out = Vec::new();
        let (ystarts, xstarts) = (Grid::starts(&self.y_parts), Grid::starts(&self.x_parts));
        for (ty, &h) in self.y_parts.iter().enumerate() {
            for (tx, &wd) in self.x_parts.iter().enumerate() {
                for ly in 0..h {
                    for lx in 0..wd {
                        for zz in 0..self.z_stride {
                            let b = if zz < self.z { value(ystarts[ty] + ly, xstarts[tx] + lx, zz) } else { 0xEE };
                            out.extend(std::iter::repeat_n(b, w));
                        }
                    }
                }
                out.extend(std::iter::repeat_n(0xEE, self.tile_pad * w));
            }
        }
        out
    }
}

fn plain(ys: usize, xs: usize, z: usize, w: usize, value: impl Fn(usize, usize, usize) -> u8) -> Vec<u8> {
    let mut v = Vec::new();
    for y in 0..ys {
        for x in 0..xs {
            for zz in 0..z {
                v.extend(std::iter::repeat_n(value(y, x, zz), w));
            }
        }
    }
    v
}

/// The schema's worked example: 2x2 tiles, a 4x5x32 output, tiles 0/2 hold 2x3x32, tiles 1/3
/// 2x2x32. The grid gives exactly the maps the schema lists, and re-layout recovers YXZ.
#[test]
fn the_schemas_worked_example() {
    let g = Grid { y_parts: vec![2, 2], x_parts: vec![3, 2], z: 32, z_stride: 32, tile_pad: 0 };
    let m = g.layout();
    assert_eq!(m.y_coordinate_to_linear_tile_id_map, [0, 0, 2, 2]);
    assert_eq!(m.x_coordinate_to_linear_tile_id_map, [0, 0, 0, 1, 1]);
    assert_eq!(m.linearized_tile_byte_offset, [0, 192, 320, 512]);
    assert_eq!(m.x_coordinate_to_local_byte_offset, [0, 32, 64, 0, 32]);
    assert_eq!(m.y_coordinate_to_local_y_offset, [0, 1, 0, 1]);
    assert_eq!(m.x_coordinate_to_local_y_row_size, [96, 96, 96, 64, 64]);
    let l = g.layer(DataType::FixedPoint8);
    assert_eq!(check_layout(&m, &l).unwrap(), 640);
    let value = |y: usize, x: usize, z: usize| (y * 50 + x * 10 + z) as u8;
    let src = g.device_bytes(1, value);
    let mut dst = vec![0u8; 4 * 5 * 32];
    relayout(&l, &src, &mut dst).unwrap();
    assert_eq!(dst, plain(4, 5, 32, 1, value));
    // Element (y 3, x 4, z 0) is in tile 3 at 512 + 1·64 + 32.
    assert_eq!(src[512 + 64 + 32], value(3, 4, 0));
    let mut back = vec![0xEEu8; src.len()];
    tile(&l, &dst, &mut back).unwrap();
    assert_eq!(back, src, "tile() is relayout's inverse on the elements");
}

#[test]
fn one_by_one_outputs_are_their_first_z_elements() {
    let l = Layer {
        name: "logits".into(),
        size_bytes: 1008,
        y_dim: 1,
        x_dim: 1,
        z_dim: 1001,
        numerics: Some(Numerics { zero_point: 0, dequantization_factor: 1.0 / 256.0 }),
        data_type: DataType::FixedPoint8,
        kind: LayerKind::Output { layout: None, data_type: 0, shape_info: None },
        execution_count_per_inference: 1,
        cache_on_dram: false,
        shape: None,
    };
    let src: Vec<u8> = (0..1008).map(|i| (i % 251) as u8).collect();
    let mut dst = vec![0u8; 1001];
    relayout(&l, &src, &mut dst).unwrap();
    assert_eq!(dst[..], src[..1001]);
    assert!(relayout(&l, &src[..1000], &mut dst).is_err(), "a short device buffer is an error");
}

#[test]
fn bad_maps_are_errors_not_panics() {
    let g = Grid { y_parts: vec![2, 2], x_parts: vec![3, 2], z: 32, z_stride: 32, tile_pad: 0 };
    let mut l = g.layer(DataType::FixedPoint8);
    let LayerKind::Output { layout: Some(m), .. } = &mut l.kind else { unreachable!() };
    m.linearized_tile_byte_offset[3] = 10_000;
    let m = m.clone();
    assert!(check_layout(&m, &l).unwrap_err().contains("y 2 x 3"));
    let mut short = m.clone();
    short.x_coordinate_to_local_y_row_size.pop();
    assert!(check_layout(&short, &l).unwrap_err().contains("x_coordinate_to_local_y_row_size"));
    let mut dst = vec![0u8; 640];
    assert!(relayout(&l, &[0u8; 640], &mut dst).is_err());
}

#[test]
fn numerics() {
    let n = Some(Numerics { zero_point: 128, dequantization_factor: 1.0 / 128.0 });
    let mut q = [0u8; 4];
    quantize(DataType::FixedPoint8, n, &[-1.0, 0.0, 0.5, 9.0], &mut q).unwrap();
    assert_eq!(q, [0, 128, 192, 255], "rounded, offset by the zero point, saturated");
    let mut f = [0f32; 4];
    dequantize(DataType::FixedPoint8, n, &q, &mut f).unwrap();
    assert_eq!(f, [-1.0, 0.0, 0.5, 127.0 / 128.0]);
    // Signed types have no zero point: real = q · scale.
    let s = Some(Numerics { zero_point: 32768, dequantization_factor: 0.25 });
    let mut b = [0u8; 4];
    quantize(DataType::SignedFixedPoint16, s, &[-2.0, 1.0], &mut b).unwrap();
    assert_eq!(b, [0xf8, 0xff, 4, 0]);
    let mut f2 = [0f32; 2];
    dequantize(DataType::SignedFixedPoint16, s, &b, &mut f2).unwrap();
    assert_eq!(f2, [-2.0, 1.0]);
    // The device's signed representation differs in the top bit of each element.
    flip_sign(DataType::SignedFixedPoint16, &mut b);
    assert_eq!(b, [0xf8, 0x7f, 4, 0x80]);
    let mut u = [1u8, 2];
    flip_sign(DataType::FixedPoint8, &mut u);
    assert_eq!(u, [1, 2], "unsigned types are not flipped");
}

proptest! {
    /// Any grid of tiles (uneven tile sizes, z padding, padding after tiles, 1- and 2-byte
    /// elements): re-layout of what the device writes tile by tile is the YXZ tensor.
    #[test]
    fn relayout_recovers_yxz(
        y_parts in prop::collection::vec(1usize..5, 1..4),
        x_parts in prop::collection::vec(1usize..5, 1..4),
        z in 1usize..9,
        z_pad in 0usize..4,
        tile_pad in 0usize..5,
        wide in any::<bool>(),
        seed in any::<u8>(),
    ) {
        let g = Grid { y_parts, x_parts, z, z_stride: z + z_pad, tile_pad };
        let dt = if wide { DataType::FixedPoint16 } else { DataType::FixedPoint8 };
        let w = dt.size();
        let l = g.layer(dt);
        let (ys, xs) = (l.y_dim as usize, l.x_dim as usize);
        prop_assume!(ys * xs > 1);
        let value = |y: usize, x: usize, zz: usize| (y * 31 + x * 7 + zz * 3 + seed as usize) as u8;
        let src = g.device_bytes(w, value);
        prop_assert_eq!(src.len(), l.size_bytes as usize);
        prop_assert!(check_layout(&g.layout(), &l).is_ok());
        let mut dst = vec![0u8; ys * xs * z * w];
        relayout(&l, &src, &mut dst).unwrap();
        prop_assert_eq!(dst, plain(ys, xs, z, w, value));
    }
}
