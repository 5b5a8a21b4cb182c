//! zns-device owns the devices users open: `EmulatedZns` (a zoned namespace:
//! ZNS semantics from `zns-core`, timing from `zns-sim`, data from a store) and
//! `EmulatedConventionalNs` (a conventional namespace; with an
//! `[namespace.ftl]` table, an SSD with a page-mapped FTL and device-side
//! garbage collection: `ftl`, profile `sn540`), both carried by a
//! `Controller` whose namespaces share one flash array; the device profiles
//! (`Profile::builtin_names()`: the ZN540 and its variants, the PM1731a,
//! the SN540 block SSDs, the small test devices) as TOML data; the data stores (none,
//! stamp, memory, persistent image); and the fault model.
//!
//! # What is emulated
//! The NVMe ZNS command set as `zns-core` implements it (see docs/semantics.md):
//! read, write, Zone Append, Zone Management Send (open with or without ZRWA,
//! close, finish, reset, offline, ZRWA explicit flush, select-all), Zone
//! Management Receive, Flush, FUA; conventional namespaces with read, write,
//! deallocate, flush. The host stack (SPDK-like, io_uring + none, io_uring +
//! mq-deadline with the per-zone write lock and merging of contiguous writes) is
//! part of the device handle, because it shapes what the device sees.
//!
//! # What is rejected
//! Everything the specification rejects, with its NVMe status (`NvmeError`):
//! buffers that are not whole blocks or exceed MDTS (Invalid Field), LBAs out of
//! range, every zoned error B6h–BFh. Commands to a powered-off device fail with
//! Namespace Not Ready, to a failed device with Host Pathing Error, reads of
//! injected bad blocks with Unrecovered Read Error — all marked `injected`.
//!
//! # Power-loss model
//! See `controller` (module docs): FUA-completed and flushed writes survive;
//! other writes survive, vanish or are torn per the profile's
//! `PowerLossPolicy` and the seed; write pointers come back as the medium holds
//! them; open zones come back closed; ZRWA contents follow the profile.

pub mod controller;
pub mod ftl;
mod mqdeadline;
pub mod probe;
pub mod profile;
pub mod store;
pub mod trace;

pub use controller::{
    Controller, ControllerOptions, ControllerStats, DeviceError, EmulatedConventionalNs,
    EmulatedZns, InjectedFault,
};
pub use ftl::{FtlConfig, FtlGeometry, FtlStats, VictimPolicy};
pub use profile::{NamespaceProfile, PowerLossPolicy, Profile, ProfileError};
pub use store::{DataStore, StoreError, StoreKind};
