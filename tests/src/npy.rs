//! Minimal `.npy` (format 1.0, little-endian, C order) writing (float32) and reading (float32,
//! or any type as raw bytes).

/// A `.npy` file holding `data` with shape `dims`. The header is padded with spaces so the data
/// starts at a multiple of 64 bytes, as NumPy writes it.
pub fn npy_f32(dims: &[usize], data: &[f32]) -> Vec<u8> {
    let shape = match dims {
        [d] => format!("({d},)"),
        _ => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    // magic (6) + version (2) + header length (2) + header, ending in '\n'.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len() * 4);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend(data.iter().flat_map(|v| v.to_le_bytes()));
    out
}

/// Reads a version-1.0 `<f4` `.npy` file: its dims and values. `None` for anything else.
pub fn read_npy_f32(bytes: &[u8]) -> Option<(Vec<usize>, Vec<f32>)> {
    if bytes.len() < 10 || &bytes[..8] != b"\x93NUMPY\x01\x00" {
        return None;
    }
    let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(bytes.get(10..10 + hlen)?).ok()?;
    if !header.contains("'descr': '<f4'") || !header.contains("'fortran_order': False") {
        return None;
    }
    let shape = header.split("'shape': (").nth(1)?.split(')').next()?;
    let dims = shape.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| s.parse().ok()).collect::<Option<Vec<usize>>>()?;
    let data: Vec<f32> = bytes[10 + hlen..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    (data.len() == dims.iter().product::<usize>()).then_some((dims, data))
}

/// A `.npy` array read as raw little-endian bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawNpy {
    /// NumPy's type string, e.g. `<i2`, `|i1`, `|u1`, `<f4`.
    pub descr: String,
    /// Shape.
    pub dims: Vec<usize>,
    /// The elements' bytes, in C order.
    pub data: Vec<u8>,
}

/// Reads a version-1.0, C-order `.npy` file of any little-endian or one-byte type; `None` when it
/// is something else or its size disagrees with its shape.
pub fn read_npy_raw(bytes: &[u8]) -> Option<RawNpy> {
    if bytes.len() < 10 || &bytes[..8] != b"\x93NUMPY\x01\x00" {
        return None;
    }
    let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(bytes.get(10..10 + hlen)?).ok()?;
    if !header.contains("'fortran_order': False") {
        return None;
    }
    let descr = header.split("'descr': '").nth(1)?.split('\'').next()?.to_string();
    let size: usize = match descr.as_bytes() {
        [b'<' | b'|', _, n @ ..] => std::str::from_utf8(n).ok()?.parse().ok()?,
        _ => return None,
    };
    let shape = header.split("'shape': (").nth(1)?.split(')').next()?;
    let dims = shape.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| s.parse().ok()).collect::<Option<Vec<usize>>>()?;
    let data = bytes[10 + hlen..].to_vec();
    (data.len() == dims.iter().product::<usize>() * size).then_some(RawNpy { descr, dims, data })
}

/// Reads the `.npy` file at `path`; panics (test helper) naming the file when it cannot.
pub fn npy_file(path: &std::path::Path) -> RawNpy {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    read_npy_raw(&bytes).unwrap_or_else(|| panic!("{}: not a little-endian C-order .npy", path.display()))
}

/// `dir/{stem}_0.npy`, `dir/{stem}_1.npy`, … up to the first missing one.
pub fn numbered_npys(dir: &std::path::Path, stem: &str) -> Vec<RawNpy> {
    (0..).map(|i| dir.join(format!("{stem}_{i}.npy"))).take_while(|p| p.is_file()).map(|p| npy_file(&p)).collect()
}

/// Sets `inputs`' shapes, prepares `s` on `cpu` with `threads` kernel threads, feeds `inputs`
/// and runs once: what the corpus-style tests (pte programs, TOSA conformance) do per case.
pub fn run_on_cpu(s: &mut nnrt::Session, inputs: &[RawNpy], threads: usize) -> Result<(), String> {
    for (i, x) in inputs.iter().enumerate() {
        s.set_input_shape(i, &x.dims).map_err(|e| format!("input {i} shape: {e}"))?;
    }
    s.set_backends("cpu").map_err(|e| e.to_string())?;
    s.set_threads(threads).map_err(|e| e.to_string())?;
    s.prepare().map_err(|e| format!("prepare: {e}"))?;
    for (i, x) in inputs.iter().enumerate() {
        s.set_input(i, &x.data).map_err(|e| format!("input {i}: {e}"))?;
    }
    s.run().map_err(|e| format!("run: {e}"))
}

/// The case folders (each holding a `model.tflite`) under `tests/models/<set>`, sorted.
pub fn model_cases(set: &str) -> Vec<std::path::PathBuf> {
    let root = crate::repo_root().join("tests/models").join(set);
    let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("model.tflite").is_file())
        .collect();
    dirs.sort();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let bytes = npy_f32(&[1, 2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.5]);
        assert_eq!(bytes.len(), 128 + 6 * 4);
        assert_eq!((10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize) % 64, 0);
        assert_eq!(read_npy_f32(&bytes), Some((vec![1, 2, 3], vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.5])));
        assert_eq!(read_npy_f32(&npy_f32(&[4], &[1.0; 4])).map(|(d, _)| d), Some(vec![4]));
        let raw = read_npy_raw(&bytes).unwrap();
        assert_eq!((raw.descr.as_str(), raw.dims, raw.data.len()), ("<f4", vec![1, 2, 3], 24));
        assert_eq!(read_npy_raw(&bytes[..bytes.len() - 1]), None);
    }
}
