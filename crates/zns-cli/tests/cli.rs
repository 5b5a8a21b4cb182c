//! The `zns` binary end to end: outputs, `--json` shapes and the documented
//! exit codes (0 ok, 1 device rejected a command, 2 usage, 3 bad input, 4 I/O).

use std::path::Path;
use std::process::{Command, Output};

fn zns(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zns"))
        .args(args)
        .output()
        .expect("run zns")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn info_shows_the_zn540_geometry() {
    let o = zns(&["info", "--profile", "zn540"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("904"), "{}", stdout(&o));
    let o = zns(&["info", "--profile", "zn540", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["namespace"][0]["zone_count"], 904);
}

#[test]
fn zone_commands_on_an_image_and_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("dev.img");
    let img = img.to_str().unwrap();
    assert_eq!(code(&zns(&["create", img, "--profile", "tiny"])), 0);
    // Creating over an existing file is an I/O error; the file is kept.
    assert_eq!(code(&zns(&["create", img, "--profile", "tiny"])), 4);

    let o = zns(&["zone", "write", img, "--slba", "0", "--nlb", "3"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = zns(&["zone", "report", img, "--count", "2", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["nr_zones"], 2);
    assert_eq!(v["zone_list"][0]["wp"], 3, "the write survived the process");
    assert_eq!(v["zone_list"][0]["state"], "CLOSED");

    // Not at the write pointer: the device's status, exit code 1.
    let o = zns(&["zone", "write", img, "--slba", "7", "--nlb", "1", "--json"]);
    assert_eq!(code(&o), 1);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"]["sc"], 0xBC);
    assert!(stderr(&o).contains("Zone Invalid Write"), "{}", stderr(&o));

    let o = zns(&["zone", "append", img, "--zone", "0", "--nlb", "2", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["assigned_lba"], 3, "append lands at the WP");

    let o = zns(&["zone", "read", img, "--slba", "0", "--nlb", "5", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["stamps"][1], 1);
    assert_eq!(
        v["stamps"][3], 0,
        "appended blocks carry the zone start as stamp base"
    );

    assert_eq!(
        code(&zns(&["zone", "open", img, "--zone", "2", "--zrwa"])),
        0
    );
    assert_eq!(code(&zns(&["zone", "finish", img, "--zone", "2"])), 0);
    assert_eq!(code(&zns(&["zone", "reset", img, "--all"])), 0);
    // A zone that does not exist is a usage error naming the range.
    let o = zns(&["zone", "open", img, "--zone", "99"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("16 zones"), "{}", stderr(&o));
}

/// The SLBAs `zone report` prints (hex, as nvme-cli) are accepted back as
/// they are printed; anything else is a usage error naming the value.
#[test]
fn lbas_are_accepted_in_hex_as_zone_report_prints_them() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("dev.img");
    let img = img.to_str().unwrap();
    assert_eq!(code(&zns(&["create", img, "--profile", "tiny"])), 0);
    let report = stdout(&zns(&[
        "zone", "report", img, "--zone", "1", "--count", "1",
    ]));
    let slba = report
        .split_whitespace()
        .skip_while(|w| *w != "SLBA:")
        .nth(1)
        .unwrap()
        .to_string();
    assert_eq!(slba, "0x100", "{report}");
    let o = zns(&["zone", "write", img, "--slba", &slba, "--nlb", "0x2"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = zns(&["zone", "read", img, "--slba", "0x101", "--nlb", "1"]);
    assert!(
        stdout(&o).contains("lba 0x101: stamp 257"),
        "{}",
        stdout(&o)
    );
    let o = zns(&["zone", "finish", img, "--slba", "0X100"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = zns(&["zone", "write", img, "--slba", "0xZZ", "--nlb", "1"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("\"0xZZ\" is not an LBA"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_input_has_its_own_exit_codes_and_names_the_problem() {
    let o = zns(&["info", "--profile", "nope"]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));
    let o = zns(&[
        "info",
        "--profile",
        "zn540",
        "--set",
        "namespace.0.zone_cont=3",
    ]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("zone_cont"), "{}", stderr(&o));
    assert_eq!(code(&zns(&["info", "--no-such-flag"])), 2);

    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("bad.jsonl");
    std::fs::write(
        &trace,
        "{\"op\":\"open\",\"zone\":1}\n{\"op\":\"write\",\"slba\":0,\"nbl\":1}\n",
    )
    .unwrap();
    let o = zns(&["replay", trace.to_str().unwrap()]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).contains("line 2") && stderr(&o).contains("nbl"),
        "{}",
        stderr(&o)
    );
    let o = zns(&["replay", "/nonexistent/trace.jsonl"]);
    assert_eq!(code(&o), 4);

    let junk = dir.path().join("junk.img");
    std::fs::write(&junk, vec![7u8; 4096]).unwrap();
    let o = zns(&["zone", "report", junk.to_str().unwrap()]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
}

#[test]
fn replay_prints_one_json_object_per_command() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/zrwa.jsonl");
    let o = zns(&["replay", example.to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let results: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), 11);
    assert!(
        results.iter().any(|r| r["status"]["sc"] == 0xB6),
        "append on a ZRWA zone is rejected"
    );
    // one name for one thing across --json outputs: zones as `zone report
    // --json` shows them (nvme-cli's), status names capitalised alike
    let zone_keys = |z: &serde_json::Value| {
        let mut k: Vec<String> = z.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("z.img");
    let img = img.to_str().unwrap();
    assert_eq!(code(&zns(&["create", "--profile", "tiny", img])), 0);
    let report: serde_json::Value =
        serde_json::from_slice(&zns(&["zone", "report", img, "--json"]).stdout).unwrap();
    let with_zones = results
        .iter()
        .find(|r| !r["zones"].as_array().unwrap().is_empty())
        .expect("a command that touched a zone");
    assert_eq!(
        zone_keys(&with_zones["zones"][0]),
        zone_keys(&report["zone_list"][0])
    );
    assert!(results.iter().any(|r| r["status"]["name"] == "Success"));
    let o = zns(&["replay", example.to_str().unwrap(), "--fail-on-error"]);
    assert_eq!(code(&o), 1);
}

#[test]
fn bench_writes_into_a_device_image_and_the_zones_stay_written() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("dev.img");
    let img = img.to_str().unwrap();
    assert_eq!(code(&zns(&["create", "--profile", "tiny", img])), 0);
    let filename = format!("--filename={img}");
    let o = zns(&[
        "bench",
        "--name=w",
        &filename,
        "--rw=write",
        "--bs=16k",
        "--direct=1",
        "--zonemode=zbd",
        "--size=2z",
        "--output-format=json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // tiny: zone capacity 192 blocks of 4 KiB
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 2 * 192 * 4096);
    let o = zns(&["zone", "report", img, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(text.matches("\"FULL\"").count(), 2, "{text}");
}

#[test]
fn a_closed_stdout_ends_zns_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_zns"))
        .args([
            "bench",
            "--name=w",
            "--filename=tiny",
            "--rw=write",
            "--bs=4k",
            "--direct=1",
            "--zonemode=zbd",
            "--size=2z",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zns");
    drop(child.stdout.take()); // the reader goes away before zns writes
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
}

/// A crash-test argument the array cannot be made with is a usage error
/// (exit 2) before any trial, not "100 % of trials lost data" (exit 1).
#[test]
fn crashtest_arguments_are_checked_before_any_trial() {
    for (args, says) in [
        (&["--chunk-kib", "3"][..], "--chunk-kib 3"),
        (&["--chunk-kib", "0"][..], "--chunk-kib 0"),
        // whole blocks, but the array refuses them: 2 × ZRWAFG is 32 KiB
        (&["--chunk-kib", "16"][..], "2 × ZRWAFG = 32 KiB"),
        (
            &["--chunk-kib", "16", "--policy", "wplog"][..],
            "--chunk-kib 16",
        ),
        (&["--chunk-kib", "1024"][..], "half the ZRWA = 512 KiB"),
        (&["--qd", "0"][..], "--qd 0"),
        (&["--trials", "0"][..], "--trials 0"),
        (&["--zones", "0"][..], "--zones 0"),
        (
            &["--log-line-us", "10"][..],
            "--log-line-us needs --paper-procedure",
        ),
        (&["--paper-procedure", "--qd", "4"][..], "QD 1"),
        (
            &["--paper-procedure", "--log-line-us", "-1"][..],
            "--log-line-us -1",
        ),
    ] {
        let mut all = vec!["raid", "crashtest"];
        all.extend_from_slice(args);
        let o = zns(&all);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?} ran trials: {}", stdout(&o));
    }
}

/// `--eta=always` shows progress on a stderr that is not a terminal (a log,
/// CI) as plain lines, as fio does; `never` and `auto` (not a terminal)
/// show none.
#[test]
fn eta_always_shows_progress_in_logs() {
    let job = [
        "bench",
        "--name=w",
        "--filename=tiny",
        "--rw=write",
        "--zonemode=zbd",
        "--direct=1",
        "--size=2z",
    ];
    let with = |eta: &str| {
        let mut a = job.to_vec();
        a.push(eta);
        let o = zns(&a);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        stderr(&o)
    };
    let log = with("--eta=always");
    assert!(log.contains('[') && log.contains('%'), "{log:?}");
    assert!(with("--eta=never").is_empty());
    assert!(with("--eta=auto").is_empty());
}

/// Bytes that are not UTF-8 in a job file or a trace are bad input (exit
/// 3); an output directory that cannot be written fails before the run
/// (exit 4), so a long run cannot lose its results at the end.
#[test]
fn bad_text_is_bad_input_and_unwritable_outputs_fail_first() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("binary.fio");
    std::fs::write(&job, b"[w]\nfilename=\xff\xfe\n").unwrap();
    let o = zns(&["bench", job.to_str().unwrap()]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(stderr(&o).contains("not UTF-8"), "{}", stderr(&o));
    let trace = dir.path().join("binary.jsonl");
    std::fs::write(&trace, b"{\"op\":\"\xff\"}\n").unwrap();
    let o = zns(&["replay", trace.to_str().unwrap()]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let o = zns(&[
        "bench",
        "--name=w",
        "--filename=/dev/nvme-not-here",
        "--rw=write",
    ]);
    assert_eq!(code(&o), 4, "a missing real device: {}", stderr(&o));
    for args in [
        &["repro", "zraid", "--fig", "8", "--out", "/dev/null"][..],
        &[
            "repro",
            "zncache",
            "--exp",
            "d",
            "--quick",
            "--out",
            "/dev/null",
        ],
        &[
            "fidelity",
            "--filter",
            "interzone_4k",
            "--plots",
            "/dev/null",
        ],
    ] {
        let o = zns(args);
        assert_eq!(code(&o), 4, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("/dev/null"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?} ran before failing");
    }
    // bench's report and log files: checked before the job runs (a job of
    // 100 zones would take seconds; the refusal takes none of them)
    let nowhere = dir.path().join("no/such/dir");
    let job = [
        "bench",
        "--name=w",
        "--filename=zn540",
        "--rw=write",
        "--zonemode=zbd",
        "--direct=1",
        "--size=100z",
    ];
    for extra in [
        format!("--output={}/report.json", nowhere.display()),
        format!("--write_lat_log={}/lat", nowhere.display()),
        format!("--write_iops_log={}/iops", nowhere.display()),
    ] {
        let mut args = job.to_vec();
        args.push(&extra);
        let o = zns(&args);
        assert_eq!(code(&o), 4, "{extra}: {}", stderr(&o));
        assert!(stderr(&o).contains("no/such/dir"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{extra}: the job ran before failing");
    }
}

/// SIGTERM (kill, timeout, systemd) ends a run as Ctrl-C does: the report
/// of what ran, exit 143, and an image keeps what was written.
#[test]
fn sigterm_reports_what_ran_and_an_image_keeps_it() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("t.img");
    let img = img.to_str().unwrap();
    assert_eq!(code(&zns(&["create", "--profile", "tiny", img])), 0);
    // a job of 100 virtual hours: only the signal ends it
    let mut child = Command::new(env!("CARGO_BIN_EXE_zns"))
        .args([
            "bench",
            "--name=w",
            &format!("--filename={img}"),
            "--rw=write",
            "--zonemode=zbd",
            "--direct=1",
            "--time_based",
            "--runtime=100h",
            "--eta=always",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // the first progress line: the job is writing
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 && !line.contains("writes") {
        line.clear();
    }
    assert!(line.contains("writes"), "no progress line");
    // SAFETY: kill(2) on our own child's pid
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(143), "{rest}");
    assert!(rest.contains("interrupted (SIGTERM)"), "{rest}");
    assert!(stdout(&o).contains("Run status group 0"), "{}", stdout(&o));
    let report = zns(&["zone", "report", img, "--count", "1"]);
    assert!(
        !stdout(&report).contains("EMPTY"),
        "the written zone was discarded: {}",
        stdout(&report)
    );
}

/// The emulated ZRAID figures have no short mode: `--quick` with them is a
/// usage error before anything runs (it used to change their conclusions).
#[test]
fn repro_zraid_refuses_quick_for_the_emulated_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    for fig in ["7", "8,waf", "11"] {
        let o = zns(&["repro", "zraid", "--fig", fig, "--quick", "--out", out]);
        assert_eq!(code(&o), 2, "--fig {fig}: {}", stderr(&o));
        assert!(stderr(&o).contains("figs. 9 and 10 only"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "--fig {fig} ran: {}", stdout(&o));
    }
}

/// `--filebench` and `--db-bench` name the user's programs: a path that is
/// no executable file, a db_bench without ZenFS's utility beside it, or a
/// flag for a figure not run is refused (exit 2) before anything runs.
#[test]
fn repro_zraid_refuses_programs_it_cannot_run() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let exe = dir.path().join("db_bench");
    std::fs::write(&exe, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let plain = dir.path().join("filebench");
    std::fs::write(&plain, "").unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["--fig", "9", "--filebench", "/nonexistent/filebench"],
            "--filebench /nonexistent/filebench",
        ),
        (
            &["--fig", "9", "--filebench", plain.to_str().unwrap()],
            "not executable",
        ),
        (
            &["--fig", "10", "--db-bench", exe.to_str().unwrap()],
            "zenfs",
        ),
        (
            &["--fig", "10", "--filebench", exe.to_str().unwrap()],
            "--fig has no 9",
        ),
    ];
    for (args, says) in cases {
        let mut a = vec!["repro", "zraid", "--where", "guest", "--out", out];
        a.extend_from_slice(args);
        let o = zns(&a);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?} ran: {}", stdout(&o));
    }
}

/// The crash test's baselines (stripe, chunk) lose data by design: their
/// lost trials are one summary line each unless --verbose lists them; the
/// table stays in view.
#[test]
fn crashtest_summarises_the_baselines_expected_losses() {
    let o = zns(&[
        "raid",
        "crashtest",
        "--trials",
        "12",
        "--policy",
        "stripe,wplog",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("12 trials per policy"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    assert!(out.contains("as expected of this baseline"), "{out}");
    let verbose = zns(&[
        "raid",
        "crashtest",
        "--trials",
        "12",
        "--policy",
        "stripe",
        "--verbose",
    ]);
    let listed = stdout(&verbose)
        .lines()
        .filter(|l| l.starts_with("lost stripe seed"))
        .count();
    assert!(listed > 0, "{}", stdout(&verbose));
    let one = zns(&["raid", "crashtest", "--seed", "3", "--policy", "wplog"]);
    assert!(
        stdout(&one).contains("1 trial per policy"),
        "{}",
        stdout(&one)
    );
}

/// `zns info` shows small sizes in the unit that shows them (tiny's 768 KiB
/// capacity, 12 MiB writable; tiny-ftl's 16 MiB), no ZRWA power-loss rule
/// for a device without ZRWA, and a description that says what an override
/// changed (so `create --zones 4` does not confirm 16 zones).
#[test]
fn info_numbers_are_right_for_small_and_overridden_profiles() {
    let tiny = stdout(&zns(&["info", "--profile", "tiny"]));
    assert!(
        tiny.contains("16 × 1 MiB (capacity 768 KiB), 12 MiB writable"),
        "{tiny}"
    );
    let ftl = stdout(&zns(&["info", "--profile", "tiny-ftl"]));
    assert!(ftl.contains("conventional, 4096 B LBAs, 16 MiB"), "{ftl}");
    assert!(!ftl.contains("ZRWA"), "{ftl}");
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("z4.img");
    let o = zns(&[
        "create",
        "--profile",
        "tiny",
        "--zones",
        "4",
        img.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("overridden: namespace.0.zone_count=4"),
        "{}",
        stdout(&o)
    );
}

/// `--profile`'s help names every built-in profile, and `info --list
/// --json` is one JSON document with all of them.
#[test]
fn help_and_list_name_every_builtin_profile() {
    let list = zns(&["info", "--list", "--json"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    let doc: serde_json::Value = serde_json::from_slice(&list.stdout).expect("one JSON document");
    let names: Vec<&str> = doc
        .as_array()
        .expect("an array")
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    let help = stdout(&zns(&["info", "--help"]));
    for n in &names {
        assert!(help.contains(n), "--profile help lacks {n}: {help}");
    }
}

/// docs/bench.md's list of the names `filename=` takes is the built-in
/// profiles, all of them (a profile added without the doc fails here).
#[test]
fn bench_doc_lists_every_builtin_profile() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bench.md"))
        .unwrap();
    for name in zns_device::Profile::builtin_names() {
        assert!(
            doc.contains(&format!("`{name}`")),
            "docs/bench.md does not list the built-in profile {name}"
        );
    }
}

/// Job files as fio reads them: `include FILE` beside the job file,
/// `${NAME}` from the environment, `description=`.
#[test]
fn job_files_take_includes_environment_variables_and_descriptions() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("common.fio"),
        "[global]\nfilename=${ZNS_TEST_DEV}\ndirect=1\nzonemode=zbd\n",
    )
    .unwrap();
    let job = dir.path().join("job.fio");
    std::fs::write(
        &job,
        "include common.fio\n[w] ; a writer\ndescription=one zone\nrw=write\nsize=1z\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_zns"))
        .args(["bench", "--output-format=json", job.to_str().unwrap()])
        .env("ZNS_TEST_DEV", "tiny")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["jobs"][0]["job options"]["filename"], "tiny");
    assert_eq!(doc["jobs"][0]["job options"]["description"], "one zone");
    assert_eq!(doc["jobs"][0]["write"]["io_bytes"], 192 * 4096);
}

/// Every example job file runs as its header says (`;   zns bench …`
/// after "With znskit"), from the repository root: the read examples name
/// the write job that prepares their zones.
#[test]
fn example_job_files_run_as_their_headers_say() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("examples/fio");
    let mut ran = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("fio") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let cmd = text
            .lines()
            .find_map(|l| l.strip_prefix(";   zns bench "))
            .unwrap_or_else(|| panic!("{}: no `zns bench` command in its header", path.display()));
        let mut args = vec!["bench", "--output-format=json"];
        args.extend(cmd.split_whitespace());
        let o = Command::new(env!("CARGO_BIN_EXE_zns"))
            .args(&args)
            .current_dir(&root)
            .output()
            .unwrap();
        assert_eq!(
            code(&o),
            0,
            "{}: zns bench {cmd}: {}",
            path.display(),
            stderr(&o)
        );
        ran += 1;
    }
    assert!(ran >= 5, "{ran} examples");
}

/// With --json, a read the device rejects prints its status in the output
/// object (as a rejected write does), and exits 1.
#[test]
fn a_rejected_read_reports_its_status_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("r.img");
    assert_eq!(
        code(&zns(&[
            "create",
            "--profile",
            "tiny",
            img.to_str().unwrap()
        ])),
        0
    );
    let o = zns(&[
        "zone",
        "read",
        img.to_str().unwrap(),
        "--slba",
        "0x100000",
        "--nlb",
        "1",
        "--json",
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("a JSON object");
    assert_eq!(doc["op"], "read");
    assert_eq!(doc["status"]["name"], "LBA Out of Range");
}

/// An image another process holds is busy, not bad: exit 4 (an I/O
/// condition), with the reason.
#[test]
fn an_image_in_use_is_exit_4() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("busy.img");
    assert_eq!(
        code(&zns(&[
            "create",
            "--profile",
            "tiny",
            img.to_str().unwrap()
        ])),
        0
    );
    let held = std::fs::File::open(&img).unwrap();
    // SAFETY: flock takes a live descriptor and flags.
    assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX) }, 0);
    let o = zns(&["zone", "report", img.to_str().unwrap()]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert!(stderr(&o).contains("in use"), "{}", stderr(&o));
}

/// An explicit open on an image lasts for its command only (each command is
/// a power cycle): the command says so, so an nvme-cli user is not misled.
#[test]
fn zone_open_on_an_image_says_the_open_does_not_last() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("op.img");
    let img = img.to_str().unwrap();
    assert_eq!(code(&zns(&["create", "--profile", "tiny", img])), 0);
    let o = zns(&["zone", "open", img, "--zone", "0"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("keeps no open zone"), "{}", stderr(&o));
    let o = zns(&["zone", "report", img, "--count", "1"]);
    assert!(stdout(&o).contains("EMPTY"), "{}", stdout(&o));
    // the state filter takes the report's own spelling, in any case
    for state in ["EMPTY", "empty", "Empty"] {
        let o = zns(&["zone", "report", img, "--count", "1", "--state", state]);
        assert_eq!(code(&o), 0, "{state}: {}", stderr(&o));
        assert!(stdout(&o).contains("EMPTY"), "{}", stdout(&o));
    }
    let o = zns(&["zone", "report", img, "--state", "IMP_OPENED"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // report's arguments are checked as the other zone commands' are
    for cmd in ["report", "reset"] {
        let o = zns(&["zone", cmd, img, "--zone", "99"]);
        assert_eq!(code(&o), 2, "{cmd}: {}", stderr(&o));
        assert!(stderr(&o).contains("16 zones"), "{}", stderr(&o));
    }
    let o = zns(&["zone", "report", img, "--slba", "0x100", "--count", "1"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("SLBA: 0x100"), "{}", stdout(&o));
    // a profile's name where the image belongs: how to make one
    let o = zns(&["zone", "report", "zn540"]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("zns create --profile zn540"),
        "{}",
        stderr(&o)
    );
}

/// `zns bench -` reads the job file on stdin, and `--output-format=json,normal`
/// prints fio's JSON document, then its text.
#[test]
fn a_job_file_on_stdin_and_two_output_formats() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_zns"))
        .args(["bench", "--output-format=json,normal", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"[w]\nfilename=zn540\nrw=write\nzonemode=zbd\ndirect=1\nsize=1z\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let text_at = out.find("Run status group 0").expect("the text report");
    let json: serde_json::Value = serde_json::Deserializer::from_str(&out[..text_at])
        .into_iter()
        .next()
        .expect("a JSON document first")
        .unwrap();
    assert_eq!(json["jobs"][0]["jobname"], "w");
}

/// An image another process holds is exit 4 for every command (`bench`
/// included), as docs/cli.md says: the OS's refusal, not bad input.
#[test]
fn an_image_in_use_is_exit_4_everywhere() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("lock.img");
    let img = img.to_str().unwrap();
    assert_eq!(code(&zns(&["create", "--profile", "tiny", img])), 0);
    let held = std::fs::File::open(img).unwrap();
    // SAFETY: flock on a descriptor this test owns (the image's own lock)
    assert_eq!(
        unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let file = format!("--filename={img}");
    for args in [
        &["bench", "--name=w", &file, "--rw=read", "--size=1z"][..],
        &["zone", "report", img],
    ] {
        let o = zns(args);
        assert_eq!(code(&o), 4, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("in use"), "{}", stderr(&o));
    }
}

#[test]
fn bench_minimal_prints_fio_terse_v3_lines() {
    let o = zns(&[
        "bench",
        "--minimal",
        "--name=a",
        "--filename=sn540-mini",
        "--rw=randrw",
        "--bs=4k",
        "--size=4m",
        "--name=b",
        "--filename=sn540-mini",
        "--rw=write",
        "--size=1m",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    for (line, name) in lines.iter().zip(["a", "b"]) {
        let f: Vec<&str> = line.split(';').collect();
        // fio(1)'s v3 fields up to the latency buckets (no disk statistics)
        assert_eq!(f.len(), 121, "{line}");
        assert_eq!((f[0], f[2]), ("3", name));
    }
    // job b wrote 1 MiB: write_kb is field 47
    assert_eq!(lines[1].split(';').nth(46), Some("1024"));
    // json first, then terse: one format after the other
    let o = zns(&[
        "bench",
        "--output-format=terse,json",
        "--name=a",
        "--filename=tiny",
        "--size=64k",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("3;") && stdout(&o).contains("\"jobs\""));
}

/// `zns repro --help` states the guest's speeds as the constants define
/// them: c, and each experiment's k and F = c / k (docs/apps.md, "The
/// defaults"), so a recalibrated c or another k changes the help too.
#[test]
fn repro_help_states_the_guests_speeds_from_their_constants() {
    use zns_apps::guest::{guest_speed, GUEST_CPU_SPEED};
    use zns_repro::zraid::{apps, dbcheck};
    let zraid = stdout(&zns(&["repro", "zraid", "--help"])).replace('\n', " ");
    let c = format!("c = {GUEST_CPU_SPEED}");
    assert!(zraid.contains(&c), "{c} missing: {zraid}");
    for k in [
        apps::FIG9_CORES,
        apps::FIG10_CORES,
        dbcheck::FILL_CORES,
        dbcheck::READ_CORES,
    ] {
        let f = format!("k = {k}, F = {}", guest_speed(k));
        assert!(zraid.contains(&f), "{f} missing: {zraid}");
    }
    let k = zns_repro::study::launch::STUDY_CORES;
    let study = stdout(&zns(&["repro", "zns-study", "--help"])).replace('\n', " ");
    let f = format!("F = c / k = {GUEST_CPU_SPEED} / {k} = {}", guest_speed(k));
    assert!(study.contains(&f), "{f} missing: {study}");
}
