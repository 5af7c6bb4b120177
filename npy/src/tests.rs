use super::*;

/// A version-1.0 file with `dict` as its header (unpadded) and `data` after it.
fn v1(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn round_trip() {
    let data: Vec<u8> = (0..24).collect();
    let b = to_bytes(DType::I16, &[2, 2, 3], &data);
    assert_eq!(b.len() % 64, 24 % 64, "the data starts on a 64-byte boundary");
    assert_eq!(parse(&b).unwrap(), Array { dtype: DType::I16, dims: vec![2, 2, 3], data });
    let s = parse(&to_bytes(DType::F32, &[], &[0, 0, 128, 63])).unwrap();
    assert!(s.dims.is_empty());
    assert_eq!(parse(b"junk"), Err(NpyError::BadMagic));
    assert!(matches!(parse(&b[..b.len() - 1]), Err(NpyError::DataSize { got: 23, expected: 24, .. })));
}

#[test]
fn reads_numpys_other_spellings() {
    let a = parse(&v1("{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 1L), }\n", &[0; 8])).unwrap();
    assert_eq!((a.dtype, a.dims), (DType::I32, vec![2, 1]));
    let mut v3 = b"\x93NUMPY\x03\x00".to_vec();
    let dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }\n";
    v3.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    v3.extend_from_slice(dict.as_bytes());
    v3.extend_from_slice(&[1, 2, 3]);
    assert_eq!(parse(&v3).unwrap(), Array { dtype: DType::U8, dims: vec![3], data: vec![1, 2, 3] });
}

/// A shape too long for version 1.0's 16-bit header length is written as version 2.0 and reads
/// back the same (it used to be written with its length cut to 16 bits).
#[test]
fn long_headers_are_written_as_version_2() {
    let dims = vec![1usize; 30_000];
    let b = to_bytes(DType::U8, &dims, &[7]);
    assert_eq!(&b[6..8], &[2, 0]);
    assert_eq!((b.len() - 1) % 64, 0, "the data starts on a 64-byte boundary");
    assert_eq!(parse(&b).unwrap(), Array { dtype: DType::U8, dims, data: vec![7] });
}

#[test]
fn malformed_headers_are_typed_errors() {
    let cases: &[(&[u8], NpyError)] = &[
        (b"\x93NUMPY", NpyError::Truncated { got: 6, needed: 10 }),
        (b"\x93NUMPY\x01\x00\x05", NpyError::Truncated { got: 9, needed: 10 }),
        (b"\x93NUMPY\x02\x00\xff\xff\xff\xff", NpyError::Truncated { got: 12, needed: 12 + 0xffff_ffff }),
        (b"\x93NUMPY\x07\x00\x00\x00", NpyError::Version(7)),
        (b"\x93NUMPY\x01\x00\x02\x00\xff\xfe", NpyError::NotText),
    ];
    for (bytes, want) in cases {
        assert_eq!(parse(bytes).as_ref(), Err(want), "{}", bytes.escape_ascii());
    }
    let header = |dict: &str| parse(&v1(dict, &[]));
    assert_eq!(header("{'shape': (), }"), Err(NpyError::Field { key: "descr" }));
    assert_eq!(header("{'descr': <f4, 'shape': (), }"), Err(NpyError::Field { key: "descr" }));
    assert_eq!(header("{'descr': '<f4, 'shape': (), }"), Err(NpyError::Dtype("<f4, ".into())));
    assert_eq!(header("{'descr': '>f4', 'shape': (), }"), Err(NpyError::Dtype(">f4".into())));
    assert_eq!(header("{'descr': '<f4', 'fortran_order': True, 'shape': (), }"), Err(NpyError::FortranOrder));
    assert_eq!(header("{'descr': '<f4', }"), Err(NpyError::Field { key: "shape" }));
    assert_eq!(header("{'descr': '<f4', 'shape': 3, }"), Err(NpyError::Field { key: "shape" }));
    assert_eq!(header("{'descr': '<f4', 'shape': (3, }"), Err(NpyError::Field { key: "shape" }));
    assert_eq!(header("{'descr': '<f4', 'shape': (-3,), }"), Err(NpyError::Dim("-3".into())));
}

/// A ')' before the '(' of the shape used to slice backwards and panic.
#[test]
fn a_shape_closed_before_it_opens_is_an_error() {
    assert_eq!(parse(&v1("{'descr': '<f4', 'shape': )(, }", &[])), Err(NpyError::Field { key: "shape" }));
    assert_eq!(parse(&v1("{'descr': '<f4', 'shape': ) (1,), }", &[])), Err(NpyError::Field { key: "shape" }));
}

/// Shapes whose byte size overflows are refused instead of wrapping to a size the data matches.
#[test]
fn overflowing_shapes_are_refused() {
    let huge = format!("{{'descr': '<f4', 'shape': ({}, 4), }}", 1usize << (usize::BITS - 2));
    assert!(matches!(parse(&v1(&huge, &[])), Err(NpyError::TooLarge { dtype: DType::F32, .. })));
    let empty = format!("{{'descr': '<f4', 'shape': ({}, 0), }}", usize::MAX);
    assert_eq!(parse(&v1(&empty, &[])).unwrap().dims, vec![usize::MAX, 0], "a zero dim holds no data whatever the others");
}

#[test]
fn messages_name_the_problem() {
    let e = parse(&to_bytes(DType::I8, &[2, 3], &[0; 5])).unwrap_err();
    assert_eq!(e.to_string(), ".npy data has 5 bytes, expected 6 for int8 shape [2, 3]");
}
