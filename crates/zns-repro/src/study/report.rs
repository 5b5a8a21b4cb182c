//! The study's outputs: its points as CSV, the aggregates over
//! repetitions, its findings beside ours (summary.md/.json), the figures'
//! tables and PNGs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use zns_apps::outfiles::{self, spread};
use zns_plot::table::{Cell, Table};

use crate::compare::{self, PaperRow};
use zns_apps::AppError;

use super::levels::LEVEL_BENCHMARKS;
use super::plan::{scale, Counters, Level, LevelPoint, StudyPoints, TenantPoint};

/// The points a run wrote to `dir/points.json`.
pub fn read_points(dir: &Path) -> Result<StudyPoints, AppError> {
    outfiles::read_json(dir, "points.json")
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}")).unwrap_or_default()
}

fn opt_cell(v: Option<f64>, digits: usize) -> Cell {
    Cell::text(opt(v, digits))
}

fn int(v: impl ToString) -> Cell {
    Cell::text(v.to_string())
}

/// The integration-level points as CSV.
pub fn levels_csv(points: &[LevelPoint]) -> String {
    let mut t = Table::new([
        "level",
        "rep",
        "benchmark",
        "ops_per_s",
        "mb_per_s",
        "p50_us",
        "p99_us",
        "p99_9_us",
        "device_s",
        "read_bytes",
        "write_bytes",
        "zoned_write_bytes",
        "zone_resets",
        "zone_appends",
        "discard_bytes",
        "ftl_waf",
        "ftl_gc_relocated_bytes",
        "ftl_gc_victims",
        "fs_used_bytes",
        "report",
    ]);
    for p in points {
        let c = &p.counters;
        t.push([
            int(&p.level),
            int(p.rep),
            int(&p.benchmark),
            Cell::fixed(p.ops_per_s, 1),
            opt_cell(p.mb_per_s, 2),
            opt_cell(p.p50_us, 2),
            opt_cell(p.p99_us, 2),
            opt_cell(p.p99_9_us, 2),
            Cell::fixed(c.device_s, 3),
            int(c.read_bytes),
            int(c.write_bytes),
            int(c.zoned_write_bytes),
            int(c.zone_resets),
            int(c.zone_appends),
            int(c.discard_bytes),
            opt_cell(c.ftl_waf, 4),
            Cell::opt(c.ftl_gc_relocated_bytes, |v| v.to_string()),
            Cell::opt(c.ftl_gc_victims, |v| v.to_string()),
            int(p.fs_used_bytes),
            int(p.report_file.display()),
        ]);
    }
    t.to_csv()
}

/// The two-tenant points as CSV.
pub fn tenants_csv(points: &[TenantPoint]) -> String {
    let mut t = Table::new([
        "util",
        "tenancy",
        "rep",
        "benchmark",
        "ops_per_s",
        "mb_per_s",
        "p50_us",
        "p99_us",
        "p99_9_us",
        "a_fs",
        "b_fs",
        "a_zones",
        "b_zones",
        "drive_zones",
        "drive_zones_end",
        "window_s",
        "write_mib_s",
        "read_mib_s",
        "bandwidth_utilization",
        "tenant_a_write_mib_s_wall",
        "fill_s",
        "device_s",
        "write_bytes",
        "zone_resets",
        "report",
    ]);
    for p in points {
        let c = &p.capacity_start;
        t.push([
            int(&p.util),
            int(&p.tenancy),
            int(p.rep),
            int(&p.benchmark),
            Cell::fixed(p.ops_per_s, 1),
            opt_cell(p.mb_per_s, 2),
            opt_cell(p.p50_us, 2),
            opt_cell(p.p99_us, 2),
            opt_cell(p.p99_9_us, 2),
            Cell::fixed(c.a_fs, 4),
            Cell::fixed(c.b_fs, 4),
            Cell::fixed(c.a_zones, 4),
            Cell::fixed(c.b_zones, 4),
            Cell::fixed(c.drive_zones, 4),
            Cell::fixed(p.capacity_end.drive_zones, 4),
            Cell::fixed(p.bandwidth.window_s, 1),
            Cell::fixed(p.bandwidth.write_mib_s, 3),
            Cell::fixed(p.bandwidth.read_mib_s, 3),
            Cell::fixed(p.bandwidth.utilization, 4),
            opt_cell(p.tenant_a.map(|f| f.write_mib_per_s), 3),
            Cell::fixed(p.fill_s, 1),
            Cell::fixed(p.counters.device_s, 3),
            int(p.counters.write_bytes),
            int(p.counters.zone_resets),
            int(p.report_file.display()),
        ]);
    }
    t.to_csv()
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.collect();
    spread(&v).map(|s| s.0)
}

/// A workload's figures under one configuration, over its repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct Aggregate {
    /// The configuration (`a`, `c`, `d`; `low/alone`, …).
    pub config: String,
    pub benchmark: String,
    pub reps: usize,
    pub ops_per_s: f64,
    pub ops_min: f64,
    pub ops_max: f64,
    pub mb_per_s: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p99_9_us: Option<f64>,
}

fn aggregate<'a>(
    rows: impl Iterator<Item = (String, &'a str, f64, [Option<f64>; 4])>,
) -> Vec<Aggregate> {
    type Row = (f64, [Option<f64>; 4]);
    let mut groups: BTreeMap<(String, String), Vec<Row>> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for (config, bench, ops, extra) in rows {
        let key = (config, bench.to_string());
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push((ops, extra));
    }
    order
        .into_iter()
        .filter_map(|key| {
            let rows = &groups[&key];
            let ops: Vec<f64> = rows.iter().map(|r| r.0).collect();
            let (m, lo, hi) = spread(&ops)?;
            let col = |i: usize| mean(rows.iter().filter_map(|r| r.1[i]));
            Some(Aggregate {
                config: key.0,
                benchmark: key.1,
                reps: rows.len(),
                ops_per_s: m,
                ops_min: lo,
                ops_max: hi,
                mb_per_s: col(0),
                p50_us: col(1),
                p99_us: col(2),
                p99_9_us: col(3),
            })
        })
        .collect()
}

/// Each (level, workload) over its repetitions.
pub fn level_aggregates(points: &[LevelPoint]) -> Vec<Aggregate> {
    let mut sorted: Vec<&LevelPoint> = points.iter().collect();
    let pos = |b: &str| LEVEL_BENCHMARKS.iter().position(|x| *x == b);
    sorted.sort_by_key(|p| (p.level.clone(), pos(&p.benchmark)));
    aggregate(sorted.into_iter().map(|p| {
        (
            p.level.clone(),
            p.benchmark.as_str(),
            p.ops_per_s,
            [p.mb_per_s, p.p50_us, p.p99_us, p.p99_9_us],
        )
    }))
}

/// Each (utilization/tenancy, benchmark) of tenant B over its repetitions.
pub fn tenant_aggregates(points: &[TenantPoint]) -> Vec<Aggregate> {
    aggregate(points.iter().map(|p| {
        (
            format!("{}/{}", p.util, p.tenancy),
            p.benchmark.as_str(),
            p.ops_per_s,
            [p.mb_per_s, p.p50_us, p.p99_us, p.p99_9_us],
        )
    }))
}

fn find<'a>(aggs: &'a [Aggregate], config: &str, bench: &str) -> Option<&'a Aggregate> {
    aggs.iter()
        .find(|a| a.config == config && a.benchmark == bench)
}

/// Whether two configurations' ranges over their repetitions overlap
/// (then their difference is within the runs' own spread).
fn overlap(x: &Aggregate, y: &Aggregate) -> bool {
    x.reps > 1 && y.reps > 1 && x.ops_min <= y.ops_max && y.ops_min <= x.ops_max
}

fn with_spread(note: String, x: Option<&Aggregate>, y: Option<&Aggregate>) -> String {
    match (x, y) {
        (Some(x), Some(y)) if overlap(x, y) => {
            format!("{note}; within the repetitions' spread (their min–max ranges overlap)")
        }
        _ => note,
    }
}

/// Within this much of each other, two throughputs are "little to no
/// difference" (the study's words, which give no number).
pub const LITTLE_DIFFERENCE: f64 = 0.10;

/// A ratio of throughputs told in words: `x` (what is compared) against
/// `y` (the reference).
fn ratio_note(r: Option<f64>, x: &str, y: &str, study_expects_little: bool) -> String {
    let Some(r) = r else {
        return "not run".into();
    };
    let pct = (r - 1.0) * 100.0;
    let dir = if pct >= 0.0 { "faster" } else { "slower" };
    let little = (r - 1.0).abs() <= LITTLE_DIFFERENCE;
    let verdict = match (little, study_expects_little) {
        (true, true) => "little to no difference, as the study found",
        (false, true) => "a difference, unlike the study",
        (true, false) => "little to no difference: the expected effect did not show",
        (false, false) => "a difference, as Western Digital's advice expects",
    };
    format!(
        "{x} {:.1} % {dir} than {y}: {verdict} (±{:.0} % counts as little)",
        pct.abs(),
        LITTLE_DIFFERENCE * 100.0
    )
}

/// The study's findings (§4.2) beside ours, and the utilization reached
/// against Western Digital's advice.
pub fn summary(points: &StudyPoints) -> Vec<PaperRow> {
    let mut rows = Vec::new();
    let lv = level_aggregates(&points.levels);
    for bench in LEVEL_BENCHMARKS {
        let base_agg = find(&lv, "a", bench);
        let base = base_agg.map(|a| a.ops_per_s);
        for (lvl, name) in [("c", "(c) F2FS zoned"), ("d", "(d) btrfs zoned")] {
            let x = find(&lv, lvl, bench);
            let r = match (x, base) {
                (Some(x), Some(b)) if b > 0.0 => Some(x.ops_per_s / b),
                _ => None,
            };
            rows.push(PaperRow {
                what: format!("{bench}: {name} / (a) F2FS on block SSD, ops/s"),
                paper: "little to no difference".into(),
                ours: r,
                note: with_spread(ratio_note(r, name, "(a)", true), x, base_agg),
                ..PaperRow::default()
            });
        }
    }
    let waf = mean(
        points
            .levels
            .iter()
            .filter(|p| p.level == "a")
            .filter_map(|p| p.counters.ftl_waf),
    );
    if !points.levels.is_empty() {
        let gc = mean(
            points
                .levels
                .iter()
                .filter(|p| p.level == "a")
                .filter_map(|p| p.counters.ftl_gc_relocated_bytes.map(|b| b as f64)),
        );
        rows.push(PaperRow {
            what: "(a) the SSD's FTL write amplification over a run".into(),
            paper: "not measured (§4.2: an empty drive does little GC)".into(),
            ours: waf,
            note: match gc {
                Some(g) if g > 0.0 => format!("GC relocated {:.1} MiB", g / 1048576.0),
                Some(_) => "no device GC: the drive stays nearly empty".into(),
                None => "not run".into(),
            },
            ..PaperRow::default()
        });
    }
    let tv = tenant_aggregates(&points.tenants);
    for util in ["low", "high"] {
        for bench in ["fillrandom", "overwrite"] {
            let alone = find(&tv, &format!("{util}/alone"), bench);
            let shared = find(&tv, &format!("{util}/shared"), bench);
            let r = match (shared, alone) {
                (Some(s), Some(a)) if a.ops_per_s > 0.0 => Some(s.ops_per_s / a.ops_per_s),
                _ => None,
            };
            let (study, expects_little) = if util == "low" {
                ("very similar (little to no difference)", true)
            } else {
                (
                    "not evaluated; expected: A's traffic slows B (§4.2 advice)",
                    false,
                )
            };
            rows.push(PaperRow {
                what: format!("two tenants, {util} utilization: B {bench} with A / B alone, ops/s"),
                paper: study.into(),
                ours: r,
                note: with_spread(
                    ratio_note(r, "B with A", "B alone", expects_little),
                    shared,
                    alone,
                ),
                ..PaperRow::default()
            });
            let p99 = match (shared.and_then(|s| s.p99_us), alone.and_then(|a| a.p99_us)) {
                (Some(s), Some(a)) if a > 0.0 => Some(s / a),
                _ => None,
            };
            rows.push(PaperRow {
                what: format!("two tenants, {util} utilization: B {bench} P99 with A / alone"),
                paper: "not reported".into(),
                ours: p99,
                note: p99.map_or("not run".into(), |r| {
                    format!(
                        "P99 {:.1} % {} with A",
                        (r - 1.0).abs() * 100.0,
                        if r >= 1.0 { "higher" } else { "lower" }
                    )
                }),
                ..PaperRow::default()
            });
        }
        let alone: Vec<&TenantPoint> = points
            .tenants
            .iter()
            .filter(|p| p.util == util && p.tenancy == "alone")
            .collect();
        let shared: Vec<&TenantPoint> = points
            .tenants
            .iter()
            .filter(|p| p.util == util && p.tenancy == "shared")
            .collect();
        if alone.is_empty() && shared.is_empty() {
            continue;
        }
        let both = || alone.iter().chain(shared.iter());
        let cap = mean(both().map(|p| p.capacity_start.drive_zones));
        let fs_a = mean(both().map(|p| p.capacity_start.a_fs));
        let bw = mean(shared.iter().map(|p| p.bandwidth.utilization));
        let advice = |v: Option<f64>, min: f64| match v {
            None => "not run".to_string(),
            Some(v) if v > min => format!("{:.0} %: above {:.0} %", v * 100.0, min * 100.0),
            Some(v) => format!("{:.0} %: below {:.0} %", v * 100.0, min * 100.0),
        };
        rows.push(PaperRow {
            what: format!(
                "{util} utilization: capacity, the drive's zones written (F2FS A: {} of its free space)",
                fs_a.map_or("—".into(), |v| format!("{:.0} %", v * 100.0))
            ),
            paper: "WD: > 50 % (preferably 80 %+); the study's runs were far below".into(),
            ours: cap,
            note: advice(cap, 0.8),
            ..PaperRow::default()
        });
        rows.push(PaperRow {
            what: format!("{util} utilization: bandwidth while B runs with A (share of peak)"),
            paper: "WD: > 30 % of the device bandwidth".into(),
            ours: bw,
            note: advice(bw, 0.3),
            ..PaperRow::default()
        });
    }
    rows
}

/// The summary as a Markdown table.
pub fn summary_markdown(rows: &[PaperRow]) -> String {
    compare::markdown(rows, "study")
}

/// The absolute figures (mean over repetitions) as Markdown tables.
pub fn figures_markdown(points: &StudyPoints) -> String {
    let mut s = String::new();
    let table = |s: &mut String, title: &str, aggs: &[Aggregate]| {
        if aggs.is_empty() {
            return;
        }
        let _ = writeln!(
            s,
            "\n{title}\n\n| config | workload | reps | ops/s (min–max) | MB/s | P50 µs | P99 µs | P99.9 µs |\n|---|---|---|---|---|---|---|---|"
        );
        for a in aggs {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.0} ({:.0}–{:.0}) | {} | {} | {} | {} |",
                a.config,
                a.benchmark,
                a.reps,
                a.ops_per_s,
                a.ops_min,
                a.ops_max,
                opt(a.mb_per_s, 1),
                opt(a.p50_us, 1),
                opt(a.p99_us, 1),
                opt(a.p99_9_us, 1)
            );
        }
    };
    if !points.failures.is_empty() {
        let _ = writeln!(s, "\nFailed runs (their points are missing):\n");
        for f in &points.failures {
            let first = f.lines().next().unwrap_or_default();
            let _ = writeln!(s, "- {first}");
        }
    }
    table(
        &mut s,
        "Integration levels (db_bench, wall clock at the run's speed):",
        &level_aggregates(&points.levels),
    );
    if !points.levels.is_empty() {
        let _ = writeln!(
            s,
            "\nServed drives per run (mean over repetitions):\n\n| level | device s | read MiB | written MiB | of which to zones | zone resets | zone appends | FTL WAF | FTL GC MiB |\n|---|---|---|---|---|---|---|---|---|"
        );
        for level in Level::ALL {
            // one entry per run (every benchmark of a run has its counters)
            let runs: Vec<&Counters> = {
                let mut seen = Vec::new();
                let mut v = Vec::new();
                for p in points.levels.iter().filter(|p| p.level == level.key()) {
                    if !seen.contains(&p.rep) {
                        seen.push(p.rep);
                        v.push(&p.counters);
                    }
                }
                v
            };
            if runs.is_empty() {
                continue;
            }
            let m = |f: &dyn Fn(&Counters) -> f64| mean(runs.iter().map(|c| f(c))).unwrap_or(0.0);
            let _ = writeln!(
                s,
                "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} | {:.0} | {} | {} |",
                level.name(),
                m(&|c| c.device_s),
                m(&|c| c.read_bytes as f64 / 1048576.0),
                m(&|c| c.write_bytes as f64 / 1048576.0),
                m(&|c| c.zoned_write_bytes as f64 / 1048576.0),
                m(&|c| c.zone_resets as f64),
                m(&|c| c.zone_appends as f64),
                opt(mean(runs.iter().filter_map(|c| c.ftl_waf)), 3),
                opt(
                    mean(
                        runs.iter()
                            .filter_map(|c| c.ftl_gc_relocated_bytes.map(|b| b as f64 / 1048576.0))
                    ),
                    1
                ),
            );
        }
    }
    table(
        &mut s,
        "Two tenants, tenant B (db_bench on btrfs zoned):",
        &tenant_aggregates(&points.tenants),
    );
    if !points.tenants.is_empty() {
        let _ = writeln!(
            s,
            "\nTwo tenants, the drive (each run; capacity at the start of the measured phase, bandwidth over B's run):\n\n| run | A zones | B zones | drive zones | F2FS A fs | btrfs B fs | write MiB/s | read MiB/s | bandwidth | A's writes MiB/s | fills s | window s |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        let mut seen = Vec::new();
        for p in &points.tenants {
            let key = (p.util.clone(), p.tenancy.clone(), p.rep);
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let c = &p.capacity_start;
            let pc = |v: f64| format!("{:.0} %", v * 100.0);
            let _ = writeln!(
                s,
                "| {}/{} rep {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {} | {} | {:.0} | {:.0} |",
                p.util,
                p.tenancy,
                p.rep,
                pc(c.a_zones),
                pc(c.b_zones),
                pc(c.drive_zones),
                pc(c.a_fs),
                pc(c.b_fs),
                p.bandwidth.write_mib_s,
                p.bandwidth.read_mib_s,
                pc(p.bandwidth.utilization),
                opt(p.tenant_a.map(|f| f.write_mib_per_s / points.speed.max(1e-9)), 2),
                p.fill_s,
                p.bandwidth.window_s
            );
        }
    }
    s
}

/// Writes the study's files into `dir`: points.json (what [`read_points`]
/// reads back), levels.csv, tenants.csv, summary.md, summary.json and,
/// with `plots`, levels.png and tenants.png (drawing needs fonts, which
/// the guest lacks: its points are plotted on the host); their paths.
pub fn write_outputs(
    points: &StudyPoints,
    dir: &Path,
    plots: bool,
) -> Result<Vec<PathBuf>, AppError> {
    std::fs::create_dir_all(dir).map_err(AppError::file(dir))?;
    let mut files = Vec::new();
    files.push(outfiles::write_json(dir, "points.json", points)?);
    let mut write = |name: &str, text: String| -> Result<(), AppError> {
        files.push(outfiles::write(dir, name, text)?);
        Ok(())
    };
    write("levels.csv", levels_csv(&points.levels))?;
    write("tenants.csv", tenants_csv(&points.tenants))?;
    let rows = summary(points);
    write(
        "summary.md",
        format!("{}{}", summary_markdown(&rows), figures_markdown(points)),
    )?;
    let doc = serde_json::json!({
        "speed": points.speed,
        "quick": points.quick,
        "scale": scale(points.quick),
        "findings": rows,
        "levels": level_aggregates(&points.levels),
        "tenants": tenant_aggregates(&points.tenants),
        "failures": points.failures,
    });
    write(
        "summary.json",
        serde_json::to_string_pretty(&doc).map_err(AppError::file(&dir.join("summary.json")))?,
    )?;
    if !plots {
        return Ok(files);
    }
    let lv = level_aggregates(&points.levels);
    if !lv.is_empty() {
        let groups: Vec<String> = LEVEL_BENCHMARKS
            .iter()
            .filter(|b| lv.iter().any(|a| a.benchmark == **b))
            .map(|b| b.to_string())
            .collect();
        let series = Level::ALL
            .iter()
            .map(|l| {
                let bars = groups
                    .iter()
                    .map(|g| {
                        let base = find(&lv, "a", g).map(|a| a.ops_per_s).filter(|b| *b > 0.0);
                        match (find(&lv, l.key(), g), base) {
                            (Some(x), Some(b)) => {
                                (x.ops_per_s / b, Some((x.ops_min / b, x.ops_max / b)))
                            }
                            _ => (f64::NAN, None),
                        }
                    })
                    .collect();
                (l.name().to_string(), bars)
            })
            .collect();
        let path = dir.join("levels.png");
        zns_plot::bar_chart(
            &zns_plot::BarChart {
                title: "Integration levels: db_bench ops/s normalized to (a) F2FS on a block SSD"
                    .into(),
                y_label: "throughput / (a)".into(),
                groups,
                series,
                references: vec![zns_plot::Reference::plain(1.0)],
            },
            &path,
        )
        .map_err(crate::step)?;
        files.push(path);
    }
    let tv = tenant_aggregates(&points.tenants);
    if !tv.is_empty() {
        let mut groups = Vec::new();
        for util in ["low", "high"] {
            for bench in ["fillrandom", "overwrite"] {
                if find(&tv, &format!("{util}/alone"), bench).is_some() {
                    groups.push((util, bench));
                }
            }
        }
        let series = ["alone", "shared"]
            .iter()
            .map(|tenancy| {
                let bars = groups
                    .iter()
                    .map(|(util, bench)| {
                        let base = find(&tv, &format!("{util}/alone"), bench)
                            .map(|a| a.ops_per_s)
                            .filter(|b| *b > 0.0);
                        match (find(&tv, &format!("{util}/{tenancy}"), bench), base) {
                            (Some(x), Some(b)) => {
                                (x.ops_per_s / b, Some((x.ops_min / b, x.ops_max / b)))
                            }
                            _ => (f64::NAN, None),
                        }
                    })
                    .collect();
                let name = if *tenancy == "alone" {
                    "B alone"
                } else {
                    "B with A's overwrites"
                };
                (name.to_string(), bars)
            })
            .collect();
        let path = dir.join("tenants.png");
        zns_plot::bar_chart(
            &zns_plot::BarChart {
                title: "Two tenants on one drive: tenant B's db_bench ops/s normalized to B alone"
                    .into(),
                y_label: "throughput / B alone".into(),
                groups: groups
                    .iter()
                    .map(|(u, b)| format!("{u} utilization, {b}"))
                    .collect(),
                series,
                references: vec![zns_plot::Reference::plain(1.0)],
            },
            &path,
        )
        .map_err(crate::step)?;
        files.push(path);
    }
    Ok(files)
}
