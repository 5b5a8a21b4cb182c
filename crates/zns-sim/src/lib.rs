//! zns-sim owns simulated time. The deterministic runtime — a virtual clock in
//! nanoseconds, a single-threaded task executor, timers, a seeded RNG, and
//! notify/channel primitives — lets every layer above it run thousands of
//! concurrent commands with bit-identical results for the same seed; a paced mode
//! slows the same runtime to the wall clock for external clients. The timing
//! models (flash array, append path, zone management costs, interference, ZRWA
//! backing medium, host stack overheads) compute each command's completion time
//! when it is submitted, from the busy-until times of the resources it needs.
//! `join` holds the one rule for joining concurrent work in a task. Nothing
//! here does I/O to real files.

pub mod join;
pub mod rng;
pub mod runtime;
pub mod sync;
pub mod timing;

pub use rng::SimRng;
pub use runtime::{BadSpeed, Handle, JoinHandle, Remote, Runtime, Sleep};
