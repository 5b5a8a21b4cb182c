//! zns-bench owns the workload engine: fio job files (`job`, with fio's
//! include and `${NAME}` rules in `jobtext`) and fio-style command lines,
//! fio's `random_distribution` (`distribution`), zonemode=zbd semantics, virtual-time execution against any device
//! zns-target opens (`run`), fio-style text, JSON and terse output (`text`,
//! `fio_json`, `terse`, and fio's per-I/O log files in `iolog`), fio's `verify=`
//! (`verify`), the fidelity suite against the ZN540's published figures
//! (`fidelity`, `plot`) and the ZRAID paper's emulated figures
//! (`repro_zraid`).

pub mod distribution;
pub mod fidelity;
pub mod fio_json;
pub mod iolog;
pub mod job;
pub mod jobtext;
pub mod randmap;
pub mod repro_zraid;
pub mod run;
pub mod stats;
pub mod terse;
pub mod text;
pub mod verify;
