//! The ZNCache paper's measured cells (zncache-2025, appendix B, Tables
//! 5–16) and their comparison with our runs, cell by cell and metric by
//! metric, each row marked as calibration or validation.
//!
//! Calibration set (docs/zncache.md, "The block drive"): the block drive's disk
//! latencies in the 64 KiB experiment (Tables 6 and 7), the drive's
//! light-load 64 KiB reads and writes, which decided its read path; and the
//! block drive's disk writes in the GC experiment's 256 MiB run without
//! remote latency (Table 14), its write capacity once full, which decided
//! its GC victim policy (FIFO, not greedy). Everything else the paper
//! measured (the 512 MiB cells of Tables 5–10, the rest of Tables 11–16, and
//! every ZNS cell, whose drive is calibrated on other data) validates: it is
//! reported, never fitted.

use serde::Serialize;
use zns_cache::run::RunReport;
use zns_plot::table::{Cell as TableCell, Table};

/// One labelled run of an experiment.
#[derive(Debug, Clone, Serialize)]
pub struct LabelledRun {
    pub label: String,
    pub report: RunReport,
}

/// A measured quantity of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    GetMeanMs,
    GetP99Ms,
    DiskWriteMeanMs,
    DiskWriteP99Ms,
    DiskReadMeanMs,
    DiskReadP99Ms,
    GetGibS,
    DiskReadGibS,
    DiskWriteGibS,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::GetMeanMs => "get mean ms",
            Metric::GetP99Ms => "get p99 ms",
            Metric::DiskWriteMeanMs => "disk write mean ms",
            Metric::DiskWriteP99Ms => "disk write p99 ms",
            Metric::DiskReadMeanMs => "disk read mean ms",
            Metric::DiskReadP99Ms => "disk read p99 ms",
            Metric::GetGibS => "get GiB/s",
            Metric::DiskReadGibS => "disk read GiB/s",
            Metric::DiskWriteGibS => "disk write GiB/s",
        }
    }

    fn of(self, r: &RunReport) -> f64 {
        match self {
            Metric::GetMeanMs => r.get.mean_ms,
            Metric::GetP99Ms => r.get.p99_ms,
            Metric::DiskWriteMeanMs => r.disk_write.mean_ms,
            Metric::DiskWriteP99Ms => r.disk_write.p99_ms,
            Metric::DiskReadMeanMs => r.disk_read.mean_ms,
            Metric::DiskReadP99Ms => r.disk_read.p99_ms,
            Metric::GetGibS => r.get_gib_s,
            Metric::DiskReadGibS => r.read_gib_s,
            Metric::DiskWriteGibS => r.write_gib_s,
        }
    }
}

/// The role of a figure (the block drive's calibration set, or the rest,
/// which validates; a run out of step is diagnostic).
pub use crate::compare::Role;

/// Label suffix of a diagnostic run whose workers started out of step
/// (`RunSpec::stagger_start`): compared with the cell of the label without
/// it, as [`Role::Diagnostic`].
pub const OUT_OF_STEP: &str = "-out-of-step";

/// One of the paper's cells: our run label, the tables its latencies come
/// from, and its figures.
struct Cell {
    run: &'static str,
    /// get, disk write and disk read latency tables (5, 6, 7 or 11–16).
    tables: [u8; 3],
    /// get, disk write and disk read latency: mean and p99, ms.
    latency_ms: [[f64; 2]; 3],
    /// get, disk read and disk write throughput (Tables 8, 9, 10), GiB/s;
    /// the GC experiment has none in tables.
    gib_s: Option<[f64; 3]>,
}

const fn grid(
    run: &'static str,
    get: [f64; 2],
    write: [f64; 2],
    read: [f64; 2],
    gib_s: [f64; 3],
) -> Cell {
    Cell {
        run,
        tables: [5, 6, 7],
        latency_ms: [get, write, read],
        gib_s: Some(gib_s),
    }
}

const fn gc(
    run: &'static str,
    zero_remote: bool,
    get: [f64; 2],
    write: [f64; 2],
    read: [f64; 2],
) -> Cell {
    Cell {
        run,
        tables: if zero_remote {
            [12, 14, 16]
        } else {
            [11, 13, 15]
        },
        latency_ms: [get, write, read],
        gib_s: None,
    }
}

/// Appendix B as printed (the run names are ours, the same as the paper's
/// row names; the GC rows add the remote latency).
const CELLS: [Cell; 24] = [
    grid(
        "ZNS-512M-UNIF-10",
        [30434.25, 121594.3],
        [1467.7, 3973.54],
        [451.61, 1278.2],
        [1.043, 0.102, 0.941],
    ),
    grid(
        "Block-512M-UNIF-10",
        [51219.31, 297634.35],
        [6612.51, 52602.35],
        [2018.36, 2644.16],
        [0.622, 0.060, 0.561],
    ),
    grid(
        "ZNS-512M-UNIF-2",
        [20797.86, 115668.18],
        [2804.45, 5500.31],
        [909.75, 2097.4],
        [1.520, 0.743, 0.786],
    ),
    grid(
        "Block-512M-UNIF-2",
        [56353.88, 358656.23],
        [18263.94, 48869.13],
        [2609.59, 3636.54],
        [0.564, 0.276, 0.289],
    ),
    grid(
        "ZNS-512M-ZIPF-10",
        [17217.21, 120884.2],
        [4002.84, 6840.87],
        [1367.41, 2752.36],
        [1.829, 1.154, 0.685],
    ),
    grid(
        "Block-512M-ZIPF-10",
        [38448.44, 321128.22],
        [16700.43, 54572.31],
        [3344.54, 6318.5],
        [0.825, 0.520, 0.308],
    ),
    grid(
        "ZNS-512M-ZIPF-2",
        [14512.1, 140618.34],
        [13220.55, 25297.1],
        [3701.99, 6935.28],
        [2.125, 1.799, 0.346],
    ),
    grid(
        "Block-512M-ZIPF-2",
        [25649.63, 213772.96],
        [29051.69, 65231.09],
        [12702.44, 18735.18],
        [1.230, 1.043, 0.198],
    ),
    grid(
        "ZNS-64K-UNIF-10",
        [172.5, 693.76],
        [0.07, 0.12],
        [0.31, 0.63],
        [0.023, 0.002, 0.021],
    ),
    grid(
        "Block-64K-UNIF-10",
        [171.74, 693.86],
        [0.07, 0.1],
        [0.3, 0.62],
        [0.023, 0.002, 0.021],
    ),
    grid(
        "ZNS-64K-UNIF-2",
        [115.92, 629.02],
        [0.07, 0.12],
        [0.32, 0.65],
        [0.034, 0.013, 0.021],
    ),
    grid(
        "Block-64K-UNIF-2",
        [112.2, 630.11],
        [0.07, 0.11],
        [0.3, 0.62],
        [0.035, 0.014, 0.021],
    ),
    grid(
        "ZNS-64K-ZIPF-10",
        [45.52, 488.2],
        [0.07, 0.11],
        [0.33, 0.79],
        [0.086, 0.065, 0.021],
    ),
    grid(
        "Block-64K-ZIPF-10",
        [45.13, 488.72],
        [0.07, 0.11],
        [0.31, 0.72],
        [0.087, 0.066, 0.021],
    ),
    grid(
        "ZNS-64K-ZIPF-2",
        [22.52, 367.69],
        [0.07, 0.11],
        [0.33, 0.83],
        [0.173, 0.151, 0.021],
    ),
    grid(
        "Block-64K-ZIPF-2",
        [21.87, 367.37],
        [0.07, 0.12],
        [0.31, 0.78],
        [0.178, 0.157, 0.021],
    ),
    gc(
        "ZNS-256M-UNIF-10-3.2s",
        false,
        [17228.71, 68451.80],
        [674.14, 1614.04],
        [199.70, 364.03],
    ),
    gc(
        "Block-256M-UNIF-10-3.2s",
        false,
        [19701.04, 85580.73],
        [1295.94, 3056.81],
        [1335.24, 3210.52],
    ),
    gc(
        "ZNS-512M-UNIF-10-5.3s",
        false,
        [30842.60, 123933.37],
        [1523.29, 3948.19],
        [430.28, 1192.47],
    ),
    gc(
        "Block-512M-UNIF-10-5.3s",
        false,
        [30374.74, 122512.31],
        [1471.53, 4150.41],
        [1873.06, 2556.69],
    ),
    gc(
        "ZNS-256M-UNIF-10-0s",
        true,
        [13533.11, 53076.77],
        [2817.61, 3433.91],
        [1252.33, 1804.61],
    ),
    gc(
        "Block-256M-UNIF-10-0s",
        true,
        [19441.10, 85112.27],
        [4455.82, 7296.20],
        [4775.61, 8398.39],
    ),
    gc(
        "ZNS-512M-UNIF-10-0s",
        true,
        [27305.66, 111870.09],
        [5697.63, 6767.06],
        [3266.68, 4275.98],
    ),
    gc(
        "Block-512M-UNIF-10-0s",
        true,
        [32995.58, 135029.59],
        [7492.57, 9392.91],
        [2348.17, 2829.25],
    ),
];

/// One figure of the paper against ours.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub run: String,
    pub metric: Metric,
    /// The appendix table the paper's figure is from.
    pub table: u8,
    pub paper: f64,
    pub ours: f64,
    /// (ours − paper) / paper, %.
    pub error_pct: f64,
    pub role: Role,
}

/// The role of a figure: the block drive's 64 KiB disk latencies and its
/// disk writes in the 256 MiB GC run at 0 s calibrate, everything else
/// validates.
fn role(run: &str, metric: Metric) -> Role {
    let latency = matches!(
        metric,
        Metric::DiskWriteMeanMs
            | Metric::DiskWriteP99Ms
            | Metric::DiskReadMeanMs
            | Metric::DiskReadP99Ms
    );
    let write = matches!(metric, Metric::DiskWriteMeanMs | Metric::DiskWriteP99Ms);
    if (latency && run.starts_with("Block-64K-")) || (write && run == "Block-256M-UNIF-10-0s") {
        Role::Calibration
    } else {
        Role::Validation
    }
}

impl Cell {
    /// Every figure of the cell: metric, table, value.
    fn figures(&self) -> Vec<(Metric, u8, f64)> {
        const LATENCY: [[Metric; 2]; 3] = [
            [Metric::GetMeanMs, Metric::GetP99Ms],
            [Metric::DiskWriteMeanMs, Metric::DiskWriteP99Ms],
            [Metric::DiskReadMeanMs, Metric::DiskReadP99Ms],
        ];
        const RATES: [(Metric, u8); 3] = [
            (Metric::GetGibS, 8),
            (Metric::DiskReadGibS, 9),
            (Metric::DiskWriteGibS, 10),
        ];
        let mut out = Vec::new();
        for ((metrics, table), values) in LATENCY.iter().zip(self.tables).zip(self.latency_ms) {
            for (m, v) in metrics.iter().zip(values) {
                out.push((*m, table, v));
            }
        }
        if let Some(rates) = self.gib_s {
            for ((m, table), v) in RATES.iter().zip(rates) {
                out.push((*m, *table, v));
            }
        }
        out
    }
}

/// The paper's figure for one of our runs, if the paper has the cell.
pub fn figure(run: &str, metric: Metric) -> Option<f64> {
    let cell = CELLS.iter().find(|c| c.run == run)?;
    cell.figures()
        .into_iter()
        .find(|(m, _, _)| *m == metric)
        .map(|(_, _, v)| v)
}

/// The paper's figure (of the cell it is compared with: a diagnostic run's
/// too) for one of our runs' charts (`zns_cache::plot::METRICS` by name):
/// throughput and mean latencies have one, the rest (hit ratio, free
/// zones, device WAF) none.
pub fn chart_figure(run: &str, chart: &str) -> Option<f64> {
    let metric = match chart {
        "get-throughput" => Metric::GetGibS,
        "disk-read" => Metric::DiskReadGibS,
        "disk-write" => Metric::DiskWriteGibS,
        "get-latency" => Metric::GetMeanMs,
        "disk-read-latency" => Metric::DiskReadMeanMs,
        "disk-write-latency" => Metric::DiskWriteMeanMs,
        _ => return None,
    };
    figure(cell_label(run).0, metric)
}

/// The paper cell label a run is compared with, and whether the run is a
/// diagnostic variant of it.
fn cell_label(run: &str) -> (&str, bool) {
    match run.strip_suffix(OUT_OF_STEP) {
        Some(base) => (base, true),
        None => (run, false),
    }
}

/// Every paper figure that one of `runs` has a cell for, against ours.
pub fn compare(runs: &[LabelledRun]) -> Vec<Comparison> {
    let mut rows = Vec::new();
    for run in runs {
        let (label, diagnostic) = cell_label(&run.label);
        let Some(cell) = CELLS.iter().find(|c| c.run == label) else {
            continue;
        };
        for (metric, table, paper) in cell.figures() {
            let ours = metric.of(&run.report);
            rows.push(Comparison {
                run: run.label.clone(),
                metric,
                table,
                paper,
                ours,
                error_pct: (ours - paper) / paper * 100.0,
                role: if diagnostic {
                    Role::Diagnostic
                } else {
                    role(label, metric)
                },
            });
        }
    }
    rows
}

/// Mean |error| and the count within 25 % of one group of rows.
fn group_line(what: &str, rows: &[&Comparison]) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let n = rows.len();
    let mean = rows.iter().map(|r| r.error_pct.abs()).sum::<f64>() / n as f64;
    let within = rows.iter().filter(|r| r.error_pct.abs() <= 25.0).count();
    Some(format!(
        "{what}: {n} figures, mean |error| {mean:.1}%, {within} of {n} within 25%"
    ))
}

/// Summary lines: calibration rows, validation rows of the block and of
/// the ZNS runs, then diagnostic rows of each.
pub fn summary(rows: &[Comparison]) -> Vec<String> {
    let pick = |role: Role, prefix: &str| -> Vec<&Comparison> {
        rows.iter()
            .filter(|r| r.role == role && r.run.starts_with(prefix))
            .collect()
    };
    const GROUPS: [(&str, Role, &str); 5] = [
        (
            "vs paper, calibration (block 64 KiB disk latencies, 256 MiB 0 s disk writes)",
            Role::Calibration,
            "Block-",
        ),
        (
            "vs paper, validation, block runs",
            Role::Validation,
            "Block-",
        ),
        ("vs paper, validation, ZNS runs", Role::Validation, "ZNS-"),
        (
            "vs paper, diagnostic (constant-sleep rows, workers started out of step), block runs",
            Role::Diagnostic,
            "Block-",
        ),
        (
            "vs paper, diagnostic (constant-sleep rows, workers started out of step), ZNS runs",
            Role::Diagnostic,
            "ZNS-",
        ),
    ];
    GROUPS
        .iter()
        .filter_map(|(what, role, prefix)| group_line(what, &pick(*role, prefix)))
        .collect()
}

/// The rows as CSV.
pub fn csv(rows: &[Comparison]) -> String {
    let mut t = Table::new([
        "run",
        "metric",
        "table",
        "paper",
        "ours",
        "error_pct",
        "role",
    ]);
    for r in rows {
        t.push([
            TableCell::text(r.run.as_str()),
            TableCell::text(r.metric.name()),
            TableCell::text(r.table.to_string()),
            TableCell::text(r.paper.to_string()),
            TableCell::text(format!("{:.6}", r.ours)),
            TableCell::text(format!("{:.2}", r.error_pct)),
            TableCell::text(r.role.name()),
        ]);
    }
    t.to_csv()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_drives_64k_disk_latencies_and_its_full_256m_writes_calibrate() {
        use Metric::*;
        use Role::*;
        for (run, metric, want) in [
            ("Block-64K-UNIF-10", DiskReadMeanMs, Calibration),
            ("Block-64K-ZIPF-2", DiskWriteP99Ms, Calibration),
            ("Block-64K-ZIPF-2", GetMeanMs, Validation),
            ("ZNS-64K-UNIF-10", DiskReadMeanMs, Validation),
            ("Block-512M-UNIF-10", DiskReadMeanMs, Validation),
            // the GC experiment: the drive-bound 256 MiB writes decided the
            // victim policy; the same run's other figures and every other
            // row of Tables 11-16 validate
            ("Block-256M-UNIF-10-0s", DiskWriteMeanMs, Calibration),
            ("Block-256M-UNIF-10-0s", GetMeanMs, Validation),
            ("Block-256M-UNIF-10-3.2s", DiskWriteMeanMs, Validation),
            ("Block-512M-UNIF-10-0s", DiskWriteMeanMs, Validation),
        ] {
            assert_eq!(role(run, metric), want, "{run} {metric:?}");
        }
    }

    #[test]
    fn an_out_of_step_run_is_a_diagnostic_of_its_rows_cell() {
        // the 64 KiB grid's get throughput, Table 8: 0.023 GiB/s on both
        assert_eq!(
            chart_figure("ZNS-64K-UNIF-10", "get-throughput"),
            Some(0.023)
        );
        assert_eq!(
            chart_figure("Block-64K-UNIF-10", "get-throughput"),
            Some(0.023)
        );
        assert_eq!(chart_figure("ZNS-64K-UNIF-10", "free-zones"), None);
        let (label, diagnostic) = cell_label("Block-256M-UNIF-10-3.2s-out-of-step");
        assert_eq!((label, diagnostic), ("Block-256M-UNIF-10-3.2s", true));
        assert!(figure(label, Metric::DiskWriteMeanMs).is_some());
        assert_eq!(
            cell_label("ZNS-512M-UNIF-10-5.3s"),
            ("ZNS-512M-UNIF-10-5.3s", false)
        );
    }

    #[test]
    fn every_cell_name_is_unique_and_every_figure_positive() {
        for (i, c) in CELLS.iter().enumerate() {
            assert!(CELLS[i + 1..].iter().all(|d| d.run != c.run), "{}", c.run);
            assert!(c.latency_ms.iter().flatten().all(|v| *v > 0.0), "{}", c.run);
            // a p99 is never below its mean
            assert!(c.latency_ms.iter().all(|[m, p]| p >= m), "{}", c.run);
        }
    }

    #[test]
    fn summary_counts_errors_within_a_quarter() {
        let row = |run: &str, e: f64, role: Role| Comparison {
            run: run.into(),
            metric: Metric::GetMeanMs,
            table: 5,
            paper: 100.0,
            ours: 100.0 + e,
            error_pct: e,
            role,
        };
        let rows = [
            row("Block-512M-UNIF-10", 10.0, Role::Validation),
            row("Block-512M-UNIF-2", -40.0, Role::Validation),
            row("Block-64K-UNIF-2", 5.0, Role::Calibration),
            row(
                "Block-512M-UNIF-10-5.3s-out-of-step",
                60.0,
                Role::Diagnostic,
            ),
        ];
        let s = summary(&rows);
        assert_eq!(s.len(), 3);
        // a diagnostic run is counted apart, never as validation
        assert!(
            s[2].starts_with("vs paper, diagnostic")
                && s[2].contains("1 figures, mean |error| 60.0%"),
            "{}",
            s[2]
        );
        assert!(
            s[0].contains("1 figures, mean |error| 5.0%, 1 of 1"),
            "{}",
            s[0]
        );
        assert!(
            s[1].contains("2 figures, mean |error| 25.0%, 1 of 2"),
            "{}",
            s[1]
        );
    }
}
