//! fio against `zns bench` on the seed's five fio ZNS examples: real fio
//! (target/fio-engine/fio) with only the ioengine changed to the znskit
//! engine, paced in real time, and `zns bench` on the unchanged files in
//! virtual time; prints each example's bandwidth from both and the gap, and
//! writes the table as CSV. Run through scripts/fio-vs-bench.
//!
//! The read examples need written zones, so they run after write-prepare in
//! one fio run (and one `zns bench` run): fio runs job files in turn on one
//! device. Full runtimes take about 6 minutes of wall time (fio measures
//! real time); `--runtime SECONDS` caps every job but the write-prepare
//! before the reads (they need its zones full) for a quicker look.
//! `--speed F` paces the device F times real time (`znskit_speed`) and
//! compares with F times `zns bench`'s bandwidth: with F < 1 the host path
//! has F times fewer I/Os per second to carry, which shows which gaps are
//! host overhead. The machine's load average is printed before and after
//! (fio measures wall time; other work on the machine lowers its numbers).

use std::path::PathBuf;

#[path = "../tests/support/bench.rs"]
mod bench;

use bench::bench_json;
use zns_fio::harness::{group_bandwidths, with_global_options, workspace_root, Engine};

/// Examples run in one fio process, and which of its groups report which
/// example.
type Run<'a> = (&'a [&'a str], &'a [(&'a str, usize)]);

fn main() {
    if let Err(e) = run() {
        eprintln!("fio_vs_bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut runtime: Option<String> = None;
    let mut speed: Option<f64> = None;
    let mut out_dir = workspace_root().join("target/fio-vs-bench");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runtime" => runtime = Some(args.next().ok_or("--runtime needs seconds")?),
            "--out" => out_dir = PathBuf::from(args.next().ok_or("--out needs a directory")?),
            "--speed" => {
                let v = args.next().ok_or("--speed needs a number")?;
                let f: f64 = v
                    .parse()
                    .map_err(|_| format!("--speed {v}: not a number"))?;
                if !(f.is_finite() && f > 0.0) {
                    return Err(format!("--speed {v}: must be > 0"));
                }
                speed = Some(f);
            }
            "-h" | "--help" => {
                println!("usage: fio_vs_bench [--runtime SECONDS] [--speed F] [--out DIR]");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let engine = Engine::locate().ok_or("the engine is not built: run scripts/build-fio-engine")?;
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let extra: Vec<String> = runtime.iter().map(|r| format!("runtime={r}")).collect();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();

    // (label, examples run in one fio process, which groups to report)
    let runs: [Run; 2] = [
        (&["seqwrite"], &[("seqwrite", 0)]),
        (
            &[
                "write-prepare",
                "seqread",
                "randread",
                "zbd-read-while-write",
            ],
            &[
                ("write-prepare", 0),
                ("seqread", 1),
                ("randread", 2),
                ("zbd-read-while-write", 3),
            ],
        ),
    ];
    eprintln!("fio_vs_bench: load average before: {}", load_average());
    let mut rows = Vec::new();
    for (files, report) in runs {
        let mut fio_files = Vec::new();
        let mut bench_files = Vec::new();
        for name in files {
            let path = workspace_root()
                .join("examples/fio")
                .join(format!("{name}.fio"));
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            // the reads need write-prepare's zones full: it always runs whole
            let text = if files.len() > 1 && *name == "write-prepare" {
                text
            } else {
                with_global_options(&text, &extra)
            };
            let fio_path = out_dir.join(format!("{name}.fio"));
            let fio_text = match speed {
                Some(f) => with_global_options(&text, &[&format!("znskit_speed={f}")]),
                None => text.clone(),
            };
            std::fs::write(&fio_path, engine.job_text(&fio_text)).map_err(|e| e.to_string())?;
            fio_files.push(fio_path);
            bench_files.push((text, format!("{name}.fio")));
        }
        eprintln!("fio_vs_bench: fio {}", files.join(" "));
        let fio = engine.run(&fio_files, &[]).map_err(|e| e.to_string())?;
        if !fio.success {
            eprintln!("fio_vs_bench: fio reported errors:\n{}", fio.stderr);
        }
        eprintln!("fio_vs_bench: zns bench {}", files.join(" "));
        let bench = bench_json(&bench_files, 1)?;
        let f = group_bandwidths(&fio.json);
        let b = group_bandwidths(&bench);
        for (name, group) in report {
            let fg = f.get(*group).ok_or(format!("fio has no group {group}"))?;
            let bg = b
                .get(*group)
                .ok_or(format!("zns bench has no group {group}"))?;
            for (dir, fbw, bbw) in [
                ("read", fg.read_bytes_per_s, bg.read_bytes_per_s),
                ("write", fg.write_bytes_per_s, bg.write_bytes_per_s),
            ] {
                if fbw == 0.0 && bbw == 0.0 {
                    continue;
                }
                // a device paced at speed F delivers F times its bandwidth
                let bbw = bbw * speed.unwrap_or(1.0);
                rows.push((name.to_string(), dir, fbw, bbw, fg.failed_jobs));
            }
        }
    }
    let mib = 1048576.0;
    println!(
        "{:<22} {:<5} {:>12} {:>12} {:>8} {:>10}",
        "example", "dir", "fio MiB/s", "bench MiB/s", "gap %", "fio errors"
    );
    let mut csv = String::from(
        "example,direction,fio_mib_per_s,bench_mib_per_s,gap_percent,fio_failed_jobs\n",
    );
    for (name, dir, fbw, bbw, failed) in &rows {
        let gap = if *bbw > 0.0 {
            (fbw - bbw) / bbw * 100.0
        } else {
            f64::NAN
        };
        println!(
            "{name:<22} {dir:<5} {:>12.1} {:>12.1} {gap:>+8.2} {failed:>10}",
            fbw / mib,
            bbw / mib
        );
        csv.push_str(&format!(
            "{name},{dir},{:.1},{:.1},{gap:.2},{failed}\n",
            fbw / mib,
            bbw / mib
        ));
    }
    eprintln!("fio_vs_bench: load average after: {}", load_average());
    let csv_path = out_dir.join("fio-vs-bench.csv");
    std::fs::write(&csv_path, csv).map_err(|e| e.to_string())?;
    eprintln!("fio_vs_bench: wrote {}", csv_path.display());
    Ok(())
}

/// The 1/5/15-minute load averages (other work competes with the paced
/// device and with fio for the CPU).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}
