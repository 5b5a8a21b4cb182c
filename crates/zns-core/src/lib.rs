//! zns-core owns the NVMe Zoned Namespace command set as a pure state machine:
//! the types (zone states, descriptors, actions, configuration), the NVMe status
//! codes, and the rules — zone state transitions, open/active resource limits,
//! write pointer, zone capacity vs size, Zone Append, Finish, Reset, the Zone
//! Random Write Area (ZRWA) with its implicit and explicit flush — plus the
//! `ZonedDevice` / `BlockDevice` traits that every layer above the devices uses.
//! It knows nothing about time, data or threads: the device layer feeds it
//! commands and gets back either the effect of the command or the exact NVMe
//! status a controller would post.

pub mod device;
pub mod status;
pub mod types;
pub mod units;
pub mod zones;

pub use device::{BlockDevice, CmdFuture, IoFlags, ZonedDevice};
pub use status::{NvmeError, NvmeStatus};
pub use types::*;
pub use zones::*;
