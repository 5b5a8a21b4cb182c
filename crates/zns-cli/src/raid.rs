//! `zns raid`: ZRAID arrays of emulated ZNS devices (zns-raid): the crash
//! test of the ZRAID paper's Table 1 (`zns raid crashtest`, logic in
//! `zns_raid::crashtest`). The paper's figures are `zns repro zraid`
//! (repro.rs).

use std::process::ExitCode;

use clap::{Args, Subcommand};
use zns_raid::crash_params::{CrashParams, DEFAULT_TRIALS};
use zns_raid::crashtest::{self, PolicyReport, TrialOutcome};
use zns_raid::Policy;

use crate::progress::Eta;
use crate::CliError;

#[derive(Subcommand)]
pub enum RaidCommand {
    /// Power-loss crash test (ZRAID Table 1): sequential FUA writes of 4 KiB–512 KiB with a
    /// 7-byte pattern, power cut at a random instant, optional member failure, recovery; checks
    /// that the recovered write pointers cover every acknowledged write and the pattern below
    /// them. Prints failure rate and mean loss per policy, and the seed of every failing wplog
    /// trial (`--seed S` replays it; --verbose: the baselines' too). Exit 1 if the wplog policy
    /// lost anything.
    Crashtest(CrashtestArgs),
}

#[derive(Args)]
pub struct CrashtestArgs {
    /// Consistency policy: stripe, chunk, wplog; repeat or comma-separate (default: all three).
    #[arg(long, value_delimiter = ',')]
    policy: Vec<String>,
    /// Seed of the first trial (trial i uses seed + i). A failing trial's seed replays it.
    #[arg(long)]
    seed: Option<u64>,
    /// The array and its workload (zns_raid::crash_params: the flags, the
    /// sweep's keys and the Python package's arguments are its fields).
    #[command(flatten)]
    params: CrashParams,
    /// The paper's procedure (§6.6): progress per write, QD 1, and the
    /// workload prints each acknowledged end LBA to a serial console before
    /// its next write; the last line printed before the cut is what must
    /// survive (docs/raid.md, "Crash tests").
    #[arg(long)]
    paper_procedure: bool,
    /// With --paper-procedure: microseconds to print one line (default: the
    /// estimate for QEMU's emulated UART, 72).
    #[arg(long, value_name = "US", allow_negative_numbers = true)]
    log_line_us: Option<f64>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// List every failing trial with its replay command, the baselines'
    /// expected losses included (default: those of the wplog policy only,
    /// which must lose nothing).
    #[arg(long)]
    verbose: bool,
    /// Progress bar on stderr: auto (only on a terminal), always, never.
    #[arg(long, value_enum, default_value_t = Eta::Auto)]
    eta: Eta,
}

pub fn raid(cmd: RaidCommand) -> Result<ExitCode, CliError> {
    match cmd {
        RaidCommand::Crashtest(args) => crashtest_cmd(args),
    }
}

fn crashtest_cmd(args: CrashtestArgs) -> Result<ExitCode, CliError> {
    let policies: Vec<Policy> = if args.policy.is_empty() {
        vec![Policy::Stripe, Policy::Chunk, Policy::WpLog]
    } else {
        args.policy
            .iter()
            .map(|p| p.trim().parse::<Policy>())
            .collect::<Result<_, _>>()
            .map_err(|e| CliError::Usage(format!("--policy: {e}")))?
    };
    let serial_log = match (args.paper_procedure, args.log_line_us) {
        (false, None) => None,
        (false, Some(_)) => {
            return Err(CliError::Usage(
                "--log-line-us needs --paper-procedure".into(),
            ))
        }
        (true, None) => Some(crashtest::SerialLog::QEMU_16550),
        (true, Some(us)) if us.is_finite() && us >= 0.0 => Some(crashtest::SerialLog {
            line_ns: (us * 1e3) as u64,
        }),
        (true, Some(us)) => {
            return Err(CliError::Usage(format!(
                "--log-line-us {us}: must be a time of 0 or more"
            )))
        }
    };
    let seed = args.seed.unwrap_or(1);
    let params = &args.params;
    let default_trials = if args.seed.is_some() {
        1
    } else {
        DEFAULT_TRIALS
    };
    let shape = params
        .shape(default_trials, serial_log)
        .map_err(|e| CliError::Input(e.to_string()))?;
    // every policy's configuration before any trial: a wrong argument is a
    // usage error, not data lost in every trial
    let configs = policies
        .iter()
        .map(|&policy| shape.config(policy).map(|cfg| (policy, cfg)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| params.as_given(e))
        .map_err(|e| match e.param {
            "profile" => CliError::Input(e.problem),
            _ => CliError::Usage(format!(
                "--{} {}: {}",
                e.param.replace('_', "-"),
                e.value,
                e.problem
            )),
        })?;
    let (trials, per_write) = (shape.trials, shape.per_write_progress());
    let eta = args.eta;
    let mut rows = Vec::new();
    let mut wplog_failed = false;
    let mut interrupted = None;
    let n_policies = configs.len();
    crate::interrupt::watch();
    for (policy, cfg) in configs {
        let bar = crate::progress::bar(
            eta,
            trials,
            &format!(
                "crashtest {} [{{bar:30}}] {{pos}}/{{len}} {{msg}} ({{elapsed}})",
                policy.name()
            ),
        );
        let mut failures = 0u64;
        let each = &mut |o: &TrialOutcome| {
            if !o.passed() {
                failures += 1;
            }
            if let Some(bar) = &bar {
                bar.inc(1);
                bar.set_message(format!("{failures} failed"));
            }
        };
        let summary = crashtest::run_until(&cfg, trials, seed, each, &crate::interrupt::received);
        if let Some(bar) = &bar {
            bar.finish_and_clear();
        }
        if crate::interrupt::received() {
            // the trials that finished are reported; the rest are the next seeds
            let ran = summary.ran();
            interrupted = Some(format!(
                "zns raid crashtest: interrupted ({}) after {ran} of {trials} {} trials{}; the table covers the trials that finished. The rest: --policy {} --seed {} --trials {} (and the same other options)",
                crate::interrupt::name(),
                policy.name(),
                if rows.len() + 1 < n_policies { ", before the remaining policies" } else { "" },
                policy.name(),
                seed + ran,
                trials - ran
            ));
        }
        // trials that could not build the array are no crash outcomes: an
        // error, never a failure rate (the shape check leaves none)
        if let Some(e) = summary.not_run_error(policy) {
            return Err(CliError::Input(e));
        }
        if policy == Policy::WpLog && summary.failures > 0 {
            wplog_failed = true;
        }
        rows.push((policy, summary));
        if interrupted.is_some() {
            break;
        }
    }
    if args.json {
        let v: Vec<PolicyReport> = rows.iter().map(|(p, s)| s.report(*p)).collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "members": params.members,
                "chunk_kib": chunk_kib_json(shape.chunk_bytes),
                "fail_device": params.fail_device,
                "per_write_progress": per_write,
                "serial_log_line_ns": serial_log.map(|l| l.line_ns),
                "policies": v,
            }))
            .map_err(|e| CliError::Io(e.to_string()))?
        );
    } else {
        outln!(
            "crash test: {} members, {} KiB chunks, {trials} trial{} per policy from seed {seed}{}{}{}",
            params.members,
            chunk_kib_json(shape.chunk_bytes),
            if trials == 1 { "" } else { "s" },
            if params.fail_device {
                ", one member failed after power loss (then rebuilt)"
            } else {
                ""
            },
            if per_write {
                ", progress per write"
            } else {
                ""
            },
            serial_log.map_or(String::new(), |l| format!(
                ", the paper's procedure (commits printed to a serial log, {:.1} µs a line)",
                l.line_ns as f64 / 1e3
            ))
        );
        outln!("(trials in which no write was acknowledged before the cut are not counted, as in the paper)");
        outln!(
            "{:<8} {:>7} {:>12} {:>9} {:>13} {:>16}",
            "policy",
            "trials",
            "not counted",
            "failures",
            "failure rate",
            "mean loss (KiB)"
        );
        for (p, s) in &rows {
            outln!(
                "{:<8} {:>7} {:>12} {:>9} {:>12.1}% {:>16.1}",
                p.name(),
                s.trials,
                s.not_counted,
                s.failures,
                100.0 * s.failure_rate(),
                s.mean_loss_bytes() / 1024.0
            );
        }
        for (p, s) in &rows {
            // the baselines (stripe, chunk) are expected to lose data: the
            // paper's point; only wplog's losses are failures of the array
            let expected = *p != Policy::WpLog;
            if expected && !args.verbose {
                if !s.failing.is_empty() {
                    outln!(
                        "{}: {} trial{} lost acknowledged data, as expected of this baseline (--verbose lists them)",
                        p.name(),
                        s.failing.len(),
                        if s.failing.len() == 1 { "" } else { "s" }
                    );
                }
                continue;
            }
            for o in &s.failing {
                outln!(
                    "{} {} seed {}: {} (replay: zns raid crashtest --policy {} --seed {}{}{}{})",
                    if expected { "lost" } else { "FAIL" },
                    p.name(),
                    o.seed,
                    o.failure.as_deref().unwrap_or(""),
                    p.name(),
                    o.seed,
                    if params.fail_device {
                        " --fail-device"
                    } else {
                        ""
                    },
                    if params.per_write_progress {
                        " --per-write-progress"
                    } else {
                        ""
                    },
                    serial_log.map_or(String::new(), |l| format!(
                        " --paper-procedure --log-line-us {}",
                        l.line_ns as f64 / 1e3
                    ))
                );
            }
        }
    }
    if let Some(message) = interrupted {
        eprintln!("{message}");
        return Ok(crate::interrupt::exit_code());
    }
    Ok(if wplog_failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The chunk in KiB as the report gives it: a whole number when it is
/// whole KiB (every chunk the ZN540's members take), else a fraction.
fn chunk_kib_json(bytes: u64) -> serde_json::Value {
    if bytes % 1024 == 0 {
        serde_json::json!(bytes / 1024)
    } else {
        serde_json::json!(bytes as f64 / 1024.0)
    }
}
