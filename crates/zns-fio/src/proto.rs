//! The wire format between the engine's clients (one per fio job, in fio's
//! job processes or threads) and the device server: fixed-size little-endian
//! records over a Unix stream socket. Data never crosses the socket: a
//! request names a byte range of the client's shared-memory region
//! (`Op::MapRegion` hands the region's memfd to the server once).
//!
//! Every request carries a tag that its response echoes; responses to I/O
//! come back in completion order, not submission order.

/// Bytes of one encoded [`Request`].
pub const REQUEST_BYTES: usize = 40;
/// Bytes of one response header (a payload may follow).
pub const RESPONSE_BYTES: usize = 24;
/// Bytes of one encoded [`Geometry`].
pub const GEOMETRY_BYTES: usize = 72;
/// Bytes of one encoded [`Zone`].
pub const ZONE_BYTES: usize = 40;

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Read `len_bytes` at `offset_bytes` into the region at `region_offset`.
    Read,
    /// Write `len_bytes` from the region at `region_offset` to `offset_bytes`.
    Write,
    /// NVM Flush.
    Flush,
    /// Reset every zone in `[offset_bytes, offset_bytes + len_bytes)`.
    Reset,
    /// Finish every zone in the range.
    Finish,
    /// Report at most `count` zones from the zone holding `offset_bytes`.
    Report,
    /// Map the shared-memory region whose fd travels with the request
    /// (SCM_RIGHTS); `len_bytes` is its size.
    MapRegion,
}

impl Op {
    fn code(self) -> u32 {
        match self {
            Op::Read => 1,
            Op::Write => 2,
            Op::Flush => 3,
            Op::Reset => 4,
            Op::Finish => 5,
            Op::Report => 6,
            Op::MapRegion => 7,
        }
    }

    fn from_code(code: u32) -> Option<Op> {
        Some(match code {
            1 => Op::Read,
            2 => Op::Write,
            3 => Op::Flush,
            4 => Op::Reset,
            5 => Op::Finish,
            6 => Op::Report,
            7 => Op::MapRegion,
            _ => return None,
        })
    }
}

/// One command from a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub op: Op,
    pub count: u32,
    pub tag: u64,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub region_offset: u64,
}

impl Request {
    pub fn new(op: Op, tag: u64) -> Request {
        Request {
            op,
            count: 0,
            tag,
            offset_bytes: 0,
            len_bytes: 0,
            region_offset: 0,
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.op.code().to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.tag.to_le_bytes());
        out.extend_from_slice(&self.offset_bytes.to_le_bytes());
        out.extend_from_slice(&self.len_bytes.to_le_bytes());
        out.extend_from_slice(&self.region_offset.to_le_bytes());
    }

    /// Decodes one request; `None` for an unknown op code.
    pub fn decode(b: &[u8; REQUEST_BYTES]) -> Option<Request> {
        Some(Request {
            op: Op::from_code(u32_at(b, 0))?,
            count: u32_at(b, 4),
            tag: u64_at(b, 8),
            offset_bytes: u64_at(b, 16),
            len_bytes: u64_at(b, 24),
            region_offset: u64_at(b, 32),
        })
    }
}

/// The header of one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub tag: u64,
    /// 0, or the positive errno the Linux block layer would give.
    pub errno: i32,
    /// The NVMe status code (SCT << 8 | SC) behind a failure, 0 if none.
    pub nvme_status: u16,
    /// Bytes of payload following the header.
    pub payload_bytes: u32,
}

impl Response {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.tag.to_le_bytes());
        out.extend_from_slice(&self.errno.to_le_bytes());
        out.extend_from_slice(&u32::from(self.nvme_status).to_le_bytes());
        out.extend_from_slice(&self.payload_bytes.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
    }

    pub fn decode(b: &[u8; RESPONSE_BYTES]) -> Response {
        Response {
            tag: u64_at(b, 0),
            errno: u32_at(b, 8) as i32,
            nvme_status: u32_at(b, 12) as u16,
            payload_bytes: u32_at(b, 16),
        }
    }
}

/// The device as fio sees it, in bytes. Sent by the server first on every
/// connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Geometry {
    pub lba_bytes: u64,
    pub capacity_bytes: u64,
    /// Zone size (0 on a conventional namespace).
    pub zone_bytes: u64,
    /// Writable capacity of each zone.
    pub zone_cap_bytes: u64,
    pub zone_count: u64,
    /// Open-zone limit (0 = none).
    pub max_open_zones: u64,
    /// Active-zone limit (0 = none).
    pub max_active_zones: u64,
    /// Largest transfer of one command.
    pub max_transfer_bytes: u64,
    /// Whether the target is a zoned namespace.
    pub zoned: bool,
}

impl Geometry {
    pub fn encode(&self, out: &mut Vec<u8>) {
        for v in [
            self.lba_bytes,
            self.capacity_bytes,
            self.zone_bytes,
            self.zone_cap_bytes,
            self.zone_count,
            self.max_open_zones,
            self.max_active_zones,
            self.max_transfer_bytes,
            u64::from(self.zoned),
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }

    pub fn decode(b: &[u8]) -> Option<Geometry> {
        if b.len() != GEOMETRY_BYTES {
            return None;
        }
        Some(Geometry {
            lba_bytes: u64_at(b, 0),
            capacity_bytes: u64_at(b, 8),
            zone_bytes: u64_at(b, 16),
            zone_cap_bytes: u64_at(b, 24),
            zone_count: u64_at(b, 32),
            max_open_zones: u64_at(b, 40),
            max_active_zones: u64_at(b, 48),
            max_transfer_bytes: u64_at(b, 56),
            zoned: u64_at(b, 64) != 0,
        })
    }
}

/// One zone of a report, in bytes, with fio's (= Linux `BLK_ZONE_*`) type and
/// condition numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C)]
pub struct Zone {
    pub start_bytes: u64,
    pub wp_bytes: u64,
    pub len_bytes: u64,
    pub capacity_bytes: u64,
    /// 1 conventional, 2 sequential write required.
    pub zone_type: u32,
    /// 0x1 empty, 0x2 implicitly open, 0x3 explicitly open, 0x4 closed,
    /// 0xD read only, 0xE full, 0xF offline.
    pub cond: u32,
}

impl Zone {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.start_bytes.to_le_bytes());
        out.extend_from_slice(&self.wp_bytes.to_le_bytes());
        out.extend_from_slice(&self.len_bytes.to_le_bytes());
        out.extend_from_slice(&self.capacity_bytes.to_le_bytes());
        out.extend_from_slice(&self.zone_type.to_le_bytes());
        out.extend_from_slice(&self.cond.to_le_bytes());
    }

    pub fn decode(b: &[u8]) -> Zone {
        Zone {
            start_bytes: u64_at(b, 0),
            wp_bytes: u64_at(b, 8),
            len_bytes: u64_at(b, 16),
            capacity_bytes: u64_at(b, 24),
            zone_type: u32_at(b, 32),
            cond: u32_at(b, 36),
        }
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(v)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_at_their_sizes() {
        let req = Request {
            op: Op::Write,
            count: 7,
            tag: 0xdead_beef_0000_0001,
            offset_bytes: 1 << 40,
            len_bytes: 65536,
            region_offset: 4096,
        };
        let mut buf = Vec::new();
        req.encode(&mut buf);
        assert_eq!(buf.len(), REQUEST_BYTES);
        assert_eq!(
            Request::decode(buf.as_slice().try_into().unwrap()),
            Some(req)
        );
        buf[0] = 99;
        assert_eq!(Request::decode(buf.as_slice().try_into().unwrap()), None);

        let resp = Response {
            tag: 3,
            errno: libc::EIO,
            nvme_status: 0x1bc,
            payload_bytes: 80,
        };
        let mut buf = Vec::new();
        resp.encode(&mut buf);
        assert_eq!(buf.len(), RESPONSE_BYTES);
        assert_eq!(Response::decode(buf.as_slice().try_into().unwrap()), resp);

        let geo = Geometry {
            lba_bytes: 4096,
            capacity_bytes: 1 << 41,
            zone_bytes: 1 << 31,
            zone_cap_bytes: 275712 * 4096,
            zone_count: 904,
            max_open_zones: 14,
            max_active_zones: 14,
            max_transfer_bytes: 1 << 19,
            zoned: true,
        };
        let mut buf = Vec::new();
        geo.encode(&mut buf);
        assert_eq!(buf.len(), GEOMETRY_BYTES);
        assert_eq!(Geometry::decode(&buf), Some(geo));

        let zone = Zone {
            start_bytes: 1 << 31,
            wp_bytes: (1 << 31) + 8192,
            len_bytes: 1 << 31,
            capacity_bytes: 1 << 30,
            zone_type: 2,
            cond: 2,
        };
        let mut buf = Vec::new();
        zone.encode(&mut buf);
        assert_eq!(buf.len(), ZONE_BYTES);
        assert_eq!(Zone::decode(&buf), zone);
    }
}
