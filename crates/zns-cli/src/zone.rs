//! `zns zone …`: zone commands against a device image (report, open, close,
//! finish, reset, write, append, read, zrwa-flush), each printed with its
//! status and virtual latency as text or JSON.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use zns_core::{IoFlags, ReportFilter, ZoneAction, ZoneSendCmd, ZonedDevice};
use zns_device::trace::{fill_stamps, StatusReport};
use zns_device::{EmulatedZns, Profile, StoreKind};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

use zns_target::TargetSpec;

use crate::{open_controller, output, warn_recovery, CliError};

/// The image and namespace a zone command works on.
#[derive(Args)]
pub(crate) struct Target {
    /// Device image (see `zns create`).
    image: PathBuf,
    /// Namespace ID (default: the first zoned namespace).
    #[arg(long)]
    nsid: Option<u32>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Which zone a management command acts on.
#[derive(Args)]
pub(crate) struct ZoneSel {
    /// Zone index.
    #[arg(long, conflicts_with_all = ["slba", "all"])]
    zone: Option<u32>,
    /// Zone start LBA (decimal or 0x hex, as `zone report` prints it).
    #[arg(long, conflicts_with = "all", value_parser = lba_arg)]
    slba: Option<u64>,
    /// Select all zones (Select All bit).
    #[arg(long)]
    all: bool,
}

/// An LBA or block count as users paste it: decimal, or hex with `0x` (as
/// `zone report` and nvme-cli print SLBAs and write pointers).
fn lba_arg(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    };
    parsed.map_err(|_| format!("{text:?} is not an LBA (decimal, or hex with 0x)"))
}

#[derive(Args)]
pub(crate) struct WriteData {
    /// Number of logical blocks (decimal or 0x hex).
    #[arg(long, value_parser = lba_arg)]
    nlb: u64,
    /// Fill block i with the stamp tag STAMP+i (default: the block's LBA).
    #[arg(long)]
    stamp: Option<u64>,
    /// Take the data from a file (its length must be nlb × LBA size).
    #[arg(long, conflicts_with = "stamp")]
    data: Option<PathBuf>,
    /// Force Unit Access.
    #[arg(long)]
    fua: bool,
}

#[derive(Subcommand)]
pub(crate) enum ZoneCommand {
    /// List zones (like `nvme zns report-zones`).
    Report {
        #[command(flatten)]
        target: Target,
        /// First zone to report (default 0).
        #[arg(long, conflicts_with = "slba")]
        zone: Option<u32>,
        /// Report from the zone holding this LBA (decimal or 0x hex), as nvme-cli's report-zones --start-lba.
        #[arg(long, value_parser = lba_arg)]
        slba: Option<u64>,
        /// Maximum number of zones.
        #[arg(long)]
        count: Option<usize>,
        /// Only zones in this state: empty, imp-open, exp-open, closed, full, read-only, offline.
        #[arg(long)]
        state: Option<String>,
    },
    /// Open a zone explicitly (optionally allocating a ZRWA).
    Open {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        sel: ZoneSel,
        /// Allocate a Zone Random Write Area (ZRWAA).
        #[arg(long)]
        zrwa: bool,
    },
    /// Close a zone.
    Close {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        sel: ZoneSel,
    },
    /// Finish a zone (transition to Full).
    Finish {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        sel: ZoneSel,
    },
    /// Reset a zone (transition to Empty, data discarded).
    Reset {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        sel: ZoneSel,
    },
    /// Write blocks at an LBA (the zone's write pointer, or inside its ZRWA).
    Write {
        #[command(flatten)]
        target: Target,
        /// Starting LBA (decimal or 0x hex).
        #[arg(long, value_parser = lba_arg)]
        slba: u64,
        #[command(flatten)]
        data: WriteData,
    },
    /// Zone Append: the device picks the LBA and prints it.
    Append {
        #[command(flatten)]
        target: Target,
        /// Zone index.
        #[arg(long, conflicts_with = "slba")]
        zone: Option<u32>,
        /// Zone start LBA (decimal or 0x hex).
        #[arg(long, value_parser = lba_arg)]
        slba: Option<u64>,
        #[command(flatten)]
        data: WriteData,
    },
    /// Read blocks; prints the stamp tag of each block, or writes the data to --out.
    Read {
        #[command(flatten)]
        target: Target,
        /// Starting LBA (decimal or 0x hex).
        #[arg(long, value_parser = lba_arg)]
        slba: u64,
        /// Number of logical blocks (decimal or 0x hex).
        #[arg(long, value_parser = lba_arg)]
        nlb: u64,
        /// Write the data read to this file.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// ZRWA explicit flush: commit the ZRWA up to and including --lba.
    ZrwaFlush {
        #[command(flatten)]
        target: Target,
        /// Last LBA to commit (decimal or 0x hex).
        #[arg(long, value_parser = lba_arg)]
        lba: u64,
    },
}

/// Opens an image's zoned namespace on a fresh runtime (through
/// zns-target, as every device command opens its device).
pub(crate) fn open_target(
    rt: &mut Runtime,
    image: &Path,
    nsid: Option<u32>,
) -> Result<EmulatedZns, CliError> {
    // a profile's name where an image belongs: say how to make the image
    if !image.exists() {
        if let Some(name) = image.to_str().filter(|n| Profile::builtin(n).is_ok()) {
            return Err(CliError::Io(format!(
                "{name}: no such image; zone commands work on a device image, made from the profile with `zns create --profile {name} {name}.img`"
            )));
        }
    }
    let spec = TargetSpec::Image(image.to_path_buf());
    let ctrl = open_controller(rt, &spec, StoreKind::None, HostStack::Spdk)?;
    warn_recovery(&ctrl, image);
    match nsid {
        Some(n) => ctrl.zoned(n).ok_or_else(|| {
            CliError::Usage(format!("--nsid {n}: not a zoned namespace of this device"))
        }),
        None => ctrl
            .first_zoned()
            .ok_or_else(|| CliError::Usage("the device has no zoned namespace".into())),
    }
}

fn sel_slba(dev: &EmulatedZns, sel: &ZoneSel) -> Result<u64, CliError> {
    let cfg = dev.config();
    match (sel.zone, sel.slba, sel.all) {
        (Some(z), _, _) if z >= cfg.zone_count => Err(CliError::Usage(format!(
            "--zone {z}: the namespace has {} zones (0..{})",
            cfg.zone_count,
            cfg.zone_count - 1
        ))),
        (Some(z), _, _) => Ok(z as u64 * cfg.zone_size_lbas),
        (None, Some(l), _) => Ok(l),
        (None, None, true) => Ok(0),
        (None, None, false) => Err(CliError::Usage("give --zone, --slba or --all".into())),
    }
}

fn write_buffer(
    dev: &EmulatedZns,
    data: &WriteData,
    default_tag: u64,
) -> Result<Vec<u8>, CliError> {
    let lba_bytes = dev.config().lba_bytes as u64;
    let bytes = data
        .nlb
        .checked_mul(lba_bytes)
        .filter(|b| *b <= 256 << 20)
        .ok_or_else(|| {
            CliError::Usage(format!(
                "--nlb {}: more than 256 MiB in one command",
                data.nlb
            ))
        })?;
    if let Some(path) = &data.data {
        let buf =
            std::fs::read(path).map_err(|e| CliError::Io(format!("{}: {e}", path.display())))?;
        if buf.len() as u64 != bytes {
            return Err(CliError::Usage(format!(
                "--data {}: {} bytes, but --nlb {} needs {bytes}",
                path.display(),
                buf.len(),
                data.nlb
            )));
        }
        return Ok(buf);
    }
    let mut buf = vec![0u8; bytes as usize];
    fill_stamps(
        &mut buf,
        lba_bytes as usize,
        data.stamp.unwrap_or(default_tag),
    );
    Ok(buf)
}

pub(crate) fn zone(cmd: ZoneCommand) -> Result<ExitCode, CliError> {
    let mut rt = Runtime::new(0);
    match cmd {
        ZoneCommand::Report {
            target,
            zone,
            slba,
            count,
            state,
        } => {
            // any case, `_` for `-`, and the report's own spellings (IMP_OPENED)
            let wanted = state
                .as_deref()
                .map(|s| s.to_ascii_lowercase().replace('_', "-"));
            let filter = match wanted.as_deref() {
                None | Some("all") => ReportFilter::All,
                Some("empty") => ReportFilter::Empty,
                Some("imp-open" | "imp-opened" | "implicitly-opened") => {
                    ReportFilter::ImplicitlyOpened
                }
                Some("exp-open" | "exp-opened" | "explicitly-opened") => {
                    ReportFilter::ExplicitlyOpened
                }
                Some("closed") => ReportFilter::Closed,
                Some("full") => ReportFilter::Full,
                Some("read-only" | "readonly") => ReportFilter::ReadOnly,
                Some("offline") => ReportFilter::Offline,
                Some(_) => {
                    return Err(CliError::Usage(format!(
                        "--state {}: expected empty, imp-open, exp-open, closed, full, read-only or offline (any case; the report's IMP_OPENED spellings too)",
                        state.unwrap_or_default()
                    )))
                }
            };
            let dev = open_target(&mut rt, &target.image, target.nsid)?;
            let cfg = dev.config().clone();
            // the same argument check as the other zone commands
            let start = match slba {
                Some(l) => l,
                None => sel_slba(
                    &dev,
                    &ZoneSel {
                        zone: Some(zone.unwrap_or(0)),
                        slba: None,
                        all: false,
                    },
                )?,
            };
            let total = u64::from(cfg.zone_count) * cfg.zone_size_lbas;
            if start >= total {
                return Err(CliError::Usage(format!(
                    "--slba {start:#x}: the namespace ends at LBA {:#x}",
                    total.saturating_sub(1)
                )));
            }
            let zones = rt
                .block_on(dev.report_zones(start, filter, count.unwrap_or(cfg.zone_count as usize)))
                .map_err(CliError::Device)?;
            if target.json {
                outln!("{}", output::report_json(&zones));
            } else {
                out!("{}", output::report_text(&zones));
            }
            Ok(ExitCode::SUCCESS)
        }
        ZoneCommand::Open { target, sel, zrwa } => {
            let json = target.json;
            let code = zone_send(&mut rt, target, &sel, ZoneAction::Open { zrwa })?;
            if !json {
                // nvme-cli users expect the zone to stay open: say it does not
                eprintln!("note: the image keeps no open zone after this command (each `zns zone` command is a power cycle; `zns zone --help`): use `zns replay` or Python's znskit.Device for sequences that need open zones");
            }
            Ok(code)
        }
        ZoneCommand::Close { target, sel } => zone_send(&mut rt, target, &sel, ZoneAction::Close),
        ZoneCommand::Finish { target, sel } => zone_send(&mut rt, target, &sel, ZoneAction::Finish),
        ZoneCommand::Reset { target, sel } => zone_send(&mut rt, target, &sel, ZoneAction::Reset),
        ZoneCommand::ZrwaFlush { target, lba } => {
            let dev = open_target(&mut rt, &target.image, target.nsid)?;
            let cmd = ZoneSendCmd {
                action: ZoneAction::FlushZrwa,
                slba: lba,
                select_all: false,
            };
            timed(
                &mut rt,
                &target,
                "zrwa-flush",
                None,
                |d| d.zone_send(cmd),
                &dev,
            )
            .map(|_| ExitCode::SUCCESS)
        }
        ZoneCommand::Write { target, slba, data } => {
            let dev = open_target(&mut rt, &target.image, target.nsid)?;
            let buf = write_buffer(&dev, &data, slba)?;
            let flags = IoFlags::with_fua(data.fua);
            timed(
                &mut rt,
                &target,
                "write",
                None,
                |d| d.write(slba, &buf, flags),
                &dev,
            )
            .map(|_| ExitCode::SUCCESS)
        }
        ZoneCommand::Append {
            target,
            zone,
            slba,
            data,
        } => {
            let dev = open_target(&mut rt, &target.image, target.nsid)?;
            let zslba = sel_slba(
                &dev,
                &ZoneSel {
                    zone,
                    slba,
                    all: false,
                },
            )?;
            let buf = write_buffer(&dev, &data, zslba)?;
            let flags = IoFlags::with_fua(data.fua);
            timed(
                &mut rt,
                &target,
                "append",
                Some("assigned_lba"),
                |d| d.append(zslba, &buf, flags),
                &dev,
            )
            .map(|_| ExitCode::SUCCESS)
        }
        ZoneCommand::Read {
            target,
            slba,
            nlb,
            out,
        } => {
            let dev = open_target(&mut rt, &target.image, target.nsid)?;
            let lba_bytes = dev.config().lba_bytes as usize;
            let bytes = nlb
                .checked_mul(lba_bytes as u64)
                .filter(|b| *b <= 256 << 20)
                .ok_or_else(|| {
                    CliError::Usage(format!("--nlb {nlb}: more than 256 MiB in one command"))
                })?;
            let mut buf = vec![0u8; bytes as usize];
            let start = rt.now_ns();
            let read = rt.block_on(dev.read(slba, &mut buf));
            let latency_ns = rt.now_ns() - start;
            if let Err(e) = read {
                // with --json the status goes in the output object, as for
                // a rejected write
                if target.json {
                    outln!(
                        "{}",
                        serde_json::json!({"op": "read", "status": StatusReport::from_error(&e), "latency_ns": latency_ns, "slba": slba, "nlb": nlb})
                    );
                }
                return Err(CliError::Device(e));
            }
            if let Some(path) = out {
                std::fs::write(&path, &buf)
                    .map_err(|e| CliError::Io(format!("{}: {e}", path.display())))?;
            }
            let tags: Vec<Option<u64>> = buf
                .chunks(lba_bytes)
                .map(zns_device::store::stamp::tag_of)
                .collect();
            if target.json {
                outln!(
                    "{}",
                    serde_json::json!({"op": "read", "status": StatusReport::success(), "latency_ns": latency_ns, "slba": slba, "nlb": nlb, "stamps": tags})
                );
            } else {
                outln!(
                    "read: Success, {nlb} blocks at {slba:#x} in {:.2} us (virtual)",
                    latency_ns as f64 / 1000.0
                );
                for (i, t) in tags.iter().enumerate() {
                    match t {
                        Some(tag) => outln!("  lba {:#x}: stamp {tag}", slba + i as u64),
                        None => outln!("  lba {:#x}: (not a stamp block)", slba + i as u64),
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn zone_send(
    rt: &mut Runtime,
    target: Target,
    sel: &ZoneSel,
    action: ZoneAction,
) -> Result<ExitCode, CliError> {
    let dev = open_target(rt, &target.image, target.nsid)?;
    let slba = sel_slba(&dev, sel)?;
    let cmd = ZoneSendCmd {
        action,
        slba,
        select_all: sel.all,
    };
    timed(rt, &target, action.name(), None, |d| d.zone_send(cmd), &dev)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs one command, prints its status and virtual latency plus the zone it
/// touched and, under `result_key` (`assigned_lba`: the name replay uses
/// too), what it returned; a device error becomes exit code 1.
fn timed<'a, T: serde::Serialize>(
    rt: &mut Runtime,
    target: &Target,
    op: &str,
    result_key: Option<&str>,
    f: impl FnOnce(&'a EmulatedZns) -> zns_core::CmdFuture<'a, T>,
    dev: &'a EmulatedZns,
) -> Result<T, CliError> {
    let start = rt.now_ns();
    let result = rt.block_on(f(dev));
    let latency_ns = rt.now_ns() - start;
    match result {
        Ok(v) => {
            if target.json {
                let mut doc = serde_json::json!({"op": op, "status": StatusReport::success(), "latency_ns": latency_ns});
                if let Some(key) = result_key {
                    doc[key] = serde_json::json!(v);
                }
                outln!("{doc}");
            } else {
                let extra = match (result_key, serde_json::json!(v).as_u64()) {
                    (Some(key), Some(n)) => format!(", {} {n:#x}", key.replace('_', " ")),
                    _ => String::new(),
                };
                outln!(
                    "{op}: Success in {:.2} us (virtual){extra}",
                    latency_ns as f64 / 1000.0
                );
            }
            Ok(v)
        }
        Err(e) => {
            if target.json {
                outln!(
                    "{}",
                    serde_json::json!({"op": op, "status": StatusReport::from_error(&e), "latency_ns": latency_ns})
                );
            }
            Err(CliError::Device(e))
        }
    }
}
