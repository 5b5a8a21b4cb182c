//! The I/O command set on a namespace: an SQE decoded into the device's
//! terms ([`IoCmd`], pure: every field checked, a bad one answered with the
//! status a controller posts for it), and the command run on the device
//! (`zns_target::Target`, in virtual time on the runtime's thread):
//! Read, Write, Flush, Write Zeroes, Zone Management Send (open with ZRWA,
//! close, finish, reset, offline, explicit ZRWA flush; one zone or all),
//! Zone Management Receive (report and extended report, every filter,
//! partial), Zone Append with its LBA in the completion. A device error is
//! the emulated controller's own status.

use zns_core::{IoFlags, NvmeError, ReportFilter, ZoneAction, ZoneDescriptor, ZoneSendCmd};
use zns_target::Target;

use crate::command::{opcode, Sqe, Status};
use crate::identify::Namespace;

/// Zone Management Receive: the report header and each descriptor.
pub const ZONE_REPORT_HEADER_BYTES: usize = 64;
pub const ZONE_DESCRIPTOR_BYTES: usize = 64;
/// CDW12 bit 30 of Read, Write, Write Zeroes and Zone Append.
const FUA: u32 = 1 << 30;
/// Zone Management Send CDW13: Select All, and ZSASO (for Open: ZRWAA).
const SELECT_ALL: u32 = 1 << 8;
const ZSASO: u32 = 1 << 9;
/// Zone Management Receive CDW13 bit 16: Partial Report.
const PARTIAL: u32 = 1 << 16;

/// An I/O command, decoded and checked against its namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoCmd {
    Read {
        slba: u64,
        nlb: u64,
    },
    Write {
        slba: u64,
        nlb: u64,
        fua: bool,
    },
    Flush,
    WriteZeroes {
        slba: u64,
        nlb: u64,
        fua: bool,
    },
    ZoneSend(ZoneSendCmd),
    ZoneReceive {
        slba: u64,
        filter: ReportFilter,
        partial: bool,
        /// The host's buffer, in bytes.
        buffer_bytes: usize,
    },
    ZoneAppend {
        zslba: u64,
        nlb: u64,
        fua: bool,
    },
}

impl IoCmd {
    /// Decodes `sqe` for namespace `ns`.
    pub fn decode(sqe: &Sqe, ns: &Namespace) -> Result<IoCmd, Status> {
        let zoned = ns.zoned().is_some();
        let nlb = u64::from(sqe.dword(12) & 0xFFFF) + 1;
        let fua = sqe.dword(12) & FUA != 0;
        let cmd = match sqe.opcode() {
            opcode::READ => IoCmd::Read {
                slba: sqe.qword10(),
                nlb,
            },
            opcode::WRITE => IoCmd::Write {
                slba: sqe.qword10(),
                nlb,
                fua,
            },
            opcode::FLUSH => IoCmd::Flush,
            opcode::WRITE_ZEROES => IoCmd::WriteZeroes {
                slba: sqe.qword10(),
                nlb,
                fua,
            },
            opcode::ZONE_MGMT_SEND if zoned => {
                let cdw13 = sqe.dword(13);
                let action = match cdw13 & 0xFF {
                    0x01 => ZoneAction::Close,
                    0x02 => ZoneAction::Finish,
                    0x03 => ZoneAction::Open {
                        zrwa: cdw13 & ZSASO != 0,
                    },
                    0x04 => ZoneAction::Reset,
                    0x05 => ZoneAction::Offline,
                    0x11 => ZoneAction::FlushZrwa,
                    _ => return Err(Status::INVALID_FIELD),
                };
                IoCmd::ZoneSend(ZoneSendCmd {
                    action,
                    slba: sqe.qword10(),
                    select_all: cdw13 & SELECT_ALL != 0,
                })
            }
            opcode::ZONE_MGMT_RECV if zoned => {
                let cdw13 = sqe.dword(13);
                // ZRA 00h report, 01h extended report (no descriptor
                // extensions here: ZDES 0, the same bytes)
                if cdw13 & 0xFF > 1 {
                    return Err(Status::INVALID_FIELD);
                }
                let filter = match (cdw13 >> 8) & 0xFF {
                    0 => ReportFilter::All,
                    1 => ReportFilter::Empty,
                    2 => ReportFilter::ImplicitlyOpened,
                    3 => ReportFilter::ExplicitlyOpened,
                    4 => ReportFilter::Closed,
                    5 => ReportFilter::Full,
                    6 => ReportFilter::ReadOnly,
                    7 => ReportFilter::Offline,
                    _ => return Err(Status::INVALID_FIELD),
                };
                let dwords = u64::from(sqe.dword(12)) + 1;
                IoCmd::ZoneReceive {
                    slba: sqe.qword10(),
                    filter,
                    partial: cdw13 & PARTIAL != 0,
                    buffer_bytes: usize::try_from(dwords * 4).map_err(|_| Status::INVALID_FIELD)?,
                }
            }
            opcode::ZONE_APPEND if zoned => IoCmd::ZoneAppend {
                zslba: sqe.qword10(),
                nlb,
                fua,
            },
            _ => return Err(Status::INVALID_OPCODE),
        };
        Ok(cmd)
    }

    /// The command's name in the served device's request counts (`zns
    /// serve --stats`), as the ublk front end names its requests.
    pub fn kind(&self) -> &'static str {
        match *self {
            IoCmd::Read { .. } => "read",
            IoCmd::Write { .. } => "write",
            IoCmd::Flush => "flush",
            IoCmd::WriteZeroes { .. } => "write-zeroes",
            IoCmd::ZoneSend(z) => match (z.action, z.select_all) {
                (ZoneAction::Close, _) => "zone-close",
                (ZoneAction::Finish, _) => "zone-finish",
                (ZoneAction::Open { zrwa: false }, _) => "zone-open",
                (ZoneAction::Open { zrwa: true }, _) => "zone-open-zrwa",
                (ZoneAction::Reset, false) => "zone-reset",
                (ZoneAction::Reset, true) => "zone-reset-all",
                (ZoneAction::Offline, _) => "zone-offline",
                (ZoneAction::FlushZrwa, _) => "zrwa-flush",
            },
            IoCmd::ZoneReceive { .. } => "report-zones",
            IoCmd::ZoneAppend { .. } => "zone-append",
        }
    }

    /// The data the command moves, in bytes (for the request counts: read,
    /// written, appended or zeroed).
    pub fn data_bytes(&self, lba_bytes: u32) -> u64 {
        match *self {
            IoCmd::Read { nlb, .. }
            | IoCmd::Write { nlb, .. }
            | IoCmd::WriteZeroes { nlb, .. }
            | IoCmd::ZoneAppend { nlb, .. } => nlb * u64::from(lba_bytes),
            _ => 0,
        }
    }

    /// Bytes the host sends with the command (its data).
    pub fn data_in_bytes(&self, lba_bytes: u32) -> u64 {
        match *self {
            IoCmd::Write { nlb, .. } | IoCmd::ZoneAppend { nlb, .. } => nlb * u64::from(lba_bytes),
            _ => 0,
        }
    }

    /// Bytes the command returns to the host.
    pub fn data_out_bytes(&self, lba_bytes: u32) -> u64 {
        match *self {
            IoCmd::Read { nlb, .. } => nlb * u64::from(lba_bytes),
            IoCmd::ZoneReceive { buffer_bytes, .. } => buffer_bytes as u64,
            _ => 0,
        }
    }
}

/// What a command completed with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IoDone {
    /// Data for the host (read data, a zone report).
    pub data: Vec<u8>,
    /// The CQE's DW0/DW1 (a zone append's LBA).
    pub result: u64,
}

fn status(e: NvmeError) -> Status {
    Status::from(e.status)
}

/// Runs `cmd` on `dev`; `data` is a write's or an append's data
/// (`data_in_bytes` long, checked by the caller).
pub async fn execute(dev: &Target, cmd: IoCmd, data: &[u8]) -> Result<IoDone, Status> {
    let lba_bytes = dev.geometry().lba_bytes;
    let bytes = |nlb: u64| usize::try_from(nlb * lba_bytes).map_err(|_| Status::INVALID_FIELD);
    match (cmd, dev) {
        (IoCmd::Read { slba, nlb }, _) => {
            let mut buf = vec![0u8; bytes(nlb)?];
            match dev {
                Target::Zoned(z) => z.read(slba, &mut buf).await,
                Target::Block(b) => b.read(slba, &mut buf).await,
            }
            .map_err(status)?;
            Ok(IoDone {
                data: buf,
                result: 0,
            })
        }
        (IoCmd::Write { slba, fua, .. }, _) => {
            write(dev, slba, data, IoFlags::with_fua(fua)).await?;
            Ok(IoDone::default())
        }
        (IoCmd::WriteZeroes { slba, nlb, fua }, _) => {
            // one device write of zeros per transfer the device takes
            let max_lbas = (dev.geometry().max_transfer_bytes / lba_bytes).max(1);
            let zeros = vec![0u8; bytes(nlb.min(max_lbas))?];
            let mut done = 0;
            while done < nlb {
                let n = (nlb - done).min(max_lbas);
                let part = &zeros[..bytes(n)?];
                write(dev, slba + done, part, IoFlags::with_fua(fua)).await?;
                done += n;
            }
            Ok(IoDone::default())
        }
        (IoCmd::Flush, Target::Zoned(z)) => {
            z.flush().await.map_err(status)?;
            Ok(IoDone::default())
        }
        (IoCmd::Flush, Target::Block(b)) => {
            b.flush().await.map_err(status)?;
            Ok(IoDone::default())
        }
        (IoCmd::ZoneSend(send), Target::Zoned(z)) => {
            z.zone_send(send).await.map_err(status)?;
            Ok(IoDone::default())
        }
        (
            IoCmd::ZoneReceive {
                slba,
                filter,
                partial,
                buffer_bytes,
            },
            Target::Zoned(z),
        ) => {
            let zones = z
                .report_zones(slba, filter, z.config().zone_count as usize)
                .await
                .map_err(status)?;
            Ok(IoDone {
                data: zone_report(&zones, partial, buffer_bytes),
                result: 0,
            })
        }
        (IoCmd::ZoneAppend { zslba, fua, .. }, Target::Zoned(z)) => {
            let lba = z
                .append(zslba, data, IoFlags::with_fua(fua))
                .await
                .map_err(status)?;
            Ok(IoDone {
                data: Vec::new(),
                result: lba,
            })
        }
        // (decode lets zone commands through only on zoned namespaces)
        _ => Err(Status::INVALID_OPCODE),
    }
}

async fn write(dev: &Target, slba: u64, data: &[u8], flags: IoFlags) -> Result<(), Status> {
    match dev {
        Target::Zoned(z) => z.write(slba, data, flags).await,
        Target::Block(b) => b.write(slba, data, flags).await,
    }
    .map_err(status)
}

/// A Zone Management Receive report of `buffer_bytes`: the number of zones
/// (all that match, or with `partial` those that fit), then one 64-byte
/// descriptor per zone that fits.
pub fn zone_report(zones: &[ZoneDescriptor], partial: bool, buffer_bytes: usize) -> Vec<u8> {
    let fit = buffer_bytes.saturating_sub(ZONE_REPORT_HEADER_BYTES) / ZONE_DESCRIPTOR_BYTES;
    let listed = zones.len().min(fit);
    let nz = if partial { listed } else { zones.len() } as u64;
    let mut out = vec![0u8; ZONE_REPORT_HEADER_BYTES + listed * ZONE_DESCRIPTOR_BYTES];
    out[..8].copy_from_slice(&nz.to_le_bytes());
    for (z, d) in zones[..listed]
        .iter()
        .zip(out[ZONE_REPORT_HEADER_BYTES..].chunks_exact_mut(ZONE_DESCRIPTOR_BYTES))
    {
        d[0] = z.zone_type.code();
        d[1] = z.state.code() << 4;
        d[2] =
            u8::from(z.attributes.finished_by_controller) | u8::from(z.attributes.zrwa_valid) << 3;
        d[8..16].copy_from_slice(&z.capacity_lbas.to_le_bytes());
        d[16..24].copy_from_slice(&z.start_lba.to_le_bytes());
        d[24..32].copy_from_slice(&z.write_pointer.to_le_bytes());
    }
    // the host's whole buffer (a buffer shorter than the header gets its
    // start)
    out.resize(buffer_bytes, 0);
    out
}
