//! The study's plan, parsers and outputs, tested without a guest.

use super::report::{figures_markdown, read_points, summary, summary_markdown, write_outputs};
use std::path::PathBuf;

use serde_json::Value;

use super::*;
use zns_apps::host::{block_stat_sectors, zone_fill};
use zns_device::{NamespaceProfile, Profile};

fn opts(parts: Vec<Part>, quick: bool, reps: u32) -> StudyOptions {
    StudyOptions {
        parts,
        quick,
        reps,
        speed: 0.01,
        out_dir: PathBuf::from("/tmp/x"),
        zns: PathBuf::from("zns"),
    }
}

#[test]
fn the_plan_interleaves_what_is_compared_and_quick_is_one_rep() {
    let q = plan(&opts(vec![Part::Levels, Part::Tenants], true, 3));
    assert_eq!(q.len(), 3 + 4);
    assert_eq!(
        q[0],
        RunSpec::Level {
            level: Level::A,
            rep: 0
        }
    );
    assert_eq!(
        q[2],
        RunSpec::Level {
            level: Level::D,
            rep: 0
        }
    );
    assert_eq!(
        q[3],
        RunSpec::Tenants {
            util: Utilization::Low,
            tenancy: Tenancy::Alone,
            rep: 0
        }
    );
    assert_eq!(
        q[4],
        RunSpec::Tenants {
            util: Utilization::Low,
            tenancy: Tenancy::Shared,
            rep: 0
        }
    );
    assert_eq!(q[6].label(), "tenants-high-shared-rep0");
    let full = opts(vec![Part::Tenants], false, 2);
    let f = plan(&full);
    assert_eq!(f.len(), 8);
    // repetition by repetition; alone and shared next to each other
    let kind = |r: &RunSpec| match r {
        RunSpec::Tenants { util, tenancy, rep } => (util.key(), tenancy.key(), *rep),
        RunSpec::Level { .. } => ("level", "", 0),
    };
    assert_eq!(kind(&f[1]), ("low", "shared", 0));
    assert_eq!(kind(&f[2]), ("high", "alone", 0));
    assert_eq!(kind(&f[4]), ("low", "alone", 1));
    let both = plan(&opts(vec![Part::Levels, Part::Tenants], false, 2));
    assert_eq!(
        both[7],
        RunSpec::Level {
            level: Level::A,
            rep: 1
        }
    );
    assert_eq!(run_count(&opts(vec![Part::Levels], false, 3)), 9);
    assert!(guest_budget_runs(&full) >= f.len());
    assert_eq!("tenants".parse::<Part>(), Ok(Part::Tenants));
    assert!("zenfs".parse::<Part>().is_err());
}

#[test]
fn db_bench_runs_have_the_studys_flags() {
    let s = scale(true);
    let inv = level_invocations(&s, "/mnt/db");
    assert_eq!(inv.len(), 5);
    for args in &inv {
        assert_eq!(args[0], "--db=/mnt/db");
        for flag in [
            "--key_size=16",
            "--value_size=100",
            "--compression_type=none",
            "--use_direct_reads=true",
            "--use_direct_io_for_flush_and_compaction=true",
            "--histogram=1",
        ] {
            assert!(args.iter().any(|a| a == flag), "{flag} in {args:?}");
        }
        assert!(args.contains(&format!("--num={}", s.level_keys)));
        assert!(args.contains(&"--write_buffer_size=4194304".to_string()));
    }
    assert!(inv[0].contains(&"--benchmarks=fillseq".to_string()));
    assert!(inv[1].contains(&"--benchmarks=fillrandom".to_string()));
    for (i, benchmarks, reads) in [
        (2, "readrandom", s.level_reads),
        // readseq scans the whole database, as the study's (a few hundred
        // keys are the iterator's cold start)
        (3, "readseq", s.level_keys),
        (4, "overwrite,updaterandom", s.level_reads),
    ] {
        assert!(
            inv[i].contains(&format!("--benchmarks={benchmarks}")),
            "{:?}",
            inv[i]
        );
        assert!(inv[i].contains(&"--use_existing_db=1".to_string()));
        assert!(inv[i].contains(&format!("--reads={reads}")), "{:?}", inv[i]);
    }
    assert!(!inv[0].iter().any(|a| a.starts_with("--reads")));
    let b = tenant_b_args(&s, "/mnt/b/db");
    for flag in [
        "--benchmarks=fillrandom,overwrite",
        "--key_size=100",
        "--value_size=800",
        "--compression_ratio=0.5",
    ] {
        assert!(b.iter().any(|a| a == flag), "{flag} in {b:?}");
    }
    // SST files of one zone's capacity, as the study sets them
    let sst = format!("--target_file_size_base={}", s.zone_cap_lbas * 4096);
    assert!(b.contains(&sst), "{b:?}");
}

#[test]
fn the_two_tenant_drive_has_a_conventional_and_two_zoned_namespaces() {
    for quick in [true, false] {
        let s = scale(quick);
        let p = tenant_profile(&s).unwrap();
        assert_eq!(p.namespaces.len(), 3);
        match &p.namespaces[0] {
            NamespaceProfile::Conventional(c) => assert_eq!(c.capacity_lbas, s.meta_lbas),
            other => panic!("{other:?}"),
        }
        for (ns, zones) in [(1, s.zones_a), (2, s.zones_b)] {
            match &p.namespaces[ns] {
                NamespaceProfile::Zoned(z) => {
                    assert_eq!(z.zone_count, zones);
                    assert_eq!(z.zone_size_lbas, s.zone_lbas);
                    assert_eq!(z.zone_capacity_lbas, s.zone_cap_lbas);
                    assert!(z.zone_size_lbas.is_power_of_two());
                    // A keeps the ZN540's limits, B has none (btrfs)
                    let limit = if ns == 1 { 14 } else { zones };
                    assert_eq!(z.max_active_zones, limit);
                }
                other => panic!("{other:?}"),
            }
        }
        // whole F2FS segments (2 MiB = 512 blocks) per zone
        assert_eq!(s.zone_cap_lbas % 512, 0);
        // the file written back parses to the same drive
        let again = Profile::from_toml(&p.to_toml(), "again").unwrap();
        assert_eq!(again.namespaces, p.namespaces);
    }
    let (w, r) = peak_mib_s(&Profile::builtin("zn540-cns").unwrap());
    assert!((w - 1170.0).abs() < 1.0, "{w}");
    assert_eq!(r, 3000.0);
}

#[test]
fn zone_reports_and_block_stats_are_read() {
    let report = "\
  start: 0x000000000, len 0x002000, cap 0x001000, wptr 0x001000 reset:0 non-seq:0, zcond:14(fu) [type: 2(SEQ_WRITE_REQUIRED)]
  start: 0x000002000, len 0x002000, cap 0x001000, wptr 0x000200 reset:0 non-seq:0, zcond: 2(oi) [type: 2(SEQ_WRITE_REQUIRED)]
  start: 0x000004000, len 0x002000, cap 0x001000, wptr 0x000000 reset:0 non-seq:0, zcond: 1(em) [type: 2(SEQ_WRITE_REQUIRED)]
  start: 0x000006000, len 0x002000, cap 0x001000, wptr 0x002000 reset:0 non-seq:0, zcond:14(fu) [type: 2(SEQ_WRITE_REQUIRED)]
";
    assert_eq!(
        zone_fill(report),
        Some((0x1000 + 0x200 + 0x1000, 4 * 0x1000))
    );
    assert_eq!(zone_fill("no zones here\n"), None);
    let stat = "     53        0     2128      788        2        0        8        7        0      512      799        0        0        0        0        1        3\n";
    assert_eq!(block_stat_sectors(stat), Some((2128, 8)));
    assert_eq!(block_stat_sectors("1 2"), None);
}

#[test]
fn served_counters_are_summed_with_the_ftls() {
    let stats = serde_json::json!({
        "virtual_ns": 2_500_000_000u64,
        "served": [
            {"name": "sn540", "requests": {"by_kind": {
                "read": {"requests": 10, "bytes": 4096, "failed": 0},
                "write": {"requests": 5, "bytes": 8192, "failed": 0},
                "discard": {"requests": 1, "bytes": 1048576, "failed": 0}}}},
            {"name": "zn540-cns nsid 2", "requests": {"by_kind": {
                "zone-append": {"requests": 3, "bytes": 12288, "failed": 0},
                "zone-reset": {"requests": 2, "bytes": 0, "failed": 0}}}}
        ],
        "devices": {"sn540": {"controllers": [{"commands": {}, "ftl": {"1": {
            "host_bytes_written": 1000, "flash_bytes_written": 1500,
            "gc_relocated_bytes": 400, "gc_victims": 2, "erases": 3}}}]}}
    });
    let c = counters(&stats, &["zn540-cns nsid 2".to_string()]);
    assert_eq!(c.device_s, 2.5);
    assert_eq!(c.read_bytes, 4096);
    assert_eq!(c.write_bytes, 8192 + 12288);
    assert_eq!(c.zoned_write_bytes, 12288);
    assert_eq!(c.zone_appends, 3);
    assert_eq!(c.zone_resets, 2);
    assert_eq!(c.discard_bytes, 1048576);
    assert_eq!(c.ftl_waf, Some(1.5));
    assert_eq!(c.ftl_gc_relocated_bytes, Some(400));
    assert_eq!(c.ftl_gc_victims, Some(2));
    let zoned_only = serde_json::json!({"virtual_ns": 1, "served": [],
        "devices": {"zn540-cns": {"controllers": [{"commands": {}, "ftl": {}}]}}});
    assert_eq!(counters(&zoned_only, &[]).ftl_waf, None);
}

fn level(l: &str, bench: &str, rep: u32, ops: f64) -> LevelPoint {
    LevelPoint {
        level: l.into(),
        rep,
        benchmark: bench.into(),
        ops_per_s: ops,
        mb_per_s: Some(1.0),
        p50_us: Some(10.0),
        p99_us: Some(100.0),
        p99_9_us: None,
        counters: Counters {
            ftl_waf: (l == "a").then_some(1.0),
            ftl_gc_relocated_bytes: (l == "a").then_some(0),
            ..Counters::default()
        },
        fs_used_bytes: 0,
        report_file: PathBuf::new(),
    }
}

fn tenant(util: &str, tenancy: &str, bench: &str, ops: f64, p99: f64) -> TenantPoint {
    TenantPoint {
        util: util.into(),
        tenancy: tenancy.into(),
        rep: 0,
        benchmark: bench.into(),
        ops_per_s: ops,
        mb_per_s: None,
        p50_us: None,
        p99_us: Some(p99),
        p99_9_us: None,
        capacity_start: Capacity {
            drive_zones: if util == "high" { 0.85 } else { 0.05 },
            a_fs: 0.9,
            ..Capacity::default()
        },
        capacity_end: Capacity::default(),
        bandwidth: Bandwidth {
            utilization: if tenancy == "shared" { 0.4 } else { 0.1 },
            ..Bandwidth::default()
        },
        tenant_a: None,
        fill_s: 0.0,
        counters: Counters::default(),
        report_file: PathBuf::new(),
    }
}

fn sample() -> StudyPoints {
    StudyPoints {
        speed: 0.01,
        quick: true,
        levels: vec![
            level("a", "fillseq", 0, 100.0),
            level("a", "fillseq", 1, 300.0),
            level("c", "fillseq", 0, 210.0),
            level("d", "fillseq", 0, 100.0),
            level("a", "overwrite", 0, 200.0),
            level("a", "overwrite", 1, 220.0),
            level("c", "overwrite", 0, 150.0),
            level("c", "overwrite", 1, 250.0),
        ],
        tenants: vec![
            tenant("low", "alone", "fillrandom", 100.0, 50.0),
            tenant("low", "shared", "fillrandom", 95.0, 60.0),
            tenant("high", "alone", "overwrite", 100.0, 50.0),
            tenant("high", "shared", "overwrite", 60.0, 100.0),
        ],
        failures: vec!["level-d-rep1: db_bench failed\nmore".into()],
    }
}

#[test]
fn the_summary_states_the_direction_against_the_study() {
    let rows = summary(&sample());
    let row = |what: &str| {
        rows.iter()
            .find(|r| r.what.starts_with(what))
            .unwrap_or_else(|| panic!("no row {what}"))
    };
    // (a) is the mean of its repetitions: 200
    let c = row("fillseq: (c)");
    assert!((c.ours.unwrap() - 1.05).abs() < 1e-9);
    assert!(
        c.note.contains("5.0 % faster") && c.note.contains("as the study found"),
        "{}",
        c.note
    );
    let d = row("fillseq: (d)");
    assert!(
        d.note.contains("50.0 % slower") && d.note.contains("unlike the study"),
        "{}",
        d.note
    );
    let ow = row("overwrite: (c)");
    assert!(
        ow.note.contains("within the repetitions' spread"),
        "{}",
        ow.note
    );
    assert!(!c.note.contains("spread"), "{}", c.note);
    assert_eq!(row("readseq: (c)").ours, None);
    assert_eq!(row("readseq: (c)").note, "not run");
    let low = row("two tenants, low utilization: B fillrandom with A");
    assert!((low.ours.unwrap() - 0.95).abs() < 1e-9);
    assert!(low.note.contains("as the study found"), "{}", low.note);
    let high = row("two tenants, high utilization: B overwrite with A");
    assert!((high.ours.unwrap() - 0.6).abs() < 1e-9);
    assert!(
        high.note.contains("40.0 % slower") && high.note.contains("as Western Digital"),
        "{}",
        high.note
    );
    let p99 = row("two tenants, high utilization: B overwrite P99");
    assert!((p99.ours.unwrap() - 2.0).abs() < 1e-9);
    let cap = row("high utilization: capacity");
    assert!(cap.note.contains("above 80 %"), "{}", cap.note);
    let bw = row("high utilization: bandwidth");
    assert!((bw.ours.unwrap() - 0.4).abs() < 1e-9);
    assert!(bw.note.contains("above 30 %"), "{}", bw.note);
    let low_cap = row("low utilization: capacity");
    assert!(low_cap.note.contains("below 80 %"), "{}", low_cap.note);
    let md = summary_markdown(&rows);
    assert!(md.starts_with("| measure | study | ours | note |"));
    let fig = figures_markdown(&sample());
    assert!(fig.contains("| a | fillseq | 2 | 200 (100–300) |"), "{fig}");
    assert!(fig.contains("high/shared rep 0"), "{fig}");
    assert!(fig.contains("- level-d-rep1: db_bench failed\n"), "{fig}");
}

#[test]
fn outputs_are_written_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_outputs(&sample(), dir.path(), false).unwrap();
    assert_eq!(files.len(), 5);
    let back = read_points(dir.path()).unwrap();
    assert_eq!(back.levels.len(), 8);
    assert_eq!(back.tenants[3].ops_per_s, 60.0);
    let csv = std::fs::read_to_string(dir.path().join("levels.csv")).unwrap();
    assert_eq!(csv.lines().count(), 9);
    assert!(csv
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("a,0,fillseq,100.0,1.00,10.00,100.00,,"));
    let csv = std::fs::read_to_string(dir.path().join("tenants.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    assert!(json["findings"].as_array().unwrap().len() > 10);
    assert_eq!(json["scale"]["zones_a"], scale(true).zones_a);
}
