//! The experiment files (the workspace's `experiments/`: the fidelity
//! suite's definitions and job files, the ZN540's measured data), compiled
//! in by build.rs so that an installed `zns` needs no checkout, and where a
//! run reads them from: the built-in copy, or a directory (`zns fidelity
//! --experiments DIR`) to try changed files without rebuilding.

use std::path::{Path, PathBuf};

/// Every file of `experiments/`: its path relative to it (`/`-separated)
/// and its text, sorted by path.
pub static BUILT_IN: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/experiments.rs"));

/// Where a run reads its experiment files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Experiments {
    /// The copy compiled into the binary.
    #[default]
    BuiltIn,
    /// A directory laid out as `experiments/`.
    Dir(PathBuf),
}

impl Experiments {
    /// `rel` (relative to the experiments directory, `/`-separated) as a
    /// path to name in messages: under the directory, or `experiments/REL`
    /// of the built-in copy.
    pub fn path(&self, rel: &str) -> PathBuf {
        match self {
            Experiments::BuiltIn => Path::new("experiments").join(rel),
            Experiments::Dir(dir) => dir.join(rel),
        }
    }

    /// The text of `rel` (relative to the experiments directory,
    /// `/`-separated).
    pub fn read(&self, rel: &str) -> std::io::Result<String> {
        match self {
            Experiments::BuiltIn => built_in(rel).map(str::to_string).ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such file among the built-in experiment files",
                )
            }),
            Experiments::Dir(dir) => std::fs::read_to_string(dir.join(rel)),
        }
    }
}

/// The built-in text of `rel`, if `experiments/` has it.
pub fn built_in(rel: &str) -> Option<&'static str> {
    BUILT_IN
        .binary_search_by(|(path, _)| (*path).cmp(rel))
        .ok()
        .map(|i| BUILT_IN[i].1)
}

#[cfg(test)]
mod tests {
    use super::{built_in, Experiments, BUILT_IN};

    #[test]
    fn the_built_in_copy_is_sorted_and_holds_the_suite() {
        assert!(BUILT_IN.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(built_in("fidelity.toml").is_some());
        assert!(built_in("data/zn540/nvmeb_rocksdb_dbbench.csv").is_some());
        assert!(Experiments::BuiltIn.read("no-such.fio").is_err());
    }
}
