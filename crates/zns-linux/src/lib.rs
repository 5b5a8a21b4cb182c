//! zns-linux owns znskit's meeting points with Linux: `LinuxZoned`, a
//! `ZonedDevice` over a real zoned block device (NVMe ZNS namespace) — zone
//! report and management through the kernel's zone ioctls, O_DIRECT reads
//! and writes, zone append, ZRWA open and explicit ZRWA flush and Identify
//! through NVMe passthrough — and the writer of libzbd's zone dump format
//! (`libzbd`), which lets Debian's `zbd report` show any device's zones.
//!
//! This is a real-device backend, so it is not deterministic: its system
//! calls run on a small pool of OS threads (`pool`), whose completions wake
//! the zns-sim runtime from outside. Run it on a paced runtime
//! (`Runtime::paced(seed, 1.0)`) when time matters: the virtual clock does
//! not move while a real command is in flight. `docs/linux.md` has the
//! design, and how the guest tests (`scripts/guest-test`) exercise it inside
//! a QEMU VM with NVMe ZNS namespaces.

// OS-facing (clippy.toml's determinism guardrails do not apply here): real devices complete in real time, on I/O threads
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

pub mod libzbd;

#[cfg(target_os = "linux")]
mod device;
#[cfg(target_os = "linux")]
mod pool;
#[cfg(target_os = "linux")]
pub mod sys;

#[cfg(target_os = "linux")]
pub use device::{
    blk_zone_cond, blk_zone_from, diagnose_mgmt, diagnose_write, errno_for_status,
    status_from_errno, status_from_passthru, LinuxError, LinuxOptions, LinuxZoned,
    ZoneLimitSources, ZoneLimits,
};
