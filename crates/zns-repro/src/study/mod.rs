//! The ZNS integration study (zns-integration-study-2022 §3–§4) on emulated
//! drives served by `zns serve`, with real F2FS, btrfs, fio and db_bench:
//!
//! - **integration levels** (Fig. 1, §4.1.1): db_bench's fillseq,
//!   fillrandom, readrandom, readseq, overwrite and updaterandom (16 B keys,
//!   100 B values, no compression, direct I/O) on (a) F2FS on a block SSD
//!   (`sn540`, an FTL with device GC), (c) F2FS zoned with its metadata on
//!   the conventional namespace of `zn540-cns` (the study's 4 GiB + 100 GiB
//!   set-up), (d) RocksDB on a zoned file system — btrfs zoned, since ZenFS
//!   is in no package registry;
//! - **two tenants** (§4.1.3): two zoned namespaces of one drive, tenant A
//!   F2FS with random overwrites (fio), tenant B db_bench fillrandom +
//!   overwrite (100 B keys, 800 B values compressed to 400 B) on btrfs
//!   zoned; B alone against B with A, at the study's low utilization and at
//!   Western Digital's (§4.2): capacity > 80 %, bandwidth > 30 %, measured.
//!
//! Every run is a fresh server and file systems; the raw reports and the
//! server's `--stats` go to `runs/`. docs/zns-study.md gives the method and
//! the scaling.

use zns_apps::AppError;

pub mod launch;
mod levels;
mod plan;
pub mod report;
mod tenants;
#[cfg(test)]
mod tests;

pub use levels::{level_invocations, LEVEL_BENCHMARKS};
pub use plan::{
    counters, guest_budget_runs, plan, run_count, scale, Bandwidth, Capacity, Counters, Level,
    LevelPoint, Part, RunSpec, Scale, StudyOptions, StudyPoints, Tenancy, TenantPoint, Utilization,
};
pub use tenants::{peak_mib_s, tenant_b_args, tenant_profile};

use levels::run_level;
use tenants::{run_tenants, tenant_line};

/// Runs the study; `progress` gets a line per run.
pub fn run(opts: &StudyOptions, progress: &mut dyn FnMut(&str)) -> Result<StudyPoints, AppError> {
    let work = opts.out_dir.join("runs");
    std::fs::create_dir_all(&work).map_err(AppError::file(&work))?;
    let scale = scale(opts.quick);
    let profile = tenant_profile(&scale)?;
    let tenant_toml = work.join("two-tenants.toml");
    if opts.parts.contains(&Part::Tenants) {
        std::fs::write(&tenant_toml, profile.to_toml()).map_err(AppError::file(&tenant_toml))?;
    }
    let runs = plan(opts);
    let total = runs.len();
    let mut points = StudyPoints {
        speed: opts.speed,
        quick: opts.quick,
        ..StudyPoints::default()
    };
    for (i, spec) in runs.into_iter().enumerate() {
        let label = spec.label();
        match spec {
            RunSpec::Level { level, rep } => {
                progress(&format!(
                    "[{}/{total}] integration level {}, rep {rep}",
                    i + 1,
                    level.name()
                ));
                match run_level(opts, &scale, level, rep, &work, &label) {
                    Ok(p) => points.levels.extend(p),
                    Err(e) => {
                        let e = format!("{label}: {e}");
                        progress(&format!("  FAILED {e}"));
                        points.failures.push(e);
                    }
                }
            }
            RunSpec::Tenants { util, tenancy, rep } => {
                progress(&format!(
                    "[{}/{total}] two tenants, {} utilization, B {}, rep {rep}",
                    i + 1,
                    util.key(),
                    match tenancy {
                        Tenancy::Alone => "alone",
                        Tenancy::Shared => "with A's overwrites",
                    }
                ));
                let r = run_tenants(
                    opts,
                    &scale,
                    &profile,
                    &tenant_toml,
                    (util, tenancy, rep),
                    &work,
                    &label,
                );
                match r {
                    Ok(p) => {
                        progress(&tenant_line(&p));
                        points.tenants.extend(p);
                    }
                    Err(e) => {
                        let e = format!("{label}: {e}");
                        progress(&format!("  FAILED {e}"));
                        points.failures.push(e);
                    }
                }
            }
        }
        // (what has run so far, for a run cut short; the caller writes the
        // whole set at the end)
        if let Ok(text) = serde_json::to_string_pretty(&points) {
            let _ = std::fs::write(opts.out_dir.join("points.json"), text);
        }
    }
    Ok(points)
}
