//! A stdout that cannot be written (a full disk: /dev/full) is an error
//! with exit code 4 and a message, never a panic (exit 101) and never a
//! lost report with exit 0 (docs/cli.md). A closed pipe keeps ending the
//! process quietly (SIGPIPE), as for other Unix tools.

use std::fs::OpenOptions;
use std::process::{Command, Stdio};

fn zns_to_dev_full(args: &[&str]) -> (Option<i32>, String) {
    let full = OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zns"))
        .args(args)
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_full_stdout_is_exit_4_with_a_message_for_every_kind_of_output() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let cases: &[&[&str]] = &[
        &["info", "--list"],
        &["info", "--list", "--json"],
        &["info", "--profile", "zn540", "--toml"],
        &["bench", "--cmdhelp=zonemode"],
        &["bench", "--help"],
        &[
            "bench",
            "--output-format=json",
            "--name=w",
            "--filename=tiny",
            "--rw=write",
            "--zonemode=zbd",
            "--direct=1",
            "--size=1z",
        ],
        &["probe", "--profile", "tiny", "--json"],
        // clap's own outputs go through the same check
        &["--help"],
        &["--version"],
        &["zone", "--help"],
    ];
    for args in cases {
        let (code, stderr) = zns_to_dev_full(args);
        assert_eq!(code, Some(4), "zns {args:?}: {stderr}");
        assert!(
            stderr.contains("writing to stdout") && !stderr.contains("panicked"),
            "zns {args:?}: {stderr}"
        );
    }
}
