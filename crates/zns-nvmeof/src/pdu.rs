//! NVMe/TCP PDUs (NVMe/TCP Transport Specification 1.0, §3.6): the common
//! header, the nine PDU types a controller and a host exchange, optional
//! header and data digests (CRC32C), and a parser that takes any byte
//! stream: it returns a PDU, asks for more bytes, or says what is wrong
//! with the stream (a [`WireError`], which closes the connection) — it
//! never panics and never asks for more than [`Limits::max_pdu_bytes`].
//!
//! Layout of every PDU: an 8-byte common header (type, flags, HLEN, PDO,
//! PLEN), the rest of the PDU-specific header (HLEN bytes in all), a header
//! digest when negotiated (4 bytes), padding up to PDO, the data, a data
//! digest when negotiated. ICReq/ICResp and the termination requests never
//! carry digests. Everything is little-endian.

/// The common header's length.
pub const CH_BYTES: usize = 8;
/// A header or data digest's length (CRC32C).
pub const DIGEST_BYTES: usize = 4;
/// ICReq and ICResp are 128 bytes, header only.
pub const IC_BYTES: usize = 128;
/// A command capsule's header: the common header and the 64-byte SQE.
pub const CAPSULE_CMD_HLEN: usize = CH_BYTES + 64;
/// A response capsule's header: the common header and the 16-byte CQE.
pub const CAPSULE_RESP_HLEN: usize = CH_BYTES + 16;
/// H2CData, C2HData, R2T and the termination requests: 24-byte headers.
pub const DATA_HLEN: usize = 24;
/// A termination request carries at most this much of the offending PDU's
/// header (152 bytes in all).
pub const TERM_MAX_BYTES: usize = 152;

/// PDU type values (CH byte 0).
pub mod pdu_type {
    pub const IC_REQ: u8 = 0x00;
    pub const IC_RESP: u8 = 0x01;
    pub const H2C_TERM_REQ: u8 = 0x02;
    pub const C2H_TERM_REQ: u8 = 0x03;
    pub const CAPSULE_CMD: u8 = 0x04;
    pub const CAPSULE_RESP: u8 = 0x05;
    pub const H2C_DATA: u8 = 0x06;
    pub const C2H_DATA: u8 = 0x07;
    pub const R2T: u8 = 0x09;
}

/// CH flags (byte 1).
pub mod flags {
    /// A header digest follows the header.
    pub const HDGSTF: u8 = 1 << 0;
    /// A data digest follows the data.
    pub const DDGSTF: u8 = 1 << 1;
    /// H2CData/C2HData: the last PDU of the transfer.
    pub const LAST_PDU: u8 = 1 << 2;
    /// C2HData: the command succeeded; no response capsule follows.
    pub const SUCCESS: u8 = 1 << 3;
}

/// Fatal error status values of a termination request (FES).
pub mod fes {
    pub const INVALID_HEADER_FIELD: u16 = 0x01;
    pub const PDU_SEQUENCE_ERROR: u16 = 0x02;
    pub const HEADER_DIGEST_ERROR: u16 = 0x03;
    pub const DATA_OUT_OF_RANGE: u16 = 0x04;
    pub const DATA_LIMIT_EXCEEDED: u16 = 0x05;
    pub const UNSUPPORTED_PARAMETER: u16 = 0x06;
}

/// Which digests a connection carries (negotiated by ICReq/ICResp).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digests {
    pub header: bool,
    pub data: bool,
}

impl Digests {
    /// The DGST byte of ICReq/ICResp.
    pub fn bits(self) -> u8 {
        u8::from(self.header) | u8::from(self.data) << 1
    }

    pub fn from_bits(bits: u8) -> Digests {
        Digests {
            header: bits & 1 != 0,
            data: bits & 2 != 0,
        }
    }
}

/// What the parser accepts on one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub digests: Digests,
    /// The largest PDU (PLEN) accepted; a larger one is a wire error.
    pub max_pdu_bytes: usize,
}

/// Initialize Connection Request (host to controller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcReq {
    /// PDU format version: 0.
    pub pfv: u16,
    /// Host PDU data alignment, in dwords, 0's based.
    pub hpda: u8,
    pub digests: Digests,
    /// Maximum outstanding R2Ts per command, 0's based.
    pub maxr2t: u32,
}

/// Initialize Connection Response (controller to host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcResp {
    pub pfv: u16,
    /// Controller PDU data alignment, in dwords, 0's based.
    pub cpda: u8,
    pub digests: Digests,
    /// The largest H2CData PDU's data, in bytes.
    pub maxh2cdata: u32,
}

/// A command capsule: the SQE and its in-capsule data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapsuleCmd {
    pub sqe: [u8; 64],
    pub data: Vec<u8>,
}

/// A data PDU (H2CData from the host, C2HData from the controller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataPdu {
    /// The command's CID.
    pub cccid: u16,
    /// H2CData: the R2T's transfer tag (0 in C2HData).
    pub ttag: u16,
    /// The data's offset in the command's buffer, in bytes.
    pub offset: u32,
    pub last: bool,
    /// C2HData only: the command succeeded, no response capsule follows.
    pub success: bool,
    pub data: Vec<u8>,
}

/// Ready to Transfer: the controller asks for `length` bytes at `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct R2t {
    pub cccid: u16,
    pub ttag: u16,
    pub offset: u32,
    pub length: u32,
}

/// A termination request: the connection is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermReq {
    pub fes: u16,
    /// Fatal error information (the offending field's byte offset, ...).
    pub fei: u32,
    /// The offending PDU's header, or part of it.
    pub header: Vec<u8>,
}

/// One PDU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pdu {
    IcReq(IcReq),
    IcResp(IcResp),
    H2CTermReq(TermReq),
    C2HTermReq(TermReq),
    CapsuleCmd(CapsuleCmd),
    CapsuleResp([u8; 16]),
    H2CData(DataPdu),
    C2HData(DataPdu),
    R2t(R2t),
}

/// Why a byte stream is not a valid PDU stream. Each maps to the fatal
/// error status of the termination request that answers it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    #[error("unknown PDU type {0:#04x}")]
    UnknownType(u8),
    #[error("PDU type {pdu_type:#04x}: header length {hlen}, expected {expected}")]
    HeaderLength {
        pdu_type: u8,
        hlen: u8,
        expected: usize,
    },
    #[error("PDU length {plen} out of range {min}..={max}")]
    PduLength { plen: u32, min: usize, max: usize },
    #[error("PDU data offset {pdo} invalid for header length {hlen} and PDU length {plen}")]
    DataOffset { pdo: u8, hlen: u8, plen: u32 },
    #[error(
        "PDU type {pdu_type:#04x}: digest flags {flags:#04x} disagree with the negotiated digests"
    )]
    DigestFlags { pdu_type: u8, flags: u8 },
    #[error("header digest mismatch")]
    HeaderDigest,
    #[error("data digest mismatch")]
    DataDigest,
    #[error("PDU type {0:#04x} carries no data, but has some")]
    UnexpectedData(u8),
}

impl WireError {
    /// The fatal error status a termination request reports it with.
    pub fn fes(&self) -> u16 {
        match self {
            WireError::HeaderDigest => fes::HEADER_DIGEST_ERROR,
            WireError::PduLength { .. } => fes::DATA_LIMIT_EXCEEDED,
            _ => fes::INVALID_HEADER_FIELD,
        }
    }

    /// The fatal error information: the offending field's byte offset in
    /// the header.
    pub fn fei(&self) -> u32 {
        match self {
            WireError::UnknownType(_) => 0,
            WireError::DigestFlags { .. } => 1,
            WireError::HeaderLength { .. } => 2,
            WireError::DataOffset { .. } => 3,
            WireError::PduLength { .. } => 4,
            _ => 0,
        }
    }
}

/// What [`parse`] found at the start of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// A whole PDU, and how many bytes it took.
    Pdu(Pdu, usize),
    /// The buffer holds only the start of a PDU: at least this many bytes
    /// are needed in all (never more than [`Limits::max_pdu_bytes`]).
    NeedMore(usize),
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The fixed header length of a PDU type, and whether it may carry data
/// and digests; `None` for an unknown type.
fn shape(pdu_type: u8) -> Option<(usize, bool, bool)> {
    use pdu_type::*;
    Some(match pdu_type {
        IC_REQ | IC_RESP => (IC_BYTES, false, false),
        H2C_TERM_REQ | C2H_TERM_REQ => (DATA_HLEN, true, false),
        CAPSULE_CMD => (CAPSULE_CMD_HLEN, true, true),
        CAPSULE_RESP => (CAPSULE_RESP_HLEN, false, true),
        H2C_DATA | C2H_DATA => (DATA_HLEN, true, true),
        R2T => (DATA_HLEN, false, true),
        _ => return None,
    })
}

/// Parses the PDU at the start of `buf`.
pub fn parse(buf: &[u8], limits: &Limits) -> Result<Parsed, WireError> {
    if buf.len() < CH_BYTES {
        return Ok(Parsed::NeedMore(CH_BYTES));
    }
    let (ty, fl, hlen, pdo) = (buf[0], buf[1], buf[2], buf[3]);
    let plen = u32_at(buf, 4);
    let (fixed_hlen, may_have_data, digested) = shape(ty).ok_or(WireError::UnknownType(ty))?;
    if usize::from(hlen) != fixed_hlen {
        return Err(WireError::HeaderLength {
            pdu_type: ty,
            hlen,
            expected: fixed_hlen,
        });
    }
    let hdgst = digested && limits.digests.header;
    let want_hd = if hdgst { flags::HDGSTF } else { 0 };
    if fl & flags::HDGSTF != want_hd {
        return Err(WireError::DigestFlags {
            pdu_type: ty,
            flags: fl,
        });
    }
    let header_end = fixed_hlen + if hdgst { DIGEST_BYTES } else { 0 };
    let max = if matches!(ty, pdu_type::H2C_TERM_REQ | pdu_type::C2H_TERM_REQ) {
        TERM_MAX_BYTES
    } else if may_have_data {
        limits.max_pdu_bytes
    } else {
        header_end
    };
    let plen_usize = usize::try_from(plen).unwrap_or(usize::MAX);
    if plen_usize < header_end || plen_usize > max {
        return Err(WireError::PduLength {
            plen,
            min: header_end,
            max,
        });
    }
    // the data (if any): from PDO (or the header's end for a termination
    // request, whose PDO is reserved) to the data digest
    let has_data = plen_usize > header_end;
    let ddgst = digested && has_data && limits.digests.data;
    let want_dd = if ddgst { flags::DDGSTF } else { 0 };
    if digested && fl & flags::DDGSTF != want_dd {
        return Err(WireError::DigestFlags {
            pdu_type: ty,
            flags: fl,
        });
    }
    let data_start = if !digested || !has_data {
        header_end
    } else {
        let pdo = usize::from(pdo);
        let data_end = plen_usize - if ddgst { DIGEST_BYTES } else { 0 };
        if pdo < header_end || pdo > data_end {
            return Err(WireError::DataOffset {
                pdo: pdo as u8,
                hlen,
                plen,
            });
        }
        pdo
    };
    if has_data && !may_have_data {
        return Err(WireError::UnexpectedData(ty));
    }
    if buf.len() < plen_usize {
        return Ok(Parsed::NeedMore(plen_usize));
    }
    let pdu = &buf[..plen_usize];
    if hdgst && crc32c::crc32c(&pdu[..fixed_hlen]) != u32_at(pdu, fixed_hlen) {
        return Err(WireError::HeaderDigest);
    }
    let data_end = plen_usize - if ddgst { DIGEST_BYTES } else { 0 };
    let data = &pdu[data_start..data_end];
    if ddgst && crc32c::crc32c(data) != u32_at(pdu, data_end) {
        return Err(WireError::DataDigest);
    }
    let h = &pdu[..fixed_hlen];
    let parsed = match ty {
        pdu_type::IC_REQ => Pdu::IcReq(IcReq {
            pfv: u16_at(h, 8),
            hpda: h[10],
            digests: Digests::from_bits(h[11]),
            maxr2t: u32_at(h, 12),
        }),
        pdu_type::IC_RESP => Pdu::IcResp(IcResp {
            pfv: u16_at(h, 8),
            cpda: h[10],
            digests: Digests::from_bits(h[11]),
            maxh2cdata: u32_at(h, 12),
        }),
        pdu_type::H2C_TERM_REQ | pdu_type::C2H_TERM_REQ => {
            let t = TermReq {
                fes: u16_at(h, 8),
                fei: u32_at(h, 10),
                header: data.to_vec(),
            };
            if ty == pdu_type::H2C_TERM_REQ {
                Pdu::H2CTermReq(t)
            } else {
                Pdu::C2HTermReq(t)
            }
        }
        pdu_type::CAPSULE_CMD => {
            let mut sqe = [0u8; 64];
            sqe.copy_from_slice(&h[CH_BYTES..CAPSULE_CMD_HLEN]);
            Pdu::CapsuleCmd(CapsuleCmd {
                sqe,
                data: data.to_vec(),
            })
        }
        pdu_type::CAPSULE_RESP => {
            let mut cqe = [0u8; 16];
            cqe.copy_from_slice(&h[CH_BYTES..CAPSULE_RESP_HLEN]);
            Pdu::CapsuleResp(cqe)
        }
        pdu_type::H2C_DATA | pdu_type::C2H_DATA => {
            let d = DataPdu {
                cccid: u16_at(h, 8),
                ttag: u16_at(h, 10),
                offset: u32_at(h, 12),
                last: fl & flags::LAST_PDU != 0,
                success: fl & flags::SUCCESS != 0,
                data: data.to_vec(),
            };
            // DATAL must say what the PDU carries
            if u32_at(h, 16) as usize != d.data.len() {
                return Err(WireError::PduLength {
                    plen,
                    min: header_end,
                    max,
                });
            }
            if ty == pdu_type::H2C_DATA {
                Pdu::H2CData(d)
            } else {
                Pdu::C2HData(d)
            }
        }
        _ => Pdu::R2t(R2t {
            cccid: u16_at(h, 8),
            ttag: u16_at(h, 10),
            offset: u32_at(h, 12),
            length: u32_at(h, 16),
        }),
    };
    Ok(Parsed::Pdu(parsed, plen_usize))
}

impl Pdu {
    fn type_code(&self) -> u8 {
        use pdu_type::*;
        match self {
            Pdu::IcReq(_) => IC_REQ,
            Pdu::IcResp(_) => IC_RESP,
            Pdu::H2CTermReq(_) => H2C_TERM_REQ,
            Pdu::C2HTermReq(_) => C2H_TERM_REQ,
            Pdu::CapsuleCmd(_) => CAPSULE_CMD,
            Pdu::CapsuleResp(_) => CAPSULE_RESP,
            Pdu::H2CData(_) => H2C_DATA,
            Pdu::C2HData(_) => C2H_DATA,
            Pdu::R2t(_) => R2T,
        }
    }

    /// Appends the PDU's bytes to `out`, with the digests of `digests`
    /// where the PDU type carries them (none on ICReq/ICResp and the
    /// termination requests; a data digest only when there is data).
    pub fn encode(&self, digests: Digests, out: &mut Vec<u8>) {
        let ty = self.type_code();
        let (hlen, _, digested) = shape(ty).unwrap_or((CH_BYTES, false, false));
        let mut h = vec![0u8; hlen];
        h[0] = ty;
        h[2] = hlen as u8;
        let mut fl = 0u8;
        let data: &[u8] = match self {
            Pdu::IcReq(r) => {
                h[8..10].copy_from_slice(&r.pfv.to_le_bytes());
                h[10] = r.hpda;
                h[11] = r.digests.bits();
                h[12..16].copy_from_slice(&r.maxr2t.to_le_bytes());
                &[]
            }
            Pdu::IcResp(r) => {
                h[8..10].copy_from_slice(&r.pfv.to_le_bytes());
                h[10] = r.cpda;
                h[11] = r.digests.bits();
                h[12..16].copy_from_slice(&r.maxh2cdata.to_le_bytes());
                &[]
            }
            Pdu::H2CTermReq(t) | Pdu::C2HTermReq(t) => {
                h[8..10].copy_from_slice(&t.fes.to_le_bytes());
                h[10..14].copy_from_slice(&t.fei.to_le_bytes());
                &t.header[..t.header.len().min(TERM_MAX_BYTES - DATA_HLEN)]
            }
            Pdu::CapsuleCmd(c) => {
                h[CH_BYTES..].copy_from_slice(&c.sqe);
                &c.data
            }
            Pdu::CapsuleResp(cqe) => {
                h[CH_BYTES..].copy_from_slice(cqe);
                &[]
            }
            Pdu::H2CData(d) | Pdu::C2HData(d) => {
                h[8..10].copy_from_slice(&d.cccid.to_le_bytes());
                h[10..12].copy_from_slice(&d.ttag.to_le_bytes());
                h[12..16].copy_from_slice(&d.offset.to_le_bytes());
                h[16..20].copy_from_slice(&(d.data.len() as u32).to_le_bytes());
                if d.last {
                    fl |= flags::LAST_PDU;
                }
                if d.success {
                    fl |= flags::SUCCESS;
                }
                &d.data
            }
            Pdu::R2t(r) => {
                h[8..10].copy_from_slice(&r.cccid.to_le_bytes());
                h[10..12].copy_from_slice(&r.ttag.to_le_bytes());
                h[12..16].copy_from_slice(&r.offset.to_le_bytes());
                h[16..20].copy_from_slice(&r.length.to_le_bytes());
                &[]
            }
        };
        let hdgst = digested && digests.header;
        let ddgst = digested && digests.data && !data.is_empty();
        if hdgst {
            fl |= flags::HDGSTF;
        }
        if ddgst {
            fl |= flags::DDGSTF;
        }
        h[1] = fl;
        let header_end = hlen + if hdgst { DIGEST_BYTES } else { 0 };
        let plen = header_end + data.len() + if ddgst { DIGEST_BYTES } else { 0 };
        if digested && !data.is_empty() {
            h[3] = header_end as u8;
        }
        h[4..8].copy_from_slice(&(plen as u32).to_le_bytes());
        out.reserve(plen);
        out.extend_from_slice(&h);
        if hdgst {
            out.extend_from_slice(&crc32c::crc32c(&h).to_le_bytes());
        }
        out.extend_from_slice(data);
        if ddgst {
            out.extend_from_slice(&crc32c::crc32c(data).to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_DIGESTS: Limits = Limits {
        digests: Digests {
            header: false,
            data: false,
        },
        max_pdu_bytes: 1 << 20,
    };

    fn roundtrip(pdu: &Pdu, limits: &Limits) -> Vec<u8> {
        let mut bytes = Vec::new();
        pdu.encode(limits.digests, &mut bytes);
        assert_eq!(
            parse(&bytes, limits),
            Ok(Parsed::Pdu(pdu.clone(), bytes.len()))
        );
        bytes
    }

    #[test]
    fn icreq_is_128_bytes_with_the_fields_where_linux_puts_them() {
        let req = Pdu::IcReq(IcReq {
            pfv: 0,
            hpda: 0,
            digests: Digests {
                header: true,
                data: false,
            },
            maxr2t: 0,
        });
        let b = roundtrip(&req, &NO_DIGESTS);
        assert_eq!(b.len(), 128);
        assert_eq!(&b[..8], &[0, 0, 128, 0, 128, 0, 0, 0]);
        assert_eq!(b[11], 1, "HDGST_ENABLE");
    }

    #[test]
    fn a_capsule_with_data_and_both_digests_roundtrips() {
        let limits = Limits {
            digests: Digests {
                header: true,
                data: true,
            },
            ..NO_DIGESTS
        };
        let mut sqe = [0u8; 64];
        sqe[0] = 0x01;
        let cmd = Pdu::CapsuleCmd(CapsuleCmd {
            sqe,
            data: vec![7; 4096],
        });
        let b = roundtrip(&cmd, &limits);
        assert_eq!(b.len(), 72 + 4 + 4096 + 4);
        assert_eq!(b[1], flags::HDGSTF | flags::DDGSTF);
        assert_eq!(b[3], 76, "PDO: after the header digest");
        // one flipped data bit: the data digest catches it
        let mut bad = b.clone();
        bad[100] ^= 1;
        assert_eq!(parse(&bad, &limits), Err(WireError::DataDigest));
        let mut bad = b;
        bad[20] ^= 1;
        assert_eq!(parse(&bad, &limits), Err(WireError::HeaderDigest));
    }

    #[test]
    fn partial_pdus_ask_for_exactly_what_is_missing() {
        let r2t = Pdu::R2t(R2t {
            cccid: 3,
            ttag: 9,
            offset: 0,
            length: 65536,
        });
        let b = roundtrip(&r2t, &NO_DIGESTS);
        assert_eq!(parse(&b[..3], &NO_DIGESTS), Ok(Parsed::NeedMore(8)));
        assert_eq!(parse(&b[..10], &NO_DIGESTS), Ok(Parsed::NeedMore(24)));
    }

    #[test]
    fn malformed_headers_are_wire_errors() {
        let mut b = vec![0x08, 0, 24, 0, 24, 0, 0, 0];
        b.resize(24, 0);
        assert_eq!(parse(&b, &NO_DIGESTS), Err(WireError::UnknownType(8)));
        // a capsule whose PLEN is beyond the limit
        let mut c = vec![pdu_type::CAPSULE_CMD, 0, 72, 72];
        c.extend_from_slice(&(2u32 << 20).to_le_bytes());
        assert!(matches!(
            parse(&c, &NO_DIGESTS),
            Err(WireError::PduLength { .. })
        ));
        // a response capsule with data
        let mut r = vec![pdu_type::CAPSULE_RESP, 0, 24, 24];
        r.extend_from_slice(&32u32.to_le_bytes());
        assert_eq!(
            parse(&r, &NO_DIGESTS),
            Err(WireError::PduLength {
                plen: 32,
                min: 24,
                max: 24
            })
        );
        // a header digest the connection did not negotiate
        let mut d = vec![pdu_type::CAPSULE_CMD, flags::HDGSTF, 72, 0];
        d.extend_from_slice(&76u32.to_le_bytes());
        assert!(matches!(
            parse(&d, &NO_DIGESTS),
            Err(WireError::DigestFlags { .. })
        ));
    }
}
