//! Any job the parser accepts runs to a result or a clear error: random
//! combinations of the options (zoned and conventional namespaces, zbd rules,
//! zone ops, ZRWA, rate, flow, several groups) never panic, never hang, and
//! the same seed gives the same JSON.

use proptest::prelude::*;
use zns_bench::job::parse_job_file;
use zns_bench::run::run_jobs;

fn pick<'a>(choices: &[&'a str], i: usize) -> &'a str {
    choices[i % choices.len()]
}

fn job_section(name: &str, k: &[usize]) -> String {
    let mut s = format!("[{name}]\n");
    let mut add = |opt: &str| {
        if !opt.is_empty() {
            s.push_str(opt);
            s.push('\n');
        }
    };
    add(pick(
        &[
            "rw=read",
            "rw=write",
            "rw=randread",
            "rw=randwrite",
            "rw=randrw",
            "rw=rw",
        ],
        k[0],
    ));
    add(pick(
        &["bs=4k", "bs=8k", "bs=16k", "bs=64k", "bs=128k"],
        k[1],
    ));
    add(pick(&["iodepth=1", "iodepth=2", "iodepth=8"], k[2]));
    add(pick(
        &[
            "ioengine=psync",
            "ioengine=io_uring",
            "ioengine=spdk",
            "ioengine=libaio",
        ],
        k[3],
    ));
    add(pick(
        &["", "numjobs=2", "numjobs=3\noffset_increment=2z"],
        k[4],
    ));
    add(pick(
        &["", "size=1z", "size=3z", "size=25%", "size=64k"],
        k[5],
    ));
    add(pick(&["", "offset=2z", "offset=50%", "offset=4k"], k[6]));
    add(pick(
        &["zonemode=zbd", "zonemode=none", "zonemode=zbd"],
        k[7],
    ));
    add(pick(
        &[
            "",
            "zone_append=1",
            "zrwa=1",
            "zrwa=1\nzrwa_flush_bytes=16k",
            "zone_write_limit=8k",
            "job_max_open_zones=2",
            "max_open_zones=3",
            "zone_reset_threshold=0.1\nzone_reset_frequency=0.2",
        ],
        k[8],
    ));
    add(pick(
        &[
            "",
            "zone_op=reset",
            "zone_op=finish\nzone_fill=50%",
            "zone_op=open",
            "zone_op=close\nzone_fill=100%-4k",
            "precondition=fill",
            "precondition=cold\nzone_fill=25%",
        ],
        k[9],
    ));
    add(pick(
        &[
            "",
            "rate_iops=2000",
            "rate=10m,5m",
            "flow=2",
            "thinktime=10us",
            "startdelay=1ms",
        ],
        k[10],
    ));
    add(pick(
        &[
            "time_based\nruntime=3ms",
            "number_ios=150",
            "io_size=256k",
            "runtime=2ms\nramp_time=1ms",
        ],
        k[11],
    ));
    add(pick(
        &[
            "",
            "host_stack=io-uring-mq-deadline",
            "host_stack=spdk",
            "group_reporting=1",
            "stonewall",
        ],
        k[12],
    ));
    add(pick(
        &[
            "direct=1",
            "direct=1\nfilename=zn540-cns\nnsid=1",
            "direct=1",
        ],
        k[13],
    ));
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn accepted_jobs_run_or_fail_cleanly(
        a in proptest::collection::vec(0usize..64, 14),
        b in proptest::collection::vec(0usize..64, 14),
        two in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let mut text = String::from("[global]\nfilename=tiny\n");
        text.push_str(&job_section("a", &a));
        if two {
            text.push_str(&job_section("b", &b));
        }
        let Ok(specs) = parse_job_file(&text, "p.fio") else {
            return Ok(());
        };
        let first = run_jobs(&specs, seed);
        let again = run_jobs(&specs, seed);
        match (first, again) {
            (Ok(x), Ok(y)) => prop_assert_eq!(x.to_fio_json(), y.to_fio_json()),
            (Err(x), Err(y)) => {
                let msg = x.to_string();
                prop_assert!(!msg.is_empty());
                prop_assert_eq!(msg, y.to_string());
            }
            (x, y) => prop_assert!(false, "same seed, different outcome: {:?} vs {:?}", x.is_ok(), y.is_ok()),
        }
    }
}
