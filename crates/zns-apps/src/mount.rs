//! A file system made on served devices and mounted: F2FS in zoned mode
//! (its metadata on a conventional device, `mkfs.f2fs -m -c ZONED META`),
//! F2FS on a conventional device alone, or btrfs zoned. Dropping a
//! [`Mounted`] unmounts it.

use std::path::{Path, PathBuf};

use crate::{run, AppError};

/// Which file system, on which devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileSystem {
    /// F2FS zoned: metadata (and its first sections) on `meta`, a
    /// conventional device, the rest on the zoned `zoned`.
    F2fsZoned { meta: String, zoned: String },
    /// F2FS on a conventional block device.
    F2fs { dev: String },
    /// btrfs zoned on one zoned device.
    BtrfsZoned { dev: String },
}

impl FileSystem {
    /// The device `mount` takes.
    fn mount_device(&self) -> &str {
        match self {
            FileSystem::F2fsZoned { meta, .. } => meta,
            FileSystem::F2fs { dev } | FileSystem::BtrfsZoned { dev } => dev,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            FileSystem::F2fsZoned { .. } | FileSystem::F2fs { .. } => "f2fs",
            FileSystem::BtrfsZoned { .. } => "btrfs",
        }
    }

    /// Makes the file system (overwriting what the devices held).
    pub fn make(&self) -> Result<(), AppError> {
        match self {
            FileSystem::F2fsZoned { meta, zoned } => {
                run("mkfs.f2fs", &["-f", "-m", "-c", zoned, meta], &[])?
            }
            FileSystem::F2fs { dev } => run("mkfs.f2fs", &["-f", dev], &[])?,
            FileSystem::BtrfsZoned { dev } => run(
                "mkfs.btrfs",
                &["-f", "-O", "zoned", "-d", "single", "-m", "single", dev],
                &[],
            )?,
        };
        Ok(())
    }

    /// Mounts it at `dir` (created if missing).
    pub fn mount(&self, dir: &Path) -> Result<Mounted, AppError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| AppError::Io(format!("{}: {e}", dir.display())))?;
        let target = dir.to_string_lossy();
        run(
            "mount",
            &["-t", self.kind(), self.mount_device(), &target],
            &[],
        )?;
        Ok(Mounted {
            dir: Some(dir.to_path_buf()),
        })
    }
}

/// A mounted file system.
pub struct Mounted {
    dir: Option<PathBuf>,
}

impl Mounted {
    pub fn dir(&self) -> &Path {
        self.dir.as_deref().unwrap_or(Path::new("/"))
    }

    /// Unmounts (after a sync).
    pub fn unmount(mut self) -> Result<(), AppError> {
        self.unmount_inner()
    }

    fn unmount_inner(&mut self) -> Result<(), AppError> {
        let Some(dir) = self.dir.take() else {
            return Ok(());
        };
        run("sync", &[], &[])?;
        run("umount", &[&dir.to_string_lossy()], &[]).map(|_| ())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = self.unmount_inner();
    }
}
