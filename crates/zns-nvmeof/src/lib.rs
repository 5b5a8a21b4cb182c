//! zns-nvmeof: emulated ZNS controllers (ZRWA included), conventional
//! namespaces and RAID arrays as NVMe over Fabrics controllers on TCP
//! (`zns serve --nvme-tcp ADDR:PORT TARGET…`, docs/nvme-tcp.md), for
//! Linux's nvme-tcp host (any kernel >= 5.9 reads zoned namespaces),
//! nvme-cli and io_uring passthrough on `/dev/ngXnY`: ZRWA reaches a host
//! program only through NVMe commands, which a ublk block device does not
//! carry.
//!
//! - `pdu`: the NVMe/TCP PDUs, digests, and a parser that takes any byte
//!   stream without panicking (pure);
//! - `command`: SQE, CQE, completion status (pure);
//! - `identify`: Identify pages and the effects log (pure);
//! - `controller`: the subsystem's controllers: Connect, properties,
//!   admin commands (pure);
//! - `io`: I/O commands decoded and run on a `zns_target::Target`, every
//!   error the emulated controller's own status;
//! - `server`: the TCP target's threads (OS-facing, like zns-serve's ublk
//!   queues), the devices on zns-serve's paced runtime;
//! - `client`: a minimal host, for tests and the benchmark.

pub mod client;
pub mod command;
pub mod controller;
pub mod identify;
pub mod io;
pub mod pdu;
pub mod server;

pub use client::Client;
pub use command::{Cqe, Sqe, Status};
pub use controller::Subsystem;
pub use identify::{ControllerIdentity, Namespace, NsKind};
pub use server::{Export, NvmeTcpServer};
