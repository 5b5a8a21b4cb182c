//! zns-target owns device opening: the one grammar of device names, the one
//! size rule, and the opener that `zns bench`, the cache, the fio engine and
//! the CLI share. It sits between the devices (zns-device, zns-raid,
//! zns-linux) and the tools (zns-bench, zns-cache, zns-fio, zns-cli).
//!
//! # Device names
//!
//! | name | device |
//! |---|---|
//! | `zn540`, `zn540-cns`, `tiny`, … | an emulated controller of a built-in profile (`zns info --list`) |
//! | `my.toml` | an emulated controller of a profile TOML file |
//! | `dev.img` (any other existing file) | an emulated controller opened from a device image made by `zns create` (its data and zones persist) |
//! | `raid:MEMBERS,OPTIONS` | a RAID array of emulated ZNS devices (below) |
//! | `/dev/…`, `linux:PATH` | a real Linux zoned block device (zns-linux) |
//!
//! A device with several namespaces is opened whole; a client picks one by
//! NSID (default: the first zoned namespace, else 1). An array or a real
//! device is one namespace.
//!
//! `raid:` takes comma-separated members and `key=value` options. A member
//! is a profile name or TOML file, optionally `N×` repeated: `5xzn540` (or
//! `5*zn540`). Options:
//!
//! - `variant=raizn|raizn+|z|z+s|z+s+m|zraid` (default zraid),
//! - `chunk=SIZE` (default 64k),
//! - `policy=stripe|chunk|wplog` (default wplog),
//! - `stack=none|mq-deadline|spdk` (any host-stack name): the members' host
//!   stack (default from the variant: mq-deadline for raizn, raizn+ and z,
//!   none for the others),
//! - `aggregate=K`: each member presents K of its zones as one, interleaved
//!   by its ZRWA size (the ZRAID paper's PM1731a setup, §6.5),
//! - `worker_ns=N`: host ns a submission worker spends per logical write;
//!   `worker_copy_ps`, `worker_xor_ps` (ps per byte copied and XORed) and
//!   `pp_mutex_ns` (a per-member lock each partial-parity log append holds):
//!   the per-design worker cost of docs/raid.md, 0 by default.
//!
//! Example: `raid:5xzn540,variant=raizn+,chunk=64k`.
//!
//! # Sizes
//!
//! Every size — in a device name, a job file, a command-line option — is
//! read by [`size::parse_bytes`] with fio's rule: `k`, `K`, `KB` = 1024,
//! `KiB` = 1000, `m`/`MB` = 1024², `MiB` = 1000², and so on; `0x` for hex.
//! A size that must be whole blocks and is not (`64KiB` = 64000 bytes) is
//! refused by [`size::check_whole_blocks`], which suggests `64k`.
//!
//! # Opening
//!
//! [`TargetSpec::parse`] turns a name into what it names, [`open`] opens it
//! on a runtime into an [`OpenedDevice`], whose namespaces are [`Target`]s:
//! a zoned or a conventional device behind the `zns_core` traits. A RAID
//! array is not a special case for clients: what they may do differs only
//! by what the device says (`ZonedDevice::orders_zone_writes`).
//! [`Devices`] opens each name of a run once, for clients that share it;
//! [`create_image`] makes a device image (`zns create`). The CLI's device
//! commands (`zone`, `replay`, `create`, `export-zones`) open through these
//! too, so a device is opened in one place.
//! Nothing here reads the wall clock or spawns threads (a real device's
//! backend does, inside zns-linux).

pub mod duration;
pub mod error;
mod name;
pub mod open;
pub mod raid;
pub mod size;
pub mod spec;

pub use duration::{parse_duration_ns, DurationError};
pub use error::{SizeError, TargetError};
pub use open::{
    create_image, is_real_device, open, Devices, Geometry, OpenOptions, OpenedDevice, Target,
};
pub use raid::RaidSpec;
pub use size::{check_whole_blocks, parse_bytes};
pub use spec::TargetSpec;
/// What an opened emulated device keeps of the data ([`OpenOptions::store`]).
pub use zns_device::StoreKind;
/// An array's counters, as [`OpenedDevice::raid_stats`] returns them.
pub use zns_raid::RaidStats;
