//! The output directory of an application experiment: files written (their
//! errors naming the file), JSON documents written and read back (the guest
//! writes them, the host reads them to draw), and the mean/min/max every
//! summary gives of its repetitions.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::AppError;

/// Writes `text` to `dir/name`; its path.
pub fn write(dir: &Path, name: &str, text: String) -> Result<PathBuf, AppError> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(AppError::file(&path))?;
    Ok(path)
}

/// Writes `value` as pretty JSON to `dir/name`; its path.
pub fn write_json<T: Serialize + ?Sized>(
    dir: &Path,
    name: &str,
    value: &T,
) -> Result<PathBuf, AppError> {
    let text = serde_json::to_string_pretty(value).map_err(AppError::file(&dir.join(name)))?;
    write(dir, name, text)
}

/// Reads the JSON document `dir/name`.
pub fn read_json<T: DeserializeOwned>(dir: &Path, name: &str) -> Result<T, AppError> {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).map_err(AppError::file(&path))?;
    serde_json::from_str(&text).map_err(AppError::file(&path))
}

/// Mean, min and max of `values` (None when there are none).
pub fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((mean, min, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_round_trip_and_spreads_are_mean_min_max() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_json(dir.path(), "v.json", &vec![1.5, 2.5]).unwrap();
        assert!(p.ends_with("v.json"));
        let back: Vec<f64> = read_json(dir.path(), "v.json").unwrap();
        assert_eq!(back, [1.5, 2.5]);
        assert!(read_json::<Vec<f64>>(dir.path(), "nope.json")
            .unwrap_err()
            .to_string()
            .contains("nope.json"));
        assert_eq!(spread(&[1.0, 3.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(spread(&[]), None);
    }
}
