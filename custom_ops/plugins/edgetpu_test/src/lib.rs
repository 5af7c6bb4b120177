//! # nnrt-edgetpu-test-driver
//!
//! A device driver for `edgetpu-custom-op` (plugin ABI version 2) that needs no Edge TPU: it
//! reads the op's DarwiNN package at init and, at each run, writes into every output layer a
//! known tensor ([`known_plain`]) in the tile layout the layer describes, as a device would.
//! nnrt's host side (input layout, re-layout from tiles to YXZ, sign bits, dequantization) is
//! then checked end to end against [`known_plain`]. The tensors depend on the inputs nnrt laid
//! out ([`seed`]), so input delivery is checked too; an output named `NAME_variable_output`
//! echoes input `NAME` with 1 added to each element's first byte (a state that changes per run).
//!
//! It is a test fixture, not a driver for hardware.

#![deny(unsafe_code)]

use nnrt_loaders::darwinn::{self, host, Layer};
use nnrt_plugin_sdk::{export_plugin, DeviceBuffer, DeviceBufferMut, DeviceRunFn, Plugin};

/// The seed of a run: the wrapping sum of the first byte of every input buffer (in the device's
/// layout, as nnrt laid it out).
pub fn seed(first_bytes: impl IntoIterator<Item = u8>) -> u8 {
    first_bytes.into_iter().fold(0u8, |a, b| a.wrapping_add(b))
}

/// Byte of element (y, x, z) of output layer `k` for `seed`.
pub fn known(k: usize, y: usize, x: usize, z: usize, seed: u8) -> u8 {
    ((k * 53 + y * 31 + x * 7 + z * 3) % 251) as u8 ^ seed
}

/// Output layer `k`'s tensor as the device holds it, YXZ: each element's first byte is
/// [`known`], its other bytes 0.
pub fn known_plain(l: &Layer, k: usize, seed: u8) -> Vec<u8> {
    let (ys, xs, zs) = (l.y_dim.max(1) as usize, l.x_dim.max(1) as usize, l.z_dim.max(1) as usize);
    let w = l.data_type.size();
    let mut v = vec![0u8; ys * xs * zs * w];
    for y in 0..ys {
        for x in 0..xs {
            for z in 0..zs {
                v[((y * xs + x) * zs + z) * w] = known(k, y, x, z, seed);
            }
        }
    }
    v
}

fn run(inputs: &[Layer], outputs: &[Layer], ins: &[DeviceBuffer<'_>], outs: &mut [DeviceBufferMut<'_>]) -> Result<(), String> {
    if ins.len() != inputs.len() || outs.len() != outputs.len() {
        return Err(format!("got {} inputs and {} outputs for a program of {} and {}", ins.len(), outs.len(), inputs.len(), outputs.len()));
    }
    for (b, l) in ins.iter().zip(inputs).chain(outs.iter().map(|b| DeviceBuffer { name: b.name, bytes: &*b.bytes }).collect::<Vec<_>>().iter().zip(outputs)) {
        if b.name != l.name || b.bytes.len() != l.size_bytes as usize {
            return Err(format!("buffer '{}' of {} bytes for layer '{}' of {}", b.name, b.bytes.len(), l.name, l.size_bytes));
        }
    }
    let s = seed(ins.iter().map(|b| b.bytes.first().copied().unwrap_or(0)));
    for (k, (b, l)) in outs.iter_mut().zip(outputs).enumerate() {
        b.bytes.fill(0xA5); // padding a device leaves: must never reach a tensor
        let state = l.name.strip_suffix(darwinn::check::VARIABLE_OUTPUT_SUFFIX).and_then(|n| inputs.iter().position(|i| i.name == n));
        let plain = match state {
            Some(i) => {
                let w = l.data_type.size();
                let mut v = ins[i].bytes[..l.actual_bytes().unwrap_or(0)].to_vec();
                for e in v.chunks_exact_mut(w) {
                    e[0] = e[0].wrapping_add(1);
                }
                v
            }
            None => known_plain(l, k, s),
        };
        host::tile(l, &plain, b.bytes)?;
    }
    Ok(())
}

fn init(options: &[u8]) -> Result<DeviceRunFn, String> {
    let opts = darwinn::read_options(options).map_err(|e| e.to_string())?;
    let exe = opts.packages.iter().find_map(|p| p.runnable()).ok_or("no runnable executable")?;
    let (inputs, outputs) = (exe.input_layers.clone(), exe.output_layers.clone());
    Ok(Box::new(move |ins: &[DeviceBuffer<'_>], outs: &mut [DeviceBufferMut<'_>]| run(&inputs, &outputs, ins, outs)))
}

fn plugin() -> Plugin {
    Plugin::new("edgetpu-test-driver").device_op("edgetpu-custom-op", "Edge TPU", init)
}

export_plugin!(plugin);
