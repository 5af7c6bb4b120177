//! Reading and writing NumPy `.npy` files (format versions 1.0, 2.0 and 3.0; C order).

use anyhow::{bail, Context, Result};
use nnrt::DType;

/// An array read from a `.npy` file.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// Element type.
    pub dtype: DType,
    /// Dims (empty for a scalar).
    pub dims: Vec<usize>,
    /// Little-endian element bytes.
    pub data: Vec<u8>,
}

fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::I8 => "|i1",
        DType::U8 => "|u1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::Bool => "|b1",
        DType::C64 => "<c8",
    }
}

fn parse_descr(d: &str) -> Result<DType> {
    Ok(match d {
        "<f4" | "=f4" => DType::F32,
        "<f2" | "=f2" => DType::F16,
        "|i1" | "<i1" | "=i1" => DType::I8,
        "|u1" | "<u1" | "=u1" => DType::U8,
        "<i2" | "=i2" => DType::I16,
        "<i4" | "=i4" => DType::I32,
        "<i8" | "=i8" => DType::I64,
        "|b1" | "<b1" | "=b1" => DType::Bool,
        "<c8" | "=c8" => DType::C64,
        other => bail!("unsupported npy dtype '{other}' (supported: float32/16, int8/16/32/64, uint8, bool, complex64, little-endian)"),
    })
}

/// Value of `key` in the header dict, as the raw text after the colon.
fn field<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("'{key}':");
    let start = header.find(&pat)? + pat.len();
    Some(header[start..].trim_start())
}

/// Parses `.npy` bytes.
pub fn parse(bytes: &[u8]) -> Result<Array> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        bail!("not an .npy file (bad magic)");
    }
    let major = bytes[6];
    let (hlen, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                bail!("truncated .npy header");
            }
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        v => bail!("unsupported .npy version {v}"),
    };
    let header = bytes.get(start..start + hlen).context("truncated .npy header")?;
    let header = std::str::from_utf8(header).context(".npy header is not text")?;
    let d = field(header, "descr").context(".npy header has no descr")?;
    let d = d.trim_start_matches('\'');
    let dtype = parse_descr(&d[..d.find('\'').context("bad descr")?])?;
    if field(header, "fortran_order").is_some_and(|v| v.starts_with("True")) {
        bail!("Fortran-ordered .npy arrays are not supported; save with C order");
    }
    let s = field(header, "shape").context(".npy header has no shape")?;
    let s = &s[s.find('(').context("bad shape")? + 1..s.find(')').context("bad shape")?];
    let dims = s
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.trim_end_matches('L').parse::<usize>().context("bad shape dim"))
        .collect::<Result<Vec<_>>>()?;
    let data = bytes[start + hlen..].to_vec();
    let want = dims.iter().product::<usize>() * dtype.size();
    if data.len() != want {
        bail!(".npy data has {} bytes, expected {want} for shape {dims:?}", data.len());
    }
    Ok(Array { dtype, dims, data })
}

/// Reads a `.npy` file.
pub fn read(path: &str) -> Result<Array> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {path}"))?;
    parse(&bytes).with_context(|| path.to_string())
}

/// Serializes to `.npy` (version 1.0).
pub fn to_bytes(dtype: DType, dims: &[usize], data: &[u8]) -> Vec<u8> {
    let shape = match dims.len() {
        0 => "()".to_string(),
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}", descr(dtype));
    // Pad so the data starts on a 64-byte boundary, newline-terminated.
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// Writes a `.npy` file.
pub fn write(path: &str, dtype: DType, dims: &[usize], data: &[u8]) -> Result<()> {
    std::fs::write(path, to_bytes(dtype, dims, data)).with_context(|| format!("cannot write {path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let data: Vec<u8> = (0..24).collect();
        let b = to_bytes(DType::I16, &[2, 2, 3], &data);
        assert_eq!(b.len() % 64, 24 % 64);
        let a = parse(&b).unwrap();
        assert_eq!(a, Array { dtype: DType::I16, dims: vec![2, 2, 3], data });
        let s = parse(&to_bytes(DType::F32, &[], &[0, 0, 128, 63])).unwrap();
        assert!(s.dims.is_empty());
        assert!(parse(b"junk").is_err());
        assert!(parse(&b[..b.len() - 1]).is_err());
    }
}
