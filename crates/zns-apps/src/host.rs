//! What the host's kernel says of a served device: sectors read and
//! written (`/sys/block/NAME/stat`), a file system's space (`statvfs`) and
//! how far its zones are written (`blkzone report`).

use std::path::Path;

use crate::AppError;

/// `(written, capacity)` sectors of the sequential zones in a `blkzone
/// report`: a full zone counts its capacity, others their write pointer
/// (relative to the zone start, as blkzone prints it).
pub fn zone_fill(report: &str) -> Option<(u64, u64)> {
    let hex = |line: &str, key: &str| -> Option<u64> {
        let rest = &line[line.find(key)? + key.len()..];
        let word = rest.trim_start().split([',', ' ']).next()?;
        u64::from_str_radix(word.trim_start_matches("0x"), 16).ok()
    };
    let (mut written, mut cap, mut any) = (0u64, 0u64, false);
    for line in report.lines().filter(|l| l.contains("zcond:")) {
        if line.contains("CONVENTIONAL") {
            continue;
        }
        let c = hex(line, "cap ")?;
        let wp = hex(line, "wptr ")?;
        let cond = line[line.find("zcond:")? + 6..].trim_start();
        let full = cond.starts_with("14");
        written += if full { c } else { wp.min(c) };
        cap += c;
        any = true;
    }
    any.then_some((written, cap))
}

/// Sectors read and written in a `/sys/block/NAME/stat` line.
pub fn block_stat_sectors(text: &str) -> Option<(u64, u64)> {
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    Some((*f.get(2)?, *f.get(6)?))
}

pub fn sectors_of(dev: &str) -> Result<(u64, u64), AppError> {
    let name = Path::new(dev)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = format!("/sys/block/{name}/stat");
    let text = std::fs::read_to_string(&path).map_err(|e| AppError::Io(format!("{path}: {e}")))?;
    block_stat_sectors(&text).ok_or_else(|| AppError::Io(format!("{path}: unexpected: {text}")))
}

/// (size, used, available) bytes of the file system at `dir`, as `df`.
pub fn fs_space(dir: &Path) -> Result<(u64, u64, u64), AppError> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| AppError::Io(format!("{}: {e}", dir.display())))?;
    // SAFETY: statvfs writes into the zeroed struct we own; `c` is a valid
    // NUL-terminated path.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(AppError::Io(format!(
            "statvfs {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        )));
    }
    let f = s.f_frsize as u64;
    let size = s.f_blocks as u64 * f;
    let used = (s.f_blocks as u64).saturating_sub(s.f_bfree as u64) * f;
    Ok((size, used, s.f_bavail as u64 * f))
}

pub fn zones_of(dev: &str) -> Result<(u64, u64), AppError> {
    let out = crate::run("blkzone", &["report", dev], &[])?;
    zone_fill(&out).ok_or_else(|| AppError::Report {
        program: "blkzone".into(),
        what: format!("no zones in its report of {dev}"),
    })
}
