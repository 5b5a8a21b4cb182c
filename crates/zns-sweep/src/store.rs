//! A sweep's output directory: one record file per point in `points/`
//! (`<id>.json`, written whole and renamed into place, so a record is
//! either there or not), the merged table (`results.csv`,
//! `results.parquet`) and `summary.json`. A point whose record exists is
//! done: a resumed sweep skips it (a failed one too, unless asked to run
//! failures again).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::point::{Record, Status};
use crate::SweepError;

/// The directory of the record files.
pub fn points_dir(out: &Path) -> PathBuf {
    out.join("points")
}

/// Where `id`'s record lives.
pub fn record_path(out: &Path, id: &str) -> PathBuf {
    points_dir(out).join(format!("{id}.json"))
}

/// Creates `out` and `out/points` (or checks that they can be written).
pub fn prepare(out: &Path) -> Result<(), SweepError> {
    let dir = points_dir(out);
    std::fs::create_dir_all(&dir).map_err(|e| SweepError::file(&dir, e))
}

/// Writes `rec` as its point's record: to a temporary name first, then
/// renamed over the final one, so a reader never sees half a record and a
/// point written twice (a retried task) leaves one record.
pub fn write_record(out: &Path, rec: &Record, writer_tag: &str) -> Result<(), SweepError> {
    let path = record_path(out, &rec.id);
    let tmp = points_dir(out).join(format!(".{}.{writer_tag}.tmp", rec.id));
    let text = serde_json::to_string(rec).map_err(|e| SweepError::file(&path, e))?;
    std::fs::write(&tmp, text + "\n").map_err(|e| SweepError::file(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| SweepError::file(&path, e))
}

/// Reads the record file at `path`.
pub fn read_record(path: &Path) -> Result<Record, SweepError> {
    let text = std::fs::read_to_string(path).map_err(|e| SweepError::file(path, e))?;
    serde_json::from_str(&text).map_err(|e| SweepError::Record {
        path: path.display().to_string(),
        msg: format!("not a point record: {e}"),
    })
}

/// Every record in `out/points`, by point id.
pub fn records(out: &Path) -> Result<HashMap<String, Record>, SweepError> {
    let dir = points_dir(out);
    let mut map = HashMap::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(map),
        Err(e) => return Err(SweepError::file(&dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| SweepError::file(&dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        let rec = read_record(&entry.path())?;
        map.insert(rec.id.clone(), rec);
    }
    Ok(map)
}

/// Which points need running: all of `ids` without a record, and with
/// `retry_failed` those whose record is a failure.
pub fn pending<'a>(
    ids: impl Iterator<Item = &'a str>,
    done: &HashMap<String, Record>,
    retry_failed: bool,
) -> Vec<&'a str> {
    ids.filter(|id| match done.get(*id) {
        None => true,
        Some(r) => retry_failed && r.status == Status::Error,
    })
    .collect()
}
