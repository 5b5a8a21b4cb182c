//! The cache map's table (key → global chunk slot): keys are workload ids,
//! dense from 0 in generated workloads and ZNCache files, so keys below
//! `DENSE_LIMIT` index a plain vector (one memory access per lookup, no
//! hashing) that grows to the largest such key seen; larger keys (sparse
//! numeric trace ids) go to a hash map. Same semantics as a `HashMap<u32,
//! u32>`; iteration order is unspecified (callers sort). `IdHasher`, the
//! multiply hash for id keys, serves this table and the cache's other id maps.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Keys below this are stored in the vector (at most 64 MiB of it).
const DENSE_LIMIT: u32 = 1 << 24;
const NONE: u32 = u32::MAX;

/// A fast hasher for u32 keys (a multiply; keys are ids, not attacker input).
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (u64::from(i) ^ 0x9e37_79b9).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map keyed by ids, with [`IdHasher`].
pub(crate) type IdMap<V> = HashMap<u32, V, BuildHasherDefault<IdHasher>>;

#[derive(Debug, Default)]
pub(crate) struct KeyMap {
    dense: Vec<u32>,
    sparse: IdMap<u32>,
    dense_len: usize,
}

impl KeyMap {
    #[inline]
    pub(crate) fn get(&self, key: &u32) -> Option<&u32> {
        if *key < DENSE_LIMIT {
            match self.dense.get(*key as usize) {
                Some(v) if *v != NONE => Some(v),
                // A dense key whose value is u32::MAX lives in the hash map.
                _ if self.sparse.is_empty() => None,
                _ => self.sparse.get(key),
            }
        } else {
            self.sparse.get(key)
        }
    }

    /// Maps `key` to `value`; returns the previous value.
    pub(crate) fn insert(&mut self, key: u32, value: u32) -> Option<u32> {
        if key >= DENSE_LIMIT {
            return self.sparse.insert(key, value);
        }
        if value == NONE {
            // The vector's empty marker: kept in the hash map.
            let old = self.remove(&key);
            self.sparse.insert(key, value);
            return old;
        }
        let k = key as usize;
        if k >= self.dense.len() {
            let n = (k + 1).max(self.dense.len() * 2).min(DENSE_LIMIT as usize);
            self.dense.resize(n, NONE);
        }
        let old = std::mem::replace(&mut self.dense[k], value);
        if old == NONE {
            self.dense_len += 1;
            if self.sparse.is_empty() {
                None
            } else {
                self.sparse.remove(&key)
            }
        } else {
            Some(old)
        }
    }

    pub(crate) fn remove(&mut self, key: &u32) -> Option<u32> {
        if *key < DENSE_LIMIT {
            if let Some(slot) = self.dense.get_mut(*key as usize) {
                let old = std::mem::replace(slot, NONE);
                if old != NONE {
                    self.dense_len -= 1;
                    return Some(old);
                }
            }
        }
        self.sparse.remove(key)
    }

    pub(crate) fn len(&self) -> usize {
        self.dense_len + self.sparse.len()
    }

    /// Every (key, value), in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.dense
            .iter()
            .enumerate()
            .filter(|(_, &v)| v != NONE)
            .map(|(k, &v)| (k as u32, v))
            .chain(self.sparse.iter().map(|(&k, &v)| (k, v)))
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = u32> + '_ {
        self.iter().map(|(k, _)| k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_hash_map() {
        let mut m = KeyMap::default();
        let mut r: HashMap<u32, u32> = HashMap::new();
        let mut x = 7u64;
        for i in 0..20_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let key = match i % 4 {
                0 => (x >> 40) as u32 % 5000,
                1 => DENSE_LIMIT + (x >> 40) as u32 % 100,
                2 => u32::MAX - (x >> 60) as u32,
                _ => (x >> 33) as u32 % 300,
            };
            let value = match (x >> 20) % 50 {
                0 => u32::MAX,
                v => v as u32,
            };
            if (x >> 10) % 3 == 0 {
                assert_eq!(m.remove(&key), r.remove(&key));
            } else {
                assert_eq!(m.insert(key, value), r.insert(key, value));
            }
            assert_eq!(m.get(&key), r.get(&key));
            assert_eq!(m.len(), r.len());
        }
        let mut a: Vec<(u32, u32)> = m.iter().collect();
        let mut b: Vec<(u32, u32)> = r.into_iter().collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
    }
}
