//! zns-serve: emulated devices as Linux block devices through ublk
//! (`zns serve`, docs/serve.md). A zoned namespace or RAID array becomes a
//! host-managed zoned block device (`/dev/ublkbN`: zone report, open,
//! close, finish, reset, reset-all, append, flush, FUA), a conventional
//! namespace a regular one with discard; file systems and databases run on
//! them unmodified while the device keeps its exact command semantics and
//! its timing, paced to the wall clock.
//!
//! - `request`: a ublk descriptor decoded into the device's terms (pure);
//! - `exec`: a request run on the device in virtual time, errors as the
//!   errno Linux's NVMe driver gives (pure apart from the device);
//! - `params`: the geometry the kernel is told, and Linux's limits on it;
//! - `host`: the runtime thread the devices live on;
//! - `ublk`: the ublk devices, their queue threads, user copy;
//! - `stats`: what the server did (requests by kind, the devices' counters).

// OS-facing (clippy.toml's determinism guardrails do not apply here): the server's threads and its pacer live in real time
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

pub mod exec;
pub mod host;
pub mod params;
pub mod request;
pub mod stats;
pub mod ublk;

pub use exec::{Done, Failure};
pub use host::{Host, HostConfig, HostError, HostedDevice, Link, Opened};
pub use params::{Geometry, GeometryError, ZonedGeometry};
pub use stats::{HostReport, KindCounts, RequestCounts, ServedStats};
pub use ublk::{remove_dead_devices, DeadDevice, UblkDevice, UblkOptions, UblkSetupError};
