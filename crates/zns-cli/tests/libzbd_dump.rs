//! `zns export-zones IMG --libzbd-dump FILE` read back by Debian's own `zbd`
//! tool (zbd-utils): `zbd report FILE` must list every zone with the
//! condition and write pointer the emulated device reports. Skipped (with a
//! message) when `zbd` is missing, unless ZNSKIT_REQUIRE_FIO is set (as
//! `scripts/test` does; `scripts/setup` installs zbd-utils).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn zns(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zns"))
        .args(args)
        .output()
        .expect("run zns")
}

fn ok(args: &[&str]) -> String {
    let o = zns(args);
    assert!(
        o.status.success(),
        "zns {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn zbd_found() -> bool {
    Command::new("sh")
        .args(["-c", "command -v zbd"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn zbd_report_lists_the_exported_zones() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("dev.img");
    let img_s = img.to_str().unwrap();
    ok(&["create", "--profile", "tiny", img_s]);
    ok(&["zone", "write", img_s, "--slba", "0", "--nlb", "5"]);
    ok(&["zone", "write", img_s, "--slba", "256", "--nlb", "2"]);
    ok(&["zone", "close", img_s, "--zone", "1"]);
    ok(&["zone", "finish", img_s, "--zone", "2"]);
    let report: Value = serde_json::from_str(&ok(&["zone", "report", img_s, "--json"])).unwrap();
    let zones = report["zone_list"].as_array().unwrap().clone();
    let info: Value = serde_json::from_str(&ok(&["info", "--profile", "tiny", "--json"])).unwrap();
    let ns = info["namespace"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n.get("zone_size_lbas").is_some())
        .expect("a zoned namespace")
        .clone();
    let lba = ns["lba_bytes"].as_u64().unwrap();
    let zone_lbas = ns["zone_size_lbas"].as_u64().unwrap();

    let dump = dir.path().join("dev_zone_info.dump");
    let dump_s = dump.to_str().unwrap();
    let out = ok(&["export-zones", img_s, "--libzbd-dump", dump_s]);
    assert!(out.contains("libzbd"), "{out}");
    assert_eq!(
        std::fs::metadata(&dump).unwrap().len(),
        192 + 64 * zones.len() as u64
    );

    if !zbd_found() {
        assert!(
            std::env::var_os("ZNSKIT_REQUIRE_FIO").is_none(),
            "zbd (zbd-utils) not installed: run scripts/setup"
        );
        eprintln!(
            "skipping the zbd report check: zbd not installed (scripts/setup installs zbd-utils)"
        );
        return;
    }
    check_zbd(&dump, &zones, lba, zone_lbas);
}

fn check_zbd(dump: &Path, zones: &[Value], lba: u64, zone_lbas: u64) {
    let o = Command::new("zbd")
        .args(["report", "-i", "-csv"])
        .arg(dump)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "zbd report failed: {text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows: Vec<Vec<String>> = text
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split(',').map(|f| f.trim().to_string()).collect())
        .collect();
    assert_eq!(rows.len(), zones.len(), "zbd report:\n{text}");
    for (i, (row, z)) in rows.iter().zip(zones).enumerate() {
        // zone num, type, ofst, len, cap, wp, cond, non_seq, reset
        let n = |k: usize| row[k].parse::<u64>().unwrap();
        assert_eq!(n(0), i as u64);
        assert_eq!(n(1), 2, "sequential write required");
        assert_eq!(n(2), z["slba"].as_u64().unwrap() * lba);
        assert_eq!(n(3), zone_lbas * lba);
        assert_eq!(n(4), z["cap"].as_u64().unwrap() * lba);
        let (cond, wp) = match z["state"].as_str().unwrap() {
            "EMPTY" => ("0x1", z["wp"].as_u64().unwrap()),
            "IMP_OPENED" => ("0x2", z["wp"].as_u64().unwrap()),
            "EXP_OPENED" => ("0x3", z["wp"].as_u64().unwrap()),
            "CLOSED" => ("0x4", z["wp"].as_u64().unwrap()),
            // libzbd shows a full zone's WP as its end, like the kernel
            "FULL" => ("0xe", z["slba"].as_u64().unwrap() + zone_lbas),
            other => panic!("unexpected state {other}"),
        };
        assert_eq!(row[6], cond, "zone {i}: {row:?}");
        assert_eq!(n(5), wp * lba, "zone {i}: {row:?}");
    }
    // zone 0 was written (implicitly open, closed when the image reopened)
    assert!(
        ["0x2", "0x4"].contains(&rows[0][6].as_str()),
        "{:?}",
        rows[0]
    );
    assert_eq!(n_at(&rows[0], 5), 5 * lba);
    // and the human-readable report
    let o = Command::new("zbd")
        .arg("report")
        .arg(dump)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(text.contains("assuming dump file"), "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("Zone ")).collect();
    assert_eq!(lines.len(), zones.len(), "{text}");
    assert!(lines[2].contains(", fu,"), "{}", lines[2]);
    assert_eq!(rows[1][6], "0x4", "closed");
    assert_eq!(rows[2][6], "0xe");
}

fn n_at(row: &[String], k: usize) -> u64 {
    row[k].parse().unwrap()
}
