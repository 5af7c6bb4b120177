//! Broken nnpackages (MANIFEST, missing files, zips) must fail at load with `Error::Load` and a
//! message naming the problem; the corpus's zipped packages must load.

use nnrt::{Error, Session};
use nnrt_tests::{example, NnPackage, TempDir, ZipMethod};

const MODEL: &str = "tiny_mobilenet.tflite";

fn good_package() -> NnPackage {
    NnPackage::single(MODEL, example::tiny_mobilenet())
}

/// A MANIFEST 1.2 with the given JSON body fields spliced in after the versions.
fn manifest_with(fields: &str) -> String {
    format!(r#"{{"major-version": "1", "minor-version": "2", "patch-version": "0", {fields}}}"#)
}

/// Loading `path` must fail with `Error::Load` whose message contains `needle`.
fn expect_load_error(what: &str, path: &std::path::Path, needle: &str) {
    match Session::load(path) {
        Err(e @ Error::Load(_)) => {
            let msg = e.to_string();
            assert!(msg.contains(needle), "{what}: load error should mention {needle:?}: {msg}");
        }
        Err(e) => panic!("{what}: expected Error::Load, got {e:?}"),
        Ok(_) => panic!("{what}: load succeeded; expected an error mentioning {needle:?}"),
    }
}

/// Each broken package, written as a folder and as a stored zip, must fail naming `needle`.
fn expect_package_error(what: &str, pkg: &NnPackage, needle: &str) {
    let tmp = TempDir::new("pkg").expect("temp dir");
    let dir = tmp.path().join("pkg");
    pkg.write_dir(&dir).expect("write package");
    expect_load_error(&format!("{what} (folder)"), &dir, needle);
    let zip = tmp.path().join("pkg.nnpkg.zip");
    std::fs::write(&zip, pkg.to_zip(ZipMethod::Stored, None).expect("zip")).expect("write zip");
    expect_load_error(&format!("{what} (zip)"), &zip, needle);
}

#[test]
fn good_package_loads_as_folder_and_every_zip_variant() {
    let pkg = good_package();
    let tmp = TempDir::new("good").expect("temp dir");
    pkg.write_dir(&tmp.path().join("pkg")).expect("write");
    Session::load(tmp.path().join("pkg")).expect("folder package");
    for method in [ZipMethod::Stored, ZipMethod::Deflated] {
        for top in [None, Some("tiny_mobilenet")] {
            let p = tmp.path().join(format!("{method:?}-{top:?}.zip"));
            std::fs::write(&p, pkg.to_zip(method, top).expect("zip")).expect("write");
            let s = Session::load(&p).unwrap_or_else(|e| panic!("{method:?} zip, top folder {top:?}: {e}"));
            assert_eq!(s.input_count(), 1);
        }
    }
}

#[test]
fn broken_manifests_name_the_problem() {
    let model_types = r#""models": ["tiny_mobilenet.tflite"], "model-types": ["tflite"]"#;
    let cases: &[(&str, String, &str)] = &[
        ("invalid JSON", "{\"major-version\": \"1\", \"models\": [".into(), "not valid JSON"),
        ("truncated MANIFEST", manifest_with(model_types)[..40].into(), "not valid JSON"),
        ("not an object", "[\"tiny_mobilenet.tflite\"]".into(), "must be a JSON object"),
        ("no models key", manifest_with(r#""configs": []"#), "names no model"),
        ("empty models", manifest_with(r#""models": [], "model-types": []"#), "names no model"),
        ("models is a string", manifest_with(r#""models": "tiny_mobilenet.tflite""#), "'models' must be a list of strings"),
        ("model name is a number", manifest_with(r#""models": [7], "model-types": ["tflite"]"#), "'models' must be a list of strings"),
        ("version is a bool", format!(r#"{{"major-version": true, "minor-version": "2", {model_types}}}"#), "'major-version' must be a number"),
        ("version is text", format!(r#"{{"major-version": "one", "minor-version": "2", {model_types}}}"#), "'major-version' must be a number"),
        ("missing minor-version", format!(r#"{{"major-version": "1", {model_types}}}"#), "missing 'minor-version'"),
        ("version 0.9", format!(r#"{{"major-version": "0", "minor-version": "9", {model_types}}}"#), "version 0.9.0 is not supported"),
        ("version 2.0", format!(r#"{{"major-version": "2", "minor-version": "0", {model_types}}}"#), "version 2.0.0 is not supported"),
        ("version 1.9", format!(r#"{{"major-version": "1", "minor-version": "9", {model_types}}}"#), "version 1.9.0 is not supported"),
        ("more model-types than models", manifest_with(r#""models": ["tiny_mobilenet.tflite"], "model-types": ["tflite", "tflite"]"#), "1 models but 2 model-types"),
        ("unknown model type", manifest_with(r#""models": ["tiny_mobilenet.tflite"], "model-types": ["onnx"]"#), "model type 'onnx' is not supported"),
        ("missing model file", manifest_with(r#""models": ["absent.tflite"], "model-types": ["tflite"]"#), "'absent.tflite' named in MANIFEST is missing"),
        ("path traversal", manifest_with(r#""models": ["../x.tflite"], "model-types": ["tflite"]"#), "'../x.tflite' must stay inside the package"),
        ("absolute path", manifest_with(r#""models": ["/etc/passwd"], "model-types": ["tflite"]"#), "must stay inside the package"),
        ("missing config file", manifest_with(&format!(r#""configs": ["absent.cfg"], {model_types}"#)), "absent.cfg"),
        ("bad pkg-inputs", manifest_with(&format!(r#""pkg-inputs": ["0:0"], {model_types}"#)), "must be model:subgraph:index"),
    ];
    for (what, text, needle) in cases {
        expect_package_error(what, &good_package().with_manifest(text), needle);
    }
}

#[test]
fn package_whose_model_is_not_tflite_fails_in_the_model_loader() {
    let pkg = good_package().with_file(MODEL, b"this is not a flatbuffer at all".to_vec());
    expect_package_error("garbage model file", &pkg, "TFL3");
}

#[test]
fn folder_without_manifest_is_not_a_package() {
    let tmp = TempDir::new("nomanifest").expect("temp dir");
    good_package().without("metadata/MANIFEST").write_dir(tmp.path()).expect("write");
    expect_load_error("folder without MANIFEST", tmp.path(), "metadata/MANIFEST is missing");
}

#[test]
fn broken_zips_name_the_problem() {
    let tmp = TempDir::new("zips").expect("temp dir");
    let write = |name: &str, bytes: Vec<u8>| {
        let p = tmp.path().join(name);
        std::fs::write(&p, bytes).expect("write");
        p
    };
    let pkg = good_package();
    let zip = pkg.to_zip(ZipMethod::Deflated, Some("pkg")).expect("zip");

    let no_manifest = pkg.clone().without("metadata/MANIFEST").to_zip(ZipMethod::Stored, None).expect("zip");
    expect_load_error("zip without MANIFEST", &write("nomanifest.zip", no_manifest), "holds no metadata/MANIFEST");

    let deep = pkg.to_zip(ZipMethod::Stored, Some("a/b")).expect("zip");
    expect_load_error("zip nested two folders deep", &write("deep.zip", deep), "nested too deep");

    let no_model = pkg.clone().without(MODEL).to_zip(ZipMethod::Deflated, None).expect("zip");
    expect_load_error("zip without its model", &write("nomodel.zip", no_model), "missing from the zip");

    expect_load_error("empty file", &write("empty.zip", Vec::new()), "empty");
    expect_load_error("truncated zip (half)", &write("half.zip", zip[..zip.len() / 2].to_vec()), "not a readable zip");

    // Any other cut (or a flipped byte inside the deflated model) must fail cleanly as well.
    for cut in [4, 30, 100, zip.len() / 3, zip.len() - 22, zip.len() - 1] {
        let p = write("cut.zip", zip[..cut].to_vec());
        assert!(matches!(Session::load(&p), Err(Error::Load(_))), "zip truncated to {cut} bytes must fail at load");
    }
    let mut flipped = zip.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x55;
    assert!(matches!(Session::load(write("flipped.zip", flipped)), Err(Error::Load(_))), "a corrupted deflate stream must fail at load");
}

#[test]
fn corpus_zip_variants_load() {
    let Some(dir) = nnrt_tests::corpus_model_or_skip("tflite/_nnpkg_variants") else { return };
    let mut zips: Vec<_> = std::fs::read_dir(&dir).expect("variants dir").flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "zip")).collect();
    zips.sort();
    assert!(!zips.is_empty(), "{} holds no zips", dir.display());
    for p in zips {
        let s = Session::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(s.input_count() > 0, "{}: no inputs", p.display());
    }
}
