//! The seeds' own programs where the user has them (`--filebench PATH`,
//! `--db-bench PATH`; docs/apps.md, "The papers' own programs"): filebench
//! for Fig. 9's personalities and RocksDB's db_bench built with the ZenFS
//! plugin (with ZenFS's `zenfs` utility beside it) for Fig. 10. Neither is
//! in a package registry, so znskit ships and builds neither; without them
//! the fio personalities and db_bench on F2FS stand in, and every table
//! says which ran. In the ublk guest the programs (with their shared
//! libraries) are packed into the initramfs at [`GUEST_PROGRAM_DIR`].

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::AppError;

/// The flags that name the programs (said in errors).
pub const FILEBENCH_FLAG: &str = "--filebench";
pub const DB_BENCH_FLAG: &str = "--db-bench";

/// ZenFS's utility (`zenfs mkfs`), looked for beside db_bench.
pub const ZENFS_UTILITY: &str = "zenfs";

/// Where the guest has the user's programs.
pub const GUEST_PROGRAM_DIR: &str = "/znskit/user";

/// The environment variable that hands scripts/serve-guest-test the
/// programs to pack: one `HOST_PATH=GUEST_PATH` a line.
pub const GUEST_PROGRAMS_ENV: &str = "ZNSKIT_GUEST_PROGRAMS";

/// The user's programs (None: the stand-ins run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Programs {
    pub filebench: Option<PathBuf>,
    /// db_bench with the ZenFS plugin.
    pub db_bench: Option<PathBuf>,
}

/// `path` if it names an executable regular file (absolute, symbolic
/// links resolved); a clear error naming `flag` otherwise.
pub fn check_program(flag: &str, path: &Path) -> Result<PathBuf, AppError> {
    let bad = |why: String| AppError::Invalid(format!("{flag} {}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if !meta.is_file() {
        return Err(bad("not a regular file".into()));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(bad("not executable (chmod +x)".into()));
    }
    path.canonicalize().map_err(|e| bad(e.to_string()))
}

/// ZenFS's `zenfs` utility beside `db_bench` (ZenFS builds it in
/// plugin/zenfs/util; copy or link it next to db_bench).
pub fn zenfs_beside(db_bench: &Path) -> Result<PathBuf, AppError> {
    let zenfs = db_bench.with_file_name(ZENFS_UTILITY);
    if !zenfs.exists() {
        return Err(AppError::Invalid(format!(
            "{DB_BENCH_FLAG} {}: ZenFS's utility `{ZENFS_UTILITY}` must be beside it ({} is missing; ZenFS builds it in plugin/zenfs/util)",
            db_bench.display(),
            zenfs.display()
        )));
    }
    check_program(DB_BENCH_FLAG, &zenfs)
}

impl Programs {
    /// The programs checked (each an executable file; ZenFS's utility
    /// beside db_bench).
    pub fn checked(self) -> Result<Programs, AppError> {
        let filebench = self
            .filebench
            .map(|p| check_program(FILEBENCH_FLAG, &p))
            .transpose()?;
        let db_bench = self
            .db_bench
            .map(|p| check_program(DB_BENCH_FLAG, &p))
            .transpose()?;
        if let Some(d) = &db_bench {
            zenfs_beside(d)?;
        }
        Ok(Programs {
            filebench,
            db_bench,
        })
    }

    /// The same programs at their guest paths, and the `HOST=GUEST` lines
    /// that pack them ([`GUEST_PROGRAMS_ENV`]).
    pub fn for_guest(&self) -> Result<(Programs, String), AppError> {
        let mut lines = String::new();
        let mut put = |host: &Path, name: &str| {
            let guest = PathBuf::from(GUEST_PROGRAM_DIR).join(name);
            lines += &format!("{}={}\n", host.display(), guest.display());
            guest
        };
        let filebench = self.filebench.as_ref().map(|p| put(p, "filebench"));
        let db_bench = match &self.db_bench {
            Some(p) => {
                put(&zenfs_beside(p)?, ZENFS_UTILITY);
                Some(put(p, "db_bench"))
            }
            None => None,
        };
        // (one HOST=GUEST a line: the harness reads them so)
        if let Some(l) = lines
            .lines()
            .find(|l| l.contains(char::is_whitespace) || l.matches('=').count() != 1)
        {
            return Err(AppError::Invalid(format!(
                "{FILEBENCH_FLAG}/{DB_BENCH_FLAG}: a path with white space or '=' cannot be packed into the guest: {l}"
            )));
        }
        Ok((
            Programs {
                filebench,
                db_bench,
            },
            lines,
        ))
    }

    /// What ran Fig. 9's personalities.
    pub fn fig9_program(&self) -> &'static str {
        match self.filebench {
            Some(_) => "filebench",
            None => "fio personalities (stand-ins for filebench)",
        }
    }

    /// What ran Fig. 10's db_bench.
    pub fn fig10_program(&self) -> &'static str {
        match self.db_bench {
            Some(_) => "db_bench on ZenFS",
            None => "db_bench on F2FS (stand-in for ZenFS)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn missing_directories_and_unexecutable_files_are_refused_by_their_flag() {
        let dir = tempfile::tempdir().unwrap();
        let check = |p: &Path| check_program(FILEBENCH_FLAG, p).unwrap_err().to_string();
        let missing = check(&dir.path().join("nope"));
        assert!(
            missing.starts_with("--filebench ") && missing.contains("nope"),
            "{missing}"
        );
        assert!(check(dir.path()).contains("not a regular file"));
        let plain = file(dir.path(), "filebench", 0o644);
        assert!(check(&plain).contains("not executable"));
        let exe = file(dir.path(), "fb", 0o755);
        assert_eq!(
            check_program(FILEBENCH_FLAG, &exe).unwrap(),
            exe.canonicalize().unwrap()
        );
    }

    #[test]
    fn db_bench_needs_zenfs_beside_it_and_both_go_to_the_guest() {
        let dir = tempfile::tempdir().unwrap();
        let db = file(dir.path(), "db_bench", 0o755);
        let p = Programs {
            filebench: None,
            db_bench: Some(db.clone()),
        };
        let err = p.clone().checked().unwrap_err().to_string();
        assert!(
            err.starts_with("--db-bench ") && err.contains("zenfs"),
            "{err}"
        );
        file(dir.path(), "zenfs", 0o755);
        let p = p.checked().unwrap();
        assert_eq!(p.fig10_program(), "db_bench on ZenFS");
        assert_eq!(
            p.fig9_program(),
            "fio personalities (stand-ins for filebench)"
        );
        let (guest, lines) = p.for_guest().unwrap();
        assert_eq!(guest.db_bench.unwrap(), Path::new("/znskit/user/db_bench"));
        let db = db.canonicalize().unwrap();
        assert_eq!(
            lines,
            format!(
                "{}=/znskit/user/zenfs\n{}=/znskit/user/db_bench\n",
                db.with_file_name("zenfs").display(),
                db.display()
            )
        );
    }
}
