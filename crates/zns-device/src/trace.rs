//! Zone-command traces: a JSON-lines file of commands (open with or without
//! ZRWA, close, finish, reset, write, append, read, ZRWA flush, report, flush,
//! and the faults power-cut / power-on) that `zns replay` executes one after
//! another against a controller, recording per command the NVMe status, the
//! virtual latency and the resulting descriptors of the zones it touched. It is
//! the tool for checking how a device reacts to a command sequence.
//!
//! One command per line, e.g.
//! `{"op":"open","zone":3,"zrwa":true}`, `{"op":"write","slba":768,"nlb":4,"fua":true}`,
//! `{"op":"append","zone":1,"nlb":2}`, `{"op":"zrwa-flush","lba":783}`,
//! `{"op":"reset","all":true}`, `{"op":"report","zone":0,"count":4}`.
//! `nsid` (default: the first zoned namespace) names the namespace when the
//! controller has several. Blank lines and lines starting with `#` are skipped.
//! Unknown operations or fields are errors that name the line and the field.

use serde::{Deserialize, Serialize};
use zns_core::{
    IoFlags, NvmeError, ReportFilter, ZoneAction, ZoneDescriptor, ZoneSendCmd, ZonedDevice,
};

use crate::controller::Controller;
use crate::store::stamp;

/// The arguments of a zone-management command: which namespace and zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ZoneArgs {
    /// Namespace ID (default: the first zoned namespace).
    #[serde(default)]
    pub nsid: Option<u32>,
    /// Zone index.
    #[serde(default)]
    pub zone: Option<u32>,
    /// Zone start LBA (alternative to `zone`).
    #[serde(default)]
    pub slba: Option<u64>,
    /// Select All.
    #[serde(default)]
    pub all: bool,
    /// Open only: allocate a ZRWA (ZRWAA).
    #[serde(default)]
    pub zrwa: bool,
}

/// One trace command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TraceCommand {
    Open(ZoneArgs),
    Close(ZoneArgs),
    Finish(ZoneArgs),
    Reset(ZoneArgs),
    /// Write `nlb` blocks at `slba`, each a stamp block (tag = `stamp` + block index, default the LBA).
    Write {
        #[serde(default)]
        nsid: Option<u32>,
        slba: u64,
        nlb: u64,
        #[serde(default)]
        fua: bool,
        #[serde(default)]
        stamp: Option<u64>,
    },
    /// Zone Append of `nlb` stamp blocks to a zone.
    Append {
        #[serde(default)]
        nsid: Option<u32>,
        #[serde(default)]
        zone: Option<u32>,
        #[serde(default)]
        slba: Option<u64>,
        nlb: u64,
        #[serde(default)]
        fua: bool,
        #[serde(default)]
        stamp: Option<u64>,
    },
    /// Read `nlb` blocks at `slba`; the result lists the stamp tag of each block (null if not a stamp block).
    Read {
        #[serde(default)]
        nsid: Option<u32>,
        slba: u64,
        nlb: u64,
    },
    /// ZRWA explicit flush: commit up to and including `lba`.
    ZrwaFlush {
        #[serde(default)]
        nsid: Option<u32>,
        lba: u64,
    },
    /// Report `count` zones starting at `zone`.
    Report {
        #[serde(default)]
        nsid: Option<u32>,
        #[serde(default)]
        zone: Option<u32>,
        #[serde(default)]
        count: Option<usize>,
    },
    Flush {
        #[serde(default)]
        nsid: Option<u32>,
    },
    /// Let virtual time pass.
    Wait {
        ns: u64,
    },
    /// Cut power (injected fault).
    PowerCut,
    /// Restore power.
    PowerOn,
}

/// A trace line that could not be parsed.
#[derive(Debug, thiserror::Error)]
#[error("trace line {line}: {message}")]
pub struct TraceError {
    pub line: usize,
    pub message: String,
}

/// Parses a JSON-lines trace.
pub fn parse_trace(text: &str) -> Result<Vec<(usize, TraceCommand)>, TraceError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cmd: TraceCommand = serde_json::from_str(line).map_err(|e| TraceError {
            line: i + 1,
            message: e.to_string(),
        })?;
        out.push((i + 1, cmd));
    }
    Ok(out)
}

/// The status of a completed command, nvme-cli style.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusReport {
    /// "Success" or the status name ("LBA Out of Range", …).
    pub name: String,
    pub sct: u8,
    pub sc: u8,
    /// Whether an injected fault caused it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub injected: bool,
}

impl StatusReport {
    pub fn success() -> Self {
        StatusReport {
            name: "Success".into(),
            sct: 0,
            sc: 0,
            injected: false,
        }
    }
    pub fn from_error(e: &NvmeError) -> Self {
        StatusReport {
            name: e.status.name().into(),
            sct: e.status.sct(),
            sc: e.status.sc(),
            injected: e.injected,
        }
    }
    pub fn is_success(&self) -> bool {
        self.sct == 0 && self.sc == 0
    }
}

/// What one trace command did.
#[derive(Debug, Clone, Serialize)]
pub struct TraceResult {
    pub line: usize,
    pub op: String,
    pub status: StatusReport,
    /// Virtual time at submission and completion.
    pub submit_ns: u64,
    pub latency_ns: u64,
    /// Append: the LBA assigned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assigned_lba: Option<u64>,
    /// Read: stamp tag of each block read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stamps: Option<Vec<Option<u64>>>,
    /// Descriptors of the zones the command touched (after it), or the report.
    pub zones: Vec<ZoneDescriptor>,
}

fn op_name(cmd: &TraceCommand) -> &'static str {
    match cmd {
        TraceCommand::Open(ZoneArgs { zrwa: true, .. }) => "open-zrwa",
        TraceCommand::Open(_) => "open",
        TraceCommand::Close(_) => "close",
        TraceCommand::Finish(_) => "finish",
        TraceCommand::Reset(_) => "reset",
        TraceCommand::Write { .. } => "write",
        TraceCommand::Append { .. } => "append",
        TraceCommand::Read { .. } => "read",
        TraceCommand::ZrwaFlush { .. } => "zrwa-flush",
        TraceCommand::Report { .. } => "report",
        TraceCommand::Flush { .. } => "flush",
        TraceCommand::Wait { .. } => "wait",
        TraceCommand::PowerCut => "power-cut",
        TraceCommand::PowerOn => "power-on",
    }
}

/// Resolves a zone target to a start LBA (error = the message).
fn target_slba(
    dev: &dyn ZonedDevice,
    zone: Option<u32>,
    slba: Option<u64>,
    all: bool,
) -> Result<u64, String> {
    let cfg = dev.config();
    match (zone, slba, all) {
        (Some(_), Some(_), _) => Err("give either 'zone' or 'slba', not both".into()),
        (Some(z), None, _) => {
            if z >= cfg.zone_count {
                return Err(format!(
                    "zone {z} does not exist (the namespace has {} zones)",
                    cfg.zone_count
                ));
            }
            Ok(z as u64 * cfg.zone_size_lbas)
        }
        (None, Some(l), _) => Ok(l),
        (None, None, true) => Ok(0),
        (None, None, false) => Err("needs 'zone', 'slba' or 'all': true".into()),
    }
}

/// Fills `buf` with stamp blocks tagged `first_tag`, `first_tag + 1`, ...
pub fn fill_stamps(buf: &mut [u8], lba_bytes: usize, first_tag: u64) {
    for (i, block) in buf.chunks_mut(lba_bytes).enumerate() {
        stamp::fill_block(first_tag.wrapping_add(i as u64), block);
    }
}

/// The descriptors of the zones covering `[slba, slba + nlb)` (at most 64).
async fn zones_touched(
    dev: &dyn ZonedDevice,
    slba: u64,
    nlb: u64,
    all: bool,
) -> Vec<ZoneDescriptor> {
    let cfg = dev.config();
    let (start, count) = if all {
        (0, cfg.zone_count as usize)
    } else {
        let first = slba / cfg.zone_size_lbas;
        let last = slba.saturating_add(nlb.max(1) - 1) / cfg.zone_size_lbas;
        (
            first * cfg.zone_size_lbas,
            (last - first + 1).min(64) as usize,
        )
    };
    if start >= cfg.total_lbas() {
        return Vec::new();
    }
    let zones = dev
        .report_zones(start, ReportFilter::All, count)
        .await
        .unwrap_or_default();
    if all {
        // Only the zones that are not empty, to keep the output readable.
        zones
            .into_iter()
            .filter(|z| z.state != zns_core::ZoneState::Empty)
            .collect()
    } else {
        zones
    }
}

/// Runs a parsed trace against a controller, command after command.
pub async fn run_trace(
    ctrl: &Controller,
    commands: &[(usize, TraceCommand)],
) -> Result<Vec<TraceResult>, TraceError> {
    let handle = ctrl.handle().clone();
    let mut results = Vec::with_capacity(commands.len());
    for (line, cmd) in commands {
        let line = *line;
        let fail = |message: String| TraceError { line, message };
        let nsid = match cmd {
            TraceCommand::Open(args)
            | TraceCommand::Close(args)
            | TraceCommand::Finish(args)
            | TraceCommand::Reset(args) => args.nsid,
            TraceCommand::Write { nsid, .. }
            | TraceCommand::Append { nsid, .. }
            | TraceCommand::Read { nsid, .. }
            | TraceCommand::ZrwaFlush { nsid, .. }
            | TraceCommand::Report { nsid, .. }
            | TraceCommand::Flush { nsid } => *nsid,
            _ => None,
        };
        let dev = match nsid {
            Some(n) => ctrl.zoned(n).ok_or_else(|| {
                fail(format!(
                    "nsid {n} is not a zoned namespace of this controller"
                ))
            })?,
            None => ctrl
                .first_zoned()
                .ok_or_else(|| fail("the controller has no zoned namespace".into()))?,
        };
        let lba_bytes = dev.config().lba_bytes as usize;
        let submit_ns = handle.now_ns();
        let mut assigned_lba = None;
        let mut stamps = None;
        let mut touched: (u64, u64, bool) = (0, 0, false);
        let mut report_zones: Option<Vec<ZoneDescriptor>> = None;
        let outcome: Result<(), NvmeError> = match cmd {
            TraceCommand::Open(args)
            | TraceCommand::Close(args)
            | TraceCommand::Finish(args)
            | TraceCommand::Reset(args) => {
                let action = match cmd {
                    TraceCommand::Open(_) => ZoneAction::Open { zrwa: args.zrwa },
                    _ if args.zrwa => return Err(fail("'zrwa' applies to 'open' only".into())),
                    TraceCommand::Close(_) => ZoneAction::Close,
                    TraceCommand::Finish(_) => ZoneAction::Finish,
                    _ => ZoneAction::Reset,
                };
                let s = target_slba(&dev, args.zone, args.slba, args.all).map_err(fail)?;
                touched = (s, 1, args.all);
                dev.zone_send(ZoneSendCmd {
                    action,
                    slba: s,
                    select_all: args.all,
                })
                .await
            }
            TraceCommand::Write {
                slba,
                nlb,
                fua,
                stamp,
                ..
            } => {
                let buf = stamp_buffer(*nlb, lba_bytes, stamp.unwrap_or(*slba)).map_err(fail)?;
                touched = (*slba, *nlb, false);
                dev.write(*slba, &buf, IoFlags::with_fua(*fua)).await
            }
            TraceCommand::Append {
                zone,
                slba,
                nlb,
                fua,
                stamp,
                ..
            } => {
                let s = target_slba(&dev, *zone, *slba, false).map_err(fail)?;
                let buf = stamp_buffer(*nlb, lba_bytes, stamp.unwrap_or(s)).map_err(fail)?;
                touched = (s, 1, false);
                match dev.append(s, &buf, IoFlags::with_fua(*fua)).await {
                    Ok(lba) => {
                        assigned_lba = Some(lba);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            TraceCommand::Read { slba, nlb, .. } => {
                let mut buf = zeroed_buffer(*nlb, lba_bytes).map_err(fail)?;
                touched = (*slba, *nlb, false);
                let r = dev.read(*slba, &mut buf).await;
                if r.is_ok() {
                    stamps = Some(buf.chunks(lba_bytes).map(stamp::tag_of).collect());
                }
                r
            }
            TraceCommand::ZrwaFlush { lba, .. } => {
                touched = (*lba, 1, false);
                dev.zone_send(ZoneSendCmd {
                    action: ZoneAction::FlushZrwa,
                    slba: *lba,
                    select_all: false,
                })
                .await
            }
            TraceCommand::Report { zone, count, .. } => {
                let cfg = dev.config();
                let z = zone.unwrap_or(0);
                match dev
                    .report_zones(
                        // Saturating: a zone past the end is LBA Out of Range, not an overflow.
                        (z as u64).saturating_mul(cfg.zone_size_lbas),
                        ReportFilter::All,
                        count.unwrap_or(cfg.zone_count as usize),
                    )
                    .await
                {
                    Ok(zs) => {
                        report_zones = Some(zs);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            TraceCommand::Flush { .. } => dev.flush().await,
            TraceCommand::Wait { ns } => {
                handle.sleep(*ns).await;
                Ok(())
            }
            TraceCommand::PowerCut => {
                ctrl.power_cut();
                Ok(())
            }
            TraceCommand::PowerOn => {
                ctrl.power_on();
                Ok(())
            }
        };
        let latency_ns = handle.now_ns() - submit_ns;
        let zones = match report_zones {
            Some(z) => z,
            None if matches!(cmd, TraceCommand::Wait { .. } | TraceCommand::Flush { .. }) => {
                Vec::new()
            }
            None if matches!(cmd, TraceCommand::PowerCut | TraceCommand::PowerOn) => Vec::new(),
            None => zones_touched(&dev, touched.0, touched.1, touched.2).await,
        };
        results.push(TraceResult {
            line,
            op: op_name(cmd).to_string(),
            status: match &outcome {
                Ok(()) => StatusReport::success(),
                Err(e) => StatusReport::from_error(e),
            },
            submit_ns,
            latency_ns,
            assigned_lba,
            stamps,
            zones,
        });
    }
    Ok(results)
}

/// Largest buffer a trace command may ask for (64 MiB), so a typo cannot exhaust memory.
const MAX_TRACE_BUFFER_BYTES: u64 = 64 << 20;

fn zeroed_buffer(nlb: u64, lba_bytes: usize) -> Result<Vec<u8>, String> {
    let bytes = nlb
        .checked_mul(lba_bytes as u64)
        .filter(|b| *b <= MAX_TRACE_BUFFER_BYTES)
        .ok_or_else(|| {
            format!(
                "nlb = {nlb}: larger than the trace limit of {} MiB per command",
                MAX_TRACE_BUFFER_BYTES >> 20
            )
        })?;
    if bytes == 0 {
        // Let the device reject it (Invalid Field), as NVMe would for a zero-length command.
        return Ok(Vec::new());
    }
    Ok(vec![0u8; bytes as usize])
}

fn stamp_buffer(nlb: u64, lba_bytes: usize, first_tag: u64) -> Result<Vec<u8>, String> {
    let mut buf = zeroed_buffer(nlb, lba_bytes)?;
    fill_stamps(&mut buf, lba_bytes, first_tag);
    Ok(buf)
}
