use zns_bench::job::{parse_args, parse_job_file};
use zns_bench::run::run_jobs;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn qd1_seq_write_latency_matches_zn540() {
    let specs = parse_args(args(
        "--name=w --filename=zn540 --ioengine=psync --direct=1 --rw=write --bs=4k --zonemode=zbd --size=8m",
    ))
    .unwrap();
    let rep = run_jobs(&specs, 1).unwrap();
    let w = &rep.jobs[0].write;
    assert_eq!(w.io_bytes, 8 << 20);
    assert_eq!(w.total_ios, 2048);
    let mean_us = w.mean() / 1000.0;
    assert!((mean_us - 11.36).abs() / 11.36 < 0.10, "mean {mean_us} us");
    let j = rep.to_fio_json();
    assert_eq!(j["jobs"][0]["write"]["total_ios"], 2048);
    assert!(
        j["jobs"][0]["write"]["clat_ns"]["percentile"]["99.000000"]
            .as_u64()
            .unwrap()
            > 0
    );
}

const SEQ14: &str = "[global]\nioengine=psync\ndirect=1\nfilename=zn540\nrw=write\nbs=64k\nzonemode=zbd\noffset_increment=8z\nsize=4m\nnumjobs=14\n";

#[test]
fn fourteen_job_seq_write() {
    let specs = parse_job_file(&format!("{SEQ14}[seqwrite]\n"), "seq14.fio").unwrap();
    let j = run_jobs(&specs, 7).unwrap().to_fio_json();
    let jobs = j["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 14);
    for job in jobs {
        assert!(job["write"]["bw"].as_u64().unwrap() > 0);
        assert_eq!(job["write"]["io_bytes"], 4 << 20);
    }

    let specs = parse_job_file(
        &format!("{SEQ14}group_reporting=1\n[seqwrite]\n"),
        "seq14.fio",
    )
    .unwrap();
    let j = run_jobs(&specs, 7).unwrap().to_fio_json();
    let jobs = j["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["write"]["io_bytes"], 14 * (4 << 20));
    assert!(jobs[0]["write"]["bw"].as_u64().unwrap() > 0);
}

#[test]
fn same_seed_same_json() {
    let text = "[global]\nfilename=zn540\nioengine=io_uring\niodepth=8\nbs=4k\nsize=2m\n[rr]\nrw=randread\n[mix]\nstonewall\nrw=randrw\nrwmixread=70\nzonemode=none\n";
    let specs = parse_job_file(text, "d.fio");
    let specs = match specs {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    // randrw writes with zonemode=none fail on a zoned device: only compare the reads job.
    let specs = &specs[..1];
    let a = run_jobs(specs, 42).unwrap().to_fio_json();
    let b = run_jobs(specs, 42).unwrap().to_fio_json();
    assert_eq!(a, b);
}

#[test]
fn randread_qd32_beats_qd1() {
    let iops = |qd: u32| {
        let specs = parse_args(args(&format!(
            "--name=r --filename=zn540 --ioengine=io_uring --direct=1 --rw=randread --bs=4k --iodepth={qd} --size=4m"
        )))
        .unwrap();
        run_jobs(&specs, 3).unwrap().to_fio_json()["jobs"][0]["read"]["iops"]
            .as_f64()
            .unwrap()
    };
    let (q1, q32) = (iops(1), iops(32));
    assert!(q32 > 2.0 * q1, "qd1 {q1} qd32 {q32}");
}

#[test]
fn zone_resets_when_time_based_wraps() {
    let specs = parse_args(args(
        "--name=w --filename=tiny --ioengine=psync --direct=1 --rw=write --bs=4k --zonemode=zbd --size=2z --time_based --runtime=50ms",
    ))
    .unwrap();
    let rep = run_jobs(&specs, 1).unwrap();
    assert!(rep.jobs[0].zone_resets > 0, "{:?}", rep.jobs[0].zone_resets);
}
