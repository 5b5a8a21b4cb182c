//! What the CPU and the block layer did around one measured run: the CPU's
//! busy share from `/proc/stat` and each served device's counters from
//! `/sys/block/NAME/stat` (Documentation/block/stat.rst), read before and
//! after the workload and kept as their differences. In the virtual-time
//! guest the CPU is the guest's one vCPU, which also runs `zns serve`: a
//! busy share near 1 means the CPU, not the emulated device, set the pace,
//! and the run's figure is a host figure ([`CPU_BOUND_BUSY_SHARE`]).
//! Both files are local to the kernel (no 9p), so reading them does not
//! disturb the guest's determinism.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Above this busy share the CPU bounds a run: the measurements behind
/// docs/apps.md ("Re-measured in virtual time") found CPU-bound runs at
/// 86-99 % busy (ratios between the arrays within 1 % of 1) and
/// device-bound ones at 25-53 % (the arrays' differences visible).
pub const CPU_BOUND_BUSY_SHARE: f64 = 0.8;

/// One device's block-layer counters over a run (differences).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockCounters {
    pub reads: u64,
    pub read_sectors: u64,
    pub writes: u64,
    pub write_sectors: u64,
    pub flushes: u64,
    /// Time the device had requests in flight, ms.
    pub io_ticks_ms: u64,
    /// Requests' summed time in the queue, ms.
    pub time_in_queue_ms: u64,
}

/// The CPU and the devices over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunLoad {
    /// Busy ticks / all ticks (user, nice, system, irq, softirq, steal
    /// against idle and iowait).
    pub cpu_busy_share: f64,
    pub cpu_busy_ticks: u64,
    pub cpu_idle_ticks: u64,
    /// By role ("array", "meta", "device").
    pub block: BTreeMap<String, BlockCounters>,
}

impl RunLoad {
    /// Whether the CPU bounded the run ([`CPU_BOUND_BUSY_SHARE`]).
    pub fn cpu_bound(&self) -> bool {
        self.cpu_busy_share > CPU_BOUND_BUSY_SHARE
    }
}

/// The counters at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// (busy, idle) ticks.
    cpu: (u64, u64),
    /// Role and the stat file's fields.
    block: Vec<(String, Vec<u64>)>,
}

/// The kernel's uptime in seconds (`/proc/uptime`): in the virtual-time
/// guest the instruction clock's, so a window timed with it is the same in
/// every rerun; None where the file cannot be read (not Linux).
pub fn uptime_s() -> Option<f64> {
    parse_uptime(&std::fs::read_to_string("/proc/uptime").ok()?)
}

/// The first field of a `/proc/uptime` text ("12345.67 23456.78").
pub fn parse_uptime(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// (busy, idle) ticks of `/proc/stat`'s aggregate `cpu` line.
pub fn cpu_ticks(proc_stat: &str) -> Option<(u64, u64)> {
    let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal
    let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
    Some((busy, at(3) + at(4)))
}

/// The fields of a `/sys/block/NAME/stat` file (11 to 17 of them).
pub fn block_fields(stat: &str) -> Option<Vec<u64>> {
    let f: Vec<u64> = stat
        .split_whitespace()
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    (f.len() >= 11).then_some(f)
}

impl Snapshot {
    /// The counters now, for the devices `(role, /dev/NAME)`; None where
    /// the files cannot be read (not Linux): the run then has no load.
    pub fn take(devices: &[(&str, &str)]) -> Option<Snapshot> {
        let cpu = cpu_ticks(&std::fs::read_to_string("/proc/stat").ok()?)?;
        let mut block = Vec::new();
        for (role, dev) in devices {
            let name = Path::new(dev).file_name()?.to_string_lossy().into_owned();
            let text = std::fs::read_to_string(format!("/sys/block/{name}/stat")).ok()?;
            block.push((role.to_string(), block_fields(&text)?));
        }
        Some(Snapshot { cpu, block })
    }

    /// What happened between `before` and this snapshot.
    pub fn since(&self, before: &Snapshot) -> RunLoad {
        let busy = self.cpu.0.saturating_sub(before.cpu.0);
        let idle = self.cpu.1.saturating_sub(before.cpu.1);
        let mut block = BTreeMap::new();
        for (role, after) in &self.block {
            let Some((_, b)) = before.block.iter().find(|(r, _)| r == role) else {
                continue;
            };
            let d = |i: usize| {
                after
                    .get(i)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(b.get(i).copied().unwrap_or(0))
            };
            block.insert(
                role.clone(),
                BlockCounters {
                    reads: d(0),
                    read_sectors: d(2),
                    writes: d(4),
                    write_sectors: d(6),
                    io_ticks_ms: d(9),
                    time_in_queue_ms: d(10),
                    flushes: d(15),
                },
            );
        }
        RunLoad {
            cpu_busy_share: if busy + idle == 0 {
                0.0
            } else {
                busy as f64 / (busy + idle) as f64
            },
            cpu_busy_ticks: busy,
            cpu_idle_ticks: idle,
            block,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT0: &str = "cpu  741 0 0 7025 0 0 0 0 0 0\ncpu0 741 0 0 7025 0 0 0 0 0 0\n";
    const STAT1: &str = "cpu  3000 10 500 9000 880 100 162 0 0 0\nintr 1\n";

    #[test]
    fn uptime_is_the_first_field() {
        assert_eq!(parse_uptime("876.69 851.02\n"), Some(876.69));
        assert_eq!(parse_uptime(""), None);
        assert_eq!(parse_uptime("x 1"), None);
    }

    #[test]
    fn busy_share_counts_irq_and_system_and_idles_iowait() {
        assert_eq!(cpu_ticks(STAT0), Some((741, 7025)));
        assert_eq!(cpu_ticks(STAT1), Some((3772, 9880)));
        assert_eq!(cpu_ticks("intr 1\n"), None);
        assert_eq!(cpu_ticks("cpu  1 x 2\n"), None);
    }

    /// The fields of fig9-case's OLTP run on RAIZN+ at c / 100 (its
    /// V.block.txt), and its CPU ticks: 3031 busy of 5886.
    #[test]
    fn a_runs_load_is_the_difference_of_two_snapshots() {
        let b0 = "52 0 2120 2 2 0 8 43 0 44 49 0 0 0 0 1 3";
        let b1 =
            "27194 1058 227720 3204151 1758 2007 264488 50361 0 42208 3258080 0 0 0 0 730 3567";
        let snap = |cpu: &str, blk: &str| Snapshot {
            cpu: cpu_ticks(cpu).unwrap(),
            block: vec![("array".into(), block_fields(blk).unwrap())],
        };
        let load = snap(STAT1, b1).since(&snap(STAT0, b0));
        assert_eq!((load.cpu_busy_ticks, load.cpu_idle_ticks), (3031, 2855));
        assert!((load.cpu_busy_share - 3031.0 / 5886.0).abs() < 1e-12);
        assert!(!load.cpu_bound());
        let a = load.block["array"];
        assert_eq!((a.reads, a.writes, a.flushes), (27142, 1756, 729));
        assert_eq!((a.read_sectors, a.write_sectors), (225600, 264480));
        assert_eq!((a.io_ticks_ms, a.time_in_queue_ms), (42164, 3258031));
        assert!(block_fields("1 2 3").is_none(), "too few fields");
    }

    #[test]
    fn a_busy_cpu_is_flagged() {
        let load = RunLoad {
            cpu_busy_share: 0.95,
            ..RunLoad::default()
        };
        assert!(load.cpu_bound());
    }
}
