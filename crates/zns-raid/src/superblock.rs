//! The array-wide metadata records built from the array's state: the
//! superblock (geometry, policy, epoch) and the generation table. They are
//! written at creation, at rebuild and at the start of every new metadata
//! zone (`engine.rs`'s log-zone switch); `md.rs` owns their encoding.

use crate::md::{Record, RecordKind};
use crate::state::Inner;
use crate::Policy;

pub(crate) fn superblock(inner: &Inner, dev: u32, epoch: u64) -> Record {
    let policy = match inner.opts.policy {
        Policy::Stripe => 1,
        Policy::Chunk => 2,
        Policy::WpLog => 3,
    };
    Record {
        kind: RecordKind::Superblock,
        array_id: inner.array_id.get(),
        zone: 0,
        gen: 0,
        seq: 0,
        f: [
            inner.layout.n as u64,
            dev as u64,
            inner.layout.chunk_lbas,
            epoch,
            inner.cfg.zone_count as u64,
            policy,
        ],
        payload: Vec::new(),
    }
}

pub(crate) fn gen_table(inner: &Inner) -> Record {
    let st = inner.st.borrow();
    let mut payload = Vec::with_capacity(st.z.len() * 8);
    for z in &st.z {
        payload.extend_from_slice(&z.gen.to_le_bytes());
    }
    Record {
        kind: RecordKind::GenTable,
        array_id: inner.array_id.get(),
        zone: 0,
        gen: 0,
        seq: st.seq,
        f: [0; 6],
        payload,
    }
}
