//! Job-description parser: the fio ZNS example jobs, command line vs INI,
//! every error kind, and no panics on garbage.

use std::time::Duration;

use proptest::prelude::*;
use zns_bench::job::*;

const SEQWRITE: &str = "\
; fio ZNS examples: sequential writes, 14 jobs
[global]
ioengine=psync
direct=1
filename=/dev/nvmeXnX
rw=write
bs=64k
group_reporting
zonemode=zbd

[seqwrite]
offset_increment=8z
size=8z
numjobs=14
";

const WRITEPREPARE: &str = "\
[global]
ioengine=psync
direct=1
filename=/dev/nvmeXnX
rw=write
bs=128k
group_reporting
zonemode=zbd

[writeprepare]
offset_increment=10z
size=10z
numjobs=14
";

const SEQREAD: &str = "\
[global]
ioengine=psync
direct=1
filename=/dev/nvmeXnX
rw=read
offset_increment=4z
size=4z
group_reporting
zonemode=zbd
bs=128k

[seqread]
numjobs=32
";

const RANDREAD: &str = "\
# random read, QD32
[global]
ioengine=io_uring
direct=1
filename=/dev/nvmeXnX
rw=randread
size=128z
zonemode=zbd
bs=128k

[randread]
iodepth=32
";

// zbd-read-while-write.fio, verbatim from the examples page.
const READ_WHILE_WRITE: &str = "\
[global]
bs=32k
direct=1
zonemode=zbd
name=readwhilewriting
time_based
runtime=30
numjobs=1

[write]
ioengine=psync
rw=write
iodepth=1
offset=256z
offset_increment=8z
size=8z
flow=-3

[randread]
ioengine=io_uring
rw=randread
iodepth=32
size=32z
offset=0
flow=7
";

fn one(text: &str) -> JobSpec {
    let jobs = parse_job_file(text, "t.fio").expect("parses");
    assert_eq!(jobs.len(), 1);
    jobs.into_iter().next().unwrap()
}

fn err_file(text: &str) -> JobError {
    parse_job_file(text, "bad.fio").expect_err("must fail")
}

fn err_args(args: &[&str]) -> JobError {
    parse_args(args).expect_err("must fail")
}

#[test]
fn seqwrite_14_jobs() {
    let j = one(SEQWRITE);
    assert_eq!(j.name, "seqwrite");
    assert_eq!(j.rw, Rw::Write);
    assert_eq!(j.bs, 64 * 1024);
    assert_eq!(j.numjobs, 14);
    assert_eq!(j.size, Some(SizeSpec::Zones(8)));
    assert_eq!(j.offset_increment, SizeSpec::Zones(8));
    assert_eq!(j.offset, SizeSpec::Bytes(0));
    assert_eq!(j.zonemode, ZoneMode::Zbd);
    assert_eq!(j.ioengine, IoEngine::Psync);
    assert_eq!(j.effective_iodepth(), 1);
    assert!(j.direct && j.group_reporting);
    assert_eq!(j.filename.as_deref(), Some("/dev/nvmeXnX"));
    assert_eq!(j.group, 0);
    // defaults
    assert_eq!(j.iodepth, 1);
    assert!(!j.time_based);
    assert_eq!(j.runtime, None);
    assert!(j.clat_percentiles && !j.lat_percentiles && j.randrepeat);
    assert_eq!(j.percentile_list.len(), 17);
    assert_eq!(j.percentile_list[12], 99.0);
    assert!(!j.zone_append);
    assert_eq!(j.precondition, Precondition::None);
}

#[test]
fn writeprepare() {
    let j = one(WRITEPREPARE);
    assert_eq!(j.name, "writeprepare");
    assert_eq!((j.rw, j.bs, j.numjobs), (Rw::Write, 128 * 1024, 14));
    assert_eq!(j.size, Some(SizeSpec::Zones(10)));
    assert_eq!(j.offset_increment, SizeSpec::Zones(10));
}

#[test]
fn seqread_32_jobs() {
    let j = one(SEQREAD);
    assert_eq!((j.rw, j.bs, j.numjobs), (Rw::Read, 128 * 1024, 32));
    assert_eq!(j.size, Some(SizeSpec::Zones(4)));
    assert_eq!(j.offset_increment, SizeSpec::Zones(4));
}

#[test]
fn randread_qd32() {
    let j = one(RANDREAD);
    assert_eq!(j.rw, Rw::RandRead);
    assert!(j.rw.is_random());
    assert_eq!(j.ioengine, IoEngine::IoUring);
    assert_eq!(j.iodepth, 32);
    assert_eq!(j.effective_iodepth(), 32);
    assert_eq!(j.size, Some(SizeSpec::Zones(128)));
}

#[test]
fn read_while_write_with_flow() {
    let jobs = parse_job_file(READ_WHILE_WRITE, "zbd-read-while-write.fio").unwrap();
    assert_eq!(jobs.len(), 2);
    let (w, r) = (&jobs[0], &jobs[1]);
    // section names, not the global name=, as fio prints them
    assert_eq!(w.name, "write");
    assert_eq!(r.name, "randread");
    for j in &jobs {
        assert_eq!(j.bs, 32 * 1024);
        assert!(j.direct && j.time_based);
        assert_eq!(j.zonemode, ZoneMode::Zbd);
        assert_eq!(j.runtime, Some(Duration::from_secs(30)));
        assert_eq!(j.numjobs, 1);
        assert_eq!(j.group, 0);
    }
    assert_eq!(
        (w.ioengine, w.rw, w.iodepth),
        (IoEngine::Psync, Rw::Write, 1)
    );
    assert_eq!(w.offset, SizeSpec::Zones(256));
    assert_eq!(w.offset_increment, SizeSpec::Zones(8));
    assert_eq!(w.size, Some(SizeSpec::Zones(8)));
    assert_eq!(w.flow, -3);
    assert_eq!(
        (r.ioengine, r.rw, r.iodepth),
        (IoEngine::IoUring, Rw::RandRead, 32)
    );
    assert_eq!(r.size, Some(SizeSpec::Zones(32)));
    assert_eq!(r.offset, SizeSpec::Bytes(0));
    assert_eq!(r.flow, 7);
}

#[test]
fn command_line_equals_ini() {
    // exactly the command lines of the examples page
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "--ioengine=psync",
                "--direct=1",
                "--filename=/dev/nvmeXnX",
                "--rw=write",
                "--bs=64k",
                "--group_reporting",
                "--zonemode=zbd",
                "--name=seqwrite",
                "--offset_increment=8z",
                "--size=8z",
                "--numjobs=14",
            ],
            SEQWRITE,
        ),
        (
            &[
                "--ioengine=psync",
                "--direct=1",
                "--filename=/dev/nvmeXnX",
                "--rw=write",
                "--bs=128k",
                "--group_reporting",
                "--zonemode=zbd",
                "--name=writeprepare",
                "--offset_increment=10z",
                "--size=10z",
                "--numjobs=14",
            ],
            WRITEPREPARE,
        ),
        (
            &[
                "--ioengine=psync",
                "--direct=1",
                "--filename=/dev/nvmeXnX",
                "--rw=read",
                "--offset_increment=4z",
                "--size=4z",
                "--group_reporting",
                "--zonemode=zbd",
                "--bs=128k",
                "--name=seqread",
                "--numjobs=32",
            ],
            SEQREAD,
        ),
        (
            &[
                "--ioengine=io_uring",
                "--direct=1",
                "--filename=/dev/nvmeXnX",
                "--rw=randread",
                "--size=128z",
                "--zonemode=zbd",
                "--bs=128k",
                "--name=randread",
                "--iodepth=32",
            ],
            RANDREAD,
        ),
    ];
    for (args, ini) in cases {
        assert_eq!(
            parse_args(args).unwrap(),
            parse_job_file(ini, "x.fio").unwrap()
        );
    }
    // multi-job command line equals the two-section job file
    let args = [
        "--bs=32k",
        "--direct=1",
        "--zonemode=zbd",
        "--time_based",
        "--runtime=30",
        "--numjobs=1",
        "--name=write",
        "--ioengine=psync",
        "--rw=write",
        "--iodepth=1",
        "--offset=256z",
        "--offset_increment=8z",
        "--size=8z",
        "--flow=-3",
        "--name=randread",
        "--ioengine=io_uring",
        "--rw=randread",
        "--iodepth=32",
        "--size=32z",
        "--offset=0",
        "--flow=7",
    ];
    // the same jobs; only the record of how options were spelled differs
    let strip = |v: Vec<zns_bench::job::JobSpec>| {
        v.into_iter()
            .map(|mut j| {
                j.options.clear();
                j
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        strip(parse_args(args).unwrap()),
        strip(parse_job_file(READ_WHILE_WRITE, "x.fio").unwrap())
    );
}

#[test]
fn sizes_follow_fio_kb_base_1024() {
    assert_eq!(parse_size("4096"), Some(SizeSpec::Bytes(4096)));
    assert_eq!(parse_size("4k"), Some(SizeSpec::Bytes(4096)));
    assert_eq!(parse_size("4K"), Some(SizeSpec::Bytes(4096)));
    assert_eq!(parse_size("4KB"), Some(SizeSpec::Bytes(4096)));
    // fio's default kb_base=1024 keeps the IEC-looking suffixes decimal
    assert_eq!(parse_size("4KiB"), Some(SizeSpec::Bytes(4000)));
    assert_eq!(parse_size("1m"), Some(SizeSpec::Bytes(1 << 20)));
    assert_eq!(parse_size("1MiB"), Some(SizeSpec::Bytes(1_000_000)));
    assert_eq!(parse_size("2g"), Some(SizeSpec::Bytes(2 << 30)));
    assert_eq!(parse_size("1t"), Some(SizeSpec::Bytes(1 << 40)));
    assert_eq!(parse_size("0x1000"), Some(SizeSpec::Bytes(4096)));
    assert_eq!(parse_size("50%"), Some(SizeSpec::Percent(50.0)));
    assert_eq!(parse_size("10z"), Some(SizeSpec::Zones(10)));
    assert_eq!(parse_size("10q"), None);
    assert_eq!(parse_size("k"), None);
    assert_eq!(parse_size("99999999999t"), None); // overflow
    assert_eq!(SizeSpec::Zones(10).resolve(0, 1 << 30, 1), 10 << 30);
    assert_eq!(SizeSpec::Percent(50.0).resolve(1000, 0, 64), 448);
}

#[test]
fn times_and_rates() {
    assert_eq!(parse_time("30", 1_000_000), Some(Duration::from_secs(30)));
    assert_eq!(
        parse_time("500ms", 1_000_000),
        Some(Duration::from_millis(500))
    );
    assert_eq!(
        parse_time("250us", 1_000_000),
        Some(Duration::from_micros(250))
    );
    assert_eq!(parse_time("2m", 1_000_000), Some(Duration::from_secs(120)));
    assert_eq!(parse_time("1h", 1_000_000), Some(Duration::from_secs(3600)));
    assert_eq!(parse_time("3x", 1_000_000), None);
    let j = one("[a]\nrate=100m\nrate_iops=,5000\nramp_time=5s\nruntime=1m\n");
    assert_eq!(
        j.rate,
        Some(RateSpec {
            read: Some(100 << 20),
            write: Some(100 << 20)
        })
    );
    assert_eq!(
        j.rate_iops,
        Some(RateSpec {
            read: None,
            write: Some(5000)
        })
    );
    assert_eq!(j.ramp_time, Duration::from_secs(5));
    assert_eq!(j.runtime, Some(Duration::from_secs(60)));
}

#[test]
fn global_inheritance_comments_stonewall_and_extensions() {
    let text = "\
; comment
# another
[global]
bs=4k   ; trailing comment
rw=randrw
rwmixwrite=30

[a]
iodepth=4
[global]
bs=8k
[b]
stonewall
zone_append=1
host_stack=io-uring-mq-deadline
zone_op=finish
precondition=cold
readwrite=rw
[c]
name=renamed
wait_for_previous=1
percentile_list=50:99.9
";
    let jobs = parse_job_file(text, "t.fio").unwrap();
    assert_eq!(jobs.len(), 3);
    assert_eq!(
        (jobs[0].bs, jobs[0].iodepth, jobs[0].rwmixread),
        (4096, 4, 70)
    );
    assert_eq!(jobs[0].rw, Rw::RandRw);
    // the second [global] only affects later jobs
    assert_eq!(jobs[1].bs, 8192);
    assert_eq!(jobs[1].rw, Rw::ReadWrite);
    assert_eq!(jobs[1].iodepth, 1);
    assert!(jobs[1].zone_append);
    assert_eq!(jobs[1].host_stack, Some(HostStack::IoUringMqDeadline));
    assert_eq!(jobs[1].zone_op, Some(ZoneOp::Finish));
    assert_eq!(jobs[1].precondition, Precondition::Cold);
    assert_eq!(jobs.iter().map(|j| j.group).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(jobs[2].name, "renamed");
    assert_eq!(jobs[2].percentile_list, [50.0, 99.9]);
}

#[test]
fn option_table_is_consistent() {
    let mut names = std::collections::HashSet::new();
    for d in OPTIONS {
        assert!(names.insert(d.name), "duplicate {}", d.name);
        for a in d.aliases {
            assert!(names.insert(a), "duplicate alias {a}");
        }
        assert!(!d.help.is_empty());
        if d.extension {
            assert!(
                d.help.contains("znskit"),
                "{} help must say it is an extension",
                d.name
            );
        }
        // every default parses through the same path as user input
        if let Some(def) = d.default {
            let text = format!("[j]\n{}={}\n", d.name, def);
            parse_job_file(&text, "t.fio").unwrap_or_else(|e| panic!("{}: {e}", d.name));
        }
    }
    for required in [
        "name",
        "filename",
        "rw",
        "rwmixread",
        "rwmixwrite",
        "bs",
        "iodepth",
        "numjobs",
        "size",
        "offset",
        "offset_increment",
        "zonemode",
        "max_open_zones",
        "job_max_open_zones",
        "zone_reset_threshold",
        "zone_reset_frequency",
        "ioengine",
        "direct",
        "time_based",
        "runtime",
        "ramp_time",
        "flow",
        "rate",
        "rate_iops",
        "group_reporting",
        "percentile_list",
        "lat_percentiles",
        "clat_percentiles",
        "randrepeat",
        "randseed",
        "norandommap",
        "stonewall",
        "thread",
        "zone_append",
        "host_stack",
        "zone_op",
        "precondition",
    ] {
        assert!(find_option(required).is_some(), "{required} missing");
    }
}

#[test]
fn unknown_option_suggests() {
    let e = err_file("[a]\niodepht=4\n");
    assert!(matches!(
        e,
        JobError::UnknownOption {
            suggestion: Some("iodepth"),
            ..
        }
    ));
    let msg = e.to_string();
    assert!(
        msg.contains("bad.fio:2") && msg.contains("`iodepht`") && msg.contains("`iodepth`"),
        "{msg}"
    );
    let e = err_args(&["--name=a", "--zonemod=zbd"]);
    assert!(e.to_string().contains("argument 1 `--zonemod=zbd`"), "{e}");
    assert!(e.to_string().contains("did you mean `zonemode`"), "{e}");
    let e = err_args(&["--name=a", "--xyzzyplugh=1"]);
    assert!(
        matches!(
            e,
            JobError::UnknownOption {
                suggestion: None,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn bad_values_say_what_was_expected() {
    let e = err_file("[a]\nbs=4q\n");
    assert!(matches!(e, JobError::BadValue { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("`bs`") && msg.contains("`4q`") && msg.contains("expected"),
        "{msg}"
    );
    let msg = err_file("[a]\nrw=sideways\n").to_string();
    assert!(
        msg.contains("`rw`") && msg.contains("one of read, write"),
        "{msg}"
    );
    let msg = err_file("[a]\nzonemode=strided\n").to_string();
    assert!(
        msg.contains("`zonemode`") && msg.contains("none, zbd"),
        "{msg}"
    );
    let msg = err_file("[a]\ndirect=maybe\n").to_string();
    assert!(msg.contains("`direct`") && msg.contains("boolean"), "{msg}");
    let msg = err_file("[a]\nruntime=10 parsecs\n").to_string();
    assert!(
        msg.contains("`runtime`") && msg.contains("duration"),
        "{msg}"
    );
    let msg = err_file("[a]\niodepth\n").to_string();
    assert!(msg.contains("`iodepth`"), "{msg}");
    let msg = err_args(&["--name=a", "--size=lots"]).to_string();
    assert!(
        msg.contains("`size`") && msg.contains("zones (8z)"),
        "{msg}"
    );
}

#[test]
fn out_of_range_values() {
    for (text, opt) in [
        ("[a]\niodepth=0\n", "iodepth"),
        ("[a]\nrwmixread=101\n", "rwmixread"),
        ("[a]\nbs=1000\n", "bs"),
        ("[a]\nbs=0\n", "bs"),
        ("[a]\nsize=150%\n", "size"),
        ("[a]\nnumjobs=0\n", "numjobs"),
        ("[a]\nzone_reset_threshold=1.5\n", "zone_reset_threshold"),
        ("[a]\npercentile_list=50:101\n", "percentile_list"),
    ] {
        let e = err_file(text);
        assert!(matches!(e, JobError::OutOfRange { .. }), "{text}: {e:?}");
        assert!(e.to_string().contains(&format!("`{opt}`")), "{e}");
    }
    assert!(err_file("[a]\nbs=1000\n")
        .to_string()
        .contains("multiple of 512"));
}

#[test]
fn structural_errors() {
    let e = err_file("[a]\n[b]\n[a]\n");
    assert!(matches!(e, JobError::DuplicateSection { .. }));
    assert!(e.to_string().contains("bad.fio:3") && e.to_string().contains("`a`"));
    let e = err_args(&["--name=a", "--name=a"]);
    assert!(matches!(e, JobError::DuplicateSection { .. }), "{e}");

    let e = err_file("bs=4k\n[a]\n");
    assert!(matches!(e, JobError::OutsideSection { .. }));
    assert!(e.to_string().contains("bad.fio:1") && e.to_string().contains("`bs`"));

    assert!(matches!(err_file("[a\n"), JobError::Syntax { .. }));
    assert!(matches!(err_args(&["job.fio"]), JobError::Syntax { .. }));
    assert!(matches!(err_file("[global]\nbs=4k\n"), JobError::NoJobs(_)));
    assert!(matches!(err_args(&["--bs=4k"]), JobError::NoJobs(None)));

    let e = err_file("[a]\nzonemode=zbd\nrw=write\n");
    assert!(matches!(e, JobError::Conflict { .. }));
    assert!(e.to_string().contains("direct=1"), "{e}");
    let e = err_file("[a]\nrwmixread=60\nrwmixwrite=30\n");
    assert!(e.to_string().contains("rwmixread=60"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn garbage_text_never_panics(s in "\\PC*") {
        let _ = parse_job_file(&s, "fuzz.fio");
    }

    #[test]
    fn ini_like_text_never_panics(lines in prop::collection::vec(
        prop_oneof![
            "\\[[a-z]{0,6}\\]?",
            "(bs|size|offset|rw|iodepth|rate|runtime|percentile_list|flow|zonemode|bogus)=[-0-9a-zA-Z%:,. ]{0,12}",
            "[;#].{0,10}",
            ".{0,20}",
        ], 0..20)) {
        let _ = parse_job_file(&lines.join("\n"), "fuzz.fio");
    }

    #[test]
    fn random_args_never_panic(args in prop::collection::vec(
        prop_oneof![
            "--(name|bs|size|offset|rw|iodepth|rate|rate_iops|runtime|ramp_time|randseed|zone_reset_frequency|time_based|zone_op)(=[-0-9a-zA-Z%:,.]{0,12})?",
            "--\\PC{0,12}",
            "\\PC{0,12}",
        ], 0..12)) {
        let _ = parse_args(&args);
    }

    #[test]
    fn sizes_round_trip(n in 0u64..(1 << 40)) {
        prop_assert_eq!(parse_size(&n.to_string()), Some(SizeSpec::Bytes(n)));
        prop_assert_eq!(parse_size(&format!("{n}z")), Some(SizeSpec::Zones(n)));
    }
}

#[test]
fn job_file_with_command_line_globals() {
    // `fio --filename=/dev/nvmeXnX zbd-read-while-write.fio`
    let jobs =
        parse_job_file_with_args(READ_WHILE_WRITE, "rww.fio", &["--filename=zn540"]).unwrap();
    assert!(jobs.iter().all(|j| j.filename.as_deref() == Some("zn540")));
    // the file overrides the command-line defaults
    let jobs = parse_job_file_with_args(READ_WHILE_WRITE, "rww.fio", &["--bs=4k"]).unwrap();
    assert!(jobs.iter().all(|j| j.bs == 32 * 1024));
    let e = parse_job_file_with_args(READ_WHILE_WRITE, "rww.fio", &["--bogus=1"]).unwrap_err();
    assert!(e.to_string().contains("`bogus`"), "{e}");
}

#[test]
fn help_lists_every_option() {
    let h = option_help();
    assert_eq!(h.lines().count(), OPTIONS.len());
    assert!(h.contains("host_stack") && h.contains("[znskit]"));
}

#[test]
fn a_comment_after_a_section_header_is_a_comment_as_in_fio() {
    let j = one("[w] ; the writer\nfilename=tiny\nrw=write\n");
    assert_eq!(j.name, "w");
    let j = one("[w]\t# the writer\nfilename=tiny\nrw=write\n");
    assert_eq!(j.name, "w");
}

#[test]
fn runtime_zero_is_no_limit_as_in_fio() {
    let j = one("[w]\nfilename=tiny\nrw=write\nruntime=0\n");
    assert_eq!(j.runtime, None);
    let j = one("[w]\nfilename=tiny\nrw=write\nruntime=2s\n");
    assert_eq!(j.runtime, Some(Duration::from_secs(2)));
}

#[test]
fn user_text_in_errors_is_clipped() {
    let name = "x".repeat(100_000);
    let e = err_file(&format!("[w]\n{name}=1\n")).to_string();
    assert!(e.len() < 300, "{} bytes", e.len());
    assert!(e.contains("100000 bytes"), "{e}");
}

/// fio's block size forms: `bs` per direction, `bsrange`, `bssplit` (with
/// the empty percentages sharing what is left), and their precedence.
#[test]
fn block_sizes_per_direction_ranges_and_splits() {
    let j = one("[j]\nrw=randrw\nbs=4k,64k\n");
    assert_eq!(j.block_sizes.read, BlockSizeDist::Fixed(4096));
    assert_eq!(j.block_sizes.write, BlockSizeDist::Fixed(65536));
    assert_eq!(j.block_sizes.trim, BlockSizeDist::Fixed(65536));
    assert_eq!(j.bs, 4096, "the smallest size aligns random offsets");
    // a trailing comma leaves the later direction at its default
    let j = one("[j]\nbs=8k,32k,\n");
    assert_eq!(j.block_sizes.trim, BlockSizeDist::Fixed(4096));
    // an empty side keeps the default
    let j = one("[j]\nbs=,8k\n");
    assert_eq!(j.block_sizes.read, BlockSizeDist::Fixed(4096));
    assert_eq!(j.block_sizes.write, BlockSizeDist::Fixed(8192));

    let j = one("[j]\nrw=randwrite\nbsrange=4k-16k\n");
    assert_eq!(
        j.block_sizes.write,
        BlockSizeDist::Range {
            min: 4096,
            max: 16384
        }
    );
    assert_eq!(j.bs, 4096);

    let j = one("[j]\nrw=randwrite\nbssplit=4k/50:1k/:32k/\n");
    assert_eq!(
        j.block_sizes.write,
        BlockSizeDist::Split(vec![(1024, 25.0), (4096, 50.0), (32768, 25.0)])
    );
    // per direction, and bssplit over bsrange over bs
    let j = one("[j]\nrw=randrw\nbs=128k\nbsrange=8k-16k\nbssplit=2k/50:4k/50,4k/90:8k/10\n");
    assert_eq!(
        j.block_sizes.read,
        BlockSizeDist::Split(vec![(2048, 50.0), (4096, 50.0)])
    );
    assert_eq!(
        j.block_sizes.write,
        BlockSizeDist::Split(vec![(4096, 90.0), (8192, 10.0)])
    );
    // what a full split leaves unassigned goes to its largest size (fio)
    let j = one("[j]\nbssplit=4k/10:64k/50\n");
    assert_eq!(
        j.block_sizes.read,
        BlockSizeDist::Split(vec![(4096, 10.0), (65536, 90.0)])
    );

    for (text, what) in [
        ("[j]\nbssplit=4k/60:8k/50\n", "more than 100"),
        ("[j]\nbsrange=16k-4k\n", "16384 > 4096"),
        ("[j]\nbs=4k,8k,16k,32k\n", "read[,write[,trim]]"),
        ("[j]\nbssplit=3000/50:4k/50\n", "multiple of 512"),
        ("[j]\nbssplit=4k/0:8k/0\n", "every percentage is 0"),
    ] {
        let e = err_file(text).to_string();
        assert!(e.contains(what), "{text}: {e}");
    }
}

/// The draws follow the weights; a fixed size draws nothing from the RNG.
#[test]
fn block_size_draws_follow_the_split() {
    let split = BlockSizeDist::Split(vec![(4096, 25.0), (65536, 75.0)]);
    let mut state = 12345u64;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    let draws: Vec<u64> = (0..4000).map(|_| split.pick(&mut next)).collect();
    let small = draws.iter().filter(|&&b| b == 4096).count() as f64 / 4000.0;
    assert!((small - 0.25).abs() < 0.03, "{small}");
    let range = BlockSizeDist::Range {
        min: 4096,
        max: 16384,
    };
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        seen.insert(range.pick(&mut next));
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        [4096, 8192, 12288, 16384]
    );
    let mut called = false;
    assert_eq!(
        BlockSizeDist::Fixed(8192).pick(|_| {
            called = true;
            0
        }),
        8192
    );
    assert!(!called);
}
