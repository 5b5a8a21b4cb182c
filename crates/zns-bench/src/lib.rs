//! zns-bench owns the workload engine: fio job files (`job`, with fio's
//! include and `${NAME}` rules in `jobtext`) and fio-style command lines,
//! fio's `random_distribution` (`distribution`), zonemode=zbd semantics,
//! virtual-time execution against any device zns-target opens (`run`),
//! fio-style text, JSON and terse output (`text`, `fio_json`, `terse`, and
//! fio's per-I/O log files in `iolog`), fio's `verify=` (`verify`). The
//! paper reproductions that drive it (the fidelity suite, the ZRAID paper's
//! emulated figures) live a floor above, in zns-repro.

pub mod distribution;
pub mod fio_json;
pub mod iolog;
pub mod job;
pub mod jobtext;
pub mod randmap;
pub mod run;
pub mod stats;
pub mod terse;
pub mod text;
pub mod verify;
