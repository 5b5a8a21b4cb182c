//! Crash tests (paper §6.6) small enough for `cargo test`: power cut at a
//! seeded instant of a sequential FUA write workload, optional member failure,
//! recovery, writes after recovery, clean restart, rebuild. The WP-log policy
//! must never lose an acknowledged write; the stripe and chunk policies lose
//! data, stripe more per failure than chunk. `zns raid crashtest` runs the
//! full-size version.

mod support;

use support::*;
use zns_raid::crashtest::{run, CrashConfig, SerialLog, Summary};
use zns_raid::Policy;

fn small(policy: Policy) -> CrashConfig {
    let mut cfg = CrashConfig::new(policy);
    cfg.profile = profile(
        "zn540",
        &[
            ("namespace.0.zone_count", "5"),
            ("namespace.0.zone_size_lbas", "1024"),
            ("namespace.0.zone_capacity_lbas", "512"),
        ],
    );
    cfg.zones = 2;
    cfg.min_cut_ns = 50_000;
    cfg.max_cut_ns = 3_000_000;
    cfg
}

fn report(name: &str, s: &Summary) {
    println!(
        "{name}: {} trials, {} failed ({:.1}%), mean loss {:.1} KiB",
        s.trials,
        s.failures,
        100.0 * s.failure_rate(),
        s.mean_loss_bytes() / 1024.0
    );
    for o in s.failing.iter().take(5) {
        println!("  seed {}: {}", o.seed, o.failure.as_deref().unwrap_or(""));
    }
}

fn assert_clean(name: &str, s: &Summary) {
    report(name, s);
    assert_eq!(
        s.failures,
        0,
        "{name}: failing seeds {:?}",
        s.failing
            .iter()
            .map(|o| (o.seed, o.failure.clone()))
            .collect::<Vec<_>>()
    );
}

#[test]
fn wplog_policy_loses_nothing() {
    let s = run(&small(Policy::WpLog), 80, 1, &mut |_| {});
    assert_clean("wplog", &s);
}

#[test]
fn wplog_policy_loses_nothing_with_a_failed_member() {
    let mut cfg = small(Policy::WpLog);
    cfg.fail_device = true;
    let s = run(&cfg, 80, 1000, &mut |_| {});
    assert_clean("wplog + failed member", &s);
}

#[test]
fn wplog_policy_at_queue_depth_4() {
    let mut cfg = small(Policy::WpLog);
    cfg.queue_depth = 4;
    cfg.fail_device = true;
    let s = run(&cfg, 30, 2000, &mut |_| {});
    assert_clean("wplog qd4 + failed member", &s);
}

#[test]
fn wplog_policy_with_one_row_pp_distance() {
    // tiny: ZRWA = 4 × ZRWAFG, chunk = 2 × ZRWAFG: PP one row ahead (H = 1)
    let mut cfg = small(Policy::WpLog);
    cfg.profile = tiny_keep();
    cfg.chunk_bytes = 32 * 1024;
    cfg.zones = 3;
    cfg.fail_device = true;
    let s = run(&cfg, 40, 3000, &mut |_| {});
    assert_clean("wplog H=1 + failed member", &s);
}

#[test]
fn stripe_and_chunk_policies_lose_acknowledged_writes() {
    let stripe = run(&small(Policy::Stripe), 40, 1, &mut |_| {});
    let chunk = run(&small(Policy::Chunk), 40, 1, &mut |_| {});
    report("stripe", &stripe);
    report("chunk", &chunk);
    assert!(stripe.failures > 0 && chunk.failures > 0);
    assert!(
        stripe.mean_loss_bytes() > chunk.mean_loss_bytes(),
        "stripe-based recovery loses more per failure than chunk-based"
    );
    // losses are lost acknowledgements only: the pattern below the reported
    // write pointer is always intact
    for o in stripe.failing.iter().chain(&chunk.failing) {
        let why = o.failure.as_deref().unwrap_or("");
        assert!(!why.contains("pattern"), "seed {}: {why}", o.seed);
        assert!(o.lost_bytes > 0, "seed {}: {why}", o.seed);
    }
}

#[test]
fn progress_per_write_loses_more_than_progress_per_stripe() {
    // the paper's ZRAID marks a write's blocks only when the whole write
    // completed: the stripes an in-flight write completes no longer cover the
    // previous acknowledged write, so the stripe and chunk policies fail more
    // often (and never less on the same seeds' totals)
    for policy in [Policy::Stripe, Policy::Chunk] {
        let piece = run(&small(policy), 40, 1, &mut |_| {});
        let mut cfg = small(policy);
        cfg.progress_per_write = true;
        let write = run(&cfg, 40, 1, &mut |_| {});
        report(&format!("{policy:?} per stripe"), &piece);
        report(&format!("{policy:?} per write"), &write);
        assert!(write.failures > piece.failures, "{policy:?}");
    }
    // with WP logs nothing is lost either way
    let mut cfg = small(Policy::WpLog);
    cfg.progress_per_write = true;
    cfg.fail_device = true;
    assert_clean(
        "wplog per write + failed member",
        &run(&cfg, 40, 500, &mut |_| {}),
    );
}

#[test]
fn the_papers_serial_log_hides_losses_the_acknowledgements_show() {
    // the paper's procedure: a commit counts once its line is printed, and
    // the next write waits for the print; a cut during the print finds the
    // write pointers past the last printed commit, so fewer trials fail than
    // when every acknowledgement counts at once (a line of 0 µs), and a long
    // line hides more than a short one
    let paper = |policy, line_ns| {
        let mut cfg = small(policy);
        let p = CrashConfig::paper_procedure(policy, SerialLog { line_ns });
        cfg.progress_per_write = p.progress_per_write;
        cfg.queue_depth = p.queue_depth;
        cfg.serial_log = p.serial_log;
        run(&cfg, 40, 1, &mut |_| {})
    };
    for policy in [Policy::Stripe, Policy::Chunk] {
        let instant = paper(policy, 0);
        let mut per_write = small(policy);
        per_write.progress_per_write = true;
        let acked = run(&per_write, 40, 1, &mut |_| {});
        assert_eq!(instant.failures, acked.failures, "{policy:?}: a 0 µs line");
        let short = paper(policy, SerialLog::QEMU_16550.line_ns);
        let long = paper(policy, 4 * SerialLog::QEMU_16550.line_ns);
        report(&format!("{policy:?} serial log 0 µs"), &instant);
        report(&format!("{policy:?} serial log 72 µs"), &short);
        report(&format!("{policy:?} serial log 288 µs"), &long);
        assert!(short.failures < instant.failures, "{policy:?}");
        assert!(long.failures < short.failures, "{policy:?}");
    }
    assert_clean(
        "wplog, serial log",
        &paper(Policy::WpLog, SerialLog::QEMU_16550.line_ns),
    );
}

#[test]
fn a_trial_replays_exactly() {
    let cfg = small(Policy::Chunk);
    let a = zns_raid::crashtest::run_trial(&cfg, 77);
    let b = zns_raid::crashtest::run_trial(&cfg, 77);
    assert_eq!(a, b);
}

/// The small ZN540 (chunk 16 LBAs, ZRWA 256 LBAs: H = 8), 3 members, WP-log
/// policy, for the hand-written power-cut scenarios below.
fn wplog_array(rt: &mut zns_sim::Runtime) -> (Vec<zns_device::Controller>, zns_raid::RaidArray) {
    let opts = zns_raid::RaidOptions {
        policy: Policy::WpLog,
        ..zns_raid::RaidOptions::default()
    };
    create(rt, &small_zn540(), 3, opts).unwrap()
}

fn power_cycle(ctrls: &[zns_device::Controller]) {
    for c in ctrls {
        c.power_cut();
    }
    for c in ctrls {
        c.power_on();
    }
}

/// Reopens the array and checks zone 0: write pointer `wp` and `data` below it.
fn reopen_and_check(
    rt: &mut zns_sim::Runtime,
    ctrls: &[zns_device::Controller],
    data: &[u8],
    wp: u64,
) {
    use zns_core::{ReportFilter, ZonedDevice};
    let h = rt.handle();
    let opts = zns_raid::RaidOptions::default();
    let a = rt
        .block_on(zns_raid::RaidArray::open(&h, devs(ctrls), opts))
        .unwrap();
    let d = rt
        .block_on(a.report_zones(0, ReportFilter::All, 1))
        .unwrap()[0];
    assert_eq!(d.write_pointer - d.start_lba, wp, "zone 0: {d:?}");
    let mut buf = vec![0u8; data.len()];
    rt.block_on(a.read(0, &mut buf)).unwrap();
    assert!(buf == data, "zone 0 data differs after recovery");
}

/// A zone reset while the previous generation's first-chunk WP-log entry is
/// still being written, then a 1-block FUA write, then a power cut: the FUA
/// write was acknowledged, so recovery must find it (the old generation's
/// entry once marked the new generation as logged up to 16, and the FUA
/// write's own entry was skipped).
#[test]
fn fua_block_after_a_racing_reset_survives_a_power_cut() {
    use zns_core::{IoFlags, ZoneAction, ZoneSendCmd, ZonedDevice};
    let mut rt = zns_sim::Runtime::new(0);
    let (ctrls, a) = wplog_array(&mut rt);
    let b = a.config().lba_bytes as usize;
    let chunk: Vec<u8> = (0..16).flat_map(|i| block_data(i, 1, b)).collect();
    rt.block_on(a.write(0, &chunk, IoFlags::NONE)).unwrap();
    let reset = ZoneSendCmd {
        action: ZoneAction::Reset,
        slba: 0,
        select_all: false,
    };
    rt.block_on(a.zone_send(reset)).unwrap();
    let one = block_data(0, 2, b);
    rt.block_on(a.write(0, &one, IoFlags::FUA)).unwrap();
    drop(a);
    power_cycle(&ctrls);
    reopen_and_check(&mut rt, &ctrls, &one, 1);
}

/// Recovery at a progress inside the zone's first chunk, then a flush once the
/// first chunk is complete, then a power cut that also takes the member of
/// chunk 0: its half-chunk write pointer was the only encoding of the first
/// chunk, so the flush must have logged it.
#[test]
fn first_chunk_completed_after_recovery_survives_a_power_cut_and_a_failed_member() {
    use zns_core::{IoFlags, ZonedDevice};
    let mut rt = zns_sim::Runtime::new(0);
    let (ctrls, a) = wplog_array(&mut rt);
    let b = a.config().lba_bytes as usize;
    let data: Vec<u8> = (0..16).flat_map(|i| block_data(i, 1, b)).collect();
    rt.block_on(a.write(0, &data[..b], IoFlags::FUA)).unwrap();
    drop(a);
    power_cycle(&ctrls);
    let h = rt.handle();
    let a = rt
        .block_on(zns_raid::RaidArray::open(
            &h,
            devs(&ctrls),
            zns_raid::RaidOptions::default(),
        ))
        .unwrap();
    rt.block_on(a.write(1, &data[b..], IoFlags::NONE)).unwrap();
    rt.block_on(a.quiesce());
    rt.block_on(a.flush()).unwrap();
    let chunk0 = a.layout().data_dev(0, 0, 0) as usize;
    drop(a);
    power_cycle(&ctrls);
    ctrls[chunk0].fail();
    reopen_and_check(&mut rt, &ctrls, &data, 16);
}
