//! Timing model of an emulated NVMe (ZNS) controller and its flash.
//!
//! Pure bookkeeping, no async and no runtime: [`FlashArray::submit`] computes a
//! command's completion time when it is submitted, from the busy-until times
//! of the resources it needs (NVMeVirt style), in integer nanoseconds. The
//! design note with every formula, parameter and its source is
//! `docs/timing-model.md`.
//!
//! Resources, in the order a command meets them:
//! * host stack: per-request submission and completion cost ([`HostStack`]);
//! * front end: one serial FIFO for every command of every namespace;
//! * engines (serial): write, append (separate and slower), conventional read,
//!   conventional write, ZRWA medium (`dram` or `flash`: every ZRWA write
//!   crosses it at `zrwa_medium_mibps`), reset;
//! * write buffer: a write completes once its data is admitted; a full buffer
//!   stalls the write engine and, through it, the front end (head-of-line
//!   blocking: reads queue behind stalled writes);
//! * flash: channels and dies. Full program units are programmed when their
//!   data is complete (channel transfer, then tPROG); reads take tR by page
//!   type plus a channel transfer; reads suspend programs at segment
//!   boundaries; finish filler is the lowest priority;
//! * read-ahead (`readahead_*`): a table of sequential read streams; a
//!   detected stream's next program units are prefetched from the dies in
//!   the background, and reads inside the prefetched data are served by a
//!   serial hit engine without a die read.
//!
//! Invariants:
//! * Determinism: the same sequence of `submit` calls gives the same times;
//!   the only pseudo-random draw (reset jitter) comes from `TimingProfile::seed`.
//! * `submit` is called with non-decreasing `now_ns`.
//! * Resets never take front-end, engine or flash time from I/O (measured:
//!   I/O is not slowed by resets); I/O slows resets (recent activity).

mod array;
mod buffer;
mod draws;
mod engine_cost;
mod flash;
mod frontend;
mod host;
mod media;
mod op;
mod placement;
mod profile;
mod readahead;
mod reset;

pub use array::FlashArray;
pub use op::{FtlPlace, FtlProgram, MediaOp, NamespaceKind};
pub use profile::{HostStack, InvalidTimingProfile, TimingProfile, ZrwaMedium};
