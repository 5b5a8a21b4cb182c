//! znskit's fio external ioengine (`ioengine=external:libznskit_fio.so`): the
//! Rust half under the thin C shim `c/znskit_fio.c`. It serves an emulated
//! device — any device name of zns-target (a profile, a profile TOML, a
//! device image, a `raid:` array), opened as `zns bench` opens a `filename`
//! — on the wall-clock-paced runtime, so fio
//! measures the device's latencies in real time, and presents it to fio's zbd
//! code as a host-managed zoned block device (zone report, reset, open-zone
//! limit) with the errors the Linux block layer gives (EIO for a write off
//! the write pointer, the NVMe status printed to stderr).
//!
//! Modules: `proto` (wire format), `shm` (shared I/O memory and fd passing),
//! `server` (the device thread and its socket), `client` (one fio job's
//! connection), `ffi` (the C ABI and the per-process registry), `harness` (running real
//! fio with the engine for the tests and scripts/fio-vs-bench; `zns bench`
//! on the same jobs is `tests/support/bench.rs`, zns-bench being a
//! dev-dependency only). The design —
//! one device server per fio run, started in fio's main process and reached
//! by the forked job processes over a Unix socket, data in shared memory —
//! is in docs/fio-engine.md.

// OS-facing (clippy.toml's determinism guardrails do not apply here): fio's engine runs the device in real time, on its own thread
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

pub mod client;
pub mod ffi;
pub mod harness;
pub mod proto;
pub mod server;
pub mod shm;

pub use client::{Client, Completion, IoKind};
pub use server::{DeviceConfig, Server, ServerError};
