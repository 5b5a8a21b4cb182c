//! fio's `verify=`: every written block carries a header (magic, checksum
//! kind, length, byte offset, the seed of its payload) and a checksum of
//! header and payload; a verify pass reads the blocks back and checks them.
//! The layout is znskit's own (nothing but znskit reads the emulated data);
//! the behaviour is fio's: a block is checked on its own, from what it
//! holds, so a read job with `verify=` checks what an earlier write job
//! wrote, and a write job with `do_verify=1` reads back everything it wrote
//! once its writes are done (docs/bench.md, "Verify").

use md5::{Digest, Md5};

/// The checksum a job's blocks carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyKind {
    Crc32c,
    Md5,
}

impl VerifyKind {
    fn code(self) -> u8 {
        match self {
            VerifyKind::Crc32c => 1,
            VerifyKind::Md5 => 2,
        }
    }

    fn checksum_bytes(self) -> usize {
        match self {
            VerifyKind::Crc32c => 4,
            VerifyKind::Md5 => 16,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            VerifyKind::Crc32c => "crc32c",
            VerifyKind::Md5 => "md5",
        }
    }

    fn checksum(self, parts: [&[u8]; 2]) -> Vec<u8> {
        match self {
            VerifyKind::Crc32c => {
                let c = crc32c::crc32c_append(crc32c::crc32c(parts[0]), parts[1]);
                c.to_le_bytes().to_vec()
            }
            VerifyKind::Md5 => {
                let mut h = Md5::new();
                h.update(parts[0]);
                h.update(parts[1]);
                h.finalize().to_vec()
            }
        }
    }
}

/// fio's verify header magic.
const MAGIC: u16 = 0xacca;
/// magic (2), kind (1), reserved (1), length (4), offset (8), seed (8).
const FIXED_BYTES: usize = 24;
/// The offset a block written by Zone Append carries: the device chose
/// where it went, so the check takes the block's place as given.
pub const OFFSET_ASSIGNED_BY_DEVICE: u64 = u64::MAX;

/// The smallest block a header and checksum fit in.
pub fn min_block_bytes(kind: VerifyKind) -> usize {
    FIXED_BYTES + kind.checksum_bytes()
}

/// Fills `block` as a verifiable block written at `offset_bytes`, its
/// payload drawn from `seed`.
pub fn fill_block(block: &mut [u8], kind: VerifyKind, offset_bytes: u64, seed: u64) {
    let head = FIXED_BYTES + kind.checksum_bytes();
    if block.len() < head {
        return; // refused by job validation (min_block_bytes)
    }
    block[0..2].copy_from_slice(&MAGIC.to_le_bytes());
    block[2] = kind.code();
    block[3] = 0;
    let len = block.len() as u32;
    block[4..8].copy_from_slice(&len.to_le_bytes());
    block[8..16].copy_from_slice(&offset_bytes.to_le_bytes());
    block[16..24].copy_from_slice(&seed.to_le_bytes());
    fill_payload(&mut block[head..], seed);
    let sum = kind.checksum([&block[..FIXED_BYTES], &block[head..]]);
    block[FIXED_BYTES..head].copy_from_slice(&sum);
}

/// splitmix64 from `seed`: the payload is a function of the seed alone.
fn fill_payload(payload: &mut [u8], seed: u64) {
    let mut x = seed;
    for chunk in payload.chunks_mut(8) {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
}

/// Why a block failed its check (fio: `verify: bad magic header`, `bad
/// checksum`, …).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    #[error("verify: bad magic header {found:#06x}, wanted {MAGIC:#06x} at offset {offset}")]
    BadMagic { offset: u64, found: u16 },
    #[error("verify: block at offset {offset} holds a {found} checksum, wanted {wanted}")]
    BadKind {
        offset: u64,
        found: u8,
        wanted: &'static str,
    },
    #[error("verify: block at offset {offset} says it is {found} bytes long, read {read}")]
    BadLength {
        offset: u64,
        found: u32,
        read: usize,
    },
    #[error("verify: block at offset {offset} says it was written at offset {found}")]
    BadOffset { offset: u64, found: u64 },
    #[error("verify: bad {kind} checksum of the block at offset {offset}")]
    BadChecksum { offset: u64, kind: &'static str },
}

/// Checks a block read at `offset_bytes`.
pub fn check_block(block: &[u8], kind: VerifyKind, offset_bytes: u64) -> Result<(), VerifyError> {
    let offset = offset_bytes;
    let head = FIXED_BYTES + kind.checksum_bytes();
    let magic = u16::from_le_bytes([
        block.first().copied().unwrap_or(0),
        block.get(1).copied().unwrap_or(0),
    ]);
    if block.len() < head || magic != MAGIC {
        return Err(VerifyError::BadMagic {
            offset,
            found: magic,
        });
    }
    if block[2] != kind.code() {
        return Err(VerifyError::BadKind {
            offset,
            found: block[2],
            wanted: kind.as_str(),
        });
    }
    let len = u32::from_le_bytes(block[4..8].try_into().unwrap_or_default());
    if len as usize != block.len() {
        return Err(VerifyError::BadLength {
            offset,
            found: len,
            read: block.len(),
        });
    }
    let written_at = u64::from_le_bytes(block[8..16].try_into().unwrap_or_default());
    if written_at != offset && written_at != OFFSET_ASSIGNED_BY_DEVICE {
        return Err(VerifyError::BadOffset {
            offset,
            found: written_at,
        });
    }
    let sum = kind.checksum([&block[..FIXED_BYTES], &block[head..]]);
    if sum[..] != block[FIXED_BYTES..head] {
        return Err(VerifyError::BadChecksum {
            offset,
            kind: kind.as_str(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_checks_and_every_kind_of_damage_is_named() {
        for kind in [VerifyKind::Crc32c, VerifyKind::Md5] {
            let mut b = vec![0u8; 4096];
            fill_block(&mut b, kind, 8192, 7);
            assert_eq!(check_block(&b, kind, 8192), Ok(()));
            // a payload of another seed differs
            let mut other = vec![0u8; 4096];
            fill_block(&mut other, kind, 8192, 8);
            assert_ne!(b[64..], other[64..]);
            let mut flipped = b.clone();
            flipped[1000] ^= 1;
            assert!(matches!(
                check_block(&flipped, kind, 8192),
                Err(VerifyError::BadChecksum { .. })
            ));
            assert!(matches!(
                check_block(&b, kind, 4096),
                Err(VerifyError::BadOffset { found: 8192, .. })
            ));
            assert!(matches!(
                check_block(&b[..2048], kind, 8192),
                Err(VerifyError::BadLength { .. })
            ));
            assert!(matches!(
                check_block(&vec![0u8; 4096], kind, 0),
                Err(VerifyError::BadMagic { found: 0, .. })
            ));
        }
        let mut b = vec![0u8; 512];
        fill_block(&mut b, VerifyKind::Md5, 0, 1);
        assert!(matches!(
            check_block(&b, VerifyKind::Crc32c, 0),
            Err(VerifyError::BadKind { .. })
        ));
        // an appended block is checked wherever the device put it
        fill_block(&mut b, VerifyKind::Crc32c, OFFSET_ASSIGNED_BY_DEVICE, 1);
        assert_eq!(check_block(&b, VerifyKind::Crc32c, 1 << 30), Ok(()));
    }
}
