//! Compiles the workspace's `experiments/` into the crate (zns-repro's
//! `experiments` module): a table of every file's path, relative to
//! `experiments/` with `/` separators, and its text (`include_str!`), so an
//! installed `zns` runs the fidelity suite without a checkout.

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest.join("../../experiments");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut paths = Vec::new();
    files(&root, &mut paths);
    // sorted as the `/`-separated strings the module searches
    let mut rows: Vec<(String, PathBuf)> = paths
        .iter()
        .map(|path| {
            let rel: Vec<String> = path
                .strip_prefix(&root)
                .expect("under experiments/")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let abs = path.canonicalize().unwrap_or_else(|_| path.clone());
            (rel.join("/"), abs)
        })
        .collect();
    rows.sort();
    let mut table = String::from("&[\n");
    for (rel, abs) in &rows {
        table += &format!("    ({rel:?}, include_str!({abs:?})),\n");
        println!("cargo:rerun-if-changed={}", abs.display());
    }
    table += "]\n";
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("experiments.rs");
    std::fs::write(out, table).expect("OUT_DIR is writable");
}
