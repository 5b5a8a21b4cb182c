//! Reading the array's own data back from its members: MDTS-sized range
//! reads, the records of a member's metadata zones, partial parity (Rule 1
//! slots, in place, or metadata-zone records), and the partial stripe at a
//! zone's progress with a failed member's chunk rebuilt from the PP. The
//! array uses them at run time (degraded reads of ZRAID's partial stripe,
//! which it keeps no copy of), recovery and rebuild when opening and
//! rebuilding.

use std::rc::Rc;

use zns_core::{NvmeError, NvmeStatus, ReportFilter, ZoneDescriptor, ZoneState};

use crate::md::{Record, RecordKind};
use crate::plan::xor_into;
use crate::state::Inner;

/// Reads `nlb` blocks at member LBA `slba` in MDTS-sized commands.
pub(crate) async fn read_range(
    inner: &Inner,
    dev: u32,
    slba: u64,
    nlb: u64,
) -> Result<Vec<u8>, NvmeError> {
    let b = inner.lba_bytes();
    let mut out = vec![0u8; nlb as usize * b];
    let m = inner
        .member(dev)
        .ok_or(NvmeError::injected(NvmeStatus::HostPathingError))?;
    let step = inner.member_cfg.max_transfer_lbas as u64;
    let mut x = 0;
    while x < nlb {
        let len = step.min(nlb - x);
        m.read(slba + x, &mut out[x as usize * b..(x + len) as usize * b])
            .await?;
        x += len;
    }
    Ok(out)
}

/// The data of the partial stripe of logical zone `zone` at completed progress
/// `d` (zone-relative), while the array runs: the first `d mod stripe` blocks of
/// the stripe, a failed member's chunk rebuilt from the partial parity (the
/// metadata zone's PP records are read for a stripe near the zone end). Exact
/// for completed blocks; nothing is kept in memory for this.
pub(crate) async fn partial_stripe_data(
    inner: &Rc<Inner>,
    zone: u32,
    d: u64,
) -> Result<Vec<u8>, NvmeError> {
    let l = inner.layout;
    let s = d / l.stripe_lbas();
    // PP records are needed only when a data member is missing: the parity
    // member that holds them is then alive
    let parity = l.parity_dev(zone, s);
    let pp =
        if l.slot_row(s).is_none() && inner.failed_count() > 0 && inner.member(parity).is_some() {
            pp_records(inner, parity, zone).await?
        } else {
            Vec::new()
        };
    read_partial_stripe(inner, zone, d, &pp).await
}

/// The PP records of logical zone `zone` in member `dev`'s metadata zones.
async fn pp_records(inner: &Rc<Inner>, dev: u32, zone: u32) -> Result<Vec<Record>, NvmeError> {
    let m = inner
        .member(dev)
        .ok_or(NvmeError::injected(NvmeStatus::HostPathingError))?;
    let d = m
        .report_zones(inner.md_zone_start(0), ReportFilter::All, 2)
        .await?;
    let (Some(&d0), Some(&d1)) = (d.first(), d.get(1)) else {
        return Err(NvmeStatus::InternalError.into());
    };
    let id = inner.array_id.get();
    Ok(read_md_records(inner, dev, [d0, d1])
        .await?
        .into_iter()
        .map(|(_, rec)| rec)
        .filter(|r| r.kind == RecordKind::Pp && r.zone == zone && r.array_id == id)
        .collect())
}

/// Every record with a valid CRC in member `dev`'s two metadata zones
/// (`md`: their descriptors), in media order, with the zone (0 or 1) it is in.
pub(crate) async fn read_md_records(
    inner: &Inner,
    dev: u32,
    md: [ZoneDescriptor; 2],
) -> Result<Vec<(u32, Record)>, NvmeError> {
    let b = inner.lba_bytes();
    let mut out = Vec::new();
    for (which, zd) in md.iter().enumerate() {
        let used = if zd.state == ZoneState::Full {
            inner.member_cfg.zone_capacity_lbas
        } else {
            zd.write_pointer - zd.start_lba
        };
        let bytes = read_range(inner, dev, zd.start_lba, used).await?;
        let mut at = 0usize;
        while at < bytes.len() {
            match Record::decode(&bytes[at..], b) {
                None => at += b,
                // a torn record (its payload lost at a power cut) is
                // skipped block by block: the zone's write pointer rolled
                // back into it, and later records follow its header directly
                Some((None, _)) => at += b,
                Some((Some(rec), blocks)) => {
                    at += blocks * b;
                    out.push((which as u32, rec));
                }
            }
        }
    }
    Ok(out)
}

/// Reads the first `d mod stripe` blocks of the stripe at progress `d` from
/// the data members; a failed member's chunk is rebuilt from the partial
/// parity (`pp`: PP records of the metadata zones, for stripes near the zone
/// end).
pub(crate) async fn read_partial_stripe(
    inner: &Rc<Inner>,
    zone: u32,
    d: u64,
    pp: &[Record],
) -> Result<Vec<u8>, NvmeError> {
    let l = inner.layout;
    let b = inner.lba_bytes();
    let c = l.chunk_lbas;
    let sl = l.stripe_lbas();
    let nd = l.data_chunks() as u32;
    let s = d / sl;
    let r = d - s * sl;
    let zstart = inner.mzone_start(zone);
    let j = (r / c) as u32;
    let e = r % c;
    let mut buf = vec![0u8; sl as usize * b];
    let mut missing = None;
    for i in 0..nd {
        let len = if i < j {
            c
        } else if i == j {
            e
        } else {
            0
        };
        if len == 0 {
            continue;
        }
        let dev = l.data_dev(zone, s, i);
        if inner.member(dev).is_none() {
            missing = Some(i);
            continue;
        }
        let data = read_range(inner, dev, zstart + l.member_off(s, 0), len).await?;
        let from = i as usize * c as usize * b;
        buf[from..from + data.len()].copy_from_slice(&data);
    }
    if let Some(i) = missing {
        // [0, e): data through chunk j; [e, c): through chunk j − 1
        let mut segs = Vec::new();
        if e > 0 && i <= j {
            segs.push((j, 0, e));
        }
        if j >= 1 && i < j {
            segs.push((j - 1, e, c));
        }
        for (m, x, y) in segs {
            let mut val = read_pp(inner, zone, s, m, x, y, pp).await?;
            for other in 0..=m {
                if other == i {
                    continue;
                }
                let from = (other as usize * c as usize + x as usize) * b;
                let len = val.len();
                xor_into(&mut val, &buf[from..from + len]);
            }
            let to = (i as usize * c as usize + x as usize) * b;
            buf[to..to + val.len()].copy_from_slice(&val);
        }
    }
    buf.truncate(r as usize * b);
    Ok(buf)
}

/// Partial parity "XOR through data chunk m" of stripe `s` at in-chunk blocks [x, y).
async fn read_pp(
    inner: &Rc<Inner>,
    zone: u32,
    s: u64,
    m: u32,
    x: u64,
    y: u64,
    pp: &[Record],
) -> Result<Vec<u8>, NvmeError> {
    let l = inner.layout;
    let b = inner.lba_bytes();
    let zstart = inner.mzone_start(zone);
    if m == l.data_chunks() as u32 - 1 {
        return read_range(
            inner,
            l.parity_dev(zone, s),
            zstart + l.member_off(s, x),
            y - x,
        )
        .await;
    }
    if let Some(row) = l.slot_row(s) {
        return read_range(
            inner,
            l.pp_dev(zone, s, m),
            zstart + l.member_off(row, x),
            y - x,
        )
        .await;
    }
    let gen = inner.st.borrow().z[zone as usize].gen;
    let mut out = vec![0u8; (y - x) as usize * b];
    let mut recs: Vec<&Record> = pp
        .iter()
        .filter(|r| r.gen == gen && r.f[0] == s && r.f[1] == m as u64)
        .collect();
    recs.sort_by_key(|r| r.seq);
    for rec in recs {
        let (r0, rn) = (rec.f[2], rec.f[3]);
        for blk in r0.max(x)..(r0 + rn).min(y) {
            let src = ((blk - r0) as usize) * b;
            let dst = ((blk - x) as usize) * b;
            if src + b <= rec.payload.len() {
                out[dst..dst + b].copy_from_slice(&rec.payload[src..src + b]);
            }
        }
    }
    Ok(out)
}
