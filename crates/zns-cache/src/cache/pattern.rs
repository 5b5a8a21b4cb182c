//! The bytes a verifying cache stores for a key ([`fill_chunk_bytes`]) and
//! checks on every read ([`expected_byte`]): a function of the key and the
//! offset alone.

/// Byte `i` of the chunk stored for `key`: a 64-bit mix of (key, word index);
/// the first four bytes are the key (as ZNCache stamps the id in front).
pub fn fill_chunk_bytes(key: u32, chunk_offset: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = expected_byte(key, chunk_offset + i as u64);
    }
}

#[inline]
pub(crate) fn expected_byte(key: u32, off: u64) -> u8 {
    if off < 4 {
        return key.to_le_bytes()[off as usize];
    }
    let mut x = (u64::from(key) << 32) ^ (off / 8).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    x.to_le_bytes()[(off % 8) as usize]
}
