//! zns-bench owns the workload engine: fio job files and fio-style command
//! lines, zonemode=zbd semantics, virtual-time execution against any
//! `ZonedDevice`, and fio-style text and JSON output (issue 3; being built).

pub mod fidelity;
pub mod fio_json;
pub mod job;
pub mod jobtext;
pub mod plot;
pub mod randmap;
pub mod repro_zraid;
pub mod run;
pub mod stats;
pub mod text;
