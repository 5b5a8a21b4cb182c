//! Running a decoded request on a served device (a `zns_target::Target`)
//! in virtual time, and what the kernel gets back: the bytes to copy to it
//! (read data, a zone report), the completion value, the LBA an append
//! landed at, or the errno Linux's NVMe driver would give for the NVMe
//! status (with the status, for logs). Runs on the runtime's thread;
//! nothing here makes a system call.

use zns_core::{IoFlags, NvmeError, NvmeStatus, ReportFilter, ZoneAction, ZoneSendCmd};
use zns_target::Target;

use crate::request::{Request, BLK_ZONE_BYTES, SECTOR_BYTES};

/// The device numbers a request needs, in LBAs.
#[derive(Clone, Copy)]
struct Shape {
    lba_bytes: u64,
    max_transfer_lbas: u64,
}

fn shape(dev: &Target) -> Shape {
    let g = dev.geometry();
    Shape {
        lba_bytes: g.lba_bytes,
        max_transfer_lbas: (g.max_transfer_bytes / g.lba_bytes).max(1),
    }
}

/// A request that succeeded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Done {
    /// Bytes to copy to the kernel's buffer (read data, a zone report).
    pub data_out: Vec<u8>,
    /// The completion value: bytes transferred (0 for zone commands and
    /// flushes).
    pub result_bytes: u32,
    /// For a zone append: the sector the data landed at.
    pub append_sector: Option<u64>,
}

/// A request that failed: the errno the kernel completes it with, and the
/// NVMe status behind it when the device posted one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    pub errno: i32,
    pub status: Option<NvmeStatus>,
}

impl Failure {
    pub fn errno(errno: i32) -> Failure {
        Failure {
            errno,
            status: None,
        }
    }
}

impl From<NvmeError> for Failure {
    fn from(e: NvmeError) -> Failure {
        Failure {
            errno: zns_linux::errno_for_status(e.status),
            status: Some(e.status),
        }
    }
}

fn not_zoned() -> Failure {
    Failure::errno(libc::EOPNOTSUPP)
}

/// Runs `req` on `dev`; `payload` holds a write's or an append's data.
pub async fn execute(dev: &Target, req: Request, payload: &[u8]) -> Result<Done, Failure> {
    let shape = shape(dev);
    let Shape {
        lba_bytes,
        max_transfer_lbas,
    } = shape;
    let bytes = |nlb: u64| -> Result<u32, Failure> {
        u32::try_from(nlb * lba_bytes).map_err(|_| Failure::errno(libc::EINVAL))
    };
    match req {
        Request::Read { slba, nlb } => {
            let mut data = vec![0u8; (nlb * lba_bytes) as usize];
            for (at, chunk) in chunks(slba, nlb, max_transfer_lbas) {
                let range = byte_range(at - slba, chunk, lba_bytes);
                match dev {
                    Target::Zoned(z) => z.read(at, &mut data[range]).await?,
                    Target::Block(b) => b.read(at, &mut data[range]).await?,
                }
            }
            Ok(Done {
                result_bytes: bytes(nlb)?,
                data_out: data,
                append_sector: None,
            })
        }
        Request::Write { slba, nlb, fua } => {
            if payload.len() as u64 != nlb * lba_bytes {
                return Err(Failure::errno(libc::EINVAL));
            }
            write_chunks(dev, &shape, slba, nlb, payload, IoFlags::with_fua(fua)).await?;
            Ok(Done {
                result_bytes: bytes(nlb)?,
                ..Done::default()
            })
        }
        Request::WriteZeroes { slba, nlb, fua } => {
            let Target::Block(_) = dev else {
                return Err(Failure::errno(libc::EOPNOTSUPP));
            };
            // (the kernel sends at most max_write_zeroes_sectors: the
            // server's request size)
            let zeros = vec![0u8; (nlb * lba_bytes) as usize];
            write_chunks(dev, &shape, slba, nlb, &zeros, IoFlags::with_fua(fua)).await?;
            Ok(Done::default())
        }
        Request::Flush => {
            match dev {
                Target::Zoned(z) => z.flush().await?,
                Target::Block(b) => b.flush().await?,
            }
            Ok(Done::default())
        }
        Request::Discard { slba, nlb } => match dev {
            Target::Block(b) => {
                b.discard(slba, nlb).await?;
                Ok(Done::default())
            }
            Target::Zoned(_) => Err(Failure::errno(libc::EOPNOTSUPP)),
        },
        Request::ZoneOpen { zslba } => {
            zone_send(dev, ZoneAction::Open { zrwa: false }, zslba).await
        }
        Request::ZoneClose { zslba } => zone_send(dev, ZoneAction::Close, zslba).await,
        Request::ZoneFinish { zslba } => zone_send(dev, ZoneAction::Finish, zslba).await,
        Request::ZoneReset { zslba } => zone_send(dev, ZoneAction::Reset, zslba).await,
        Request::ZoneResetAll => {
            let Target::Zoned(z) = dev else {
                return Err(not_zoned());
            };
            z.zone_send(ZoneSendCmd {
                action: ZoneAction::Reset,
                slba: 0,
                select_all: true,
            })
            .await?;
            Ok(Done::default())
        }
        Request::ZoneAppend { zslba, nlb, fua } => {
            let Target::Zoned(z) = dev else {
                return Err(not_zoned());
            };
            if payload.len() as u64 != nlb * lba_bytes {
                return Err(Failure::errno(libc::EINVAL));
            }
            let lba = z.append(zslba, payload, IoFlags::with_fua(fua)).await?;
            Ok(Done {
                result_bytes: bytes(nlb)?,
                append_sector: Some(lba * lba_bytes / SECTOR_BYTES),
                data_out: Vec::new(),
            })
        }
        Request::ReportZones { zslba, zones } => {
            let Target::Zoned(z) = dev else {
                return Err(not_zoned());
            };
            let cfg = z.config();
            let descriptors = z
                .report_zones(zslba, ReportFilter::All, zones as usize)
                .await?;
            // the whole buffer: zones, then zeroed entries (a zero length
            // ends the report for the kernel)
            let mut data = vec![0u8; zones as usize * BLK_ZONE_BYTES];
            for (d, out) in descriptors
                .iter()
                .zip(data.chunks_exact_mut(BLK_ZONE_BYTES))
            {
                let blk = zns_linux::blk_zone_from(d, cfg.zone_size_lbas, lba_bytes);
                out.copy_from_slice(&blk.to_bytes());
            }
            Ok(Done {
                result_bytes: u32::try_from(data.len())
                    .map_err(|_| Failure::errno(libc::EINVAL))?,
                data_out: data,
                append_sector: None,
            })
        }
    }
}

async fn zone_send(dev: &Target, action: ZoneAction, zslba: u64) -> Result<Done, Failure> {
    let Target::Zoned(z) = dev else {
        return Err(not_zoned());
    };
    z.zone_send(ZoneSendCmd {
        action,
        slba: zslba,
        select_all: false,
    })
    .await?;
    Ok(Done::default())
}

/// Writes `nlb` blocks of `data` at `slba`, one device command per
/// `max_transfer_lbas`, in order (a zoned device sees them at its WP in turn).
async fn write_chunks(
    dev: &Target,
    shape: &Shape,
    slba: u64,
    nlb: u64,
    data: &[u8],
    flags: IoFlags,
) -> Result<(), Failure> {
    for (at, chunk) in chunks(slba, nlb, shape.max_transfer_lbas) {
        let part = &data[byte_range(at - slba, chunk, shape.lba_bytes)];
        match dev {
            Target::Zoned(z) => z.write(at, part, flags).await?,
            Target::Block(b) => b.write(at, part, flags).await?,
        }
    }
    Ok(())
}

/// `(lba, blocks)` pieces of at most `max_lbas` covering `nlb` blocks.
fn chunks(slba: u64, nlb: u64, max_lbas: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..nlb)
        .step_by(max_lbas as usize)
        .map(move |off| (slba + off, max_lbas.min(nlb - off)))
}

fn byte_range(first_lba: u64, nlb: u64, lba_bytes: u64) -> std::ops::Range<usize> {
    (first_lba * lba_bytes) as usize..((first_lba + nlb) * lba_bytes) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_split_at_the_device_limit() {
        assert_eq!(
            chunks(10, 7, 3).collect::<Vec<_>>(),
            [(10, 3), (13, 3), (16, 1)]
        );
        assert_eq!(chunks(0, 4, 4).collect::<Vec<_>>(), [(0, 4)]);
        assert_eq!(chunks(0, 0, 4).count(), 0);
    }
}
