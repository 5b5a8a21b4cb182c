//! The study's two tenants (§4.1.2) on one drive's two zoned namespaces:
//! tenant A's random overwrites (fio) beside tenant B's db_bench, at low
//! utilization and above Western Digital's 80 % capacity.

use std::path::{Path, PathBuf};
use std::process::Child;

use zns_device::{NamespaceProfile, Profile};

use zns_apps::dbbench::run_db_bench;
use zns_apps::fio::FioResult;
use zns_apps::mount::{FileSystem, Mounted};
use zns_apps::served::Server;
use zns_apps::AppError;

use super::levels::lsm_args;
use super::plan::{
    conventional, counters, io, mount_dir, ratio, serve_args, zoned, zoned_targets, Bandwidth,
    Capacity, Counters, Scale, StudyOptions, Tenancy, TenantPoint, Utilization,
};
use zns_apps::fio;
use zns_apps::host::{fs_space, sectors_of, zones_of};

/// Tenant B's db_bench (§4.1.2's workload: 100 B keys, 800 B values
/// compressed to 400 B, SST files of a zone's capacity, direct I/O).
pub fn tenant_b_args(scale: &Scale, db: &str) -> Vec<String> {
    let mut v: Vec<String> = vec![
        format!("--db={db}"),
        "--benchmarks=fillrandom,overwrite".into(),
        format!("--num={}", scale.tenant_keys),
        "--key_size=100".into(),
        "--value_size=800".into(),
        "--compression_ratio=0.5".into(),
        "--use_direct_reads=true".into(),
        "--use_direct_io_for_flush_and_compaction=true".into(),
        "--histogram=1".into(),
        "--progress_reports=false".into(),
    ];
    v.extend(lsm_args(
        scale.lsm_divisor,
        Some(scale.zone_cap_lbas * 4096),
    ));
    v
}

/// The two-tenant drive: `zn540-cns`'s controller and flash with a small
/// conventional namespace (F2FS's metadata) and two zoned namespaces of
/// the scaled zones (tenant A, tenant B), sharing the flash.
pub fn tenant_profile(scale: &Scale) -> Result<Profile, AppError> {
    let base = Profile::builtin("zn540-cns").map_err(crate::step)?;
    let mut conv = None;
    let mut zoned = None;
    for ns in &base.namespaces {
        match ns {
            NamespaceProfile::Conventional(c) if conv.is_none() => conv = Some(c.clone()),
            NamespaceProfile::Zoned(z) if zoned.is_none() => zoned = Some(z.clone()),
            _ => {}
        }
    }
    let (Some(mut conv), Some(zoned)) = (conv, zoned) else {
        return Err(AppError::Invalid(
            "zn540-cns: expected a conventional and a zoned namespace".into(),
        ));
    };
    conv.capacity_lbas = scale.meta_lbas;
    let ns = |zones: u32, unlimited: bool| {
        let mut z = zoned.clone();
        z.zone_count = zones;
        z.zone_size_lbas = scale.zone_lbas;
        z.zone_capacity_lbas = scale.zone_cap_lbas;
        if unlimited {
            // served as "no limit" (docs/serve.md): btrfs zoned in Linux
            // 6.12 fails its transaction commits with EAGAIN (a metadata
            // block group it cannot activate) under the ZN540's 14 active
            // zones once the namespace is 85 % full
            z.max_open_zones = zones;
            z.max_active_zones = zones;
        }
        NamespaceProfile::Zoned(z)
    };
    let mut p = base.clone();
    p.name = "zn540-two-tenants".into();
    p.description = format!(
        "zn540-cns's controller and flash: a {} MiB conventional namespace (F2FS metadata) and two zoned namespaces of {} and {} zones of {} MiB ({} MiB capacity), tenants A and B (no active-zone limit), sharing the flash",
        (scale.meta_lbas * 4096) >> 20,
        scale.zones_a,
        scale.zones_b,
        (scale.zone_lbas * 4096) >> 20,
        (scale.zone_cap_lbas * 4096) >> 20,
    );
    p.namespaces = vec![
        NamespaceProfile::Conventional(conv),
        ns(scale.zones_a, false),
        ns(scale.zones_b, true),
    ];
    // (parsed again: the timing model takes the zone geometry from it)
    Profile::from_toml(&p.to_toml(), "zn540-two-tenants").map_err(crate::step)
}

/// The profile's peak write bandwidth (every die programming) and read
/// bandwidth (the host link), in MiB/s.
pub fn peak_mib_s(p: &Profile) -> (f64, f64) {
    let t = &p.timing;
    let write = t.total_dies() as f64 * t.program_unit_bytes() as f64 / t.program_ns as f64 * 1e9
        / 1048576.0;
    (write, t.host_link_read_mibps as f64)
}

/// A line of what a two-tenant run reached.
pub(super) fn tenant_line(points: &[TenantPoint]) -> String {
    let Some(p) = points.first() else {
        return String::new();
    };
    let ops: Vec<String> = points
        .iter()
        .map(|p| format!("{} {:.0} ops/s", p.benchmark, p.ops_per_s))
        .collect();
    format!(
        "  {}; drive zones {:.0} % written (A {:.0} %, B {:.0} %), bandwidth {:.0} % ({:.1} MiB/s written per device second)",
        ops.join(", "),
        p.capacity_start.drive_zones * 100.0,
        p.capacity_start.a_zones * 100.0,
        p.capacity_start.b_zones * 100.0,
        p.bandwidth.utilization * 100.0,
        p.bandwidth.write_mib_s
    )
}
/// A fio run that writes `bytes` into `nrfiles` files named
/// `NAME.N` in `dir`, sequentially (a fill, or a hot set's layout).
/// Writes `nrfiles` files of `bytes` in all into `dir` with fio; the seconds
/// fio reports the job ran.
fn fio_write_files(dir: &Path, name: &str, nrfiles: u32, bytes: u64) -> Result<f64, AppError> {
    let mib = (bytes >> 20).max(nrfiles as u64);
    let out = zns_apps::run(
        "fio",
        &[
            &format!("--name={name}"),
            &format!("--directory={}", dir.display()),
            &format!("--filename_format={name}.$filenum"),
            &format!("--nrfiles={nrfiles}"),
            &format!("--size={mib}M"),
            "--rw=write",
            "--bs=512k",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=8",
            "--end_fsync=1",
            "--eta=never",
            "--output-format=json",
        ],
        &[],
    )?;
    let start = out.find('{').unwrap_or(0);
    let doc: serde_json::Value =
        serde_json::from_str(&out[start..]).map_err(|e| AppError::Report {
            program: "fio".into(),
            what: format!("its JSON report: {e}"),
        })?;
    let runtime_ms = doc["jobs"][0]["job_runtime"].as_f64().unwrap_or(0.0);
    Ok(runtime_ms / 1000.0)
}

/// Tenant A's hot set: four files of this many MiB each.
const HOT_FILES: u32 = 4;

/// Tenant A's overwrites: random 64 KiB writes over its hot files until
/// stopped (SIGINT), fsync every 64 (F2FS zoned turns direct writes into
/// buffered ones), at most `rate_kib_s` (wall clock) when given; JSON
/// report on stdout.
fn spawn_tenant_a(
    dir: &Path,
    hot_mib: u64,
    rate_kib_s: Option<u64>,
    out: &Path,
) -> Result<Child, AppError> {
    let mut args: Vec<String> = rate_kib_s
        .map(|r| format!("--rate={}k", r.max(1)))
        .into_iter()
        .collect();
    args.extend(
        [
            "--name=hot",
            &format!("--directory={}", dir.display()),
            "--filename_format=hot.$filenum",
            &format!("--nrfiles={HOT_FILES}"),
            &format!("--size={hot_mib}M"),
            "--rw=randwrite",
            "--bs=64k",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=16",
            "--fsync=64",
            "--time_based",
            "--runtime=86400",
            "--output-format=json",
        ]
        .map(String::from),
    );
    fio::spawn_background(&args, out)
}

/// Stops tenant A (SIGINT: fio reports what it did) and reads its report.
fn stop_tenant_a(child: Child, out: &Path) -> Result<FioResult, AppError> {
    fio::stop_background(child, out, "fio (tenant A)")
}

struct Tenants {
    meta: String,
    a: String,
    b: String,
    mnt_a: PathBuf,
    mnt_b: PathBuf,
    /// (used, available) bytes of each fresh file system.
    fresh_a: (u64, u64),
    fresh_b: (u64, u64),
}

impl Tenants {
    fn capacity(&self) -> Result<Capacity, AppError> {
        let fs = |dir: &Path, fresh: (u64, u64)| -> Result<f64, AppError> {
            let (_, used, _) = fs_space(dir)?;
            Ok(ratio(used.saturating_sub(fresh.0), fresh.1))
        };
        let (wa, ca) = zones_of(&self.a)?;
        let (wb, cb) = zones_of(&self.b)?;
        Ok(Capacity {
            a_fs: fs(&self.mnt_a, self.fresh_a)?,
            b_fs: fs(&self.mnt_b, self.fresh_b)?,
            a_zones: ratio(wa, ca),
            b_zones: ratio(wb, cb),
            drive_zones: ratio(wa + wb, ca + cb),
        })
    }

    fn sectors(&self) -> Result<(u64, u64), AppError> {
        let mut sum = (0, 0);
        for d in [&self.meta, &self.a, &self.b] {
            let (r, w) = sectors_of(d)?;
            sum.0 += r;
            sum.1 += w;
        }
        Ok(sum)
    }
}

pub(super) fn run_tenants(
    opts: &StudyOptions,
    scale: &Scale,
    profile: &Profile,
    profile_file: &Path,
    (util, tenancy, rep): (Utilization, Tenancy, u32),
    work: &Path,
    label: &str,
) -> Result<Vec<TenantPoint>, AppError> {
    let stats = work.join(format!("{label}.serve.json"));
    let server = Server::start(
        &opts.zns,
        &serve_args(&profile_file.to_string_lossy(), opts.speed),
        &stats,
    )?;
    let meta = conventional(&server)?;
    let z = zoned(&server);
    if z.len() != 2 {
        return Err(io(format!(
            "the two-tenant drive served {} zoned namespaces, not 2",
            z.len()
        )));
    }
    let (a, b) = (z[0].path.clone(), z[1].path.clone());
    let fs_a = FileSystem::F2fsZoned {
        meta: meta.clone(),
        zoned: a.clone(),
    };
    let fs_b = FileSystem::BtrfsZoned { dev: b.clone() };
    fs_a.make()?;
    fs_b.make()?;
    let mounted_a = fs_a.mount(&mount_dir("a"))?;
    let mounted_b = fs_b.mount(&mount_dir("b"))?;
    let space = |m: &Mounted| fs_space(m.dir()).map(|(_, used, avail)| (used, avail));
    let t = Tenants {
        meta,
        a,
        b,
        mnt_a: mounted_a.dir().to_path_buf(),
        mnt_b: mounted_b.dir().to_path_buf(),
        fresh_a: space(&mounted_a)?,
        fresh_b: space(&mounted_b)?,
    };
    let outcome = tenants_measure(opts, scale, profile, &t, (util, tenancy), work, label);
    mounted_a.unmount()?;
    mounted_b.unmount()?;
    let zoned_names = zoned_targets(&server);
    let served = server.stop()?;
    let (mut points, report_file) = outcome?;
    let c = counters(&served, &zoned_names);
    for p in &mut points {
        p.rep = rep;
        p.counters = c.clone();
        p.report_file = report_file.clone();
    }
    Ok(points)
}

/// The fills, the measured phase and its figures (the rest is filled in
/// by the caller); the db_bench report file.
fn tenants_measure(
    opts: &StudyOptions,
    scale: &Scale,
    profile: &Profile,
    t: &Tenants,
    (util, tenancy): (Utilization, Tenancy),
    work: &Path,
    label: &str,
) -> Result<(Vec<TenantPoint>, PathBuf), AppError> {
    // the fills' duration as fio reports it (no clock read here)
    let mut fill_s = 0.0;
    let offered_a = t.fresh_a.1;
    let hot = (offered_a as f64 * scale.hot_fraction) as u64;
    let hot_mib = (hot >> 20) / HOT_FILES as u64;
    if util == Utilization::High {
        // cold files to the fill target, less the hot set laid out below
        let cold_a = (offered_a as f64 * scale.high_fill) as u64 - hot;
        fill_s += fio_write_files(&t.mnt_a, "cold", 8, cold_a)?;
        let cap_b = scale.zones_b as u64 * scale.zone_cap_lbas * 4096;
        let (written_b, _) = zones_of(&t.b)?;
        let cold_b = ((cap_b as f64 * scale.high_fill_b) as u64).saturating_sub(written_b * 512);
        fill_s += fio_write_files(&t.mnt_b, "cold", 8, cold_b)?;
    }
    fill_s += fio_write_files(
        &t.mnt_a,
        "hot",
        HOT_FILES,
        hot_mib * HOT_FILES as u64 * 1048576,
    )?;
    let capacity_start = t.capacity()?;
    let fio_out = work.join(format!("{label}.tenant-a.json"));
    // the window the counters cover, on the kernel's clock (db_bench's own
    // seconds leave out its open and close and A's writes around them)
    let uptime = || zns_apps::load::uptime_s().ok_or_else(|| io("/proc/uptime: unreadable"));
    let start_s = uptime()?;
    let before = t.sectors()?;
    let tenant_a = match tenancy {
        Tenancy::Shared => {
            let (peak_w, _) = peak_mib_s(profile);
            let rate = (util == Utilization::Low)
                .then_some((scale.low_a_bandwidth * peak_w * 1024.0 * opts.speed) as u64);
            Some(spawn_tenant_a(&t.mnt_a, hot_mib, rate, &fio_out)?)
        }
        Tenancy::Alone => None,
    };
    let db = t.mnt_b.join("rocksdb").to_string_lossy().into_owned();
    let args = tenant_b_args(scale, &db);
    let b = run_db_bench(&args);
    let after = t.sectors()?;
    let window_s = uptime()? - start_s;
    let tenant_a = match tenant_a {
        Some(child) => Some(stop_tenant_a(child, &fio_out)?),
        None => None,
    };
    let (results, out) = b?;
    let report_file = work.join(format!("{label}.report"));
    std::fs::write(
        &report_file,
        format!("$ db_bench {}\n{out}", args.join(" ")),
    )
    .map_err(|e| io(format!("{}: {e}", report_file.display())))?;
    let capacity_end = t.capacity()?;
    let (peak_w, peak_r) = peak_mib_s(profile);
    let device_window_s = window_s * opts.speed;
    let per_s = |sectors: u64| sectors as f64 * 512.0 / 1048576.0 / device_window_s.max(1e-9);
    let write_mib_s = per_s(after.1.saturating_sub(before.1));
    let read_mib_s = per_s(after.0.saturating_sub(before.0));
    let bandwidth = Bandwidth {
        window_s,
        device_window_s,
        write_mib_s,
        read_mib_s,
        write_utilization: write_mib_s / peak_w,
        read_utilization: read_mib_s / peak_r,
        utilization: write_mib_s / peak_w + read_mib_s / peak_r,
    };
    let points = results
        .into_iter()
        .filter(|r| r.benchmark == "fillrandom" || r.benchmark == "overwrite")
        .map(|r| TenantPoint {
            util: util.key().into(),
            tenancy: tenancy.key().into(),
            rep: 0,
            benchmark: r.benchmark,
            ops_per_s: r.ops_per_sec,
            mb_per_s: r.mb_per_s,
            p50_us: r.p50_us,
            p99_us: r.p99_us,
            p99_9_us: r.p99_9_us,
            capacity_start,
            capacity_end,
            bandwidth,
            tenant_a,
            fill_s,
            counters: Counters::default(),
            report_file: PathBuf::new(),
        })
        .collect();
    Ok((points, report_file))
}
