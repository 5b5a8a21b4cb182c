//! Why a device could not be named or opened, and why a size does not read:
//! the error values of zns-target. Each keeps the error of the layer below
//! (`ProfileError`, `DeviceError`, `RaidError`, `NvmeError`, `LinuxError`)
//! as its source, so a caller can still ask for the NVMe status
//! ([`TargetError::nvme_status`]); the messages name what the user wrote.

use std::path::PathBuf;

use zns_core::{NvmeError, NvmeStatus};
use zns_device::{DeviceError, ProfileError};
use zns_raid::RaidError;

pub use zns_core::units::{DurationError, SizeError};

/// Why a device name could not be parsed or its device opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// The name or one of its options does not follow the grammar
    /// (crate docs); the message says which part and why.
    #[error("{0}")]
    Spec(String),
    #[error(transparent)]
    Size(#[from] SizeError),
    /// A path that is not there (a device image or a profile TOML file).
    #[error("{}: no such file (a device image made by `zns create`, or a profile TOML file)", .0.display())]
    NoSuchFile(PathBuf),
    /// A profile (built-in name or TOML file) that does not load or does
    /// not take the overrides; `context` names it.
    #[error("{context}{source}{hint}")]
    Profile {
        context: String,
        #[source]
        source: ProfileError,
        hint: &'static str,
    },
    /// An emulated controller that could not be built, or a device image
    /// that could not be opened; `context` names it.
    #[error("{context}: {source}")]
    Device {
        context: String,
        #[source]
        source: DeviceError,
    },
    /// An array that could not be created or opened on its members.
    #[error("{context}{source}")]
    Raid {
        context: String,
        #[source]
        source: RaidError,
    },
    /// A command to a device failed while it was being opened.
    #[error("{context}: {source}")]
    Command {
        context: String,
        #[source]
        source: NvmeError,
    },
    /// A namespace the device does not have.
    #[error("{0}")]
    Namespace(String),
    /// A real zoned block device that could not be opened.
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Linux(#[from] zns_linux::LinuxError),
    /// Something this platform cannot do (real devices off Linux).
    #[error("{0}")]
    Unsupported(&'static str),
    /// An error said of what the caller was doing (`filename=NAME`, the
    /// device's name in a list).
    #[error("{context}: {source}")]
    Context {
        context: String,
        #[source]
        source: Box<TargetError>,
    },
}

impl TargetError {
    /// A profile that does not load or take its overrides, with no context.
    pub fn profile(source: ProfileError) -> TargetError {
        TargetError::Profile {
            context: String::new(),
            source,
            hint: "",
        }
    }

    /// The NVMe status of the failed command behind this error, if one was.
    pub fn nvme_status(&self) -> Option<NvmeStatus> {
        match self {
            TargetError::Command { source, .. } => Some(source.status),
            TargetError::Raid {
                source: RaidError::Device { error, .. },
                ..
            } => Some(error.status),
            TargetError::Context { source, .. } => source.nvme_status(),
            _ => None,
        }
    }

    /// This error, said of `context` (`filename=NAME: …`).
    pub fn context(self, context: impl Into<String>) -> TargetError {
        TargetError::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }
}
