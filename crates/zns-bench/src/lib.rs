//! zns-bench owns the workload engine: fio job files (`job`, with fio's
//! include and `${NAME}` rules in `jobtext`) and fio-style command lines,
//! zonemode=zbd semantics, virtual-time execution against any device
//! zns-target opens (`run`), fio-style text and JSON output (`text`,
//! `fio_json`, and fio's per-I/O log files in `iolog`), fio's `verify=`
//! (`verify`). The paper reproductions that drive it (the fidelity suite,
//! the ZRAID paper's emulated figures) live a floor above, in zns-repro.

pub mod fio_json;
pub mod iolog;
pub mod job;
pub mod jobtext;
pub mod randmap;
pub mod run;
pub mod stats;
pub mod text;
pub mod verify;
