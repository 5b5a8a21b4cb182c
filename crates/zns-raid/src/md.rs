//! On-media formats: the metadata records appended to the metadata
//! ("superblock") zones, and the WP-log entries written into a stripe's WP-log
//! slots inside the ZRWA. Every structure starts with a magic number and ends
//! with a CRC-32C, so torn, stale or foreign blocks are recognised and skipped.
//! Integers are little endian. `docs/raid.md` has the byte layout.

/// Magic of a metadata record header block ("ZRAIDMD1").
pub const MD_MAGIC: u64 = u64::from_le_bytes(*b"ZRAIDMD1");
/// Magic of a WP-log entry block ("ZRAIDWP1").
pub const WP_MAGIC: u64 = u64::from_le_bytes(*b"ZRAIDWP1");

/// Kinds of metadata records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum RecordKind {
    /// The array description: f = [n, member index, chunk LBAs, md epoch, logical zones, 0].
    Superblock = 1,
    /// A logical zone reset started: `gen` is the new generation.
    Reset = 2,
    /// The member zones of a reset were all reset.
    ResetDone = 3,
    /// Partial parity logged near the zone end: f = [stripe, m (XOR through data
    /// chunk m), first block in the chunk, blocks, 0, 0]; payload = the PP blocks.
    Pp = 4,
    /// A WP-log entry near the zone end: f = [end (logical LBAs from the zone start), ...].
    WpLog = 5,
    /// A logical zone was finished: f = [end of its data].
    Finish = 6,
    /// The generation of every logical zone: payload = one u64 per zone.
    GenTable = 7,
}

impl RecordKind {
    fn from_u32(v: u32) -> Option<RecordKind> {
        Some(match v {
            1 => RecordKind::Superblock,
            2 => RecordKind::Reset,
            3 => RecordKind::ResetDone,
            4 => RecordKind::Pp,
            5 => RecordKind::WpLog,
            6 => RecordKind::Finish,
            7 => RecordKind::GenTable,
            _ => return None,
        })
    }
}

/// A metadata record: one header block, then `payload` (whole blocks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub kind: RecordKind,
    pub array_id: u64,
    pub zone: u32,
    pub gen: u64,
    /// Array-wide sequence number (orders records and WP-log entries).
    pub seq: u64,
    pub f: [u64; 6],
    pub payload: Vec<u8>,
}

fn put(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn get(buf: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(b)
}

// header: magic 0, kind 8 (u32) + zone 12 (u32), array_id 16, gen 24, seq 32,
// f 40..88, payload blocks 88, payload crc 96, header crc 104 (over 0..104).
const HDR_CRC_AT: usize = 104;

impl Record {
    /// Header block plus payload, `lba_bytes` per block.
    pub fn encode(&self, lba_bytes: usize) -> Vec<u8> {
        let payload_blocks = self.payload.len().div_ceil(lba_bytes);
        let mut out = vec![0u8; lba_bytes * (1 + payload_blocks)];
        put(&mut out, 0, MD_MAGIC);
        out[8..12].copy_from_slice(&(self.kind as u32).to_le_bytes());
        out[12..16].copy_from_slice(&self.zone.to_le_bytes());
        put(&mut out, 16, self.array_id);
        put(&mut out, 24, self.gen);
        put(&mut out, 32, self.seq);
        for (i, v) in self.f.iter().enumerate() {
            put(&mut out, 40 + 8 * i, *v);
        }
        put(&mut out, 88, payload_blocks as u64);
        out[lba_bytes..lba_bytes + self.payload.len()].copy_from_slice(&self.payload);
        let pcrc = crc32c::crc32c(&out[lba_bytes..]);
        put(&mut out, 96, pcrc as u64);
        let hcrc = crc32c::crc32c(&out[..HDR_CRC_AT]);
        put(&mut out, HDR_CRC_AT, hcrc as u64);
        out
    }

    /// Decodes the record starting at `buf[0]`; returns it and the blocks it
    /// spans, or None if the header is not a valid record (or the payload is
    /// torn: then the blocks are still returned so a scan can go on).
    pub fn decode(buf: &[u8], lba_bytes: usize) -> Option<(Option<Record>, usize)> {
        if buf.len() < lba_bytes || get(buf, 0) != MD_MAGIC {
            return None;
        }
        if get(buf, HDR_CRC_AT) != crc32c::crc32c(&buf[..HDR_CRC_AT]) as u64 {
            return None;
        }
        let kind = RecordKind::from_u32(u32::from_le_bytes(buf[8..12].try_into().ok()?))?;
        let payload_blocks = get(buf, 88) as usize;
        let blocks = 1 + payload_blocks;
        let end = blocks.checked_mul(lba_bytes)?;
        if end > buf.len() {
            return Some((None, blocks));
        }
        if get(buf, 96) != crc32c::crc32c(&buf[lba_bytes..end]) as u64 {
            return Some((None, blocks));
        }
        let mut f = [0u64; 6];
        for (i, v) in f.iter_mut().enumerate() {
            *v = get(buf, 40 + 8 * i);
        }
        Some((
            Some(Record {
                kind,
                array_id: get(buf, 16),
                zone: u32::from_le_bytes(buf[12..16].try_into().ok()?),
                gen: get(buf, 24),
                seq: get(buf, 32),
                f,
                payload: buf[lba_bytes..end].to_vec(),
            }),
            blocks,
        ))
    }
}

/// A WP-log entry: "the logical zone's data is complete up to `end`".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WpEntry {
    pub array_id: u64,
    pub zone: u32,
    pub gen: u64,
    pub seq: u64,
    /// Logical LBAs from the zone start.
    pub end: u64,
}

impl WpEntry {
    pub fn encode(&self, lba_bytes: usize) -> Vec<u8> {
        let mut out = vec![0u8; lba_bytes];
        put(&mut out, 0, WP_MAGIC);
        put(&mut out, 8, self.array_id);
        out[16..20].copy_from_slice(&self.zone.to_le_bytes());
        put(&mut out, 24, self.gen);
        put(&mut out, 32, self.seq);
        put(&mut out, 40, self.end);
        let crc = crc32c::crc32c(&out[..48]);
        put(&mut out, 48, crc as u64);
        out
    }
    pub fn decode(block: &[u8]) -> Option<WpEntry> {
        if block.len() < 56 || get(block, 0) != WP_MAGIC {
            return None;
        }
        if get(block, 48) != crc32c::crc32c(&block[..48]) as u64 {
            return None;
        }
        Some(WpEntry {
            array_id: get(block, 8),
            zone: u32::from_le_bytes(block[16..20].try_into().ok()?),
            gen: get(block, 24),
            seq: get(block, 32),
            end: get(block, 40),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_is_detected() {
        let r = Record {
            kind: RecordKind::Pp,
            array_id: 7,
            zone: 3,
            gen: 2,
            seq: 99,
            f: [1, 2, 3, 4, 5, 6],
            payload: vec![0xAB; 8192],
        };
        let mut enc = r.encode(4096);
        assert_eq!(enc.len(), 3 * 4096);
        let (dec, blocks) = Record::decode(&enc, 4096).unwrap();
        assert_eq!(blocks, 3);
        assert_eq!(dec.unwrap(), r);
        enc[5000] ^= 1;
        let (dec, blocks) = Record::decode(&enc, 4096).unwrap();
        assert!(dec.is_none());
        assert_eq!(blocks, 3);
        enc[20] ^= 1;
        assert!(Record::decode(&enc, 4096).is_none());
        assert!(Record::decode(&vec![0u8; 4096], 4096).is_none());
    }

    #[test]
    fn wp_entries_round_trip() {
        let e = WpEntry {
            array_id: 1,
            zone: 2,
            gen: 3,
            seq: 4,
            end: 5,
        };
        let mut b = e.encode(4096);
        assert_eq!(WpEntry::decode(&b), Some(e));
        b[41] ^= 4;
        assert_eq!(WpEntry::decode(&b), None);
    }
}
