//! fio options research jobs use (the 2026-11-29 audit's U8), end to end
//! through the runner: `random_distribution`, `fsync`/`end_fsync`,
//! `rw=trimwrite`, `exitall`.

use std::collections::BTreeMap;

use zns_bench::job::parse_args;
use zns_bench::run::run_jobs;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn run(s: &str) -> zns_bench::run::RunReport {
    let specs = parse_args(args(s)).unwrap_or_else(|e| panic!("{s}: {e}"));
    run_jobs(&specs, 3).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// How many of the job's reads went to each 4 KiB block (from its I/O log).
fn reads_per_block(s: &str) -> BTreeMap<u64, u64> {
    let rep = run(&format!("{s} --write_lat_log=t --log_offset=1"));
    let mut blocks = BTreeMap::new();
    for io in &rep.io_logs[0].ios {
        *blocks.entry(io.offset_bytes / 4096).or_insert(0) += 1;
    }
    blocks
}

/// The share of the I/Os on the busiest `fraction` of `n` blocks.
fn hot_share(blocks: &BTreeMap<u64, u64>, n: usize, fraction: f64) -> f64 {
    let mut counts: Vec<u64> = blocks.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let k = (n as f64 * fraction) as usize;
    let total: u64 = counts.iter().sum();
    counts.iter().take(k).sum::<u64>() as f64 / total as f64
}

#[test]
fn random_distribution_skews_where_random_reads_fall() {
    // 4096 blocks of 4 KiB, 20 000 reads
    let base = "--name=r --filename=sn540-mini --rw=randread --bs=4k --size=16m --number_ios=20000";
    let uniform = reads_per_block(base);
    let pareto = reads_per_block(&format!("{base} --random_distribution=pareto:0.2"));
    let zipf = reads_per_block(&format!("{base} --random_distribution=zipf:1.1"));
    // the random map: every block once per pass
    assert!(hot_share(&uniform, 4096, 0.2) < 0.3);
    let p = hot_share(&pareto, 4096, 0.2);
    assert!(
        (0.75..0.85).contains(&p),
        "pareto:0.2 put {p} of the reads on 20 % of the blocks"
    );
    assert!(hot_share(&zipf, 4096, 0.01) > 0.4);
    // hot blocks spread over the range, not packed at its start
    let hottest = zipf
        .iter()
        .max_by_key(|(_, &c)| c)
        .map(|(&b, _)| b)
        .unwrap();
    let centered = reads_per_block(&format!("{base} --random_distribution=zipf:1.1:0.5"));
    let hottest_centered = centered
        .iter()
        .max_by_key(|(_, &c)| c)
        .map(|(&b, _)| b)
        .unwrap();
    assert_eq!(hottest_centered, 2048);
    assert_ne!(hottest, 0);
    // same seed, same blocks
    assert_eq!(
        zipf,
        reads_per_block(&format!("{base} --random_distribution=zipf:1.1"))
    );
}

#[test]
fn random_distribution_on_zbd_reads_stays_below_write_pointers() {
    // tiny: zones of 1 MiB with 768 KiB capacity; the writer fills zones 0
    // and 1, the reader's range is zones 0..4
    let rep = run(
        "--name=w --filename=tiny --zonemode=zbd --direct=1 --rw=write --bs=64k --size=2z \
         --name=r --stonewall --filename=tiny --zonemode=zbd --direct=1 --rw=randread --bs=4k --size=4z \
         --number_ios=2000 --random_distribution=zipf:1.2 --write_lat_log=r --log_offset=1",
    );
    assert_eq!(rep.jobs[1].read.total_ios, 2000);
    assert!(rep.jobs[1].error.is_none());
    let log = rep
        .io_logs
        .iter()
        .find(|l| l.number == 2)
        .expect("the reader's log");
    let mut zones = [0u64; 4];
    for io in &log.ios {
        let (zone, in_zone) = (io.offset_bytes >> 20, io.offset_bytes & ((1 << 20) - 1));
        assert!(
            zone < 2 && in_zone < 768 << 10,
            "read at {} past what was written",
            io.offset_bytes
        );
        zones[zone as usize] += 1;
    }
    // both written zones are read (draws in empty zones move to one with data)
    assert!(zones[0] > 0 && zones[1] > 0, "{zones:?}");
    // random writes on zbd go to write pointers: a distribution is refused
    let specs = parse_args(args(
        "--name=w --filename=tiny --zonemode=zbd --direct=1 --rw=randwrite --size=1z --random_distribution=zipf:1.2",
    ))
    .unwrap();
    let err = run_jobs(&specs, 1).unwrap_err().to_string();
    assert!(
        err.contains("random_distribution=zipf:1.2") && err.contains("write pointers"),
        "{err}"
    );
    for bad in ["zipf", "pareto:2", "normal:0", "zoned:50/50:10/10", "gauss"] {
        let e = parse_args(args(&format!(
            "--name=r --filename=tiny --random_distribution={bad}"
        )));
        assert!(e.is_err(), "{bad} accepted");
    }
}

#[test]
fn fsync_flushes_every_n_writes_and_end_fsync_once_more() {
    let rep = run("--name=w --filename=sn540-mini --rw=write --bs=4k --size=4m --iodepth=8 --ioengine=libaio --fsync=32 --end_fsync=1");
    let j = &rep.jobs[0];
    assert_eq!(j.write.total_ios, 1024);
    assert_eq!(j.sync.total_ios, 1024 / 32 + 1);
    let json = rep.to_fio_json();
    assert_eq!(json["jobs"][0]["sync"]["total_ios"], 33);
    assert!(json["jobs"][0]["sync"]["lat_ns"]["mean"].as_f64().unwrap() > 0.0);
    // no flushes unless asked
    let plain = run("--name=w --filename=sn540-mini --rw=write --bs=4k --size=4m");
    assert_eq!(plain.jobs[0].sync.total_ios, 0);
    // fdatasync is the same command on a block device
    let fdatasync =
        run("--name=w --filename=sn540-mini --rw=write --bs=4k --size=4m --fdatasync=512");
    assert_eq!(fdatasync.jobs[0].sync.total_ios, 2);
}

#[test]
fn trimwrite_deallocates_then_writes_every_block() {
    let rep = run("--name=tw --filename=sn540-mini --rw=trimwrite --bs=64k --size=4m");
    let j = &rep.jobs[0];
    assert_eq!(j.trim.total_ios, 64);
    assert_eq!(j.write.total_ios, 64);
    assert_eq!(j.write.io_bytes, 4 << 20);
    let specs = parse_args(args("--name=tw --filename=zn540 --rw=trimwrite --size=1z")).unwrap();
    let err = run_jobs(&specs, 1).unwrap_err().to_string();
    assert!(err.contains("rw=trimwrite"), "{err}");
}

#[test]
fn exitall_stops_the_rest_of_the_group_when_one_job_finishes() {
    let both = "--name=short --filename=sn540-mini --rw=randread --bs=4k --size=16m --number_ios=100 \
                --name=long --filename=sn540-mini --rw=randread --bs=4k --size=16m --number_ios=100000";
    let free = run(both);
    assert_eq!(free.jobs[1].read.total_ios, 100_000);
    let stopped = run(&format!("{both} --exitall=1"));
    // (exitall on the second job only: the first job finishing stops nothing)
    assert_eq!(stopped.jobs[1].read.total_ios, 100_000);
    let global = "--exitall=1 ".to_string() + both;
    let stopped = run(&global);
    assert_eq!(stopped.jobs[0].read.total_ios, 100);
    let long = stopped.jobs[1].read.total_ios;
    assert!(long < 1000, "the long job went on for {long} reads");
}

#[test]
fn notes_say_when_a_size_is_clamped_or_a_run_is_very_long_before_it_runs() {
    let rep = run(
        "--name=w --filename=zn540 --zonemode=zbd --direct=1 --rw=write --size=1P --number_ios=10",
    );
    assert_eq!(rep.notes.len(), 1, "{:?}", rep.notes);
    assert!(
        rep.notes[0].contains("size=1P") && rep.notes[0].contains("clamps"),
        "{:?}",
        rep.notes
    );
    assert!(
        run("--name=w --filename=zn540 --zonemode=zbd --direct=1 --rw=write --size=1z")
            .notes
            .is_empty()
    );
    // 2.7e11 I/Os: said in the first progress report, before any I/O (the
    // run is stopped at once)
    let specs = parse_args(args(
        "--name=r --filename=zn540 --rw=read --bs=4k --io_size=1P",
    ))
    .unwrap();
    let mut first: Option<zns_bench::run::Progress> = None;
    let rep = zns_bench::run::run_jobs_interruptible(
        &specs,
        1,
        &mut |p| {
            first.get_or_insert_with(|| p.clone());
        },
        &|| true,
    )
    .unwrap();
    let first = first.expect("a progress report");
    assert_eq!(first.virtual_ns, 0);
    assert_eq!(first.notes, rep.notes);
    assert!(rep.notes[0].contains("2.7e11 I/Os"), "{:?}", rep.notes);
}

#[test]
fn notes_are_in_the_json_document_only_when_there_are_some() {
    let clamped = run(
        "--name=w --filename=zn540 --zonemode=zbd --direct=1 --rw=write --size=1P --number_ios=10",
    );
    let notes = &clamped.to_fio_json()["znskit"]["notes"];
    assert!(notes[0].as_str().unwrap().contains("size=1P"), "{notes}");
    let plain = run("--name=w --filename=zn540 --zonemode=zbd --direct=1 --rw=write --size=1z");
    assert!(plain.to_fio_json()["znskit"].get("notes").is_none());
}

#[test]
fn zbd_trims_reset_whole_zones_as_fio_does() {
    // tiny: 16 zones of 1 MiB; write 2 zones, trim the first 4, read
    let zbd = "--filename=tiny --zonemode=zbd --direct=1";
    let rep = run(&format!(
        "--name=w {zbd} --rw=write --bs=64k --size=2z --name=t --stonewall {zbd} --rw=trim --size=4z"
    ));
    let t = &rep.jobs[1];
    assert_eq!(t.trim.total_ios, 4);
    assert_eq!(t.trim.io_bytes, 4 << 20);
    assert!(t.trim.mean() > 0.0);
    // nothing is left to read: the zones are empty
    let specs = parse_args(args(&format!(
        "--name=w {zbd} --rw=write --bs=64k --size=2z --name=t --stonewall {zbd} --rw=randtrim --size=2z --number_ios=8 \
         --name=r --stonewall {zbd} --rw=read --size=2z"
    )))
    .unwrap();
    let err = run_jobs(&specs, 1).unwrap_err().to_string();
    assert!(err.contains("nothing is written"), "{err}");
    // without zbd a zoned namespace has no trim
    let specs = parse_args(args("--name=t --filename=tiny --rw=trim --size=1z")).unwrap();
    let err = run_jobs(&specs, 1).unwrap_err().to_string();
    assert!(err.contains("zonemode=zbd"), "{err}");
}
